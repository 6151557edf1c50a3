import { z } from 'zod';
import { notFound, route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { SmtpSink } from '../platform/local/smtp-sink.ts';
import { allStates } from '../jobs/index.ts';
import type { JobClient, JobRow } from '../jobs/index.ts';
import { batchView } from '../calls/api.ts';
import type { CallsStore } from '../calls/store.ts';
import type { WebhooksContext } from '../webhooks/context.ts';
import { EndpointDisabledError, EndpointNotFoundError } from '../webhooks/errors.ts';
import { html } from './html.ts';
import type { Html } from './html.ts';
import { formTokenField, htmlResponse, page, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';

export interface PipelinePagesDeps {
  formToken: string;
  jobs: JobClient;
  calls: () => CallsStore;
  webhooks: () => WebhooksContext;
  sink: SmtpSink | undefined;
  sections: readonly PanelSection[];
}

const redirect = (location: string) => ({ status: 303, text: '', headers: { location } });
const counts = (record: Record<string, number>): Html =>
  html`${Object.entries(record)
    .filter(([, n]) => n > 0)
    .map(([k, n], i) => html`${i ? ', ' : ''}${k} <strong>${n}</strong>`)}`;

/**
 * Delivery jobs of one endpoint: up to 200 of each state (read state by state, so a busy endpoint's
 * completed deliveries cannot crowd out another's discarded ones), newest first.
 */
async function deliveriesOf(jobs: JobClient, endpointId: string): Promise<JobRow[]> {
  const pages = await Promise.all(allStates.map((state) => jobs.list({ state, kind: 'webhook.deliver', limit: 200 })));
  return pages
    .flatMap((p) => p.jobs)
    .filter((j) => (j.args as { endpointId?: string }).endpointId === endpointId)
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
}

/** Runs a button's action on an endpoint; an endpoint that does not exist is a 404. */
async function endpointAction(endpointId: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (error) {
    if (error instanceof EndpointNotFoundError) throw notFound(`endpoint ${endpointId}`);
    throw error;
  }
}

/**
 * The panel's pipeline pages: batches with their rounds and contacts, endpoints with failingSince,
 * disabled and a redeliver button, and the mail the local SMTP sink caught.
 */
export function pipelinePages(deps: PipelinePagesDeps): ApiRoute[] {
  const batches = route({
    method: 'GET',
    path: '/panel/batches',
    auth: 'none',
    summary: 'Panel: batches',
    handler: async () => {
      const rows = await deps.calls().listBatches(100);
      const body = rows.length
        ? html`<table><thead><tr><th scope="col">Batch</th><th scope="col">Tenant</th><th scope="col">Status</th><th scope="col">Round</th><th scope="col">Contacts by status</th><th scope="col">Completed by code</th></tr></thead>
<tbody>${rows.map((row) => {
            const v = batchView(row);
            return html`<tr><td class="mono"><a href="/panel/batches/${encodeURIComponent(v.batchId)}">${v.batchId}</a></td><td>${row.tenantId}</td><td class="state">${v.status}</td><td class="num">${v.round}/${v.maxAttempts}</td><td>${counts(v.counts.byStatus)}</td><td>${counts(v.counts.byCode)}</td></tr>`;
          })}</tbody></table>`
        : html`<p>No batches yet.</p>`;
      return htmlResponse(page('Batches', deps.sections, body, { refreshSeconds: 3 }));
    },
  });

  const batch = route({
    method: 'GET',
    path: '/panel/batches/{id}',
    auth: 'none',
    summary: 'Panel: one batch, its rounds and contacts',
    params: z.object({ id: z.string().min(1).max(100) }),
    handler: async ({ params }) => {
      const row = await deps.calls().getBatch(params.id);
      if (!row) throw notFound(`batch ${params.id}`);
      const v = batchView(row);
      const finalisers = await Promise.all(Array.from({ length: v.round }, (_, i) => deps.jobs.get(`calls.finalise:${v.batchId}:${i + 1}`)));
      const contacts = await deps.calls().listContacts(v.batchId);
      const body = html`<p>Status <strong>${v.status}</strong>, round ${v.round} of ${v.maxAttempts}. Contacts: ${counts(v.counts.byStatus)}.</p>
<h2>Rounds</h2>
<table><thead><tr><th scope="col">Round</th><th scope="col">Finaliser job</th><th scope="col">State</th></tr></thead>
<tbody>${finalisers.map((job, i) => html`<tr><td class="num">${i + 1}</td><td class="mono">${job ? html`<a href="/panel/jobs/${encodeURIComponent(job.id)}">${job.id}</a>` : 'not yet (calls still active)'}</td><td class="state state-${job?.state ?? ''}">${job?.state ?? ''}</td></tr>`)}</tbody></table>
<h2>Contacts</h2>
<table><thead><tr><th scope="col">Number</th><th scope="col">Status</th><th scope="col">Code</th><th scope="col">Attempts</th></tr></thead>
<tbody>${contacts.map(({ number, state }) => html`<tr><td class="mono">${number}</td><td>${state?.status ?? 'Queued'}</td><td>${state?.code ?? ''}</td><td class="num">${state?.attempts ?? 0}</td></tr>`)}</tbody></table>`;
      return htmlResponse(page(`Batch ${v.batchId}`, deps.sections, body, { refreshSeconds: 3 }));
    },
  });

  const endpoints = route({
    method: 'GET',
    path: '/panel/endpoints',
    auth: 'none',
    summary: 'Panel: webhook endpoints',
    handler: async () => {
      const rows = await deps.webhooks().deps.store.listEndpoints(100);
      const body = rows.length
        ? html`<table><thead><tr><th scope="col">Endpoint</th><th scope="col">Tenant</th><th scope="col">URL</th><th scope="col">Failing since</th><th scope="col">Disabled</th></tr></thead>
<tbody>${rows.map(
            (e) =>
              html`<tr><td class="mono"><a href="/panel/endpoints/${e.endpointId}">${e.endpointId}</a></td><td>${e.tenantId}</td><td class="mono">${e.url}</td><td class="mono ${e.failingSince ? 'warn' : ''}">${e.failingSince ?? ''}</td><td class="${e.disabled ? 'bad' : ''}">${e.disabled ? `yes (${e.disabledReason ?? ''})` : 'no'}</td></tr>`,
          )}</tbody></table>`
        : html`<p>No endpoints yet.</p>`;
      return htmlResponse(page('Webhook endpoints', deps.sections, body, { refreshSeconds: 3 }));
    },
  });

  const endpoint = route({
    method: 'GET',
    path: '/panel/endpoints/{id}',
    auth: 'none',
    summary: 'Panel: one endpoint and its deliveries',
    params: z.object({ id: z.string().regex(/^ep_[a-f0-9]{32}$/) }),
    handler: async ({ params }) => {
      const e = await deps.webhooks().deps.store.getEndpoint(params.id);
      if (!e) throw notFound(`endpoint ${params.id}`);
      const deliveries = await deliveriesOf(deps.jobs, e.endpointId);
      const discarded = deliveries.filter((j) => j.state === 'discarded');
      const body = html`<dl>
<dt>URL</dt><dd class="mono">${e.url}</dd>
<dt>Tenant</dt><dd>${e.tenantId}</dd>
<dt>Event types</dt><dd>${e.eventTypes?.join(', ') ?? 'all'}</dd>
<dt>Failing since</dt><dd class="mono">${e.failingSince ?? '—'}</dd>
<dt>Disabled</dt><dd class="${e.disabled ? 'bad' : ''}">${e.disabled ? `yes: ${e.disabledReason ?? ''} (${e.disabledAt ?? ''})` : 'no'}</dd>
</dl>
<form class="inline" method="post" action="/panel/endpoints/${e.endpointId}/redeliver">${formTokenField(deps.formToken)}<button type="submit">${e.disabled ? 'Enable and redeliver' : 'Redeliver'} ${discarded.length} discarded</button></form>
${e.disabled ? html` <form class="inline" method="post" action="/panel/endpoints/${e.endpointId}/enable">${formTokenField(deps.formToken)}<button type="submit">Enable</button></form>` : ''}
<h2>Deliveries (${deliveries.length})</h2>
<table><thead><tr><th scope="col">Delivery job (event, endpoint)</th><th scope="col">State</th><th scope="col">Attempt</th><th scope="col">Discard reason</th><th scope="col">Last error</th></tr></thead>
<tbody>${deliveries.map(
        (j) =>
          html`<tr><td class="mono"><a href="/panel/jobs/${encodeURIComponent(j.id)}">${j.id}</a></td><td class="state state-${j.state}">${j.state}</td><td class="num">${j.attempt}/${j.maxAttempts}</td><td>${j.discardReason ?? ''}</td><td>${j.attempts.filter((a) => a.error).at(-1)?.error ?? ''}</td></tr>`,
      )}</tbody></table>`;
      return htmlResponse(page(`Endpoint ${e.endpointId}`, deps.sections, body, { refreshSeconds: 3 }));
    },
  });

  const enable = route({
    method: 'POST',
    path: '/panel/endpoints/{id}/enable',
    auth: 'none',
    summary: 'Panel: enable an endpoint',
    params: z.object({ id: z.string().regex(/^ep_[a-f0-9]{32}$/) }),
    handler: async ({ params, rawBody }) => {
      requireFormToken(rawBody, deps.formToken);
      await endpointAction(params.id, () => deps.webhooks().endpoints.enable(params.id));
      return redirect(`/panel/endpoints/${params.id}`);
    },
  });

  const redeliver = route({
    method: 'POST',
    path: '/panel/endpoints/{id}/redeliver',
    auth: 'none',
    summary: 'Panel: run every discarded delivery of an endpoint again (enabling it first if disabled)',
    params: z.object({ id: z.string().regex(/^ep_[a-f0-9]{32}$/) }),
    handler: async ({ params, rawBody }) => {
      requireFormToken(rawBody, deps.formToken);
      const context = deps.webhooks();
      await endpointAction(params.id, async () => {
        try {
          await context.endpoints.redeliver(params.id);
        } catch (error) {
          if (!(error instanceof EndpointDisabledError)) throw error;
          await context.endpoints.enable(params.id);
          await context.endpoints.redeliver(params.id);
        }
      });
      return redirect(`/panel/endpoints/${params.id}`);
    },
  });

  const mail = route({
    method: 'GET',
    path: '/panel/mail',
    auth: 'none',
    summary: 'Panel: mail the local SMTP sink caught',
    handler: async () => {
      const messages = deps.sink ? deps.sink.messages().reverse() : [];
      const body = deps.sink
        ? html`<p>${messages.length} message${messages.length === 1 ? '' : 's'} at the SMTP sink ${deps.sink.url}.</p>
<table><thead><tr><th scope="col">Received</th><th scope="col">Kind</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">Message-ID</th></tr></thead>
<tbody>${messages.map((m) => html`<tr><td class="mono">${m.receivedAt}</td><td>${m.headers['x-redial-kind'] ?? ''}</td><td>${m.envelope.to.join(', ')}</td><td><a href="/v1/ops/mail/${m.id}/raw">${m.subject ?? '(no subject)'}</a></td><td class="mono">${m.messageId ?? ''}</td></tr>`)}</tbody></table>`
        : html`<p class="notice">Mail goes to an outside SMTP server (SMTP_URL); nothing is kept here.</p>`;
      return htmlResponse(page('Mail', deps.sections, body, { refreshSeconds: 5 }));
    },
  });

  return [batches, batch, endpoints, endpoint, enable, redeliver, mail];
}
