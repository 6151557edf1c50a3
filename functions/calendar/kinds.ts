import * as z from 'zod';
import { defineKind, policy, schedule } from '../jobs/index.ts';

/**
 * The calendar context's job kind, as data. `supplier.invoke` is the durable side of a call to a supplier
 * that a route made once (the seed: "a retry that matters, such as the compensating calendar delete, is a
 * durable supplier.invoke job"). Its one operation today is `calendar.settle` (settle.ts): written in the
 * hold's transaction, due at the route's deadline plus {@link SETTLE_GRACE_MS}, it leaves a kept booking
 * alone and deletes whatever else the route inserted.
 * The context's module (module.ts) declares it with the `calendar` queue, so `ops policies` prints its row.
 */

/**
 * supplier.invoke's policy: 12 attempts, 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then 2 h each (11 waits,
 * about 11.7 h), discarded with an alert when exhausted. Far longer than DefaultBackoff's 10 attempts
 * (about 8.5 min) on purpose: what it deletes is a phantom appointment in a customer's calendar, so it outlasts a
 * Google incident and a user's calendar locked read-only for "several hours" (403 `quotaExceeded`).
 */
export const supplierInvokePolicy = policy({ maxAttempts: 12, backoff: schedule([5, 30, 120, 600, 1800, 3600, 7200]), onExhausted: 'discard_alert' });

/** Why a supplier.invoke is discarded by its handler (beside the job layer's own), for ops to filter on. */
export const SupplierDiscardReason = {
  /** The supplier refused the request for good (a 4xx other than 401, 408, 429 and Google's rate-limit 403s). */
  http_4xx: 'http_4xx',
  /** The supplier refused the credentials themselves (OAuth `invalid_grant`, `invalid_client`): the tenant must reconnect the calendar. */
  credentials_refused: 'credentials_refused',
} as const;
export type SupplierDiscardReason = (typeof SupplierDiscardReason)[keyof typeof SupplierDiscardReason];

/**
 * The handler's discards that must alert, as the exhausted ones do: each leaves an event redial inserted
 * in a customer's calendar. The kind declares them as its `alertingReasons` (jobs/kinds.ts), so the job
 * layer's decision (jobs/decide.ts) counts `JobDiscardedAlert` for them.
 */
export const ALERTING_DISCARD_REASONS: readonly SupplierDiscardReason[] = [SupplierDiscardReason.http_4xx, SupplierDiscardReason.credentials_refused];

/** How long after the route's deadline the settle job first runs: the route has committed or given up by then. */
export const SETTLE_GRACE_MS = 30_000;

/**
 * How long after the route's deadline an event that is not (yet) in the calendar is looked for once more:
 * an insert the route gave up on may still be applied by Google after the route stopped waiting.
 */
export const SETTLE_SECOND_LOOK_MS = 10 * 60_000;

/** Ids of the context (a tenant's, a calendar's, an appointment's): key-safe, as the calls context's. */
const id = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);

/** `calendar.settle`: one insert's event, and the hold it was made under. */
export const settleArgs = z.strictObject({
  op: z.literal('calendar.settle'),
  tenantId: id,
  calendarId: id,
  appointmentId: id,
  eventId: z.string().regex(/^[0-9a-v]{5,1024}$/),
  /** The route's deadline (ISO-8601 UTC): the insert was sent before it. */
  deadline: z.iso.datetime(),
});
export type SettleArgs = z.infer<typeof settleArgs>;

/** supplier.invoke: a call to a supplier, made durable. Its arguments name the operation. */
export const supplierInvokeKind = defineKind({
  kind: 'supplier.invoke',
  queue: 'calendar',
  policy: supplierInvokePolicy,
  // Two calendar requests (a read, a delete) and a token exchange, each within its own timeout, and a few store round trips.
  timeoutSeconds: 40,
  args: z.discriminatedUnion('op', [settleArgs]),
  discardReasons: Object.values(SupplierDiscardReason),
  alertingReasons: ALERTING_DISCARD_REASONS,
  description: 'Settles an appointment insert: keeps a booking the route committed, deletes any other insert from the calendar',
});
