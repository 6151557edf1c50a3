import * as z from 'zod';
import { HttpError, route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { tenantIdSchema } from '../platform/tenancy.ts';
import { html } from './html.ts';
import { formTokenField, htmlResponse, page, redirect, renderErrors, requireFormToken } from './layout.ts';
import type { PanelSection } from './layout.ts';
import type { PanelApi } from './source.ts';

export interface SuppressionPagesDeps {
  formToken: string;
  api: PanelApi;
  sections: readonly PanelSection[];
}

/** Entries per page of the list. */
const PAGE_SIZE = 100;

const pageQuery = z.object({
  tenant: tenantIdSchema.optional().catch(undefined),
  cursor: z.string().max(2000).optional().catch(undefined),
});

/** The list page of a tenant. */
const listPath = (tenantId: string, cursor?: string) => `/panel/suppressions?tenant=${encodeURIComponent(tenantId)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;

/** A form's fields, the token's aside. */
const formFields = (rawBody: string) => new URLSearchParams(rawBody);

/** The form's tenant (a hidden field of the list page's forms). */
function tenantOf(fields: URLSearchParams): string {
  const tenant = tenantIdSchema.safeParse(fields.get('tenant') ?? '');
  if (!tenant.success) throw new HttpError(400, 'invalid_request', 'the form names no tenant; reload the list page');
  return tenant.data;
}

/**
 * The panel's suppression list (calls/compliance): one tenant's numbers that are never dialled, a page at
 * a time, with a form to add one and a button to remove each. Everything through the operator copies of
 * the tenant routes (`/v1/ops/tenants/{tenantId}/suppressions…`).
 */
export function suppressionPages(deps: SuppressionPagesDeps): ApiRoute[] {
  const { api, sections } = deps;

  const list = route({
    method: 'GET',
    path: '/panel/suppressions',
    auth: 'none',
    summary: 'Panel: a tenant’s suppression list',
    query: pageQuery,
    handler: ({ query }) =>
      renderErrors(sections, async () => {
        const pick = html`<form method="get" action="/panel/suppressions"><label>Tenant <input name="tenant" required value="${query.tenant ?? ''}"></label> <button type="submit">Show</button></form>`;
        if (!query.tenant) return htmlResponse(page('Suppression list', sections, html`${pick}<p>Name a tenant to see the numbers it never dials.</p>`));
        const tenant = query.tenant;
        const listing = await api.listSuppressions(tenant, { limit: PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) });
        const add = html`<h2>Add a number</h2>
<form method="post" action="/panel/suppressions/add">${formTokenField(deps.formToken)}<input type="hidden" name="tenant" value="${tenant}"><label>Number <input name="number" required placeholder="+14155550123"></label> <label>Reason <input name="reason" maxlength="200"></label> <button type="submit">Suppress</button></form>`;
        const rows = listing.suppressions.length
          ? html`<table aria-label="suppressed numbers"><thead><tr><th scope="col">Number</th><th scope="col">Source</th><th scope="col">Since</th><th scope="col">Reason</th><th scope="col">Call</th><th scope="col"></th></tr></thead>
<tbody>${listing.suppressions.map(
              (e) =>
                html`<tr><td class="mono">${e.number}</td><td>${e.source}</td><td class="mono">${e.createdAt}</td><td>${e.reason ?? ''}</td><td class="mono">${e.callId ?? ''}</td><td><form class="inline" method="post" action="/panel/suppressions/remove">${formTokenField(deps.formToken)}<input type="hidden" name="tenant" value="${tenant}"><input type="hidden" name="number" value="${e.number}"><button type="submit" aria-label="Remove ${e.number}">Remove</button></form></td></tr>`,
            )}</tbody></table>`
          : html`<p>${query.cursor ? 'No numbers on this page.' : 'No suppressed numbers.'}</p>`;
        const next = listing.cursor ? html`<p><a href="${listPath(tenant, listing.cursor)}">Next page</a></p>` : '';
        return htmlResponse(page(`Suppression list of ${tenant}`, sections, html`${pick}${add}<h2>Numbers never dialled</h2>${rows}${next}`));
      }),
  });

  const add = route({
    method: 'POST',
    path: '/panel/suppressions/add',
    auth: 'none',
    summary: 'Panel: put a number on a tenant’s suppression list',
    handler: ({ rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        const fields = formFields(rawBody);
        const tenant = tenantOf(fields);
        const reason = fields.get('reason')?.trim();
        await api.putSuppression(tenant, fields.get('number') ?? '', reason ? reason : undefined);
        return redirect(listPath(tenant));
      }),
  });

  const remove = route({
    method: 'POST',
    path: '/panel/suppressions/remove',
    auth: 'none',
    summary: 'Panel: take a number off a tenant’s suppression list',
    handler: ({ rawBody }) =>
      renderErrors(sections, async () => {
        requireFormToken(rawBody, deps.formToken);
        const fields = formFields(rawBody);
        const tenant = tenantOf(fields);
        await api.deleteSuppression(tenant, fields.get('number') ?? '');
        return redirect(listPath(tenant));
      }),
  });

  return [list, add, remove];
}
