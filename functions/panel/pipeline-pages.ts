import * as z from 'zod';
import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { OpsApiError } from '../cli/api-client.ts';
import { endpointIds } from '../webhooks/endpoint.ts';
import { deliveriesFigure } from './figures.ts';
import { counts, cursorQuery, nextLink } from './listing.ts';
import { html } from './html.ts';
import { formTokenField, htmlResponse, page, redirect, renderErrors, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';
import type { PanelApi } from './source.ts';
import { batchPages } from './batch-pages.ts';

export interface PipelinePagesDeps {
  formToken: string;
  api: PanelApi;
  sections: readonly PanelSection[];
}

/** Attempts per page of an endpoint's attempt log. */
const ATTEMPTS_PER_PAGE = 50;

/** Rows per page of the batch, endpoint and contact listings. */
const PAGE_SIZE = 50;

const endpointId = endpointIds.schema;

/**
 * The panel's pipeline pages: batches with their rounds (a chart of each round's outcomes) and contacts,
 * endpoints with failingSince, disabled, their deliveries over time and a redeliver button, and the mail
 * the local SMTP sink caught. Everything through the ops API.
 */
export function pipelinePages(deps: PipelinePagesDeps): ApiRoute[] {
  const { api, sections } = deps;

  const batches = route({
    method: 'GET',
    path: '/panel/batches',
    auth: 'none',
    summary: 'Panel: batches',
    query: cursorQuery,
    handler: ({ query }) =>
      renderErrors(sections, async () => {
        const listing = await api.listBatches({ limit: PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) });
        const body = listing.batches.length
          ? html`<table><thead><tr><th scope="col">Batch</th><th scope="col">Tenant</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col">Round</th><th scope="col">Contacts by status</th><th scope="col">Completed by code</th></tr></thead>
<tbody>${listing.batches.map(
              (v) =>
                html`<tr><td class="mono"><a href="/panel/batches/${encodeURIComponent(v.batchId)}">${v.batchId}</a></td><td>${v.tenantId}</td><td class="mono">${v.createdAt}</td><td class="state">${v.status}</td><td class="num">${v.round}/${v.maxAttempts}</td><td>${counts(v.counts.byStatus)}</td><td>${counts(v.counts.byCode)}</td></tr>`,
            )}</tbody></table>${nextLink('/panel/batches', listing.cursor)}`
          : html`<p>No batches yet.</p>`;
        return htmlResponse(page('Batches', sections, body, { refreshSeconds: 3 }));
      }),
  });

  const endpoints = route({
    method: 'GET',
    path: '/panel/endpoints',
    auth: 'none',
    summary: 'Panel: webhook endpoints',
    query: cursorQuery,
    handler: ({ query }) =>
      renderErrors(sections, async () => {
        const listing = await api.listEndpoints({ limit: PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) });
        const body = listing.endpoints.length
          ? html`<table><thead><tr><th scope="col">Endpoint</th><th scope="col">Tenant</th><th scope="col">URL</th><th scope="col">Failing since</th><th scope="col">Disabled</th></tr></thead>
<tbody>${listing.endpoints.map(
              (e) =>
                html`<tr><td class="mono"><a href="/panel/endpoints/${e.endpointId}">${e.endpointId}</a></td><td>${e.tenantId}</td><td class="mono">${e.url}</td><td class="mono ${e.failingSince ? 'warn' : ''}">${e.failingSince ?? ''}</td><td class="${e.disabled ? 'bad' : ''}">${e.disabled ? `yes (${e.disabledReason ?? ''})` : 'no'}</td></tr>`,
            )}</tbody></table>${nextLink('/panel/endpoints', listing.cursor)}`
          : html`<p>No endpoints yet.</p>`;
        return htmlResponse(page('Webhook endpoints', sections, body, { refreshSeconds: 3 }));
      }),
  });

  const endpoint = route({
    method: 'GET',
    path: '/panel/endpoints/{id}',
    auth: 'none',
    summary: 'Panel: one endpoint and its deliveries',
    params: z.object({ id: endpointId }),
    query: z.object({ attempts: z.string().max(2000).optional().describe('the attempt log page to show (its cursor)') }),
    handler: ({ params, query }) =>
      renderErrors(sections, async () => {
        const [e, found, log] = await Promise.all([
          api.getEndpoint(params.id),
          api.endpointDeliveries(params.id),
          api.endpointAttempts(params.id, { limit: ATTEMPTS_PER_PAGE, ...(query.attempts ? { cursor: query.attempts } : {}) }),
        ]);
        const { deliveries } = found;
        const discarded = deliveries.filter((j) => j.state === 'discarded');
        const body = html`<dl>
<dt>URL</dt><dd class="mono">${e.url}</dd>
<dt>Tenant</dt><dd>${e.tenantId}</dd>
<dt>Event types</dt><dd>${e.eventTypes?.join(', ') ?? 'all'}</dd>
<dt>Failing since</dt><dd class="mono">${e.failingSince ?? '—'}</dd>
<dt>Disabled</dt><dd class="${e.disabled ? 'bad' : ''}">${e.disabled ? `yes: ${e.disabledReason ?? ''} (${e.disabledAt ?? ''})` : 'no'}</dd>
<dt>Description</dt><dd>${e.description ?? '—'}</dd>
<dt>Signing secret</dt><dd>${e.rotation ? `rotated ${e.rotation.rotatedAt}; ${e.rotation.previousSecretUntil ? `the previous secret signs too until ${e.rotation.previousSecretUntil}` : 'only the current secret signs'}` : 'never rotated'}</dd>
</dl>
<form class="inline" method="post" action="/panel/endpoints/${e.endpointId}/redeliver">${formTokenField(deps.formToken)}<button type="submit">${e.disabled ? 'Enable and redeliver' : 'Redeliver'} ${discarded.length} discarded</button></form>
${e.disabled ? html` <form class="inline" method="post" action="/panel/endpoints/${e.endpointId}/enable">${formTokenField(deps.formToken)}<button type="submit">Enable</button></form>` : ''}
<h2>Deliveries over time</h2>
${deliveriesFigure(deliveries.flatMap((d) => d.attempts), e)}
<p>From the newest ${found.perState} delivery jobs of each state across every endpoint: on a busy stack, the last few minutes.</p>
<h2>Deliveries (${deliveries.length})</h2>
<table><thead><tr><th scope="col">Delivery job (event, endpoint)</th><th scope="col">State</th><th scope="col">Attempt</th><th scope="col">Discard reason</th><th scope="col">Last error</th></tr></thead>
<tbody>${deliveries.map(
          (j) =>
            html`<tr><td class="mono"><a href="/panel/jobs/${encodeURIComponent(j.jobId)}">${j.jobId}</a></td><td class="state state-${j.state}">${j.state}</td><td class="num">${j.attempt}/${j.maxAttempts}</td><td>${j.discardReason ?? ''}</td><td>${j.attempts.filter((a) => a.error).at(-1)?.error ?? ''}</td></tr>`,
        )}</tbody></table>
<h2>Attempt log</h2>
<p>Every attempt to send to this endpoint in the last 30 days, newest first, including the sends of deliveries that waited in its list.</p>
${
  log.attempts.length
    ? html`<table aria-label="attempt log"><thead><tr><th scope="col">At</th><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Attempt</th><th scope="col">Result</th><th scope="col">HTTP status or error</th><th scope="col">ms</th><th scope="col">Next retry</th><th scope="col">Sent by</th></tr></thead>
<tbody>${log.attempts.map(
        (a) =>
          html`<tr><td class="mono">${a.at}</td><td class="mono">${a.eventId}</td><td>${a.eventType}</td><td class="num">${a.attempt}</td><td class="state">${a.result}</td><td>${a.status === null ? (a.errorClass ?? '') : String(a.status)}</td><td class="num">${String(Math.round(a.durationMs))}</td><td class="mono">${a.nextRetryAt ?? ''}</td><td>${a.source === 'wait_list' ? 'the wait list' : 'its job'}</td></tr>`,
      )}</tbody></table>${log.cursor ? html`<p><a href="/panel/endpoints/${e.endpointId}?attempts=${encodeURIComponent(log.cursor)}">Older attempts</a></p>` : ''}`
    : html`<p>No attempts in the last 30 days.</p>`
}`;
        return htmlResponse(page(`Endpoint ${e.endpointId}`, sections, body, { refreshSeconds: 3 }));
      }),
  });

  const enable = route({
    method: 'POST',
    path: '/panel/endpoints/{id}/enable',
    auth: 'none',
    summary: 'Panel: enable an endpoint',
    params: z.object({ id: endpointId }),
    handler: ({ params, rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        await api.enableEndpoint(params.id);
        return redirect(`/panel/endpoints/${params.id}`);
      }),
  });

  const redeliver = route({
    method: 'POST',
    path: '/panel/endpoints/{id}/redeliver',
    auth: 'none',
    summary: 'Panel: run every discarded delivery of an endpoint again (enabling it first if disabled)',
    params: z.object({ id: endpointId }),
    handler: ({ params, rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        try {
          await api.redeliverEndpoint(params.id);
        } catch (error) {
          // 409: disabled. The button says "Enable and redeliver": enable, then redeliver.
          if (!(error instanceof OpsApiError && error.status === 409)) throw error;
          await api.enableEndpoint(params.id);
          await api.redeliverEndpoint(params.id);
        }
        return redirect(`/panel/endpoints/${params.id}`);
      }),
  });

  const mail = route({
    method: 'GET',
    path: '/panel/mail',
    auth: 'none',
    summary: 'Panel: mail the local SMTP sink caught',
    handler: () =>
      renderErrors(sections, async () => {
        const sink = await api.listMail();
        const body = sink
          ? html`<p>${sink.total} message${sink.total === 1 ? '' : 's'} at the SMTP sink ${sink.smtp}${sink.total > sink.messages.length ? `, the newest ${sink.messages.length} shown` : ''}.</p>
<table><thead><tr><th scope="col">Received</th><th scope="col">Kind</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">Message-ID</th></tr></thead>
<tbody>${sink.messages.map((m) => html`<tr><td class="mono">${m.receivedAt}</td><td>${m.kind ?? ''}</td><td>${m.envelope.to.join(', ')}</td><td><a href="/panel/mail/${m.id}/raw">${m.subject ?? '(no subject)'}</a></td><td class="mono">${m.messageId ?? ''}</td></tr>`)}</tbody></table>`
          : html`<p class="notice">This API keeps no mail: it leaves through SES (a deployed stack) or the SMTP server SMTP_URL names.</p>`;
        return htmlResponse(page('Mail', sections, body, { refreshSeconds: 5 }));
      }),
  });

  const rawMail = route({
    method: 'GET',
    path: '/panel/mail/{id}/raw',
    auth: 'none',
    summary: 'Panel: one message exactly as the sink received it',
    params: z.object({ id: z.string().uuid() }),
    handler: ({ params }) =>
      renderErrors(sections, async () => ({
        status: 200,
        text: await api.rawMail(params.id),
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
      })),
  });

  return [batches, ...batchPages(deps), endpoints, endpoint, enable, redeliver, mail, rawMail];
}
