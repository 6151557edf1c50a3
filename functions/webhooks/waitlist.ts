import { JobNotFoundError, terminalStates, TransitionRefusedError } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import type { EndpointRow } from './endpoint.ts';
import type { WebhookEvent } from './events.ts';
import { webhookWakeKind } from './kinds.ts';
import { LEASE_MS } from './lease.ts';
import type { EndpointChange } from './lease.ts';
import type { WaitEntry } from './store.ts';

/**
 * How a holder's worker may take its successor itself: `runNext` (the job layer's hand-on within one
 * invocation: the successor runs next in this worker, as its own attempt, with no queue message), and the
 * successor's event as read ahead while the holder's own request was out.
 */
export interface HandOn {
  runNext(id: string): Promise<'claimed' | 'declined'>;
  event(entry: WaitEntry): Promise<WebhookEvent | undefined>;
}

/** What a successor run here starts from instead of reading: the endpoint as the hand-off wrote it, and its event. */
export interface Handover {
  endpoint: EndpointRow;
  event: WebhookEvent;
}

/** Handed-over entries kept for successors about to run in this container (each is taken at once; the bound is a backstop). */
const MAX_HANDOVERS = 100;

type Start = 'claimed' | 'woken' | 'busy' | 'stale';

/**
 * Handing the lease on: the holder (or the sweep, for a lease whose holder vanished) gives it to the
 * oldest parked delivery and starts it. One conditional write on the endpoint moves the lease; the holder's
 * worker then runs the successor itself, next (`runNext`: one job write, no queue message, no read), or,
 * when it has no time left, wakes it (`jobs.client.wake`: it runs from its queue). The successor takes
 * itself out of the list when it runs.
 *
 * ```
 *  holder H (worker k)             endpoint item                 wait list          parked W
 *    │ settle: holder=W if H  ───► holder W, busyUntil            WAIT#…W              │ (dormant)
 *    │ ∥ runNext(W): W claimed for worker k ───────────────────────────────────────────► running
 *    │ H completed ∥ W runs in worker k: sends at once (endpoint and event handed over)
 *    │                                                            delete WAIT#…W ◄──── │
 * ```
 */
export class WaitList {
  private readonly deps: WebhookDeps;
  private readonly handovers = new Map<string, Handover>();

  constructor(deps: WebhookDeps) {
    this.deps = deps;
  }

  /** What the holder handed `jobId` with the lease, if it runs in this container; taken once. */
  takeHandover(jobId: string): Handover | undefined {
    const handover = this.handovers.get(jobId);
    this.handovers.delete(jobId);
    return handover;
  }

  /**
   * The holder's last act: record `change` and move the lease. `candidates` are the oldest parked
   * deliveries it read (itself excluded here). Nobody waiting: the lease is released, and the list is
   * read once more, because a delivery that parked after the first read relies on this second look
   * (or on its own second look at the endpoint; one of the two always sees the other). With `handOn`,
   * the successor is claimed for this worker in parallel with the hand-off write; it runs only after
   * both, and only as the lease's holder (a successor whose hand-off was refused finds the lease not its
   * own and parks again).
   */
  async finish(endpointId: string, holder: string, change: EndpointChange | undefined, candidates: readonly WaitEntry[], now: number, handOn?: HandOn): Promise<void> {
    const { store } = this.deps;
    const lease = change?.lease ?? { type: 'pass' as const, armedUntil: null };
    if (lease.type === 'keep') {
      if ((await store.settle(endpointId, holder, change, lease, now)) === 'not_holder' && change) await store.recordHealth(endpointId, change, now);
      return;
    }
    const busyUntil = (lease.armedUntil ?? now) + LEASE_MS;
    // A failure arms the next probe: only a delivery whose own schedule lets it try by then may take it,
    // and it waits for its time: it is woken, not run here.
    const armedUntil = lease.armedUntil;
    const armed = armedUntil !== null;
    const pool = armedUntil !== null ? await store.eligibleHead(endpointId, armedUntil, 4) : candidates;
    const others = pool.filter((c) => c.jobId !== holder);
    const next = others[0];
    const here = armed ? undefined : handOn;
    if (next) {
      const [settled, claimed] = await Promise.all([
        store.settle(endpointId, holder, change, { type: 'pass', to: next.jobId, busyUntil }, now),
        here ? this.claimHere(next, endpointId, here) : Promise.resolve(undefined),
      ]);
      if (settled === 'not_holder') {
        if (change) await store.recordHealth(endpointId, change, now);
        return;
      }
      await this.startOrSkip(endpointId, others, busyUntil, now, { handOn: here, row: settled, ...(claimed ? { claimed } : {}) });
      return;
    }
    if ((await store.settle(endpointId, holder, change, { type: 'release' }, now)) === 'not_holder') {
      if (change) await store.recordHealth(endpointId, change, now);
      return;
    }
    const late = (armedUntil !== null ? await store.eligibleHead(endpointId, armedUntil, 3) : await store.waitListHead(endpointId, 3)).filter((c) => c.jobId !== holder);
    const row = late[0] ? await store.acquireFor(endpointId, late[0].jobId, now, busyUntil) : undefined;
    if (row) await this.startOrSkip(endpointId, late, busyUntil, now, { handOn: here, row });
  }

  /**
   * A free lease with deliveries parked behind it (a delivery parked at fanout as the holder let go): the
   * oldest of them takes it and is woken.
   */
  async restart(endpointId: string, now: number): Promise<void> {
    const { store } = this.deps;
    const heads = await store.waitListHead(endpointId, 3);
    if (heads[0] && (await store.acquireFor(endpointId, heads[0].jobId, now, now + LEASE_MS))) await this.wakeOrSkip(endpointId, heads, now + LEASE_MS, now);
  }

  /**
   * Wakes `heads[0]`, which already holds the lease. If its job is gone or finished (a stale entry: ops
   * cancelled a parked delivery), the entry is dropped and the lease goes to `heads[1]`, or is released.
   * One step only: a longer run of stale entries is left to the sweep.
   */
  async wakeOrSkip(endpointId: string, heads: readonly WaitEntry[], busyUntil: number, now: number): Promise<void> {
    await this.startOrSkip(endpointId, heads, busyUntil, now, {});
  }

  /**
   * Starts `heads[0]`, which already holds the lease: runs it in this worker (`handOn`; `claimed` when that
   * was tried already), or wakes it. A stale head is dropped and the lease goes to `heads[1]`, or is released.
   */
  private async startOrSkip(
    endpointId: string,
    heads: readonly WaitEntry[],
    busyUntil: number,
    now: number,
    how: { handOn?: HandOn | undefined; row?: EndpointRow; claimed?: Start | 'declined' },
  ): Promise<void> {
    const [first, second] = heads;
    if (!first) return;
    let started = how.claimed ?? (how.handOn ? await this.claimHere(first, endpointId, how.handOn) : 'declined');
    if (started === 'claimed') {
      const event = await how.handOn?.event(first);
      if (how.row && event) this.keep(first.jobId, { endpoint: how.row, event });
      return;
    }
    if (started === 'declined') started = await this.wake(first, endpointId);
    if (started !== 'stale') return;
    const { store, logger } = this.deps;
    logger.warn('stale wait-list entry dropped', { endpointId, jobId: first.jobId });
    await store.unpark(first);
    const moved = second ? await store.settle(endpointId, first.jobId, undefined, { type: 'pass', to: second.jobId, busyUntil }, now) : 'not_holder';
    if (second && moved !== 'not_holder') {
      const next = how.handOn ? await this.claimHere(second, endpointId, how.handOn) : 'declined';
      if (next === 'claimed') {
        const event = await how.handOn?.event(second);
        if (event) this.keep(second.jobId, { endpoint: moved, event });
      } else if (next === 'declined') await this.wake(second, endpointId);
      return;
    }
    await store.settle(endpointId, first.jobId, undefined, { type: 'release' }, now);
  }

  /** Claims a parked delivery to run next in this worker: `declined` when it cannot (then wake it), else as {@link wake}. */
  private async claimHere(entry: WaitEntry, endpointId: string, handOn: HandOn): Promise<'claimed' | 'declined' | 'busy' | 'stale'> {
    try {
      return await handOn.runNext(entry.jobId);
    } catch (error) {
      return this.refused(error, entry, endpointId);
    }
  }

  /**
   * Runs a parked delivery's job now from its queue. `stale`: its job no longer waits for anything.
   * `busy`: it is due already, or running. A running one may be about to go to sleep, having read the
   * endpoint before it was handed the lease; a webhook.wake job makes sure it is woken once it sleeps
   * (the job layer retries that, not this code).
   */
  async wake(entry: Pick<WaitEntry, 'jobId'>, endpointId: string): Promise<'woken' | 'busy' | 'stale'> {
    try {
      await this.deps.jobs.wake(entry.jobId);
      return 'woken';
    } catch (error) {
      return this.refused(error, entry, endpointId);
    }
  }

  private async refused(error: unknown, entry: Pick<WaitEntry, 'jobId'>, endpointId: string): Promise<'busy' | 'stale'> {
    if (error instanceof JobNotFoundError) return 'stale';
    if (!(error instanceof TransitionRefusedError)) throw error;
    const current = error.current;
    if (current === undefined || (terminalStates as readonly string[]).includes(current.state)) return 'stale';
    if (current.state === 'running') {
      await this.deps.jobs.enqueue(webhookWakeKind, { endpointId, jobId: entry.jobId }, { id: `webhook.wake:${entry.jobId}:${current.seq}` });
    }
    return 'busy';
  }

  private keep(jobId: string, handover: Handover): void {
    this.handovers.set(jobId, handover);
    if (this.handovers.size > MAX_HANDOVERS) this.handovers.delete(this.handovers.keys().next().value!);
  }
}
