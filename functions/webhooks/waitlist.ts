import { JobNotFoundError, terminalStates, TransitionRefusedError } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { webhookWakeKind } from './kinds.ts';
import { LEASE_MS } from './lease.ts';
import type { EndpointChange } from './lease.ts';
import type { WaitEntry } from './store.ts';

/**
 * Handing the lease on: the holder (or the sweep, for a lease whose holder vanished) gives it to the
 * oldest parked delivery and runs that delivery's job now (`jobs.client.wake`). One conditional write
 * on the endpoint moves the lease; the woken delivery takes itself out of the list when it runs.
 *
 * ```
 *  holder H                       endpoint item                 wait list          parked W
 *    │ settle: holder=W if H  ───► holder W, busyUntil            WAIT#…W              │ (snoozed)
 *    │ wake(W) ───────────────────────────────────────────────────────────────────────► available
 *    │                                                                                  │ runs: holder = W
 *    │                                                            delete WAIT#…W ◄──── │ sends
 * ```
 */
export class WaitList {
  private readonly deps: WebhookDeps;

  constructor(deps: WebhookDeps) {
    this.deps = deps;
  }

  /**
   * The holder's last act: record `change` and move the lease. `candidates` are the oldest parked
   * deliveries it read (itself excluded here). Nobody waiting: the lease is released, and the list is
   * read once more, because a delivery that parked after the first read relies on this second look
   * (or on its own second look at the endpoint; one of the two always sees the other).
   */
  async finish(endpointId: string, holder: string, change: EndpointChange | undefined, candidates: readonly WaitEntry[], now: number): Promise<void> {
    const { store } = this.deps;
    const lease = change?.lease ?? { type: 'pass' as const, armedUntil: null };
    if (lease.type === 'keep') {
      if ((await store.settle(endpointId, holder, change, lease, now)) === 'not_holder' && change) await store.recordHealth(endpointId, change, now);
      return;
    }
    const busyUntil = (lease.armedUntil ?? now) + LEASE_MS;
    // A failure arms the next probe: only a delivery whose own schedule lets it try by then may take it.
    const pool = lease.armedUntil === null ? candidates : await store.eligibleHead(endpointId, lease.armedUntil, 4);
    const others = pool.filter((c) => c.jobId !== holder);
    const next = others[0];
    if (next) {
      if ((await store.settle(endpointId, holder, change, { type: 'pass', to: next.jobId, busyUntil }, now)) === 'not_holder') {
        if (change) await store.recordHealth(endpointId, change, now);
        return;
      }
      await this.wakeOrSkip(endpointId, others, busyUntil, now);
      return;
    }
    if ((await store.settle(endpointId, holder, change, { type: 'release' }, now)) === 'not_holder') {
      if (change) await store.recordHealth(endpointId, change, now);
      return;
    }
    const late = (lease.armedUntil === null ? await store.waitListHead(endpointId, 3) : await store.eligibleHead(endpointId, lease.armedUntil, 3)).filter((c) => c.jobId !== holder);
    if (late[0] && (await store.acquireFor(endpointId, late[0].jobId, now, busyUntil))) await this.wakeOrSkip(endpointId, late, busyUntil, now);
  }

  /**
   * Wakes `heads[0]`, which already holds the lease. If its job is gone or finished (a stale entry: ops
   * cancelled a parked delivery), the entry is dropped and the lease goes to `heads[1]`, or is released.
   * One step only: a longer run of stale entries is left to the sweep.
   */
  async wakeOrSkip(endpointId: string, heads: readonly WaitEntry[], busyUntil: number, now: number): Promise<void> {
    const [first, second] = heads;
    if (!first || (await this.wake(first, endpointId)) !== 'stale') return;
    const { store, logger } = this.deps;
    logger.warn('stale wait-list entry dropped', { endpointId, jobId: first.jobId });
    await store.unpark(first);
    if (second && (await store.settle(endpointId, first.jobId, undefined, { type: 'pass', to: second.jobId, busyUntil }, now)) === 'ok') {
      await this.wake(second, endpointId);
      return;
    }
    await store.settle(endpointId, first.jobId, undefined, { type: 'release' }, now);
  }

  /**
   * Runs a parked delivery's job now. `stale`: its job no longer waits for anything. `busy`: it is due
   * already, or running. A running one may be about to go to sleep, having read the endpoint before it
   * was handed the lease; a webhook.wake job makes sure it is woken once it sleeps (the job layer retries
   * that, not this code).
   */
  async wake(entry: Pick<WaitEntry, 'jobId'>, endpointId: string): Promise<'woken' | 'busy' | 'stale'> {
    try {
      await this.deps.jobs.wake(entry.jobId);
      return 'woken';
    } catch (error) {
      if (error instanceof JobNotFoundError) return 'stale';
      if (!(error instanceof TransitionRefusedError)) throw error;
      const current = error.current;
      if (current === undefined || (terminalStates as readonly string[]).includes(current.state)) return 'stale';
      if (current.state === 'running') {
        await this.deps.jobs.enqueue(webhookWakeKind, { endpointId, jobId: entry.jobId }, { id: `webhook.wake:${entry.jobId}:${current.seq}` });
      }
      return 'busy';
    }
  }
}
