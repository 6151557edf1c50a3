import { iso } from '../platform/clock.ts';
import type { JobClient } from '../jobs/index.ts';
import { approvalMailKind } from './kinds.ts';
import type { AccessRequest, AccessStatus, MailStore } from './store.ts';
import { LinkRefusedError, NoConfirmedOwnerError } from './errors.ts';
import { hashToken, looksLikeToken, newId, newToken, secureRandomBytes, TOKEN_TTL_MS } from './tokens.ts';
import type { RandomBytes } from './tokens.ts';

/**
 * Access requests, kept small: someone gives their address; the tenant's confirmed owner gets a mail
 * with approve and deny links; the first link used decides, once. redial records the decision and shows
 * it (`GET /v1/tenants/{tenantId}/access-requests/{requestId}`); what access means is the caller's
 * business. One open request per address per tenant: while its links live (7 days), asking again
 * answers the open request and mails nothing.
 */
export interface AccessDeps {
  store: MailStore;
  jobs: JobClient;
  random?: RandomBytes;
}

/** The result of asking for access. `created: false`: an open request of this address answered instead. */
export interface AccessRequestResult {
  requestId: string;
  created: boolean;
}

/** Records a pending access request and enqueues the approval mail to the confirmed owner, in one transaction. */
export async function requestAccess(deps: AccessDeps, tenantId: string, email: string, now: number): Promise<AccessRequestResult> {
  const contact = await deps.store.getContact(tenantId);
  if (!contact?.email || !contact.confirmedAt) throw new NoConfirmedOwnerError(tenantId);
  const random = deps.random ?? secureRandomBytes;
  const requestId = newId('areq', random);
  const { token, hash } = newToken(random);
  const request: Omit<AccessRequest, 'expiresAt'> = {
    tenantId,
    requestId,
    email,
    status: 'pending',
    createdAt: iso(now),
    tokenHash: hash,
    tokenExpiresAt: iso(now + TOKEN_TTL_MS.accessRequest),
    // The raw token waits on the request until the mail is sent, never in the job row (ops can read jobs).
    mailToken: token,
  };
  const job = deps.jobs.prepare(approvalMailKind, { tenantId, requestId }, { id: `access_request.approval_mail:${requestId}`, at: now });
  const result = await deps.store.transact([...deps.store.accessRequestItems(request, now), job.item]);
  if (!result.committed) {
    if (result.contention || result.refused['open request']?.code !== 'ConditionalCheckFailed') throw result.error;
    const open = await deps.store.getOpenRequestOf(tenantId, email);
    // The open request expired between the refusal and this read: rare; the caller may ask again.
    if (!open) throw new Error(`access request of ${email} refused, but no open request was found`);
    return { requestId: open.requestId, created: false };
  }
  await deps.jobs.afterCommit([job]);
  return { requestId, created: true };
}

/** Follows an approve or deny link: pending → approved or denied, once; anything else is refused and changes nothing. */
export async function resolveAccess(
  store: MailStore,
  input: { tenantId: string; requestId: string; token: string; decision: 'approved' | 'denied' },
  now: number,
): Promise<AccessRequest> {
  if (!looksLikeToken(input.token)) throw new LinkRefusedError('invalid', 'this link is not valid');
  return store.resolveAccessRequest(input.tenantId, input.requestId, hashToken(input.token), input.decision, now);
}

/** An access request as the API shows it: never the token hash; `expired` when its links died unanswered. */
export function accessView(request: AccessRequest, now: number) {
  const status: AccessStatus | 'expired' = request.status === 'pending' && Date.parse(request.tokenExpiresAt) <= now ? 'expired' : request.status;
  return {
    requestId: request.requestId,
    tenantId: request.tenantId,
    email: request.email,
    status,
    createdAt: request.createdAt,
    expiresAt: request.tokenExpiresAt,
    mailedAt: request.mailedAt ?? null,
    resolvedAt: request.resolvedAt ?? null,
  };
}
