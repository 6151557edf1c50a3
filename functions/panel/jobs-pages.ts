import * as z from 'zod';
import { HttpError, route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { formatDuration } from '../platform/format.ts';
import { allStates, bulkCancelStates, bulkRetryStates, MAX_CURSOR_LENGTH } from '../jobs/index.ts';
import type { JobSummary } from '../ops/views.ts';
import { OpsApiError } from '../cli/api-client.ts';
import type { BulkJobRequest, JobBreakdown, ServedPolicyTable } from '../cli/api-client.ts';
import { filterQuery, parseTimeFilter } from './filters.ts';
import type { JobFilter } from './filters.ts';
import { html } from './html.ts';
import type { Html } from './html.ts';
import { formTokenField, htmlResponse, page, redirect, renderErrors, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';
import type { PanelApi } from './source.ts';

export interface JobPagesDeps {
  formToken: string;
  api: PanelApi;
  /** The deployed policy table, read once (it changes only with a deployment). */
  policies(): Promise<ServedPolicyTable>;
  sections: readonly PanelSection[];
}

/** Jobs per page of the listing. */
const PAGE_SIZE = 100;

/** The most jobs one bulk call changes (the API's cap, MAX_BULK_LIMIT); the panel calls again for the rest. */
const BULK_CALL_LIMIT = 1000;

/** A job the single retry button shows on: discarded or cancelled (a waiting one runs on its own). */
const retryable = (state: string) => state === 'discarded' || state === 'cancelled';
/** States the bulk buttons show for: those the job layer's bulk retry and bulk cancel act on. */
const canBulkRetry = (state: string) => (bulkRetryStates as readonly string[]).includes(state);
const canBulkCancel = (state: string) => (bulkCancelStates as readonly string[]).includes(state);

function jobsTable(rows: readonly JobSummary[], formToken: string) {
  if (!rows.length) return html`<p>No jobs.</p>`;
  return html`<table>
<caption class="skip">Jobs</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Attempt</th><th scope="col">Scheduled</th><th scope="col">Finished</th><th scope="col">Discard reason</th><th scope="col">Last error</th><th scope="col">Action</th></tr></thead>
<tbody>${rows.map(
    (j) => html`<tr>
<td class="mono"><a href="/panel/jobs/${encodeURIComponent(j.id)}">${j.id}</a></td>
<td>${j.kind}</td>
<td class="state state-${j.state}">${j.state}</td>
<td class="num">${j.attempt}/${j.maxAttempts}</td>
<td class="mono">${j.scheduledAt}</td>
<td class="mono">${j.finalizedAt ?? ''}</td>
<td>${j.discardReason ?? ''}</td>
<td>${j.errors.at(-1)?.error ?? ''}</td>
<td>${retryable(j.state) ? retryButton(j.id, formToken) : ''}</td>
</tr>`,
  )}</tbody></table>`;
}

const retryButton = (id: string, formToken: string) =>
  html`<form class="inline" method="post" action="/panel/jobs/${encodeURIComponent(id)}/retry">${formTokenField(formToken)}<button type="submit" aria-label="Retry job ${id}">Retry</button></form>`;

/** The filter's hidden fields: a bulk form carries the listing's filter, its times already resolved. */
const filterFields = (filter: JobFilter): Html =>
  html`${Object.entries(filter).map(([name, value]: [string, string | undefined]) => (value ? html`<input type="hidden" name="${name}" value="${value}">` : ''))}`;

/** Counts by kind and by reason, each a small table whose rows link to the listing narrowed to them. */
function breakdownTables(state: string, breakdown: JobBreakdown, filter: JobFilter): Html {
  const table = (caption: string, field: 'kind' | 'reason', counts: Record<string, number>) => {
    const rows = Object.entries(counts)
      .filter(([, n]) => n > 0)
      .sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
    return html`<table class="breakdown"><caption>${caption}</caption><thead><tr><th scope="col">${field === 'kind' ? 'Kind' : 'Reason'}</th><th scope="col">Jobs</th></tr></thead>
<tbody>${rows.length ? rows.map(([key, n]) => html`<tr><td><a href="/panel/jobs${filterQuery({ ...filter, state, [field]: key })}">${key}</a></td><td class="num">${n}</td></tr>`) : html`<tr><td colspan="2">none</td></tr>`}</tbody></table>`;
  };
  return html`<div class="charts">${table(`${state} jobs by kind`, 'kind', breakdown.byKind)}${breakdown.byReason ? table(`${state} jobs by reason`, 'reason', breakdown.byReason) : ''}</div>`;
}

/** The bulk buttons for a listing: each posts the filter for a dry run first (POST /panel/jobs/bulk). */
function bulkForms(filter: JobFilter & { state: string }, formToken: string): Html {
  const action = (name: 'retry' | 'cancel', label: string) =>
    html`<form method="post" action="/panel/jobs/bulk">${formTokenField(formToken)}${filterFields(filter)}<input type="hidden" name="action" value="${name}"><input type="hidden" name="step" value="preview"><button type="submit">${label}</button></form>`;
  const retry = canBulkRetry(filter.state);
  const cancel = canBulkCancel(filter.state);
  if (!retry && !cancel) return html``;
  return html`<section class="bulk" aria-labelledby="bulk-title"><h2 id="bulk-title">Every job this filter matches</h2>
${retry ? action('retry', 'Retry all matching…') : ''}${cancel ? action('cancel', 'Cancel all matching…') : ''}
<p>Each button first counts what it would touch and asks before it acts.</p></section>`;
}

const bulkBody = z.object({
  form_token: z.string(),
  action: z.enum(['retry', 'cancel']),
  step: z.enum(['preview', 'confirm']),
  state: z.enum(allStates as [string, ...string[]]),
  kind: z.string().max(100).optional(),
  reason: z.string().max(100).optional(),
  since: z.iso.datetime().optional(),
  until: z.iso.datetime().optional(),
  limit: z.coerce.number().int().min(1).max(100_000).optional(),
});

const describeFilter = (filter: JobFilter): string =>
  [
    `state ${filter.state ?? 'any'}`,
    filter.kind ? `kind ${filter.kind}` : '',
    filter.reason ? `reason ${filter.reason}` : '',
    filter.since ? `since ${filter.since}` : '',
    filter.until ? `until ${filter.until}` : '',
  ]
    .filter(Boolean)
    .join(', ');

/**
 * The panel's job pages: jobs filtered by state, kind, reason and time (counts by kind and reason, a
 * retry button on each discarded or cancelled one, and bulk retry and cancel by the same filter, each
 * counted by a dry run and confirmed before it acts), one job with its whole attempt history, the
 * periodic kinds with their last failure, and every policy's schedule. Everything through the ops API.
 */
export function jobPages(deps: JobPagesDeps): ApiRoute[] {
  const { api, sections } = deps;

  const list = route({
    method: 'GET',
    path: '/panel/jobs',
    auth: 'none',
    summary: 'Panel: jobs by state, kind, reason and time',
    query: z.object({
      state: z.enum(allStates as [string, ...string[]]).optional().catch(undefined),
      kind: z.string().max(100).optional().catch(undefined),
      reason: z.string().max(100).optional().catch(undefined),
      since: z.string().max(40).optional().catch(undefined),
      until: z.string().max(40).optional().catch(undefined),
      cursor: z.string().max(MAX_CURSOR_LENGTH).optional().catch(undefined),
    }),
    handler: ({ query }) =>
      renderErrors(sections, async () => {
        const now = await api.now();
        const problems: string[] = [];
        const time = (name: 'since' | 'until') => {
          if (!query[name]) return undefined;
          const parsed = parseTimeFilter(query[name], now);
          if ('error' in parsed) return void problems.push(`${name}: ${parsed.error}`);
          return parsed.iso;
        };
        // A discard reason filters discarded jobs only (the API refuses it with any other state).
        if (query.reason && query.state !== 'discarded') problems.push('reason: a discard reason filters discarded jobs only; choose the state discarded');
        const filter: JobFilter = { state: query.state, kind: query.kind || undefined, reason: query.state === 'discarded' ? query.reason || undefined : undefined, since: time('since'), until: time('until') };
        const [policies, listing, breakdown] = await Promise.all([
          deps.policies(),
          problems.length ? undefined : api.listJobs({ ...filter, limit: PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) }),
          filter.state ? api.jobBreakdown(filter.state, filter.kind) : undefined,
        ]);
        const kinds = policies.kinds.map((k) => k.kind);
        const reasons = Object.keys(breakdown?.byReason ?? {});
        const field = (name: 'since' | 'until', label: string) =>
          html`<label>${label} <input name="${name}" value="${query[name] ?? ''}" placeholder="2h or 2026-01-05T09:00:00Z" size="22"></label>`;
        const body = html`<form class="filters" method="get" action="/panel/jobs">
<label>State <select name="state"><option value="">any</option>${allStates.map((s) => html`<option ${s === filter.state ? 'selected' : ''}>${s}</option>`)}</select></label>
<label>Kind <select name="kind"><option value="">any</option>${kinds.map((k) => html`<option ${k === filter.kind ? 'selected' : ''}>${k}</option>`)}</select></label>
<label>Reason <input name="reason" value="${filter.reason ?? ''}" list="reasons" size="16"></label><datalist id="reasons">${reasons.map((r) => html`<option value="${r}">`)}</datalist>
${field('since', 'Since')}${field('until', 'Until')}
<button type="submit">Filter</button>
</form>
${problems.length ? html`<p class="error" role="alert">${problems.join('; ')}</p>` : ''}
${breakdown && filter.state ? breakdownTables(filter.state, breakdown, { kind: filter.kind, reason: filter.reason, since: query.since, until: query.until }) : ''}
${filter.state && listing ? bulkForms({ ...filter, state: filter.state }, deps.formToken) : ''}
${
  listing
    ? html`<p>${listing.jobs.length} job${listing.jobs.length === 1 ? '' : 's'} on this page (${describeFilter(filter)}), newest first.${
        listing.cursor ? html` <a href="/panel/jobs${filterQuery({ state: filter.state, kind: filter.kind, reason: filter.reason, since: query.since, until: query.until }, { cursor: listing.cursor })}">Next page</a>` : ''
      }</p>
${jobsTable(listing.jobs, deps.formToken)}`
    : ''
}`;
        const title = filter.state === 'discarded' ? 'Discarded jobs' : 'Jobs';
        return htmlResponse(page(title, sections, body, { refreshSeconds: 5 }));
      }),
  });

  const bulk = route({
    method: 'POST',
    path: '/panel/jobs/bulk',
    auth: 'none',
    summary: 'Panel: retry or cancel every job a filter matches — a dry run first, the action once confirmed',
    handler: ({ rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        const fields = Object.fromEntries([...new URLSearchParams(rawBody)].filter(([, v]) => v !== ''));
        const parsed = bulkBody.safeParse(fields);
        if (!parsed.success) throw new HttpError(400, 'invalid_request', `this form is not one the panel sent: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
        const { action, step, limit, form_token: _token, ...filter } = parsed.data;
        const verb = action === 'retry' ? 'Retry' : 'Cancel';
        const run = (request: BulkJobRequest) =>
          action === 'retry'
            ? api.retryJobs(request).then((r) => ({ matched: r.matched, acted: r.retried, until: r.until }))
            : api.cancelJobs(request).then((r) => ({ matched: r.matched, acted: r.cancelled, until: r.until }));
        const back = html`<p><a href="/panel/jobs${filterQuery(filter)}">Back to the jobs</a></p>`;
        if (step === 'preview') {
          // The confirmation acts on what matched now: the dry run's `until` (the API's now, unless given) goes
          // with it, so jobs that reach the state later (a retried job discarded again) are left for another look.
          const { matched, until } = await run({ ...filter, dryRun: true });
          filter.until = until;
          const body = matched
            ? html`<p role="status">${matched} job${matched === 1 ? '' : 's'} match ${describeFilter(filter)}.</p>
<form method="post" action="/panel/jobs/bulk">${formTokenField(deps.formToken)}${filterFields(filter)}<input type="hidden" name="action" value="${action}"><input type="hidden" name="step" value="confirm"><input type="hidden" name="limit" value="${matched}"><button type="submit">${verb} ${matched} job${matched === 1 ? '' : 's'}</button></form>
${back}`
            : html`<p role="status">No job matches ${describeFilter(filter)}: nothing to ${action}.</p>${back}`;
          return htmlResponse(page(`${verb} matching jobs?`, sections, body));
        }
        // The API changes at most BULK_CALL_LIMIT jobs a call: call again until the count confirmed is done
        // or nothing more matches. Each call is conditional on the jobs as matched, so none is changed twice.
        const confirmed = limit ?? BULK_CALL_LIMIT;
        let acted = 0;
        let calls = 0;
        let matched = 0;
        while (acted < confirmed) {
          const result = await run({ ...filter, limit: Math.min(BULK_CALL_LIMIT, confirmed - acted) });
          calls++;
          if (calls === 1) matched = result.matched;
          acted += result.acted;
          if (result.acted === 0) break;
        }
        const done = action === 'retry' ? 'retried' : 'cancelled';
        const body = html`<p role="status">${acted} job${acted === 1 ? '' : 's'} ${done} of the ${confirmed} confirmed (${matched} matched ${describeFilter(filter)} when this started).</p>${back}`;
        return htmlResponse(page(`${verb}: done`, sections, body));
      }),
  });

  const show = route({
    method: 'GET',
    path: '/panel/jobs/{id}',
    auth: 'none',
    summary: 'Panel: one job and its attempt history',
    params: z.object({ id: z.string().min(1).max(200) }),
    handler: ({ params }) =>
      renderErrors(sections, async () => {
        const job = await api.getJob(params.id);
        const body = html`<dl>
<dt>Kind</dt><dd>${job.kind}</dd>
<dt>State</dt><dd class="state state-${job.state}">${job.state}${job.discardReason ? html` — discard reason <strong>${job.discardReason}</strong>` : ''}</dd>
<dt>Attempt</dt><dd>${job.attempt} of ${job.maxAttempts}${job.snoozes ? html`, snoozed ${job.snoozes} times (last: ${job.lastSnooze?.reason ?? ''})` : ''}</dd>
<dt>Scheduled</dt><dd class="mono">${job.scheduledAt}</dd>
<dt>Created</dt><dd class="mono">${job.createdAt}</dd>
${job.finalizedAt ? html`<dt>Finished</dt><dd class="mono">${job.finalizedAt}</dd>` : ''}
</dl>
${retryable(job.state) ? retryButton(job.id, deps.formToken) : ''}
<h2>Attempt history</h2>
${
  job.attempts.length
    ? html`<table><thead><tr><th scope="col">#</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Outcome</th><th scope="col">Error</th></tr></thead>
<tbody>${job.attempts.map((a) => html`<tr><td class="num">${a.attempt}</td><td class="mono">${a.at}</td><td class="num">${formatDuration(a.durationMs)}</td><td class="state state-${a.outcome}">${a.outcome}</td><td>${a.error ?? ''}</td></tr>`)}</tbody></table>`
    : html`<p>No attempt yet.</p>`
}
<h2>Arguments</h2>
<pre>${JSON.stringify(job.args, null, 2)}</pre>`;
        return htmlResponse(page(`Job ${job.id}`, sections, body, { refreshSeconds: 5 }));
      }),
  });

  const retry = route({
    method: 'POST',
    path: '/panel/jobs/{id}/retry',
    auth: 'none',
    summary: 'Panel: retry a discarded or cancelled job now',
    params: z.object({ id: z.string().min(1).max(200) }),
    handler: ({ params, rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        try {
          await api.retryJob(params.id);
        } catch (error) {
          // Running or completed (409): nothing to retry; the job's page shows why.
          if (!(error instanceof OpsApiError && error.status === 409)) throw error;
        }
        return redirect(`/panel/jobs/${encodeURIComponent(params.id)}`);
      }),
  });

  const periodic = route({
    method: 'GET',
    path: '/panel/periodic',
    auth: 'none',
    summary: 'Panel: periodic kinds and their last failure',
    handler: () =>
      renderErrors(sections, async () => {
        const { periodic: statuses } = await api.periodic();
        const body = statuses.length
          ? html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Every</th><th scope="col">Last run</th><th scope="col">Last outcome</th><th scope="col">Last failure</th><th scope="col">Error</th></tr></thead>
<tbody>${statuses.map(
              (s) =>
                html`<tr><td>${s.kind}</td><td>${formatDuration(s.everySeconds * 1000)}</td><td class="mono">${s.lastRunAt ?? 'never'}</td><td class="${s.lastOutcome === 'failed' ? 'bad' : 'good'}">${s.lastOutcome ?? ''}</td><td class="mono">${s.lastFailureAt ?? ''}</td><td>${s.lastError ?? ''}</td></tr>`,
            )}</tbody></table>`
          : html`<p>No periodic kinds.</p>`;
        return htmlResponse(page('Periodic jobs', sections, body, { refreshSeconds: 10 }));
      }),
  });

  const policyPage = route({
    method: 'GET',
    path: '/panel/policies',
    auth: 'none',
    summary: 'Panel: every policy and its schedule',
    handler: () =>
      renderErrors(sections, async () => {
        const { policies } = await deps.policies();
        const body = html`${policies.map((policy) => {
          const rows = policy.schedule;
          const exhausted = policy.onExhausted === 'discard_alert' ? 'discarded + alert' : policy.onExhausted === 'discard' ? 'discarded (no alert)' : 'the next period runs';
          return html`<h2 id="${policy.kind}">${policy.kind}</h2>
<p>${policy.maxAttempts} attempt${policy.maxAttempts === 1 ? '' : 's'}; when exhausted: ${exhausted}; jitter ±${policy.jitter * 100} %.</p>
${rows.length ? html`<table><thead><tr><th scope="col">After attempt</th><th scope="col">Wait</th><th scope="col">Jitter range</th><th scope="col">Cumulative</th></tr></thead>
<tbody>${rows.map((r) => html`<tr><td class="num">${r.afterAttempt}</td><td class="num">${formatDuration(r.delayMs)}</td><td class="num">${formatDuration(r.minMs)} – ${formatDuration(r.maxMs)}</td><td class="num">${formatDuration(r.cumulativeMs)}</td></tr>`)}</tbody></table>` : ''}`;
        })}`;
        return htmlResponse(page('Retry policies', sections, body));
      }),
  });

  return [list, bulk, show, retry, periodic, policyPage];
}
