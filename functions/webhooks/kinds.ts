import * as z from 'zod';
import { defaultPolicy, defineKind, periodicPolicy, policy, schedule } from '../jobs/index.ts';
import { eventSchema, webhookFanoutKind } from './events.ts';

/**
 * The webhooks context's job kinds, as data (webhook.fanout is declared with the events, in events.ts,
 * because domains enqueue it inside their own transactions).
 */

/**
 * webhook.deliver's policy: 18 attempts, 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h each (17 waits, about
 * 5.32 days); exhausted → discarded without an alert: the endpoint's own rules (failingSince, disabled
 * after 5 days of continuous failure) take over.
 */
export const deliveryPolicy = policy({ maxAttempts: 18, backoff: schedule([5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600]), onExhausted: 'discard' });

/** Why a delivery is discarded (beside the job layer's own), for ops to filter on. */
export const DeliveryDiscardReason = {
  /** The endpoint answered a 4xx other than 408 and 429: retrying gets the same answer. */
  http_4xx: 'http_4xx',
  /** The endpoint answered 410 Gone, and is disabled. */
  gone: 'gone',
  /** The SSRF guard refused the endpoint's address. */
  ssrf_blocked: 'ssrf_blocked',
  /** The endpoint is disabled (by 410, by 5 days of failure, or by ops). */
  endpoint_disabled: 'endpoint_disabled',
  /** The endpoint or the event is gone. */
  not_found: 'not_found',
  /** Its owner deleted the endpoint (`DELETE /v1/endpoints/{id}`): what waited for it is discarded. */
  endpoint_deleted: 'endpoint_deleted',
  /** It waited in its endpoint's wait list for the whole retention (30 days) and the sweep expired it. */
  wait_expired: 'wait_expired',
} as const;

export type DeliveryDiscardReason = (typeof DeliveryDiscardReason)[keyof typeof DeliveryDiscardReason];

/** Event and endpoint ids (`ep_<tenantId>.<hex>`: up to 100 characters), in the characters a job id may hold (they become part of one). */
const id = z.string().regex(/^[A-Za-z0-9._:@#-]{1,128}$/);

/**
 * webhook.deliver: one event to one endpoint, signed, once per attempt; 18 attempts over ≈ 5.3 days. The
 * event is in the arguments (absent only on deliveries enqueued before events travelled with their jobs,
 * which read its stored item). A delivery that succeeds goes on to send, within its own run, the
 * deliveries waiting behind it that have no job of their own (delivery.ts).
 */
export const webhookDeliverKind = defineKind({
  kind: 'webhook.deliver',
  queue: 'deliveries',
  policy: deliveryPolicy,
  // A request may take up to the request timeout (10 s by default); the rest is a few store round trips,
  // and the deliveries sent after its own while it has time (delivery.ts, DRAIN_BUDGET_MS).
  timeoutSeconds: 30,
  args: z.object({ eventId: id, endpointId: id, event: eventSchema.optional() }),
  discardReasons: Object.values(DeliveryDiscardReason),
  description: 'Delivers one event to one endpoint (Standard Webhooks), one delivery per endpoint at a time',
});

/**
 * webhook.wake: runs a parked delivery that was handed its endpoint's lease while it was still running
 * (so `jobs.client.retry` could not wake it). It looks again (a snooze: no attempt spent) until that
 * delivery has gone to sleep, or its lost run has been moved on by the rescuer, and can be woken — or no
 * longer holds the lease (waitlist.ts `wakeLookAgainAt`).
 */
export const webhookWakeKind = defineKind({
  kind: 'webhook.wake',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 10,
  args: z.object({ endpointId: id, jobId: z.string().min(1).max(200) }),
  description: 'Wakes a parked delivery that was handed the lease while it was still running',
});

/**
 * webhook.restart: gives a free lease to the oldest delivery waiting behind it and starts it. Enqueued by a
 * publisher that put a waiting delivery behind a lease it then found let go (its second look: publish.ts),
 * where it may not move the lease itself (the intake writes no endpoint row).
 */
export const webhookRestartKind = defineKind({
  kind: 'webhook.restart',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 10,
  args: z.object({ endpointId: id }),
  description: 'Starts the oldest delivery waiting behind an endpoint lease its holder let go',
});

/** How often the sweep runs. */
export const SWEEP_EVERY_SECONDS = 300;

/**
 * webhook.sweep (periodic): disables endpoints failing for five days even when no delivery runs, and
 * restarts a wait list whose lease holder vanished (crashed, cancelled) once its lease has expired.
 */
export const webhookSweepKind = defineKind({
  kind: 'webhook.sweep',
  queue: 'webhooks',
  policy: periodicPolicy,
  timeoutSeconds: 50,
  periodic: { everySeconds: SWEEP_EVERY_SECONDS },
  args: z.object({}),
  description: 'Applies the 5-day rule to failing endpoints and restarts stalled wait lists',
});

/**
 * webhook.purge: after an endpoint's deletion, discards everything that waited for it with reason
 * `endpoint_deleted`, counted (manage.ts runs it): each waiting delivery with no job becomes a discarded
 * job (a dead letter ops can see), each parked job and the lease holder is woken, finds the endpoint
 * deleted, and discards itself. A long wait list takes several runs.
 */
export const webhookPurgeKind = defineKind({
  kind: 'webhook.purge',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: z.object({ endpointId: id }),
  discardReasons: ['not_found'],
  description: 'Discards what waited for a deleted endpoint (endpoint_deleted), counted',
});

/** The notices about an endpoint (notices.ts). */
export const Notice = { disabled: 'disabled', enabled: 'enabled' } as const;
export type Notice = (typeof Notice)[keyof typeof Notice];

/** webhook.notice: tells the tenant's other endpoints (and, when disabled, its owner) that an endpoint was disabled or enabled. */
export const webhookNoticeKind = defineKind({
  kind: 'webhook.notice',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 30,
  args: z.object({ endpointId: id, notice: z.enum([Notice.disabled, Notice.enabled]), at: z.string().min(1).max(40) }),
  description: 'Sends endpoint.disabled (and the owner mail) or endpoint.enabled to the tenant’s other endpoints',
});

/**
 * webhook.recover: one recovery of an endpoint (recover.ts), page by page through the tenant's kept events
 * of its window, each page's requeued deliveries committed with the recovery's position; it snoozes between
 * runs (no attempt spent) and goes on from that position. Exhausted: the recovery is marked failed.
 */
export const webhookRecoverKind = defineKind({
  kind: 'webhook.recover',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: z.object({ endpointId: id, recoveryId: z.string().regex(/^rcv_[0-9a-f]{24}$/) }),
  description: 'Sends an endpoint again the events of a window it subscribed to and did not receive',
});

/** Every kind of the webhooks context (data only). */
export const webhookKinds = [webhookFanoutKind, webhookDeliverKind, webhookWakeKind, webhookRestartKind, webhookSweepKind, webhookPurgeKind, webhookNoticeKind, webhookRecoverKind] as const;
