import * as z from 'zod';
import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';
import { emailConfirmationKind, ownerNotifyKind } from './kinds.ts';
import type { OwnerContact } from './store.ts';
import type { MailStore } from './store.ts';
import { LinkRefusedError } from './errors.ts';
import { hashToken, looksLikeToken, newId, newToken, secureRandomBytes, TOKEN_TTL_MS } from './tokens.ts';
import type { RandomBytes } from './tokens.ts';

/** An email address as redial accepts it. */
export const emailSchema = z.email().max(254);

/** What {@link prepareOwnerEmailChange} needs. */
export interface OwnerEmailDeps {
  store: MailStore;
  jobs: JobClient;
  random?: RandomBytes;
}

/** The writes of an owner-address change, for the caller's transaction, and the job to wake after it commits. */
export interface PreparedOwnerEmailChange {
  /**
   * `unchanged`: the address is the confirmed one already; `pending`: it waits for its confirmation, a
   * new one, or (with `items` and `jobs` empty) the one already on its way.
   */
  status: 'pending' | 'unchanged';
  items: TransactItem[];
  jobs: PreparedJob[];
  confirmationId: string | undefined;
}

/**
 * Prepares a change of a tenant's owner address: the address becomes *pending* (the confirmed one, if
 * any, keeps getting notifications) with a fresh single-use token, and an owner.email_confirmation job
 * mails it the link. Nothing is written: put `items` in your TransactWriteItems with your own change
 * (the tenant row) and, once committed, pass `jobs` to `jobs.afterCommit`. A change to another address
 * supersedes an older pending one, whose link then stops working; a change to the address already
 * pending (and not expired) writes nothing, so its link keeps working.
 *
 * @example
 * const change = await prepareOwnerEmailChange({ store, jobs }, tenantId, body.ownerEmail, clock.now());
 * const outcome = await transact(db, [tenantItem, ...change.items]);
 * await jobs.afterCommit(change.jobs);
 */
export async function prepareOwnerEmailChange(deps: OwnerEmailDeps, tenantId: string, email: string, now: number): Promise<PreparedOwnerEmailChange> {
  const address = emailSchema.parse(email.trim());
  const contact = await deps.store.getContact(tenantId);
  if (contact?.confirmedAt && contact.email?.toLowerCase() === address.toLowerCase()) {
    return { status: 'unchanged', items: [], jobs: [], confirmationId: undefined };
  }
  // The same address asked for again (a client re-sending its PUT after a 503, say) keeps the
  // confirmation on its way: a new token would make the link it was mailed stop working.
  if (contact?.pendingEmail?.toLowerCase() === address.toLowerCase() && contact.pendingExpiresAt && Date.parse(contact.pendingExpiresAt) > now) {
    return { status: 'pending', items: [], jobs: [], confirmationId: contact.pendingId };
  }
  const random = deps.random ?? secureRandomBytes;
  const confirmationId = newId('conf', random);
  const { token, hash } = newToken(random);
  // The raw token waits on the owner row until the mail is sent, never in the job row (ops can read jobs).
  const item = deps.store.pendingEmailItem({ tenantId, email: address, pendingId: confirmationId, token, tokenHash: hash, expiresAt: now + TOKEN_TTL_MS.emailConfirmation, now });
  const job = deps.jobs.prepare(emailConfirmationKind, { tenantId, confirmationId }, { id: `owner.email_confirmation:${confirmationId}`, at: now });
  return { status: 'pending', items: [item, job.item], jobs: [job], confirmationId };
}

/** Changes the owner address on its own (its own transaction): for callers with nothing else to write. */
export async function changeOwnerEmail(deps: OwnerEmailDeps, tenantId: string, email: string, now: number): Promise<PreparedOwnerEmailChange> {
  const change = await prepareOwnerEmailChange(deps, tenantId, email, now);
  if (change.items.length) {
    const result = await deps.store.transact(change.items);
    if (!result.committed) throw result.error;
    await deps.jobs.afterCommit(change.jobs);
  }
  return change;
}

/**
 * Follows a confirmation link: the pending address becomes the confirmed owner address, once. A reused,
 * expired, superseded or forged token raises {@link LinkRefusedError} and changes nothing.
 */
export async function confirmOwnerEmail(store: MailStore, tenantId: string, token: string, now: number): Promise<OwnerContact> {
  if (!looksLikeToken(token)) throw new LinkRefusedError('invalid', 'this link is not valid');
  return store.confirmEmail(tenantId, hashToken(token), now);
}

/** The owner's contact as the API shows it: never a token hash. */
export function ownerView(tenantId: string, contact: OwnerContact | undefined, now: number) {
  const pendingAlive = contact?.pendingEmail && contact.pendingExpiresAt && Date.parse(contact.pendingExpiresAt) > now;
  return {
    tenantId,
    email: contact?.confirmedAt ? (contact.email ?? null) : null,
    confirmedAt: contact?.confirmedAt ?? null,
    pending: pendingAlive
      ? { email: contact.pendingEmail!, requestedAt: contact.pendingRequestedAt ?? null, expiresAt: contact.pendingExpiresAt!, mailedAt: contact.pendingMailedAt ?? null }
      : null,
  };
}

/**
 * The owner.notify job that tells a tenant's owner a batch is finalised, for the caller's transaction; its
 * id follows from the event, so a repeated finalisation prepares the same job.
 */
export function prepareBatchFinalisedNotice(jobs: JobClient, input: { tenantId: string; eventId: string; summary: Record<string, unknown> }): PreparedJob {
  return jobs.prepare(ownerNotifyKind, { tenantId: input.tenantId, eventId: input.eventId, template: 'batch.finalised', data: input.summary }, { id: `owner.notify:${input.eventId}` });
}

/**
 * The owner.notify job that tells a tenant's owner redial disabled one of its endpoints, for the caller's
 * transaction (functions/webhooks/notices.ts commits it with the disable's notice); its id follows from the
 * notice's event, so a repeated notice prepares the same job. Exempt from the owner-notify burst cap.
 */
export function prepareEndpointDisabledNotice(jobs: JobClient, input: { tenantId: string; eventId: string; data: { endpointId: string; url: string; reason: string; disabledAt: string } }): PreparedJob {
  return jobs.prepare(ownerNotifyKind, { tenantId: input.tenantId, eventId: input.eventId, template: 'endpoint.disabled', data: input.data }, { id: `owner.notify:${input.eventId}` });
}
