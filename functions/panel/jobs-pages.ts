import { z } from 'zod';
import { notFound, route } from '../platform/http.ts';
import { JobNotFoundError } from '../jobs/index.ts';
import type { ApiRoute } from '../platform/http.ts';
import { allStates, retrySchedule, TransitionRefusedError } from '../jobs/index.ts';
import type { JobClient, JobKind, JobRow, PeriodicStatus } from '../jobs/index.ts';
import { redactArgs } from '../ops/views.ts';
import { html } from './html.ts';
import { formatDuration } from '../platform/format.ts';
import { formTokenField, htmlResponse, page, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';

export interface JobPagesDeps {
  formToken: string;
  jobs: JobClient;
  kinds: readonly JobKind<unknown>[];
  periodicStatus(kind: string): Promise<PeriodicStatus | undefined>;
  sections: readonly PanelSection[];
}

const redirect = (location: string) => ({ status: 303, text: '', headers: { location } });

function jobsTable(rows: readonly JobRow[], formToken: string) {
  if (!rows.length) return html`<p>No jobs.</p>`;
  return html`<table>
<caption class="skip">Jobs</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Attempt</th><th scope="col">Scheduled</th><th scope="col">Discard reason</th><th scope="col">Last error</th><th scope="col">Action</th></tr></thead>
<tbody>${rows.map(
    (j) => html`<tr>
<td class="mono"><a href="/panel/jobs/${encodeURIComponent(j.id)}">${j.id}</a></td>
<td>${j.kind}</td>
<td class="state state-${j.state}">${j.state}</td>
<td class="num">${j.attempt}/${j.maxAttempts}</td>
<td class="mono">${j.scheduledAt}</td>
<td>${j.discardReason ?? ''}</td>
<td>${j.attempts.filter((a) => a.error).at(-1)?.error ?? ''}</td>
<td>${retryable(j) ? retryButton(j.id, formToken) : ''}</td>
</tr>`,
  )}</tbody></table>`;
}

const retryable = (j: JobRow) => j.state === 'discarded' || j.state === 'cancelled';
const retryButton = (id: string, formToken: string) =>
  html`<form class="inline" method="post" action="/panel/jobs/${encodeURIComponent(id)}/retry">${formTokenField(formToken)}<button type="submit" aria-label="Retry job ${id}">Retry</button></form>`;

/**
 * The panel's job pages: jobs by state and kind with their last error and a retry button for discarded
 * and cancelled ones, one job with its whole attempt history, the periodic kinds with their last
 * failure, and every policy's schedule.
 */
export function jobPages(deps: JobPagesDeps): ApiRoute[] {
  const list = route({
    method: 'GET',
    path: '/panel/jobs',
    auth: 'none',
    summary: 'Panel: jobs by state and kind',
    query: z.object({ state: z.enum(allStates as [string, ...string[]]).optional().catch(undefined), kind: z.string().max(100).optional() }),
    handler: async ({ query }) => {
      const { jobs } = await deps.jobs.list({ ...(query.state ? { state: query.state as JobRow['state'] } : {}), ...(query.kind ? { kind: query.kind } : {}), limit: 200 });
      const kinds = deps.kinds.map((k) => k.kind);
      const body = html`<form class="filters" method="get" action="/panel/jobs">
<label>State <select name="state"><option value="">any</option>${allStates.map((s) => html`<option ${s === query.state ? 'selected' : ''}>${s}</option>`)}</select></label>
<label>Kind <select name="kind"><option value="">any</option>${kinds.map((k) => html`<option ${k === query.kind ? 'selected' : ''}>${k}</option>`)}</select></label>
<button type="submit">Filter</button>
</form>
<p>${jobs.length} job${jobs.length === 1 ? '' : 's'}, newest first.</p>
${jobsTable(jobs, deps.formToken)}`;
      return htmlResponse(page('Jobs', deps.sections, body, { refreshSeconds: 5 }));
    },
  });

  const show = route({
    method: 'GET',
    path: '/panel/jobs/{id}',
    auth: 'none',
    summary: 'Panel: one job and its attempt history',
    params: z.object({ id: z.string().min(1).max(200) }),
    handler: async ({ params }) => {
      const job = await deps.jobs.get(params.id);
      if (!job) throw notFound(`job ${params.id}`);
      const body = html`<dl>
<dt>Kind</dt><dd>${job.kind}</dd>
<dt>State</dt><dd class="state state-${job.state}">${job.state}${job.discardReason ? html` — discard reason <strong>${job.discardReason}</strong>` : ''}</dd>
<dt>Attempt</dt><dd>${job.attempt} of ${job.maxAttempts}${job.snoozes ? html`, snoozed ${job.snoozes} times (last: ${job.lastSnooze?.reason ?? ''})` : ''}</dd>
<dt>Scheduled</dt><dd class="mono">${job.scheduledAt}</dd>
<dt>Created</dt><dd class="mono">${job.createdAt}</dd>
${job.finalizedAt ? html`<dt>Finished</dt><dd class="mono">${job.finalizedAt}</dd>` : ''}
</dl>
${retryable(job) ? retryButton(job.id, deps.formToken) : ''}
<h2>Attempt history</h2>
${
  job.attempts.length
    ? html`<table><thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Outcome</th><th scope="col">Error</th></tr></thead>
<tbody>${job.attempts.map((a) => html`<tr><td class="num">${a.attempt}</td><td class="mono">${a.at}</td><td class="num">${formatDuration(a.durationMs)}</td><td class="state state-${a.outcome}">${a.outcome}</td><td>${a.error ?? ''}</td></tr>`)}</tbody></table>`
    : html`<p>No attempt yet.</p>`
}
<h2>Arguments</h2>
<pre>${JSON.stringify(redactArgs(job.args), null, 2)}</pre>`;
      return htmlResponse(page(`Job ${job.id}`, deps.sections, body, { refreshSeconds: 5 }));
    },
  });

  const retry = route({
    method: 'POST',
    path: '/panel/jobs/{id}/retry',
    auth: 'none',
    summary: 'Panel: retry a discarded or cancelled job now',
    params: z.object({ id: z.string().min(1).max(200) }),
    handler: async ({ params, rawBody }) => {
      requireFormToken(rawBody, deps.formToken);
      try {
        await deps.jobs.retry(params.id);
      } catch (error) {
        if (error instanceof JobNotFoundError || (error instanceof TransitionRefusedError && !error.current)) throw notFound(`job ${params.id}`);
        // Running or completed: nothing to retry; the page shows why.
        if (!(error instanceof TransitionRefusedError)) throw error;
      }
      return redirect(`/panel/jobs/${encodeURIComponent(params.id)}`);
    },
  });

  const periodic = route({
    method: 'GET',
    path: '/panel/periodic',
    auth: 'none',
    summary: 'Panel: periodic kinds and their last failure',
    handler: async () => {
      const kinds = deps.kinds.filter((k) => k.periodic);
      const statuses = await Promise.all(kinds.map(async (k) => ({ kind: k, status: await deps.periodicStatus(k.kind) })));
      const body = statuses.length
        ? html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Every</th><th scope="col">Last run</th><th scope="col">Last outcome</th><th scope="col">Last failure</th><th scope="col">Error</th></tr></thead>
<tbody>${statuses.map(
            ({ kind, status }) =>
              html`<tr><td>${kind.kind}</td><td>${formatDuration((kind.periodic?.everySeconds ?? 0) * 1000)}</td><td class="mono">${status?.lastRunAt ?? 'never'}</td><td class="${status?.lastOutcome === 'failed' ? 'bad' : 'good'}">${status?.lastOutcome ?? ''}</td><td class="mono">${status?.lastFailureAt ?? ''}</td><td>${status?.lastError ?? ''}</td></tr>`,
          )}</tbody></table>`
        : html`<p>No periodic kinds.</p>`;
      return htmlResponse(page('Periodic jobs', deps.sections, body, { refreshSeconds: 10 }));
    },
  });

  const policyPage = route({
    method: 'GET',
    path: '/panel/policies',
    auth: 'none',
    summary: 'Panel: every policy and its schedule',
    handler: async () => {
      const body = html`${deps.kinds.map(({ kind, policy }) => {
        const rows = retrySchedule(policy);
        return html`<h2 id="${kind}">${kind}</h2>
<p>${policy.maxAttempts} attempt${policy.maxAttempts === 1 ? '' : 's'}; when exhausted: ${policy.onExhausted === 'discard_alert' ? 'discarded + alert' : policy.onExhausted === 'discard' ? 'discarded (no alert)' : 'the next period runs'}; jitter ±${policy.jitter * 100} %.</p>
${rows.length ? html`<table><thead><tr><th scope="col">After attempt</th><th scope="col">Wait</th><th scope="col">Jitter range</th><th scope="col">Cumulative</th></tr></thead>
<tbody>${rows.map((r) => html`<tr><td class="num">${r.afterAttempt}</td><td class="num">${formatDuration(r.delayMs)}</td><td class="num">${formatDuration(r.minMs)} – ${formatDuration(r.maxMs)}</td><td class="num">${formatDuration(r.cumulativeMs)}</td></tr>`)}</tbody></table>` : ''}`;
      })}`;
      return htmlResponse(page('Retry policies', deps.sections, body));
    },
  });

  return [list, show, retry, periodic, policyPage];
}
