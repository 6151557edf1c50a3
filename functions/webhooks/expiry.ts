import { Expression } from '../platform/dynamo.ts';
import type { WebhookDeps } from './deps.ts';
import { waitListPartitions } from './endpoint.ts';
import { EVENT_RETENTION_SECONDS } from './events.ts';
import { DeliveryDiscardReason, webhookDeliverKind } from './kinds.ts';
import { isPending } from './store.ts';

/** The metric counted per waiting delivery the sweep expired (discarded `wait_expired`) before its entry's TTL. */
export const EXPIRED_METRIC = 'WebhookWaitExpired';

/** How long before its entry's TTL (30 days after it was put) the sweep expires a waiting delivery. */
export const EXPIRE_AHEAD_SECONDS = 86400;

/** Entries the sweep expires per endpoint and pass at most (the next pass, 5 minutes on, goes on). */
const EXPIRE_PER_PASS = 100;

/**
 * Nothing waiting for an endpoint vanishes: a delivery waiting in the list with no job (it carries its
 * event; published while the endpoint was busy) whose entry is within {@link EXPIRE_AHEAD_SECONDS} of its
 * TTL (`expiresAt`, 30 days after it was put) is discarded by the sweep as a job with reason `wait_expired`
 * — a dead letter ops see and redeliver can send again — and counted, before DynamoDB's TTL would delete
 * it unseen. A parked job's entry is left to its TTL: the job row is the truth, and the rescuer wakes it.
 *
 * An entry's sort key starts with its event's time, at or before the time it was put, so only the entries
 * whose event is older than the retention less the margin can be near their TTL: a bounded range Query
 * from the head of each shard, filtered on `expiresAt`.
 */
export async function expireWaiting(deps: WebhookDeps, endpointId: string, now: number): Promise<number> {
  const { store, jobs, metrics } = deps;
  const horizon = new Date(now - (EVENT_RETENTION_SECONDS - EXPIRE_AHEAD_SECONDS) * 1000).toISOString();
  const dueBy = Math.floor(now / 1000) + EXPIRE_AHEAD_SECONDS;
  let expired = 0;
  for (const partition of waitListPartitions(endpointId)) {
    const e = new Expression();
    const page = await store.waitListPage(partition, undefined, EXPIRE_PER_PASS, horizon, e.le('expiresAt', dueBy), e);
    for (const entry of page.entries) {
      if (!isPending(entry)) continue;
      const made = await jobs.enqueueAttempted(
        webhookDeliverKind,
        { eventId: entry.event.id, endpointId, event: entry.event },
        { id: entry.jobId, outcome: { type: 'discarded', reason: DeliveryDiscardReason.wait_expired, error: `waited ${EVENT_RETENTION_SECONDS / 86400 - 1} days in the wait list: expired before its entry's TTL` } },
      );
      await store.unpark(entry);
      if (made) expired++;
    }
  }
  if (expired > 0) {
    metrics.count(EXPIRED_METRIC, {}, expired);
    deps.logger.warn('waiting deliveries expired', { endpointId, expired });
  }
  return expired;
}
