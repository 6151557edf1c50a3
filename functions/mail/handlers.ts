import { iso } from '../platform/clock.ts';
import { discard, handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import { caps, recipientKey, windowOf } from './caps.ts';
import type { Notice, SlotRequest } from './store.ts';
import { classifySendError } from './classify.ts';
import { MailMetric } from './context.ts';
import type { MailDeps } from './context.ts';
import { MarkRefusedError } from './errors.ts';
import { approvalMailKind, emailConfirmationKind, MailDiscardReason, ownerNotifyKind, tenantIdSchema } from './kinds.ts';
import { linkPaths, linkTo } from './links.ts';
import { composeRaw, isMessageIdSafe, messageIdFor } from './message.ts';
import type { OutgoingMail } from './message.ts';
import { notifyTemplates, renderAccessRequest, renderEmailConfirmation } from './templates.ts';
import type { Rendered } from './templates.ts';
import { hashToken } from './tokens.ts';

/**
 * The three mail kinds' handlers. Each follows the same order, "send, then mark" (docs/mail.md):
 *
 *   1. read the domain row: marked already (a run after the mark) → done, nothing sent;
 *      nothing to send (superseded, resolved, no confirmed owner) → done, counted;
 *   2. take cap slots: owner burst cap spent → a recorded, counted drop; recipient cap spent → snooze
 *      to the next window (nothing dropped, no attempt spent);
 *   3. send once; a failure is classified (classify.ts): retryable → throw, rejected → discard, throttled → snooze;
 *   4. mark the domain row (notifiedAt, pendingMailedAt, mailedAt).
 *
 * A crash between 3 and 4 sends the mail again on the next run, with the same Message-ID.
 */
export function mailHandlers(deps: MailDeps): JobHandler<unknown>[] {
  return [ownerNotifyHandler(deps), emailConfirmationHandler(deps), approvalMailHandler(deps)] as JobHandler<unknown>[];
}

/** Takes the slots a mail needs. Returns 'dropped' if a drop cap is spent; throws a snooze if the recipient cap is. */
async function reserve(deps: MailDeps, ctx: JobContext, recipient: string, burstOwner?: string): Promise<'granted' | 'dropped'> {
  const requests: SlotRequest[] = [{ cap: caps.recipient, subject: recipientKey(recipient) }];
  if (burstOwner !== undefined) requests.unshift({ cap: caps.ownerNotify, subject: burstOwner });
  const result = await deps.store.takeSlots(ctx.id, requests, ctx.now());
  if (result.granted) return 'granted';
  if (result.full.some((cap) => cap.over === 'drop')) return 'dropped';
  const window = windowOf(caps.recipient, ctx.now());
  deps.metrics.count(MailMetric.capSnoozed, { kind: ctx.kind, cap: caps.recipient.name });
  throw snooze({ until: window.end }, `recipient cap spent (${caps.recipient.limit} per hour); next window ${iso(window.end)}`);
}

/** Composes and sends once; a failure becomes the job layer's signal. */
async function send(deps: MailDeps, ctx: JobContext, mail: OutgoingMail): Promise<string | undefined> {
  const raw = await composeRaw(mail);
  try {
    const { providerMessageId } = await deps.transport.send({ from: mail.from, to: mail.to, raw }, ctx.signal);
    deps.metrics.count(MailMetric.sent, { kind: ctx.kind, transport: deps.transport.name });
    return providerMessageId;
  } catch (error) {
    const failure = classifySendError(deps.transport.name, error);
    switch (failure.type) {
      case 'rejected':
        throw discard(MailDiscardReason.mail_rejected, failure.reason, { cause: error });
      case 'throttled':
        deps.metrics.count(MailMetric.throttled, { kind: ctx.kind, transport: deps.transport.name });
        throw snooze({ delayMs: failure.delayMs }, failure.reason);
      case 'retryable':
        throw new Error(failure.reason, { cause: error });
    }
  }
}

function outgoing(deps: MailDeps, ctx: JobContext, eventId: string, to: string, content: Rendered): OutgoingMail {
  return { kind: ctx.kind, eventId, from: deps.config.from, to, messageId: messageIdFor(eventId, deps.config.domain), date: ctx.now(), content };
}

function skip(deps: MailDeps, ctx: JobContext, reason: string, detail: Record<string, unknown>): void {
  deps.metrics.count(MailMetric.skipped, { kind: ctx.kind, reason });
  ctx.logger.warn(`nothing sent: ${reason}`, detail);
}

/** Records a notice once; a record that exists already (a run after a crash) stands. */
async function recordNotice(deps: MailDeps, ctx: JobContext, notice: Omit<Notice, 'expiresAt'>): Promise<void> {
  try {
    await deps.store.putNotice(notice, ctx.now());
  } catch (error) {
    if (!(error instanceof MarkRefusedError)) throw error;
    ctx.logger.warn('notice recorded already', { eventId: notice.eventId });
  }
}

/** owner.notify: the tenant's confirmed owner hears about an event, at most 5 times an hour. */
function ownerNotifyHandler(deps: MailDeps) {
  return handle(ownerNotifyKind, async (args, ctx) => {
    const { tenantId, eventId } = args;
    if (!tenantIdSchema.safeParse(tenantId).success) throw discard('invalid_args', `tenantId ${JSON.stringify(tenantId)} cannot key the mail table`);
    if (!isMessageIdSafe(eventId)) throw discard('invalid_args', `eventId ${JSON.stringify(eventId)} cannot be used in a Message-ID`);
    const template = notifyTemplates[args.template];
    const data = template.data.safeParse(args.data);
    if (!data.success) {
      throw discard('invalid_args', `data for ${args.template}: ${data.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    const base = { tenantId, eventId, template: args.template, jobId: ctx.id };

    const existing = await deps.store.getNotice(tenantId, eventId);
    if (existing) {
      ctx.logger.info('notice handled already', { eventId, status: existing.status });
      return;
    }
    const contact = await deps.store.getContact(tenantId);
    if (!contact?.email || !contact.confirmedAt) {
      skip(deps, ctx, 'no_confirmed_owner', { tenantId, eventId });
      await recordNotice(deps, ctx, { ...base, status: 'skipped', skippedAt: iso(ctx.now()), reason: 'no_confirmed_owner' });
      return;
    }
    if ((await reserve(deps, ctx, contact.email, template.burstCapped ? tenantId : undefined)) === 'dropped') {
      deps.metrics.count(MailMetric.dropped, { kind: ctx.kind, reason: 'owner_burst_cap' });
      ctx.logger.warn('dropped: owner-notify burst cap spent', { tenantId, eventId, limit: caps.ownerNotify.limit });
      await recordNotice(deps, ctx, { ...base, status: 'dropped', droppedAt: iso(ctx.now()), reason: 'owner_burst_cap' });
      return;
    }
    const mail = outgoing(deps, ctx, eventId, contact.email, (template.render as (tenantId: string, data: unknown) => Rendered)(tenantId, data.data));
    const providerMessageId = await send(deps, ctx, mail);
    await recordNotice(deps, ctx, {
      ...base,
      status: 'sent',
      notifiedAt: iso(ctx.now()),
      recipient: contact.email,
      messageId: mail.messageId,
      ...(providerMessageId ? { providerMessageId } : {}),
    });
  });
}

/** owner.email_confirmation: the pending owner address gets its confirmation link. */
function emailConfirmationHandler(deps: MailDeps) {
  return handle(emailConfirmationKind, async (args, ctx) => {
    const { tenantId, confirmationId } = args;
    const contact = await deps.store.getContact(tenantId);
    if (!contact || contact.pendingId !== confirmationId || !contact.pendingEmail || !contact.pendingExpiresAt) {
      skip(deps, ctx, 'superseded', { tenantId, confirmationId });
      return;
    }
    if (contact.pendingMailedAt) {
      ctx.logger.info('confirmation mailed already', { tenantId, confirmationId });
      return;
    }
    if (Date.parse(contact.pendingExpiresAt) <= ctx.now()) {
      skip(deps, ctx, 'expired', { tenantId, confirmationId });
      return;
    }
    // The row's token (a job enqueued before rows kept it carries its own); it must be the pending one's.
    const token = args.token ?? contact.pendingToken;
    if (token === undefined || hashToken(token) !== contact.pendingTokenHash) throw discard('invalid_args', `no token of the one pending for ${confirmationId}`);

    await reserve(deps, ctx, contact.pendingEmail);
    const link = linkTo(deps.config.publicBaseUrl, linkPaths.confirmEmail, { tenantId }, token);
    const content = renderEmailConfirmation({ tenantId, email: contact.pendingEmail, link, expiresAt: contact.pendingExpiresAt });
    await send(deps, ctx, outgoing(deps, ctx, `owner.email_confirmation.${confirmationId}`, contact.pendingEmail, content));
    try {
      await deps.store.markConfirmationMailed(tenantId, confirmationId, ctx.now());
    } catch (error) {
      if (!(error instanceof MarkRefusedError)) throw error;
      ctx.logger.info('confirmation not marked: confirmed or superseded meanwhile', { tenantId, confirmationId });
    }
  });
}

/** access_request.approval_mail: the confirmed owner gets approve and deny links. */
function approvalMailHandler(deps: MailDeps) {
  return handle(approvalMailKind, async (args, ctx) => {
    const { tenantId, requestId } = args;
    const request = await deps.store.getAccessRequest(tenantId, requestId);
    if (!request) throw discard(MailDiscardReason.not_found, `access request ${requestId} of tenant ${tenantId} not found`);
    if (request.mailedAt) {
      ctx.logger.info('approval mail sent already', { tenantId, requestId });
      return;
    }
    if (request.status !== 'pending') {
      skip(deps, ctx, 'resolved', { tenantId, requestId, status: request.status });
      return;
    }
    if (Date.parse(request.tokenExpiresAt) <= ctx.now()) {
      skip(deps, ctx, 'expired', { tenantId, requestId });
      return;
    }
    const token = args.token ?? request.mailToken;
    if (token === undefined || hashToken(token) !== request.tokenHash) throw discard('invalid_args', `no token of the one of ${requestId}`);
    const contact = await deps.store.getContact(tenantId);
    if (!contact?.email || !contact.confirmedAt) {
      skip(deps, ctx, 'no_confirmed_owner', { tenantId, requestId });
      return;
    }

    await reserve(deps, ctx, contact.email);
    const params = { tenantId, requestId };
    const content = renderAccessRequest({
      tenantId,
      requesterEmail: request.email,
      approveLink: linkTo(deps.config.publicBaseUrl, linkPaths.approveAccess, params, token),
      denyLink: linkTo(deps.config.publicBaseUrl, linkPaths.denyAccess, params, token),
      expiresAt: request.tokenExpiresAt,
    });
    await send(deps, ctx, outgoing(deps, ctx, `access_request.${requestId}`, contact.email, content));
    try {
      await deps.store.markAccessMailed(tenantId, requestId, ctx.now());
    } catch (error) {
      if (!(error instanceof MarkRefusedError)) throw error;
      ctx.logger.info('approval mail marked already', { tenantId, requestId });
    }
  });
}
