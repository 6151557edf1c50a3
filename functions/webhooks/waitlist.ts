import { JobNotFoundError, terminalStates, TransitionRefusedError } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import type { EndpointRow } from './endpoint.ts';
import { DeliveryDiscardReason, webhookDeliverKind, webhookWakeKind } from './kinds.ts';
import { PARK_MS } from './lease.ts';
import type { EndpointChange } from './lease.ts';
import { isPending } from './store.ts';
import type { WaitEntry } from './store.ts';

/**
 * How a holder's worker may take its successor itself: `runNext` (the job layer's hand-on within one
 * invocation: the successor runs next in this worker, as its own attempt, with no queue message).
 */
export interface HandOn {
  runNext(id: string): Promise<'claimed' | 'declined'>;
}

/** What a successor run here starts from instead of reading: the endpoint as the hand-off wrote it. */
export interface Handover {
  endpoint: EndpointRow;
}

/** Handed-over entries kept for successors about to run in this container (each is taken at once; the bound is a backstop). */
const MAX_HANDOVERS = 100;

/** Waiting deliveries with no job that one hand-off discards when their endpoint is disabled; the next holder discards more. */
const DISCARD_PER_HANDOFF = 25;

/** How a hand-off ends, besides the lease move: deliveries the holder made, a delivery not to hand to, the endpoint disabled. */
export interface FinishOptions {
  /** Successful deliveries this run made (its own and those it sent from the list), counted on the endpoint. */
  delivered?: number;
  /** A delivery that just failed and rejoined the list: not the one to pass the probe role to. */
  exclude?: string;
  /** The endpoint is disabled: the waiting deliveries with no job are discarded first (a bounded number at a time). */
  disabled?: boolean;
  /** The endpoint is deleted (and so disabled): they are discarded as `endpoint_deleted`. */
  deleted?: boolean;
}

type Start = 'claimed' | 'woken' | 'busy' | 'stale';

/** A webhook.wake's first look again at a delivery still running; each later look waits as long as the wake has existed. */
export const WAKE_FIRST_LOOK_MS = 1_000;
/** Once that delivery's claim has run out, the longest a wake waits between looks: about the rescuer's period. */
export const WAKE_AFTER_CLAIM_MS = 60_000;

/**
 * When a webhook.wake looks again at a delivery that was handed the lease while still running: soon at
 * first (a run about to go to sleep ends in moments), then at gaps that double with the wake's age, never
 * later than just after the run's claim (`claimUntil`) ends — a run whose worker was lost (or whose outcome
 * was not recorded) stays `running` until then, and the rescuer's next pass moves it on. On the job layer's
 * clock, as the claim is, so it holds on a scaled clock too; a snooze, so the wake spends no attempt and
 * cannot run out of them while the claim lasts.
 */
export function wakeLookAgainAt(now: number, createdAt: number, claimUntil: number | undefined): number {
  const doubling = now + Math.max(WAKE_FIRST_LOOK_MS, now - createdAt);
  if (claimUntil === undefined) return Math.min(doubling, now + WAKE_AFTER_CLAIM_MS);
  return claimUntil >= now ? Math.min(doubling, claimUntil + 1) : Math.min(doubling, now + WAKE_AFTER_CLAIM_MS);
}

/**
 * Handing the lease on: the holder (or the sweep, for a lease whose holder vanished) gives it to the
 * oldest waiting delivery and starts it. One conditional write on the endpoint moves the lease; the holder's
 * worker then runs the successor itself, next (`runNext`: one job write, no queue message, no read), or,
 * when it has no time left, wakes it (`jobs.client.wake`: it runs from its queue). The successor takes
 * itself out of the list when it runs.
 *
 * A waiting delivery with no job (published while the endpoint was busy: its entry carries the event) is
 * sent by the holder within its own run (delivery.ts); one that has to be handed the lease instead (the
 * holder is out of time, or it is to probe a failing endpoint) first gets its job ({@link promote}).
 *
 * ```
 *  holder H (worker k)             endpoint item                 wait list          parked W
 *    │ settle: holder=W if H  ───► holder W, busyUntil            WAIT#…W              │ (dormant)
 *    │ ∥ runNext(W): W claimed for worker k ───────────────────────────────────────────► running
 *    │ H completed ∥ W runs in worker k: sends at once (endpoint handed over)
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
   * The holder's last act: record `change` (and the deliveries it made) and move the lease. `candidates`
   * are the oldest waiting deliveries it read (itself excluded here). Nobody waiting: the lease is
   * released, and the list is read once more, because a delivery that parked (or was published) after the
   * first read relies on this second look (or on its own second look at the endpoint; one of the two
   * always sees the other). With `handOn`, the successor is claimed for this worker in parallel with the
   * hand-off write; it runs only after both, and only as the lease's holder (a successor whose hand-off
   * was refused finds the lease not its own and parks again).
   */
  async finish(endpointId: string, holder: string, change: EndpointChange | undefined, candidates: readonly WaitEntry[], now: number, handOn?: HandOn, options: FinishOptions = {}): Promise<void> {
    const { store } = this.deps;
    const delivered = options.delivered ?? 0;
    const lease = change?.lease ?? { type: 'pass' as const, armedUntil: null };
    if (lease.type === 'keep') {
      if ((await store.settle(endpointId, holder, change, lease, now, delivered)) === 'not_holder' && change) await store.recordHealth(endpointId, change, now, delivered);
      return;
    }
    const busyUntil = (lease.armedUntil ?? now) + this.deps.lease.leaseMs;
    // A failure arms the next probe: only a delivery whose own schedule lets it try by then may take it,
    // and it waits for its time: it is woken, not run here.
    const armedUntil = lease.armedUntil;
    const armed = armedUntil !== null;
    const disabled = options.disabled === true || change?.disable !== undefined;
    let pool = armedUntil !== null ? await store.eligibleHead(endpointId, armedUntil, 4) : candidates;
    if (disabled) pool = await this.discardWaiting(endpointId, pool, now, options.deleted === true);
    const others = pool.filter((c) => c.jobId !== holder && c.jobId !== options.exclude);
    const next = others[0] && isPending(others[0]) ? await this.promote(endpointId, others[0], now) : others[0];
    const here = armed ? undefined : handOn;
    if (next) {
      const [settled, claimed] = await Promise.all([
        store.settle(endpointId, holder, change, { type: 'pass', to: next.jobId, busyUntil }, now, delivered),
        here ? this.claimHere(next, endpointId, here) : Promise.resolve(undefined),
      ]);
      if (settled === 'not_holder') {
        if (change) await store.recordHealth(endpointId, change, now, delivered);
        return;
      }
      await this.startOrSkip(endpointId, [next, ...others.slice(1)], busyUntil, now, { handOn: here, row: settled, ...(claimed ? { claimed } : {}) });
      return;
    }
    if ((await store.settle(endpointId, holder, change, { type: 'release' }, now, delivered)) === 'not_holder') {
      if (change) await store.recordHealth(endpointId, change, now, delivered);
      return;
    }
    const late = (armedUntil !== null ? await store.eligibleHead(endpointId, armedUntil, 3) : await store.waitListHead(endpointId, 3)).filter((c) => c.jobId !== holder && c.jobId !== options.exclude);
    const row = late[0] ? await store.acquireFor(endpointId, late[0].jobId, now, busyUntil) : undefined;
    if (row) await this.startOrSkip(endpointId, late, busyUntil, now, { handOn: here, row });
  }

  /**
   * A free lease with deliveries waiting behind it (a delivery published or parked as the holder let go):
   * the oldest of them takes it and is started.
   */
  async restart(endpointId: string, now: number): Promise<void> {
    const { store } = this.deps;
    const heads = await store.waitListHead(endpointId, 3);
    const busyUntil = now + this.deps.lease.leaseMs;
    if (heads[0] && (await store.acquireFor(endpointId, heads[0].jobId, now, busyUntil))) await this.wakeOrSkip(endpointId, heads, busyUntil, now);
  }

  /**
   * Wakes `heads[0]`, which already holds the lease (given its job first if it has none). If its job is
   * gone or finished (a stale entry: ops cancelled a parked delivery), the entry is dropped and the lease
   * goes to `heads[1]`, or is released. One step only: a longer run of stale entries is left to the sweep.
   */
  async wakeOrSkip(endpointId: string, heads: readonly WaitEntry[], busyUntil: number, now: number): Promise<void> {
    await this.startOrSkip(endpointId, heads, busyUntil, now, {});
  }

  /**
   * Gives a waiting delivery that has no job its job — dormant, as a parked delivery's (the lease is about
   * to be handed to it; the rescuer wakes it after PARK_MS if nobody does) — and rewrites its entry as a
   * parked job's, under the same key. Idempotent: a job already made for it is kept (and a finished one
   * makes the entry stale: dropped, `undefined`).
   */
  async promote(endpointId: string, entry: WaitEntry, now: number): Promise<WaitEntry | undefined> {
    if (!isPending(entry)) return entry;
    const { jobs, store } = this.deps;
    const event = entry.event;
    const enqueued = await jobs.enqueue(webhookDeliverKind, { eventId: event.id, endpointId, event }, { id: entry.jobId, dormant: true, at: now + PARK_MS });
    if (!enqueued.created) {
      const row = await jobs.get(entry.jobId);
      if (!row || (terminalStates as readonly string[]).includes(row.state)) {
        await store.unpark(entry);
        return undefined;
      }
    }
    await store.park(entry, entry.jobId, now, undefined, event.id);
    return { pk: entry.pk, sk: entry.sk, jobId: entry.jobId, parkedAt: new Date(now).toISOString(), eventId: event.id };
  }

  /**
   * The endpoint is disabled: its waiting deliveries that have no job are discarded (`endpoint_disabled`),
   * each as a job that never made an attempt, so ops see it and redeliver brings it back — at most
   * {@link DISCARD_PER_HANDOFF} per hand-off; the next holder (which finds the endpoint disabled, and
   * discards itself) goes on. Returns the candidates that are left (parked jobs, and what was not reached).
   */
  private async discardWaiting(endpointId: string, pool: readonly WaitEntry[], now: number, deleted = false): Promise<WaitEntry[]> {
    const reason = deleted ? DeliveryDiscardReason.endpoint_deleted : DeliveryDiscardReason.endpoint_disabled;
    const { jobs, store } = this.deps;
    const heads = pool.some(isPending) ? await store.waitListHead(endpointId, DISCARD_PER_HANDOFF) : [...pool];
    const pending = heads.filter(isPending);
    await Promise.all(
      pending.map(async (entry) => {
        await jobs.enqueueAttempted(
          webhookDeliverKind,
          { eventId: entry.event.id, endpointId, event: entry.event },
          { id: entry.jobId, outcome: { type: 'discarded', reason, error: deleted ? 'endpoint deleted' : 'endpoint is disabled' } },
        );
        await store.unpark(entry);
      }),
    );
    this.deps.logger.debug('waiting deliveries discarded: endpoint disabled', { endpointId, discarded: pending.length, at: now });
    return heads.filter((h) => !isPending(h));
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
    const [head, second] = heads;
    if (!head) return;
    const first = isPending(head) ? await this.promote(endpointId, head, now) : head;
    let started: Start | 'declined' = first ? (how.claimed ?? (how.handOn ? await this.claimHere(first, endpointId, how.handOn) : 'declined')) : 'stale';
    if (started === 'claimed') {
      if (how.row) this.keep(first!.jobId, { endpoint: how.row });
      return;
    }
    if (started === 'declined') started = await this.wake(first!, endpointId);
    if (started !== 'stale') return;
    const { store, logger } = this.deps;
    logger.warn('stale wait-list entry dropped', { endpointId, jobId: head.jobId });
    await store.unpark(head);
    const successor = second && isPending(second) ? await this.promote(endpointId, second, now) : second;
    const moved = successor ? await store.settle(endpointId, head.jobId, undefined, { type: 'pass', to: successor.jobId, busyUntil }, now) : 'not_holder';
    if (successor && moved !== 'not_holder') {
      const next = how.handOn ? await this.claimHere(successor, endpointId, how.handOn) : 'declined';
      if (next === 'claimed') this.keep(successor.jobId, { endpoint: moved });
      else if (next === 'declined') await this.wake(successor, endpointId);
      return;
    }
    await store.settle(endpointId, head.jobId, undefined, { type: 'release' }, now);
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
