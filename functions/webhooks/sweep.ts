import type { WebhookDeps } from './deps.ts';
import { DISABLED_METRIC } from './delivery.ts';
import { DisabledReason } from './endpoint.ts';
import { DISABLE_AFTER_MS, leaseOf, leaseStateOf } from './lease.ts';
import type { EndpointRow } from './endpoint.ts';
import { disabledNoticeJob, webhookNoticeKind } from './notices.ts';
import { expireWaiting } from './expiry.ts';
import { watchPartitions } from './store.ts';
import type { WaitList } from './waitlist.ts';

/**
 * How long after its last lease ended a healthy, idle endpoint leaves the sweep's index. Taking the lease
 * puts an endpoint in the index and letting it go leaves it there, so an endpoint used more often than
 * this writes nothing to the index per delivery; one used less often, an entry and its removal.
 */
export const UNWATCH_IDLE_MS = 3600_000;

/** What one sweep did. */
export interface SweepReport {
  looked: number;
  disabled: number;
  restarted: number;
  released: number;
  /** Waiting deliveries discarded (`wait_expired`) before their entries' TTL (expiry.ts). */
  expired: number;
}

/**
 * The webhook.sweep pass, over the endpoints in the sparse `byWatch` index (those holding a lease or
 * failing):
 *
 * 1. the 5-day rule: an endpoint failing since five days or more is disabled, even if no delivery runs
 *    to notice (a probe notices it too, at its next attempt);
 * 2. a stalled wait list: a free or expired lease with deliveries parked behind it (its holder crashed,
 *    was cancelled, or its wake-up was lost) is given to the oldest of them, which runs now;
 * 3. expiry: a delivery waiting with no job whose entry nears its TTL is discarded (`wait_expired`), counted (expiry.ts);
 * 4. tidying: an expired lease nobody waits for is released, and an endpoint idle for
 *    {@link UNWATCH_IDLE_MS} and healthy (or disabled, at once) leaves the index.
 */
export async function sweep(deps: WebhookDeps, waitList: WaitList, now: number): Promise<SweepReport> {
  const report: SweepReport = { looked: 0, disabled: 0, restarted: 0, released: 0, expired: 0 };
  for (const partition of watchPartitions()) {
    let cursor: string | undefined;
    do {
      const page = await deps.store.watched(partition, cursor);
      for (const endpointId of page.endpointIds) {
        report.looked++;
        await sweepEndpoint(deps, waitList, endpointId, now, report);
      }
      cursor = page.cursor;
    } while (cursor);
  }
  return report;
}

/**
 * Enqueues the notice of an endpoint's current disable (notices.ts; a deterministic id: once per disable):
 * the sweep's own disables, and any disable whose notice is not committed yet (its delivery's enqueue was lost).
 */
async function noticeOf(deps: WebhookDeps, row: EndpointRow): Promise<void> {
  const job = disabledNoticeJob(row.endpointId, row.disabledAt!);
  await deps.jobs.enqueue(webhookNoticeKind, job.args, { id: job.id });
}

async function sweepEndpoint(deps: WebhookDeps, waitList: WaitList, endpointId: string, now: number, report: SweepReport): Promise<void> {
  const { store } = deps;
  let row = await store.getEndpoint(endpointId);
  if (!row) return;
  report.expired += await expireWaiting(deps, endpointId, now);
  if (!row.disabled && row.failingSince && now - Date.parse(row.failingSince) >= DISABLE_AFTER_MS) {
    const disabled = await store.disable(endpointId, DisabledReason.failing, now, row.failingSince);
    if (disabled) {
      row = disabled;
      report.disabled++;
      await noticeOf(deps, disabled);
      deps.metrics.count(DISABLED_METRIC, { reason: DisabledReason.failing });
      deps.logger.warn('endpoint disabled: failing for 5 days', { endpointId, failingSince: disabled.failingSince });
    }
  } else if (row.disabled && row.deletedAt === undefined && row.disabledAt !== undefined && row.noticedAt !== row.disabledAt) await noticeOf(deps, row);
  const state = leaseStateOf(row);
  // A live holder passes the lease on itself.
  if (leaseOf(state, '', now) !== 'free') return;
  const failing = !row.disabled && state.failingSince !== undefined;
  const probeAt = failing && state.nextProbeAt !== undefined && state.nextProbeAt > now ? state.nextProbeAt : now;
  // A failing endpoint's next probe must be a delivery whose own schedule allows it; otherwise the oldest.
  const heads = failing ? await store.eligibleHead(endpointId, probeAt, 3) : await store.waitListHead(endpointId, 3);
  const head = heads[0];
  if (head) {
    const busyUntil = probeAt + deps.lease.leaseMs;
    if (await store.acquireFor(endpointId, head.jobId, now, busyUntil)) {
      report.restarted++;
      deps.logger.warn('stalled wait list restarted', { endpointId, jobId: head.jobId, previousHolder: row.holder });
      await waitList.wakeOrSkip(endpointId, heads, busyUntil, now);
    }
    return;
  }
  if (row.holder && row.busyUntil && (await store.releaseExpired(endpointId, row.holder, row.busyUntil))) report.released++;
  // A healthy endpoint used within the hour stays in the index: its next lease then writes nothing to it.
  const idle = row.busyUntil === undefined || Date.parse(row.busyUntil) <= now - UNWATCH_IDLE_MS;
  if ((row.disabled || (!row.failingSince && idle)) && (await store.waitListHead(endpointId, 1)).length === 0) await store.unwatch(endpointId);
}
