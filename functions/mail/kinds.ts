import * as z from 'zod';
import { defineKind, exponential, policy } from '../jobs/index.ts';

/** The mail kinds' policy: 8 attempts, 20 s then ×3 per attempt (7 waits, about 6.07 h in all); exhausted → discarded + alert. */
export const mailPolicy = policy({ maxAttempts: 8, backoff: exponential({ initialSeconds: 20, factor: 3 }) });

/** Why a mail job is discarded (beside the job layer's own): the transport refused it for good, or its subject is gone. */
export const MailDiscardReason = {
  mail_rejected: 'mail_rejected',
  not_found: 'not_found',
} as const;

/** A tenant id as the mail store keys it: no `#`, no spaces. */
export const tenantIdSchema = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits, ".", "_", ":" and "-" only');

/**
 * A link token as mails carry it (32 random bytes, base64url). Jobs enqueued now carry none (the mail row
 * keeps the raw token until its mail is sent); only a job enqueued before that change has one.
 */
const legacyTokenArg = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'not a link token').optional();

/**
 * owner.notify: tells a tenant's owner something happened (a batch finalised, an endpoint disabled).
 * Subject to the owner-notify burst cap (5 per owner per hour: over it, a deliberate, counted drop; an
 * endpoint's disabling is exempt: templates.ts `burstCapped`) and the per-recipient cap (30 per hour: over
 * it, a snooze to the next window).
 */
export const ownerNotifyKind = defineKind({
  kind: 'owner.notify',
  queue: 'mail',
  policy: mailPolicy,
  timeoutSeconds: 30,
  args: z.object({
    tenantId: z.string().min(1),
    /** The domain event this mail is about; the Message-ID is `<eventId@MAIL_DOMAIN>`, so duplicates merge. */
    eventId: z.string().min(1),
    template: z.enum(['batch.finalised', 'endpoint.disabled']),
    data: z.record(z.string(), z.unknown()),
  }),
  discardReasons: [MailDiscardReason.mail_rejected],
  description: 'Mails the tenant owner about a domain event (batch finalised, endpoint disabled)',
});

/**
 * owner.email_confirmation: mails a pending owner address the link that confirms it. The raw token is not
 * in the job's arguments: the owner row keeps it beside its hash until the mail is sent (the mark removes it).
 */
export const emailConfirmationKind = defineKind({
  kind: 'owner.email_confirmation',
  queue: 'mail',
  policy: mailPolicy,
  timeoutSeconds: 30,
  args: z.object({
    tenantId: tenantIdSchema,
    /** The pending change this mail confirms; `<owner.email_confirmation.<id>@MAIL_DOMAIN>` is its Message-ID. */
    confirmationId: z.string().regex(/^conf_[0-9a-f]{32}$/),
    token: legacyTokenArg,
  }),
  discardReasons: [MailDiscardReason.mail_rejected],
  description: 'Mails a new owner address the link that confirms it',
});

/**
 * access_request.approval_mail: asks the tenant's confirmed owner to approve or deny an access request.
 * The raw token is kept on the request until this mail is sent, not in the job's arguments.
 */
export const approvalMailKind = defineKind({
  kind: 'access_request.approval_mail',
  queue: 'mail',
  policy: mailPolicy,
  timeoutSeconds: 30,
  args: z.object({
    tenantId: tenantIdSchema,
    /** The request; `<access_request.<id>@MAIL_DOMAIN>` is its Message-ID. */
    requestId: z.string().regex(/^areq_[0-9a-f]{32}$/),
    token: legacyTokenArg,
  }),
  discardReasons: [MailDiscardReason.mail_rejected, MailDiscardReason.not_found],
  description: 'Asks the tenant owner to approve or deny an access request',
});

/** Every mail kind, for the composition root. */
export const mailKinds = [ownerNotifyKind, emailConfirmationKind, approvalMailKind] as const;
