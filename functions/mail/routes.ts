import * as z from 'zod';
import { conflict, notFound, route, withErrors } from '../platform/http.ts';
import type { ApiResponse, ApiRoute, HttpError } from '../platform/http.ts';
import { accessView, requestAccess, resolveAccess } from './access.ts';
import type { MailDeps } from './context.ts';
import { LinkRefusedError, NoConfirmedOwnerError } from './errors.ts';
import { tenantIdSchema } from './kinds.ts';
import { linkPaths } from './links.ts';
import { confirmOwnerEmail, emailSchema, ownerView } from './owner.ts';
import { escapeHtml } from '../platform/html.ts';

const tenantParams = z.object({ tenantId: tenantIdSchema });
const requestParams = z.object({ tenantId: tenantIdSchema, requestId: z.string().regex(/^areq_[0-9a-f]{32}$/, 'not an access request id') });
/** A link's token. Any string is accepted here: a malformed one is refused like a forged one (410), not as bad input. */
const tokenQuery = z.object({ token: z.string().max(200) });

const accessViewSchema = z.object({
  requestId: z.string(),
  tenantId: z.string(),
  email: z.string(),
  status: z.enum(['pending', 'approved', 'denied', 'expired']),
  createdAt: z.string(),
  expiresAt: z.string(),
  mailedAt: z.string().nullable(),
  resolvedAt: z.string().nullable(),
});
const refusalSchema = z.object({ error: z.literal('link_refused'), reason: z.enum(['used', 'expired', 'invalid']), message: z.string() });

/** Whether the caller is a browser (someone clicked the link in a mail). */
const wantsHtml = (headers: Record<string, string>): boolean => (headers['accept'] ?? '').includes('text/html');

const htmlPage = (title: string, message: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>` +
  `<body style="font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 40rem; margin: 4rem auto; color: #1f2328;">` +
  `<h1 style="font-size: 1.4rem;">${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;

/** A link's answer: a small page for a browser, JSON for anything else. */
function linkAnswer(headers: Record<string, string>, status: number, title: string, message: string, body: unknown): ApiResponse {
  if (wantsHtml(headers)) return { status, text: htmlPage(title, message), headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } };
  return { status, body, headers: { 'cache-control': 'no-store' } };
}

/**
 * What opening a mailed link (GET) shows: a page whose button POSTs the same URL. The GET itself changes
 * nothing, because mail scanners (Safe Links, security gateways) fetch every link in a mail before its
 * reader does; only the POST uses the token.
 */
function linkPreview(path: string, params: z.ZodType, title: string, button: string) {
  return route({
    method: 'GET',
    path,
    auth: 'none',
    summary: `${title}: a page whose button POSTs this URL; opening it changes nothing`,
    params,
    query: tokenQuery,
    responses: { 200: { description: 'a page (text/html) with the button; JSON clients get where to POST' } },
    handler: ({ event, headers }) => {
      const self = `${event.rawPath}?${event.rawQueryString}`;
      if (!wantsHtml(headers)) return Promise.resolve({ status: 200, body: { action: button.toLowerCase(), method: 'POST', url: self }, headers: { 'cache-control': 'no-store' } });
      const page =
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>` +
        `<body style="font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 40rem; margin: 4rem auto; color: #1f2328;">` +
        `<h1 style="font-size: 1.4rem;">${escapeHtml(title)}</h1>` +
        `<form method="post" action="${escapeHtml(self)}"><button type="submit" style="font: inherit; padding: .4rem 1rem;">${escapeHtml(button)}</button></form></body></html>`;
      return Promise.resolve({ status: 200, text: page, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } });
    },
  });
}

/** A refused link: 410 Gone, whatever the reason, and nothing changed. */
function refusal(headers: Record<string, string>, error: LinkRefusedError): ApiResponse {
  return linkAnswer(headers, 410, 'This link does not work', error.message, { error: 'link_refused', reason: error.reason, message: error.message });
}

/**
 * The mail context's routes: the links mails carry (public: their token is their auth) and the access
 * request and owner-address views (IAM). `deps` is resolved per request, so listing the routes needs
 * no configuration.
 */
export function mailRoutes(deps: () => MailDeps): ApiRoute[] {
  const confirmEmail = route({
    method: 'POST',
    path: linkPaths.confirmEmail,
    auth: 'none',
    summary: 'Confirm the pending owner address (the button behind the confirmation link; single use)',
    params: tenantParams,
    query: tokenQuery,
    responses: { 200: { description: 'confirmed' }, 410: { description: 'used, expired, superseded or forged: nothing changed', schema: refusalSchema } },
    handler: async ({ params, query, headers }) => {
      const d = deps();
      try {
        const contact = await confirmOwnerEmail(d.store, params.tenantId, query.token, d.clock.now());
        return linkAnswer(headers, 200, 'Address confirmed', `${contact.email ?? ''} is now the owner address of tenant ${params.tenantId}.`, {
          status: 'confirmed',
          ...ownerView(params.tenantId, contact, d.clock.now()),
        });
      } catch (error) {
        if (error instanceof LinkRefusedError) return refusal(headers, error);
        throw error;
      }
    },
  });

  const resolve = (decision: 'approved' | 'denied', path: string) =>
    route({
      method: 'POST',
      path,
      auth: 'none',
      summary: `${decision === 'approved' ? 'Approve' : 'Deny'} an access request (the button behind a link in the approval mail; single use, the first used decides)`,
      params: requestParams,
      query: tokenQuery,
      responses: { 200: { description: decision, schema: accessViewSchema }, 410: { description: 'used, expired or forged: nothing changed', schema: refusalSchema } },
      handler: async ({ params, query, headers }) => {
        const d = deps();
        try {
          const request = await resolveAccess(d.store, { ...params, token: query.token, decision }, d.clock.now());
          return linkAnswer(headers, 200, `Request ${decision}`, `The access request of ${request.email} is ${decision}.`, accessView(request, d.clock.now()));
        } catch (error) {
          if (error instanceof LinkRefusedError) return refusal(headers, error);
          throw error;
        }
      },
    });

  const createRequest = route({
    method: 'POST',
    path: '/v1/tenants/{tenantId}/access-requests',
    auth: 'iam',
    summary: "Ask the tenant's confirmed owner for access: records a pending request and mails the owner approve/deny links",
    params: tenantParams,
    body: z.strictObject({ email: emailSchema }),
    responses: {
      201: { description: 'recorded; the approval mail is on its way', schema: accessViewSchema },
      200: { description: 'this address has an open request already; nothing was mailed', schema: accessViewSchema },
      409: { description: 'the tenant has no confirmed owner address' },
    },
    handler: async ({ params, body }) => {
      const d = deps();
      const now = d.clock.now();
      const result = await requestAccess(d, params.tenantId, body.email, now);
      const request = await d.store.getAccessRequest(params.tenantId, result.requestId);
      if (!request) throw notFound(`access request ${result.requestId}`);
      return { status: result.created ? 201 : 200, body: accessView(request, now) };
    },
  });

  const showRequest = route({
    method: 'GET',
    path: '/v1/tenants/{tenantId}/access-requests/{requestId}',
    auth: 'iam',
    summary: 'One access request and its decision',
    params: requestParams,
    responses: { 200: { description: 'the request', schema: accessViewSchema }, 404: { description: 'no such request' } },
    handler: async ({ params }) => {
      const d = deps();
      const request = await d.store.getAccessRequest(params.tenantId, params.requestId);
      if (!request) throw notFound(`access request ${params.requestId}`);
      return { status: 200, body: accessView(request, d.clock.now()) };
    },
  });

  const showOwner = route({
    method: 'GET',
    path: '/v1/tenants/{tenantId}/owner-email',
    auth: 'iam',
    summary: "The tenant's owner address: the confirmed one, and a pending one waiting for its link",
    params: tenantParams,
    handler: async ({ params }) => {
      const d = deps();
      return { status: 200, body: ownerView(params.tenantId, await d.store.getContact(params.tenantId), d.clock.now()) };
    },
  });

  const listNotices = route({
    method: 'GET',
    path: '/v1/tenants/{tenantId}/notices',
    auth: 'iam',
    summary: 'What became of each owner.notify of a tenant: sent, dropped (burst cap) or skipped (no confirmed owner)',
    params: tenantParams,
    handler: async ({ params }) => {
      const notices = await deps().store.listNotices(params.tenantId);
      return {
        status: 200,
        body: {
          notices: notices.map((n) => ({
            eventId: n.eventId,
            template: n.template,
            status: n.status,
            at: n.notifiedAt ?? n.droppedAt ?? n.skippedAt ?? null,
            reason: n.reason ?? null,
            messageId: n.messageId ?? null,
            jobId: n.jobId,
          })),
        },
      };
    },
  });

  return withErrors(mailHttpError, [
    linkPreview(linkPaths.confirmEmail, tenantParams, 'Confirm the owner address', 'Confirm'),
    linkPreview(linkPaths.approveAccess, requestParams, 'Approve this access request', 'Approve'),
    linkPreview(linkPaths.denyAccess, requestParams, 'Deny this access request', 'Deny'),
    confirmEmail, resolve('approved', linkPaths.approveAccess), resolve('denied', linkPaths.denyAccess), createRequest, showRequest, showOwner, listNotices]);
}

/**
 * The mail routes' errors as HTTP answers, in one place. A refused link is not here: its answer is a
 * page or JSON depending on who opened it, so its route renders it.
 */
export function mailHttpError(error: unknown): HttpError | undefined {
  if (error instanceof NoConfirmedOwnerError) return conflict(error.message, { reason: 'no_confirmed_owner' });
  return undefined;
}

