import * as z from 'zod';
import { HttpError, route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { OpsApiError } from '../cli/api-client.ts';
import type { BatchView } from '../cli/api-client.ts';
import type { JobDetail } from '../ops/views.ts';
import { batchIds } from '../calls/model.ts';
import { roundsFigure } from './figures.ts';
import { html } from './html.ts';
import { formTokenField, htmlResponse, page, redirect, renderErrors, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';
import { artefactLink } from './links.ts';
import { counts, cursorQuery, nextLink } from './listing.ts';
import type { PanelApi } from './source.ts';

export interface BatchPagesDeps {
  api: PanelApi;
  sections: readonly PanelSection[];
  formToken: string;
}

/** Statuses a batch may be paused from (control/batch-control.ts `pausableStatuses`). */
const PAUSABLE = new Set(['Importing', 'Scheduled', 'Pending', 'InProgress']);

/** The batch's control line: its scheduled start, its pause, and the button that pauses or resumes it. */
function controlLine(v: BatchView, formToken: string) {
  const action = (name: 'pause' | 'resume', label: string) =>
    html`<form class="inline" method="post" action="/panel/batches/${encodeURIComponent(v.batchId)}/${name}">${formTokenField(formToken)}<button type="submit">${label}</button></form>`;
  return html`${v.startAt ? html`<p>Scheduled start <time class="mono" datetime="${v.startAt}">${v.startAt}</time>${v.status === 'Scheduled' ? '' : ' (passed or moved)'}.</p>` : ''}
${v.status === 'Paused' ? html`<p role="status">Paused since <span class="mono">${v.pausedAt ?? ''}</span>; resume returns it to ${v.pausedFrom ?? ''}. Paused 30 days, it is cancelled.</p>` : ''}
${v.parentBatchId ? html`<p>Rerun of <a class="mono" href="/panel/batches/${encodeURIComponent(v.parentBatchId)}">${v.parentBatchId}</a>.</p>` : ''}
${PAUSABLE.has(v.status) ? action('pause', 'Pause') : v.status === 'Paused' ? action('resume', 'Resume') : ''}`;
}

/** Contacts per page of a batch's contact table. */
const CONTACTS_PAGE = 100;

/**
 * The most a CSV download from the panel holds: the panel gathers the export's pages into one answer, so
 * a batch whose results pass this is refused with a pointer to the CLI, which streams them.
 */
export const PANEL_EXPORT_MAX_BYTES = 64 * 1024 * 1024;

const batchParams = z.object({ id: batchIds.schema });
const contactParams = z.object({ id: batchIds.schema, number: z.string().regex(/^\+[1-9]\d{1,14}$/, 'an E.164 number') });

const contactPath = (batchId: string, number: string) => `/panel/batches/${encodeURIComponent(batchId)}/contacts/${encodeURIComponent(number)}`;

/** A job that may not exist yet (a round's finaliser before its round ends): undefined on the API's 404. */
async function jobOrNone(api: PanelApi, id: string): Promise<JobDetail | undefined> {
  try {
    return await api.getJob(id);
  } catch (error) {
    if (error instanceof OpsApiError && error.status === 404) return undefined;
    throw error;
  }
}

/**
 * The panel's batch pages: a batch with its rounds (a chart of each round's outcomes) and its contacts
 * (externalId, final status and code, the last call's artefacts, from the batch's export), a contact's
 * calls one by one, and the batch's results as one CSV download. Everything through the ops API.
 */
export function batchPages(deps: BatchPagesDeps): ApiRoute[] {
  const { api, sections } = deps;

  const batch = route({
    method: 'GET',
    path: '/panel/batches/{id}',
    auth: 'none',
    summary: 'Panel: one batch, its rounds and contacts',
    params: batchParams,
    query: cursorQuery,
    handler: ({ params, query }) =>
      renderErrors(sections, async () => {
        const v = await api.getBatch(params.id);
        const [rounds, contacts, finalisers] = await Promise.all([
          api.batchRounds(v.batchId),
          api.exportRows(v.batchId, { limit: CONTACTS_PAGE, ...(query.cursor ? { cursor: query.cursor } : {}) }),
          Promise.all(Array.from({ length: v.round }, (_, i) => jobOrNone(api, `calls.finalise:${v.batchId}:${i + 1}`))),
        ]);
        const body = html`<p>Status <strong>${v.status}</strong>, round ${v.round} of ${v.maxAttempts}. Contacts: ${counts(v.counts.byStatus)}.</p>
${controlLine(v, deps.formToken)}
<form class="inline" method="get" action="/panel/batches/${encodeURIComponent(v.batchId)}/export.csv"><button type="submit">Export CSV</button></form>
<h2>Rounds</h2>
${roundsFigure(rounds.rounds)}
<table><thead><tr><th scope="col">Round</th><th scope="col">Contacts</th><th scope="col">Outcomes by code</th><th scope="col">No outcome yet</th><th scope="col">Finaliser job</th><th scope="col">State</th></tr></thead>
<tbody>${rounds.rounds.map((r, i) => {
          const job = finalisers[i];
          return html`<tr><td class="num">${r.round}</td><td class="num">${r.size}</td><td>${r.recorded ? counts(r.byCode) : 'not recorded'}</td><td class="num">${r.pending}</td><td class="mono">${job ? html`<a href="/panel/jobs/${encodeURIComponent(job.id)}">${job.id}</a>` : 'not yet (calls still active)'}</td><td class="state state-${job?.state ?? ''}">${job?.state ?? ''}</td></tr>`;
        })}</tbody></table>
<h2>Contacts</h2>
<table aria-label="contacts"><thead><tr><th scope="col">Number</th><th scope="col">External ID</th><th scope="col">Status</th><th scope="col">Code</th><th scope="col">Attempts</th><th scope="col">Recording</th><th scope="col">Transcript</th></tr></thead>
<tbody>${contacts.rows.map(
          (c) =>
            html`<tr><td class="mono"><a href="${contactPath(v.batchId, c.number)}">${c.number}</a></td><td class="mono">${c.externalId ?? ''}</td><td>${c.status}</td><td>${c.code ?? ''}</td><td class="num">${c.attempts}</td><td>${artefactLink(c.recordingUrl, 'recording')}</td><td>${artefactLink(c.transcriptUrl, 'transcript')}</td></tr>`,
        )}</tbody></table>
${nextLink(`/panel/batches/${encodeURIComponent(v.batchId)}`, contacts.cursor, `Next ${CONTACTS_PAGE} contacts`)}`;
        return htmlResponse(page(`Batch ${v.batchId}`, sections, body, { refreshSeconds: 3 }));
      }),
  });

  const contact = route({
    method: 'GET',
    path: '/panel/batches/{id}/contacts/{number}',
    auth: 'none',
    summary: 'Panel: one contact of a batch, its calls one by one with their artefacts',
    params: contactParams,
    handler: ({ params }) =>
      renderErrors(sections, async () => {
        const { attempts } = await api.contactAttempts(params.id, params.number);
        const body = html`<p>Contact <span class="mono">${params.number}</span> of batch <a class="mono" href="/panel/batches/${encodeURIComponent(params.id)}">${params.id}</a>.</p>
<h2>Calls (${attempts.length})</h2>
${
  attempts.length
    ? html`<table aria-label="calls"><thead><tr><th scope="col">Round</th><th scope="col">Call</th><th scope="col">Reported code</th><th scope="col">Code</th><th scope="col">Retryable</th><th scope="col">From</th><th scope="col">Seconds</th><th scope="col">Placed</th><th scope="col">Completed</th><th scope="col">Recording</th><th scope="col">Transcript</th><th scope="col">Ended reason</th><th scope="col">Summary</th></tr></thead>
<tbody>${attempts.map(
        (a) =>
          html`<tr><td class="num">${a.round}</td><td class="mono">${a.callId}</td><td>${a.reportedCode ?? ''}</td><td>${a.code}</td><td>${a.retryable ? 'yes' : 'no'}</td><td>${a.source}</td><td class="num">${a.durationSeconds ?? ''}</td><td class="mono">${a.placedAt ?? ''}</td><td class="mono">${a.completedAt}</td><td>${artefactLink(a.recordingUrl, 'recording')}</td><td>${artefactLink(a.transcriptUrl, 'transcript')}</td><td>${a.endedReason ?? ''}</td><td>${a.summary ?? ''}${a.data ? html`<details><summary>data</summary><pre>${JSON.stringify(a.data, null, 2)}</pre></details>` : ''}</td></tr>`,
      )}</tbody></table>`
    : html`<p>No completed call yet.</p>`
}`;
        return htmlResponse(page(`Contact ${params.number}`, sections, body, { refreshSeconds: 5 }));
      }),
  });

  const download = route({
    method: 'GET',
    path: '/panel/batches/{id}/export.csv',
    auth: 'none',
    summary: 'Panel: a batch’s results as one CSV file (every page of its export)',
    params: batchParams,
    handler: ({ params }) =>
      renderErrors(sections, async () => {
        let text = '';
        for await (const pageText of api.exportPages(params.id, { format: 'csv' })) {
          text += pageText;
          if (Buffer.byteLength(text) > PANEL_EXPORT_MAX_BYTES) {
            throw new HttpError(413, 'too_large', `the results pass ${PANEL_EXPORT_MAX_BYTES / 1024 / 1024} MB: export them with the CLI, which streams them (npm run -s ops -- batches export ${params.id} > results.csv)`);
          }
        }
        return {
          status: 200,
          text,
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': `attachment; filename="${params.id}.csv"`,
            'cache-control': 'no-store',
            'x-content-type-options': 'nosniff',
          },
        };
      }),
  });

  /** Pause or resume through the API; a finished batch's 409 is shown on the batch's page as it is now. */
  const control = (name: 'pause' | 'resume') =>
    route({
      method: 'POST',
      path: `/panel/batches/{id}/${name}`,
      auth: 'none',
      summary: name === 'pause' ? 'Panel: pause a batch' : 'Panel: resume a paused batch',
      params: batchParams,
      handler: ({ params, rawBody }) =>
        renderErrors(sections, async () => {
          requireFormToken(rawBody, deps.formToken);
          try {
            await (name === 'pause' ? api.pauseBatch(params.id) : api.resumeBatch(params.id));
          } catch (error) {
            // Finished meanwhile (409): nothing to do; the batch's page shows its status.
            if (!(error instanceof OpsApiError && error.status === 409)) throw error;
          }
          return redirect(`/panel/batches/${encodeURIComponent(params.id)}`);
        }),
    });

  return [batch, contact, download, control('pause'), control('resume')];
}
