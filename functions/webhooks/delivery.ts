import { assertNever } from '../platform/assert.ts';
import { discard, snooze } from '../jobs/index.ts';
import type { DiscardedJob, JobContext, RunOutcome } from '../jobs/index.ts';
import { AddressRefusedError } from '../platform/vetted-http.ts';
import { attemptRow, nextRetryOf } from './attempts.ts';
import type { AttemptRow } from './attempts.ts';
import { classifyResponse } from './classify.ts';
import type { DeliveryResult } from './classify.ts';
import type { WebhookDeps } from './deps.ts';
import { waitKey } from './endpoint.ts';
import { DeliveryFailedError } from './errors.ts';
import type { EndpointRow } from './endpoint.ts';
import type { WebhookEvent } from './events.ts';
import { admit, afterAttempt, coversSend, leaseStateOf, PARK_MS } from './lease.ts';
import type { Admission, EndpointChange } from './lease.ts';
import { DeliveryDiscardReason, webhookDeliverKind } from './kinds.ts';
import { disabledNoticeJob, webhookNoticeKind } from './notices.ts';
import { signingSecrets } from './rotation.ts';
import { signedRequest } from './signing.ts';
import { checkUrlShape } from './ssrf.ts';
import { isPending } from './store.ts';
import type { WaitEntry } from './store.ts';
import { WaitList } from './waitlist.ts';
import type { HandOn } from './waitlist.ts';

/** The metric counted once per attempt that reached a verdict, by result. */
export const DELIVERY_METRIC = 'WebhookDelivery';
/** The metric counted when an endpoint is disabled, by reason. */
export const DISABLED_METRIC = 'WebhookEndpointDisabled';

/** How long a delivery that lost a race for a free lease waits before it looks again (no attempt spent). */
const LEASE_RACE_SNOOZE_MS = 1_000;

/**
 * How long, in real time from the start of its run, a delivery that succeeded goes on sending the
 * deliveries waiting behind it (by default: the `drainBudgetMs` option): it starts no send after this, so
 * its run (webhook.deliver's 30 s timeout) ends with a request's whole timeout to spare; the rest of the
 * list is handed on. It is measured on the job clock (converted by the clock's speed), the clock the
 * endpoint's lease runs on, so the two agree under a scaled local clock too.
 */
export const DRAIN_BUDGET_MS = 15_000;
/** Waiting deliveries read at a time while draining (per wait-list shard). */
const DRAIN_READ = 10;

type Wait = { pk: string; sk: string };
type DeliverArgs = { eventId: string; endpointId: string; event?: WebhookEvent | undefined };

/**
 * The webhook.deliver handler: take the endpoint's lease (or park and wait to be handed it), send the
 * signed event once, classify the answer, record what it means for the endpoint; then, after a success,
 * send the deliveries waiting behind it that have no job (published while the endpoint was busy), one at
 * a time, while its run has time (the drain, below); and pass the lease on. It tells the job layer about
 * its own delivery only: return (completed), snooze, discard, or throw (retryable).
 *
 * ```
 *  own delivery ─► 2xx ─► head of the list: no job ─► send it; 2xx ─► drop its entry; next
 *                                                              └─► else: it becomes a job, with this
 *                                                                  attempt as its first (the job layer
 *                                                                  decides: retry, snooze, discard), and
 *                                                                  the lease moves as for any failure
 *                         head of the list: a parked job ─► hand the lease on to it (runNext)
 *                         out of time ─► the head gets a job, and the lease
 *                         nobody waiting ─► let go (and look once more)
 * ```
 *
 * A delivery sent within another's run leaves no job row when it succeeds: it is counted on its endpoint
 * (`delivered`), and the `WebhookDelivery` metric counts it like any attempt. One that fails is a job from
 * then on, and only the job layer runs it again.
 */
export class Deliveries {
  private readonly deps: WebhookDeps;
  private readonly waitList: WaitList;

  constructor(deps: WebhookDeps, waitList: WaitList) {
    this.deps = deps;
    this.waitList = waitList;
  }

  async deliver(args: DeliverArgs, ctx: JobContext): Promise<void> {
    const { store } = this.deps;
    const now = ctx.now();
    const started = now;
    // Run here by the holder that handed it the lease: it starts from the endpoint the hand-off wrote.
    const handover = this.waitList.takeHandover(ctx.id);
    const carried = args.event;
    // Its own entry, if it waits in the list: found from its event (or, for a delivery enqueued before
    // deliveries carried their event, from its creation).
    const wait: Wait = waitKey(args.endpointId, carried?.timestamp ?? ctx.createdAt, ctx.id);
    // A successor handed the lease starts from the endpoint the hand-off wrote, read again (consistent)
    // so that a URL change, a rotation or a deletion committed since is what it sends by (manage.ts).
    const fresh = handover && handover.endpoint.holder === ctx.id && carried ? await store.getEndpoint(args.endpointId) : undefined;
    const read = fresh ? { endpoint: fresh, event: carried, parked: true } : await store.readForDelivery(args.endpointId, carried ? undefined : args.eventId, wait);
    const event = carried ?? read.event;
    if (!read.endpoint) {
      if (read.parked) await store.unpark(wait);
      throw discard(DeliveryDiscardReason.not_found, `endpoint ${args.endpointId} not found`);
    }
    if (!event) return this.leave(read.endpoint, wait, read.parked, ctx, DeliveryDiscardReason.not_found, `event ${args.eventId} not found (pruned after its retention)`);
    // Before anything is sent: a key that cannot be used now (KMS throttled or down) fails this run
    // (retryable); a lease its publisher took for it stays its own until its retry or the lease's end.
    const secret = await signingSecrets(this.deps.secrets, read.endpoint, now);

    const turn = await this.takeTurn(read.endpoint, wait, read.parked, ctx, now, event.id);
    const endpointId = args.endpointId;
    // Off the critical path: leave the wait list, and read who waits next, while the request is out.
    const unparked = turn.parked ? store.unpark(wait).catch((error: unknown) => ctx.logger.warn('wait-list entry not removed', { error: String(error) })) : undefined;
    const heads = store.waitListHead(endpointId, DRAIN_READ);
    heads.catch(() => undefined);

    const sentAt = ctx.now();
    const t0 = performance.now();
    const result = await this.attempt(turn.row, secret, event, ctx);
    const durationMs = performance.now() - t0;
    const at = ctx.now();
    const step = afterAttempt(leaseStateOf(turn.row), result, { now: at, attempt: ctx.attempt, maxAttempts: ctx.maxAttempts, policy: ctx.policy, leaseMs: this.deps.lease.leaseMs });
    // The attempt log's row goes out beside the writes below (one PutItem); awaited before the run ends.
    const logs = [this.log(attemptRow({ endpointId, event, attempt: ctx.attempt, startedAt: sentAt, durationMs, result, nextRetryAt: nextRetryOf(step.job, at, ctx.attempt, ctx.policy), source: 'job' }), ctx)];
    this.deps.metrics.count(DELIVERY_METRIC, { result: result.type });
    this.disabled(endpointId, step.endpoint, ctx);
    await unparked;
    if (step.rejoin) await store.park(wait, ctx.id, at, step.rejoin.notBefore, event.id);
    const handOn: HandOn = { runNext: (id) => ctx.runNext(id) };
    const own = step.job.type === 'completed' ? 1 : 0;
    const lease = step.endpoint.lease;
    // This run disables the endpoint (its own attempt, or one it drained): the notice follows the write.
    let disabling = step.endpoint.disable !== undefined;
    if (lease.type === 'pass' && lease.armedUntil === null && !step.endpoint.disable) {
      // Its own delivery is done and the lease passes on: first to the deliveries waiting with no job.
      const drained = await this.drain(turn.row, await heads.catch(() => []), ctx, started, logs);
      const delivered = own + drained.delivered;
      const failed = drained.failed;
      if (failed?.change.disable) disabling = true;
      if (drained.stopped) {
        // Disabled or deleted mid-drain: nothing more is sent; the hand-off discards what waits (a deletion's purge does the rest).
        await this.waitList.finish(endpointId, ctx.id, step.endpoint, drained.heads, ctx.now(), undefined, { delivered, disabled: true, deleted: drained.stopped.deletedAt !== undefined });
      } else if (drained.fenced) {
        // The lease ran out mid-drain and another delivery holds it now: record what this run did, move nothing.
        await store.recordHealth(endpointId, step.endpoint, ctx.now(), delivered);
      } else if (!failed) {
        await this.waitList.finish(endpointId, ctx.id, step.endpoint, drained.heads, ctx.now(), handOn, { delivered });
      } else if (failed.change.lease.type === 'keep') {
        // A young failure: the failing delivery keeps the probe role, as its own job now.
        const moved = await store.settle(endpointId, ctx.id, failed.change, { type: 'pass', to: failed.jobId, busyUntil: failed.change.lease.busyUntil }, ctx.now(), delivered);
        if (moved === 'not_holder') await store.recordHealth(endpointId, failed.change, ctx.now(), delivered);
      } else {
        await this.waitList.finish(endpointId, ctx.id, failed.change, drained.heads, ctx.now(), handOn, { delivered, exclude: failed.jobId });
      }
    } else {
      await this.waitList.finish(endpointId, ctx.id, step.endpoint, await heads.catch(() => []), at, handOn, { delivered: own });
    }
    if (disabling) await this.noticeDisabled(endpointId, ctx);
    await Promise.all(logs);
    return outcome(step.job);
  }

  /**
   * Enqueues the notice of the disable this run wrote (notices.ts). Never throws: the sweep enqueues the
   * notice of a disabled endpoint that has none (sweep.ts), late but not lost.
   */
  private async noticeDisabled(endpointId: string, ctx: JobContext): Promise<void> {
    const job = disabledNoticeJob(endpointId, new Date(ctx.now()).toISOString());
    try {
      await this.deps.jobs.enqueue(webhookNoticeKind, job.args, { id: job.id });
    } catch (error) {
      ctx.logger.warn('notice of a disable not enqueued; the sweep will', { endpointId, error: String(error) });
    }
  }

  /**
   * Writes one attempt's row to the attempt log (attempts.ts). Never throws: the log records the delivery
   * and never changes it; a row DynamoDB refused is missing from the log (a warning says which).
   */
  private log(row: AttemptRow, ctx: JobContext): Promise<void> {
    return this.deps.attemptLog.put(row).catch((error: unknown) => ctx.logger.warn('attempt not logged', { endpointId: row.endpointId, eventId: row.eventId, attempt: row.attempt, error: String(error) }));
  }

  /** Counts and logs an endpoint's disabling, when an attempt's step disables it. */
  private disabled(endpointId: string, change: EndpointChange, ctx: JobContext): void {
    if (!change.disable) return;
    this.deps.metrics.count(DISABLED_METRIC, { reason: change.disable });
    ctx.logger.warn('endpoint disabled', { endpointId, reason: change.disable });
  }

  /**
   * Sends, one at a time, the deliveries at the head of the wait list that have no job, while this run
   * holds the lease and has time. Each that succeeds leaves the list (and is counted); the first that does
   * not becomes a job with this attempt as its first, and what it means for the endpoint decides the
   * lease (`moved`) — except a permanent refusal of that one event (4xx, an address the guard refuses),
   * which passes the lease on as a success would, so the drain goes on. It stops at a parked job (the
   * lease is handed on to it), at the end of the list, or out of time.
   */
  private async drain(
    endpoint: EndpointRow,
    first: readonly WaitEntry[],
    ctx: JobContext,
    started: number,
    logs: Promise<void>[],
  ): Promise<{ delivered: number; heads: WaitEntry[]; failed?: { jobId: string; change: EndpointChange }; fenced?: true; stopped?: EndpointRow }> {
    const { store, jobs } = this.deps;
    const policy = webhookDeliverKind.policy;
    let heads = first.filter((h) => h.jobId !== ctx.id);
    let busyUntil = endpoint.busyUntil === undefined ? undefined : Date.parse(endpoint.busyUntil);
    let delivered = 0;
    // The read-ahead is used up: read again (an entry put meanwhile is seen here, or by the holder's last look).
    let fresh = false;
    // A delivered entry's removal goes on while the next one is sent; it is awaited before the list is read
    // again and before the lease moves, so nobody reads an entry that was delivered. One that cannot be
    // removed (DynamoDB refused the request) ends the drain: the next holder sends it again (at least once).
    let removing: Promise<boolean> = Promise.resolve(true);
    const removed = (entry: WaitEntry) =>
      store.unpark(entry).then(
        () => true,
        (error: unknown) => (ctx.logger.warn('a delivered entry was not removed; it will be sent again', { jobId: entry.jobId, error: String(error) }), false),
      );
    for (;;) {
      if (heads.length === 0) {
        if (fresh || !(await removing)) return { delivered, heads };
        heads = (await store.waitListHead(endpoint.endpointId, DRAIN_READ)).filter((h) => h.jobId !== ctx.id);
        fresh = true;
        continue;
      }
      const head = heads[0]!;
      // A parked job: the lease is handed on to it. Out of time: the head is given a job and handed the lease.
      if (!isPending(head) || ctx.now() - started >= this.deps.drainBudgetMs || ctx.signal.aborted) {
        await removing;
        return { delivered, heads };
      }
      // No send outlasts the lease it starts under: renewed first when it would (one write per lease's worth of sends).
      if (!coversSend(busyUntil, ctx.now(), this.deps.lease)) {
        const until = ctx.now() + this.deps.lease.leaseMs;
        if (!(await this.renew(endpoint.endpointId, ctx, until))) {
          await removing;
          return { delivered, heads, fenced: true };
        }
        busyUntil = until;
      }
      // Before each send, the endpoint as committed now: a deletion or a disable stops the drain, a new URL
      // or secret is used from this send on, and a lease lost meanwhile fences it off (manage.ts).
      const current = await store.getEndpoint(endpoint.endpointId);
      if (!current || current.disabled || current.deletedAt !== undefined) {
        await removing;
        return current ? { delivered, heads, stopped: current } : { delivered, heads, fenced: true };
      }
      if (current.holder !== ctx.id) {
        await removing;
        return { delivered, heads, fenced: true };
      }
      // Decrypted secrets are remembered (secrets.ts): asking again costs nothing unless the secret changed.
      const secrets = await signingSecrets(this.deps.secrets, current, ctx.now());
      const startedAt = ctx.now();
      const t0 = performance.now();
      const result = await this.attempt(current, secrets, head.event, ctx);
      const durationMs = performance.now() - t0;
      this.deps.metrics.count(DELIVERY_METRIC, { result: result.type });
      const logged = (outcome: RunOutcome) =>
        logs.push(this.log(attemptRow({ endpointId: endpoint.endpointId, event: head.event, attempt: 1, startedAt, durationMs, result, nextRetryAt: nextRetryOf(outcome, ctx.now(), 1, policy), source: 'wait_list' }), ctx));
      heads = heads.slice(1);
      if (heads.length === 0) fresh = false;
      const previous = removing;
      if (result.type === 'delivered') {
        logged({ type: 'completed' });
        removing = removed(head);
        delivered++;
        if (await previous) continue;
        await removing;
        return { delivered, heads };
      }
      if (!(await previous)) ctx.logger.warn('the drain ends after this delivery: an entry before it was not removed', { jobId: head.jobId });
      // Not delivered: from now on it is a job, with this attempt as its first, and the job layer decides the rest.
      const at = ctx.now();
      const step = afterAttempt(leaseStateOf(current), result, { now: at, attempt: 1, maxAttempts: policy.maxAttempts, policy, leaseMs: this.deps.lease.leaseMs });
      logged(step.job);
      await jobs.enqueueAttempted(
        webhookDeliverKind,
        { eventId: head.event.id, endpointId: endpoint.endpointId, event: head.event },
        { id: head.jobId, attempt: { at: startedAt, durationMs }, outcome: step.job },
      );
      if (step.rejoin) await store.park(head, head.jobId, at, step.rejoin.notBefore, head.event.id);
      else await store.unpark(head);
      this.disabled(endpoint.endpointId, step.endpoint, ctx);
      const lease = step.endpoint.lease;
      // Refused for good (4xx, the guard): that event alone; the lease passes on as after a success, to the next.
      if (lease.type === 'pass' && lease.armedUntil === null && !step.endpoint.disable) {
        if (await previous) continue;
        return { delivered, heads };
      }
      return { delivered, heads, failed: { jobId: head.jobId, change: step.endpoint } };
    }
  }

  /**
   * Gets this delivery the lease, or parks it. Returns with the lease held and the endpoint as it was
   * then; otherwise throws the snooze (parked, or the failing endpoint's rest) or the discard (disabled).
   */
  private async takeTurn(endpoint: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, now: number, eventId: string): Promise<{ row: EndpointRow; parked: boolean }> {
    let row = endpoint;
    let inList = parked;
    let admission = admit(leaseStateOf(row), ctx.id, now);
    if (admission.type === 'park') {
      ({ row, admission } = await this.parkAndLook(row, wait, inList, ctx, now, eventId));
      inList = true;
    }
    let held = await this.hold(row, admission, wait, inList, ctx, now);
    if (!held) {
      // Another delivery took the free lease first. Be in the list it will read, then look once more.
      ({ row, admission } = await this.parkAndLook(row, wait, inList, ctx, now, eventId));
      inList = true;
      held = await this.hold(row, admission, wait, inList, ctx, now);
      if (!held) throw snooze({ delayMs: LEASE_RACE_SNOOZE_MS }, 'lost a race for the endpoint lease twice; looking again shortly');
    }
    if (admission.type === 'wait') {
      throw snooze({ until: admission.until }, `endpoint failing: this delivery probes it at ${new Date(admission.until).toISOString()}`);
    }
    const sendAt = ctx.now();
    if (!coversSend(held.busyUntil === undefined ? undefined : Date.parse(held.busyUntil), sendAt, this.deps.lease)) {
      const busyUntil = sendAt + this.deps.lease.leaseMs;
      if (!(await this.renew(held.endpointId, ctx, busyUntil))) throw snooze({ delayMs: LEASE_RACE_SNOOZE_MS }, 'the lease ran out and was taken before this delivery could send; looking again shortly');
      return { row: { ...held, busyUntil: new Date(busyUntil).toISOString() }, parked: inList };
    }
    return { row: held, parked: inList };
  }

  /** Extends this holder's lease to `busyUntil`; false if it no longer holds it (fenced: it sends nothing more). */
  private async renew(endpointId: string, ctx: JobContext, busyUntil: number): Promise<boolean> {
    const renewed = await this.deps.store.renewLease(endpointId, ctx.id, busyUntil);
    if (!renewed) ctx.logger.warn('lease lost before a send: another delivery holds the endpoint now', { endpointId, jobId: ctx.id });
    return renewed;
  }

  /** Acts on an admission: takes the lease when it is free. Undefined when someone else took it first. */
  private async hold(row: EndpointRow, admission: Admission, wait: Wait, parked: boolean, ctx: JobContext, now: number): Promise<EndpointRow | undefined> {
    switch (admission.type) {
      case 'disabled':
        return this.leave(row, wait, parked, ctx, DeliveryDiscardReason.endpoint_disabled, 'endpoint is disabled');
      case 'park':
        // Dormant: the holder hands it the lease and starts it; the rescuer wakes it after PARK_MS if nobody did.
        throw snooze({ delayMs: PARK_MS }, `parked: endpoint busy (lease held by ${row.holder ?? '?'})`, { dormant: true });
      case 'wait':
      case 'send': {
        if (!admission.acquire) return row;
        const busyUntil = (admission.type === 'wait' ? admission.until : now) + this.deps.lease.leaseMs;
        return this.deps.store.acquire(row.endpointId, ctx.id, now, busyUntil);
      }
      default:
        return assertNever(admission);
    }
  }

  /**
   * Parks this delivery, then reads the endpoint again: a holder that let go between the first read and
   * the entry would not have seen the entry, but this second read sees it let go (docs/webhooks.md).
   */
  private async parkAndLook(row: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, now: number, eventId: string): Promise<{ row: EndpointRow; admission: Admission }> {
    const { store } = this.deps;
    if (!parked) await store.park(wait, ctx.id, now, undefined, eventId);
    const again = (await store.getEndpoint(row.endpointId)) ?? row;
    return { row: again, admission: admit(leaseStateOf(again), ctx.id, now) };
  }

  /** Discards without sending: out of the wait list, the lease passed on if held (the discard hook leaves the marker for redeliver). */
  private async leave(row: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, reason: DeliveryDiscardReason, message: string): Promise<never> {
    const { store } = this.deps;
    const now = ctx.now();
    const deleted = row.deletedAt !== undefined;
    if (parked) await store.unpark(wait);
    if (row.holder === ctx.id) await this.waitList.finish(row.endpointId, ctx.id, undefined, await store.waitListHead(row.endpointId, 3), now, undefined, { disabled: row.disabled, deleted });
    // A deleted endpoint is disabled too: what waited for it is discarded as deleted.
    if (deleted && reason === DeliveryDiscardReason.endpoint_disabled) throw discard(DeliveryDiscardReason.endpoint_deleted, 'endpoint deleted');
    throw discard(reason, message);
  }

  /**
   * webhook.deliver's discard hook, run by the job layer whenever a delivery's discard is decided (its own,
   * its attempts running out, or its last attempt lost with its worker), before the discard is written: the
   * marker redeliver finds. A Put, so running it again is harmless; a marker whose job was not discarded
   * after all is kept while the job may still be, and dropped once it completed (endpoints.ts, redeliver).
   */
  async discarded(args: { endpointId: string }, job: DiscardedJob): Promise<void> {
    await this.deps.store.markDiscarded(args.endpointId, job.id, job.reason, job.at);
  }

  /** One attempt: check the URL, sign, send once to the vetted address, classify. Never throws a send error. */
  private async attempt(endpoint: EndpointRow, secret: readonly string[], event: WebhookEvent, ctx: JobContext): Promise<DeliveryResult> {
    const { http, guard, requestTimeoutMs } = this.deps;
    const shape = checkUrlShape(endpoint.url, guard);
    if (!shape.ok) return { type: 'blocked', error: shape.reason };
    const { headers, body } = signedRequest(secret, event, this.deps.wallClock.now());
    try {
      const response = await http.send({ url: endpoint.url, method: 'POST', headers, body, timeoutMs: requestTimeoutMs, signal: ctx.signal });
      return classifyResponse(response.status, response.headers['retry-after'], ctx.now());
    } catch (error) {
      if (error instanceof AddressRefusedError) return { type: 'blocked', error: error.message };
      return { type: 'failed', error: describe(error) };
    }
  }
}

/** Tells the job layer: return for completed, throw for the rest. */
function outcome(job: RunOutcome): void {
  switch (job.type) {
    case 'completed':
      return;
    case 'snoozed':
      throw snooze(job.until === undefined ? { delayMs: job.delayMs ?? 0 } : { until: job.until }, job.reason);
    case 'retryable':
      throw new DeliveryFailedError(job.error);
    case 'discarded':
      throw discard(job.reason, job.error);
    default:
      return assertNever(job);
  }
}

/** A short description of a network error, with its code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${error.message}${cause}`.slice(0, 500);
}
