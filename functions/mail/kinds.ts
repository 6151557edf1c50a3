import { z } from 'zod';
import { defineKind, policies } from '../jobs/index.ts';

/**
 * owner.notify: tells a tenant's owner something happened (a batch finalised). Subject to the
 * owner-notify burst cap (5 per owner per hour: over it, a deliberate, counted drop) and the
 * per-recipient cap (30 per hour: over it, a snooze to the next window).
 */
export const ownerNotifyKind = defineKind({
  kind: 'owner.notify',
  queue: 'mail',
  policy: policies['owner.notify'],
  timeoutSeconds: 30,
  args: z.object({
    tenantId: z.string().min(1),
    /** The domain event this mail is about; the Message-ID is `<eventId@MAIL_DOMAIN>`, so duplicates merge. */
    eventId: z.string().min(1),
    template: z.enum(['batch.finalised']),
    data: z.record(z.string(), z.unknown()),
  }),
  description: 'Mails the tenant owner about a domain event (batch finalised)',
});
