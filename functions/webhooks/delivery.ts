import { assertNever } from '../platform/assert.ts';
import { discard, snooze } from '../jobs/index.ts';
import type { DiscardedJob, JobContext, RunOutcome } from '../jobs/index.ts';
import { AddressRefusedError } from '../platform/vetted-http.ts';
import { classifyResponse } from './classify.ts';
import type { DeliveryResult } from './classify.ts';
import type { WebhookDeps } from './deps.ts';
import { waitKey } from './endpoint.ts';
import { DeliveryFailedError } from './errors.ts';
import type { EndpointRow } from './endpoint.ts';
import type { WebhookEvent } from './events.ts';
import { admit, afterAttempt, LEASE_MS, leaseStateOf, PARK_MS } from './lease.ts';
import type { Admission } from './lease.ts';
import { DeliveryDiscardReason } from './kinds.ts';
import { signedRequest } from './signing.ts';
import { checkUrlShape } from './ssrf.ts';
import { WaitList } from './waitlist.ts';

/** The metric counted once per attempt that reached a verdict, by result. */
export const DELIVERY_METRIC = 'WebhookDelivery';
/** The metric counted when an endpoint is disabled, by reason. */
export const DISABLED_METRIC = 'WebhookEndpointDisabled';

/** How long a delivery that lost a race for a free lease waits before it looks again (no attempt spent). */
const LEASE_RACE_SNOOZE_MS = 1_000;

type Wait = { pk: string; sk: string };

/**
 * The webhook.deliver handler: take the endpoint's lease (or park and wait to be handed it), send the
 * signed event once, classify the answer, record what it means for the endpoint and pass the lease on,
 * then tell the job layer: return (completed), snooze, discard, or throw (retryable).
 */
export class Deliveries {
  private readonly deps: WebhookDeps;
  private readonly waitList: WaitList;

  constructor(deps: WebhookDeps, waitList: WaitList) {
    this.deps = deps;
    this.waitList = waitList;
  }

  async deliver(args: { eventId: string; endpointId: string }, ctx: JobContext): Promise<void> {
    const { store } = this.deps;
    const now = ctx.now();
    const wait = waitKey(args.endpointId, ctx.createdAt, ctx.id);
    const read = await store.readForDelivery(args.endpointId, args.eventId, wait);
    if (!read.endpoint) {
      if (read.parked) await store.unpark(wait);
      throw discard(DeliveryDiscardReason.not_found, `endpoint ${args.endpointId} not found`);
    }
    if (!read.event) return this.leave(read.endpoint, wait, read.parked, ctx, DeliveryDiscardReason.not_found, `event ${args.eventId} not found (pruned after its retention)`);

    const turn = await this.takeTurn(read.endpoint, wait, read.parked, ctx, now);
    const endpointId = args.endpointId;
    // Off the critical path: leave the wait list, and read who waits next while the request is out.
    const unparked = turn.parked ? store.unpark(wait).catch((error: unknown) => ctx.logger.warn('wait-list entry not removed', { error: String(error) })) : undefined;
    const heads = store.waitListHead(endpointId, 3);
    heads.catch(() => undefined);

    const result = await this.attempt(turn.row, read.event, ctx);
    const at = ctx.now();
    const step = afterAttempt(leaseStateOf(turn.row), result, { now: at, attempt: ctx.attempt, maxAttempts: ctx.maxAttempts, policy: ctx.policy });
    await unparked;
    if (step.rejoin) await store.park(wait, ctx.id, at, step.rejoin.notBefore);
    await this.waitList.finish(endpointId, ctx.id, step.endpoint, await heads, at);
    this.deps.metrics.count(DELIVERY_METRIC, { result: result.type });
    if (step.endpoint.disable) {
      this.deps.metrics.count(DISABLED_METRIC, { reason: step.endpoint.disable });
      ctx.logger.warn('endpoint disabled', { endpointId, reason: step.endpoint.disable });
    }
    return outcome(step.job);
  }

  /**
   * Gets this delivery the lease, or parks it. Returns with the lease held and the endpoint as it was
   * then; otherwise throws the snooze (parked, or the failing endpoint's rest) or the discard (disabled).
   */
  private async takeTurn(endpoint: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, now: number): Promise<{ row: EndpointRow; parked: boolean }> {
    let row = endpoint;
    let inList = parked;
    let admission = admit(leaseStateOf(row), ctx.id, now);
    if (admission.type === 'park') {
      ({ row, admission } = await this.parkAndLook(row, wait, inList, ctx, now));
      inList = true;
    }
    let held = await this.hold(row, admission, wait, inList, ctx, now);
    if (!held) {
      // Another delivery took the free lease first. Be in the list it will read, then look once more.
      ({ row, admission } = await this.parkAndLook(row, wait, inList, ctx, now));
      inList = true;
      held = await this.hold(row, admission, wait, inList, ctx, now);
      if (!held) throw snooze({ delayMs: LEASE_RACE_SNOOZE_MS }, 'lost a race for the endpoint lease twice; looking again shortly');
    }
    if (admission.type === 'wait') {
      throw snooze({ until: admission.until }, `endpoint failing: this delivery probes it at ${new Date(admission.until).toISOString()}`);
    }
    return { row: held, parked: inList };
  }

  /** Acts on an admission: takes the lease when it is free. Undefined when someone else took it first. */
  private async hold(row: EndpointRow, admission: Admission, wait: Wait, parked: boolean, ctx: JobContext, now: number): Promise<EndpointRow | undefined> {
    switch (admission.type) {
      case 'disabled':
        return this.leave(row, wait, parked, ctx, DeliveryDiscardReason.endpoint_disabled, 'endpoint is disabled');
      case 'park':
        throw snooze({ delayMs: PARK_MS }, `parked: endpoint busy (lease held by ${row.holder ?? '?'})`);
      case 'wait':
      case 'send': {
        if (!admission.acquire) return row;
        const busyUntil = (admission.type === 'wait' ? admission.until : now) + LEASE_MS;
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
  private async parkAndLook(row: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, now: number): Promise<{ row: EndpointRow; admission: Admission }> {
    const { store } = this.deps;
    if (!parked) await store.park(wait, ctx.id, now);
    const again = (await store.getEndpoint(row.endpointId)) ?? row;
    return { row: again, admission: admit(leaseStateOf(again), ctx.id, now) };
  }

  /** Discards without sending: out of the wait list, the lease passed on if held (the discard hook leaves the marker for redeliver). */
  private async leave(row: EndpointRow, wait: Wait, parked: boolean, ctx: JobContext, reason: DeliveryDiscardReason, message: string): Promise<never> {
    const { store } = this.deps;
    const now = ctx.now();
    if (parked) await store.unpark(wait);
    if (row.holder === ctx.id) await this.waitList.finish(row.endpointId, ctx.id, undefined, await store.waitListHead(row.endpointId, 3), now);
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
  private async attempt(endpoint: EndpointRow, event: WebhookEvent, ctx: JobContext): Promise<DeliveryResult> {
    const { http, guard, requestTimeoutMs } = this.deps;
    const shape = checkUrlShape(endpoint.url, guard);
    if (!shape.ok) return { type: 'blocked', error: shape.reason };
    const { headers, body } = signedRequest(endpoint.secret, event, this.deps.wallClock.now());
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
