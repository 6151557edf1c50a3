import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { allStates } from '../jobs/index.ts';
import type { ServedPolicyTable } from '../cli/api-client.ts';
import { discardsFigure, jobStatesFigure } from './figures.ts';
import { html } from './html.ts';
import { jobPages } from './jobs-pages.ts';
import { pipelinePages } from './pipeline-pages.ts';
import { suppressionPages } from './suppression-pages.ts';
import { htmlResponse, page, renderErrors } from './layout.ts';
import type { PanelSection } from './layout.ts';
import type { PanelApi } from './source.ts';

export type { PanelApi } from './source.ts';

/** What the panel needs: the ops API it reads and acts through, and the token its forms carry. */
export interface PanelDeps {
  /** The per-process token every panel form carries and every panel POST requires. */
  formToken: string;
  api: PanelApi;
}

const SECTIONS: readonly PanelSection[] = [
  { path: '/panel', title: 'Overview' },
  { path: '/panel/batches', title: 'Batches' },
  { path: '/panel/jobs', title: 'Jobs' },
  { path: '/panel/jobs?state=discarded', title: 'Discarded' },
  { path: '/panel/endpoints', title: 'Endpoints' },
  { path: '/panel/suppressions', title: 'Suppressions' },
  { path: '/panel/mail', title: 'Mail' },
  { path: '/panel/periodic', title: 'Periodic' },
  { path: '/panel/policies', title: 'Policies' },
];

/** The overview's discard chart: this many hours back from the API's clock. */
export const DISCARD_HOURS = 24;
/** …read from at most this many of the newest discarded jobs (pages of 200). */
export const DISCARD_READ_CAP = 1000;

/**
 * The newest discarded jobs since `since`, newest first, at most {@link DISCARD_READ_CAP}: a bounded read
 * of the discarded listing, page by page, stopping at the first job discarded before `since` (the listing
 * is in discard order) or at the cap.
 */
async function recentDiscards(api: PanelApi, since: number): Promise<{ discards: { kind: string; at: number }[]; truncated: boolean }> {
  const discards: { kind: string; at: number }[] = [];
  let cursor: string | undefined;
  do {
    const listing = await api.listJobs({ state: 'discarded', since: new Date(since).toISOString(), limit: 200, ...(cursor ? { cursor } : {}) });
    for (const job of listing.jobs) {
      const at = Date.parse(job.finalizedAt ?? job.scheduledAt);
      if (at < since) return { discards, truncated: false };
      discards.push({ kind: job.kind, at });
    }
    cursor = listing.cursor;
  } while (cursor && discards.length < DISCARD_READ_CAP);
  return { discards, truncated: cursor !== undefined };
}

/**
 * The ops panel: plain server-rendered HTML and inline SVG, no build step, usable without JavaScript
 * (forms post and redirect); pages refresh themselves every few seconds while no form has focus. It reads
 * and acts only through the ops API (`api`), so it serves the same pages inside the local runtime and, by
 * `npm run ops -- panel --api …`, in front of a deployed stack.
 */
export function panelRoutes(deps: PanelDeps): ApiRoute[] {
  const { api } = deps;
  let policies: Promise<ServedPolicyTable> | undefined;
  const policyTable = () => {
    policies ??= api.servedPolicies().catch((error: unknown) => {
      policies = undefined;
      throw error;
    });
    return policies;
  };
  const overview = route({
    method: 'GET',
    path: '/panel',
    auth: 'none',
    summary: 'Panel: overview',
    handler: () =>
      renderErrors(SECTIONS, async () => {
        const now = await api.now();
        const [counts, recent] = await Promise.all([api.jobCounts(), recentDiscards(api, now - DISCARD_HOURS * 3_600_000)]);
        const body = html`<div class="charts">
${jobStatesFigure(counts, allStates)}
${discardsFigure(recent.discards, now, DISCARD_HOURS, recent.truncated)}
</div>
<h2>Jobs by state</h2>
<table><thead><tr><th scope="col">State</th><th scope="col">Jobs</th></tr></thead>
<tbody>${allStates.map((state) => html`<tr><td class="state state-${state}"><a href="/panel/jobs?state=${state}">${state}</a></td><td class="num">${counts[state] ?? 0}</td></tr>`)}</tbody></table>
<p>The API at <span class="mono">${api.baseUrl}</span>; its clock reads <span class="mono">${new Date(now).toISOString()}</span>.</p>`;
        return htmlResponse(page('Overview', SECTIONS, body, { refreshSeconds: 5 }));
      }),
  });
  return [overview, ...jobPages({ ...deps, policies: policyTable, sections: SECTIONS }), ...pipelinePages({ ...deps, sections: SECTIONS }), ...suppressionPages({ ...deps, sections: SECTIONS })];
}
