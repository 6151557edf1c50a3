import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { allStates } from '../jobs/index.ts';
import type { JobClient, JobKind, PeriodicStatus } from '../jobs/index.ts';
import { html } from './html.ts';
import type { SmtpSink } from '../platform/local/smtp-sink.ts';
import type { CallsStore } from '../calls/store.ts';
import type { WebhooksContext } from '../webhooks/context.ts';
import { jobPages } from './jobs-pages.ts';
import { pipelinePages } from './pipeline-pages.ts';
import { htmlResponse, page } from './layout.ts';
import type { PanelSection } from './layout.ts';

export interface PanelDeps {
  /** The per-process token every panel form carries and every panel POST requires. */
  formToken: string;
  jobs: JobClient;
  kinds: readonly JobKind<unknown>[];
  periodicStatus(kind: string): Promise<PeriodicStatus | undefined>;
  /** The calls store, resolved on a request. */
  calls: () => CallsStore;
  webhooks: () => WebhooksContext;
  sink: SmtpSink | undefined;
}

const SECTIONS: readonly PanelSection[] = [
  { path: '/panel', title: 'Overview' },
  { path: '/panel/batches', title: 'Batches' },
  { path: '/panel/jobs', title: 'Jobs' },
  { path: '/panel/jobs?state=discarded', title: 'Discarded' },
  { path: '/panel/endpoints', title: 'Endpoints' },
  { path: '/panel/mail', title: 'Mail' },
  { path: '/panel/periodic', title: 'Periodic' },
  { path: '/panel/policies', title: 'Policies' },
];

/**
 * The ops panel (local runtime only): plain server-rendered HTML, no build step, usable without
 * JavaScript (forms post and redirect); pages refresh themselves every few seconds while nothing has focus.
 */
export function panelRoutes(deps: PanelDeps): ApiRoute[] {
  const overview = route({
    method: 'GET',
    path: '/panel',
    auth: 'none',
    summary: 'Panel: overview',
    handler: async () => {
      const counts = await deps.jobs.count();
      const body = html`<h2>Jobs by state</h2>
<table><thead><tr><th scope="col">State</th><th scope="col">Jobs</th></tr></thead>
<tbody>${allStates.map((state) => html`<tr><td class="state state-${state}"><a href="/panel/jobs?state=${state}">${state}</a></td><td class="num">${counts[state]}</td></tr>`)}</tbody></table>`;
      return htmlResponse(page('Overview', SECTIONS, body, { refreshSeconds: 5 }));
    },
  });
  return [overview , ...jobPages({ ...deps, sections: SECTIONS }), ...pipelinePages({ ...deps, sections: SECTIONS })];
}
