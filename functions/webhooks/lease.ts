import { assertNever } from '../platform/assert.ts';
import type { Clock } from '../platform/clock.ts';
import { retrySchedule } from '../jobs/index.ts';
import type { Policy, RunOutcome } from '../jobs/index.ts';
import type { DeliveryResult } from './classify.ts';
import type { WebhookOptions } from './context.ts';
import { DisabledReason } from './endpoint.ts';
import type { EndpointRow } from './endpoint.ts';
import { DeliveryDiscardReason } from './kinds.ts';

/**
 * One delivery per endpoint in flight, and one probe while it fails: the pure decisions. The store
 * (store.ts) makes them conditional writes; the delivery (delivery.ts) runs them.
 *
 * ```
 *   lease free ──► take it ──► send ──► 2xx ──► pass it to the oldest waiting delivery, at once
 *   lease taken ─► park in the wait list, snooze long (no attempt spent); the holder wakes you
 *   failure ─────► still young, next retry within a cooldown: keep the lease, retry on your own schedule
 *             └──► otherwise: pass it to the oldest waiting delivery that is due, armed for one cooldown
 *                  from now; it probes then, with its own attempt. You rejoin the list, not to probe
 *                  again before your own backoff ends, but released with everyone on the first success
 * ```
 */

/** How long a failing endpoint rests between probes (the cooldown of docs/webhooks.md). */
export const COOLDOWN_MS = 5 * 60_000;
/**
 * The shortest a lease lasts past the time its holder means to use it; a crashed holder lets go after this.
 * On a fast clock (the local runtime's TIME_SCALE) the lease is longer: {@link leaseTerms}.
 */
export const LEASE_MS = 5 * 60_000;
/** Real ms one send may take beyond its request timeout: signing, the guard's lookup, the gap between the lease check and the send. */
export const SEND_MARGIN_MS = 2_000;

/**
 * How long a lease lasts and how much of it a holder needs left to start a send, on the deliveries' clock.
 * A send takes real time (its request timeout at most); the lease runs on the job clock, which under a
 * scaled clock (`speed` clock ms per real ms) runs faster: both are measured on that one clock, so a lease
 * always outlasts the send started under it, whatever the scale.
 *
 * ```
 *   holder: ── check: busyUntil ≥ now + sendMs? ── no ──► renew (holder = me) to now + leaseMs ── refused ──► stop: not the holder
 *                        │ yes                                      │ renewed
 *                        └──────────────► send (≤ request timeout) ◄┘
 * ```
 */
export interface LeaseTerms {
  /** A lease's length from the time its holder means to use it. */
  leaseMs: number;
  /** The most one send takes, on the clock: what a holder must have left of its lease to start one. */
  sendMs: number;
}

/** The lease terms for sends with this request timeout (real ms) on a clock running `speed` times real time. */
export function leaseTerms(requestTimeoutMs: number, speed = 1): LeaseTerms {
  const sendMs = Math.ceil((requestTimeoutMs + SEND_MARGIN_MS) * speed);
  return { sendMs, leaseMs: Math.max(LEASE_MS, 2 * sendMs) };
}

/** Whether a lease that runs until `busyUntil` leaves time for one more send started at `now`. */
export const coversSend = (busyUntil: number | undefined, now: number, terms: LeaseTerms): boolean => busyUntil !== undefined && busyUntil >= now + terms.sendMs;
/** How long a parked delivery sleeps if nobody wakes it (a backstop: the lease holder and the sweep wake it). */
export const PARK_MS = 6 * 3600_000;
/** Continuous failure, counted from failingSince, that disables an endpoint. */
export const DISABLE_AFTER_MS = 5 * 86400_000;

/** The lease and health of an endpoint, in epoch ms. */
export interface LeaseState {
  disabled: boolean;
  failingSince?: number;
  nextProbeAt?: number;
  holder?: string;
  busyUntil?: number;
}

const ms = (iso: string | undefined): number | undefined => (iso === undefined ? undefined : Date.parse(iso));

export const leaseStateOf = (row: EndpointRow): LeaseState => ({
  disabled: row.disabled,
  ...(row.failingSince ? { failingSince: ms(row.failingSince)! } : {}),
  ...(row.nextProbeAt ? { nextProbeAt: ms(row.nextProbeAt)! } : {}),
  ...(row.holder ? { holder: row.holder } : {}),
  ...(row.busyUntil ? { busyUntil: ms(row.busyUntil)! } : {}),
});

/** Whose the lease is, seen from one delivery. An expired lease is free, except to its own holder. */
export function leaseOf(state: LeaseState, jobId: string, now: number): 'mine' | 'free' | 'taken' {
  if (state.holder === jobId) return 'mine';
  if (state.holder === undefined || state.busyUntil === undefined || state.busyUntil < now) return 'free';
  return 'taken';
}

/** Whether a delivery holds the endpoint's lease at `now`, as `row` says (what a publisher decides by). */
export const leaseTaken = (row: Pick<EndpointRow, 'holder' | 'busyUntil'>, now: number): boolean =>
  row.holder !== undefined && row.busyUntil !== undefined && Date.parse(row.busyUntil) >= now;

/** What a delivery may do when it runs. */
export type Admission =
  /** The endpoint is disabled: discard. */
  | { type: 'disabled' }
  /** Another delivery holds the lease: park and wait to be woken. */
  | { type: 'park' }
  /** The lease is (or will be) yours, but the failing endpoint rests until `until`: snooze till then, holding it. */
  | { type: 'wait'; until: number; acquire: boolean }
  /** Send now (taking the lease first when `acquire`). */
  | { type: 'send'; acquire: boolean };

/** Decides what a delivery does with the endpoint as it finds it. */
export function admit(state: LeaseState, jobId: string, now: number): Admission {
  if (state.disabled) return { type: 'disabled' };
  const lease = leaseOf(state, jobId, now);
  if (lease === 'taken') return { type: 'park' };
  const acquire = lease === 'free';
  if (state.failingSince !== undefined && state.nextProbeAt !== undefined && now < state.nextProbeAt) {
    return { type: 'wait', until: state.nextProbeAt, acquire };
  }
  return { type: 'send', acquire };
}


/** What happens to the endpoint. */
export interface EndpointChange {
  /** `healthy` clears failingSince; `failing` sets it unless it is set. */
  health: 'healthy' | 'failing';
  /** When the endpoint may be tried next; `null` removes the rest. */
  nextProbeAt: number | null;
  disable?: DisabledReason;
  lease:
    /** Keep the lease until `busyUntil` (a probe retrying within the cooldown, or a Retry-After). */
    | { type: 'keep'; busyUntil: number }
    /** Pass it to the oldest waiting delivery (armed: it waits until `armedUntil` to probe), or let it go. */
    | { type: 'pass'; armedUntil: number | null };
}

/** The whole decision after an attempt. */
export interface Step {
  /** What the job layer is told, in its own vocabulary. */
  job: RunOutcome;
  endpoint: EndpointChange;
  /**
   * A probe that failed and passed the role on rejoins the wait list, marked not to probe again before
   * its own next attempt is due; a success releases it with the others instead of leaving it to its backoff.
   */
  rejoin?: { notBefore: number };
}

/** The attempt being decided on. */
export interface AttemptContext {
  now: number;
  /** 1-based. */
  attempt: number;
  maxAttempts: number;
  /** The delivery kind's policy: its schedule says when this delivery would try again. */
  policy: Policy;
  /** A lease's length on this clock ({@link leaseTerms}). @default LEASE_MS */
  leaseMs?: number;
}

/**
 * Decides what an attempt's result means for the job and for the endpoint (docs/webhooks.md, and
 * docs/deviations.md item 3: while an endpoint fails, one delivery probes it and the others wait).
 *
 * A failure keeps the lease with the failing delivery while the endpoint's failure is younger than a
 * cooldown and this delivery's own next attempt is due within a cooldown (webhook.deliver's 5 s and 5 min
 * retries of a blip). Past that, the probe role passes to the oldest waiting delivery, which probes one
 * cooldown later with its own attempt. So a dead endpoint sees about one request per cooldown, and is
 * found again within one cooldown of coming back.
 */
export function afterAttempt(state: LeaseState, result: DeliveryResult, ctx: AttemptContext): Step {
  const { now } = ctx;
  const leaseMs = ctx.leaseMs ?? LEASE_MS;
  const overdue = state.failingSince !== undefined && now - state.failingSince >= DISABLE_AFTER_MS;
  const disabledNow: Step = {
    job: { type: 'discarded', reason: DeliveryDiscardReason.endpoint_disabled, error: `endpoint failing since ${new Date(state.failingSince ?? now).toISOString()}: disabled after 5 days` },
    endpoint: { health: 'failing', nextProbeAt: null, disable: DisabledReason.failing, lease: { type: 'pass', armedUntil: null } },
  };
  switch (result.type) {
    case 'delivered':
      return { job: { type: 'completed' }, endpoint: { health: 'healthy', nextProbeAt: null, lease: { type: 'pass', armedUntil: null } } };
    case 'throttled':
      if (overdue) return disabledNow;
      return {
        job: { type: 'snoozed', until: result.until, delayMs: undefined, reason: `HTTP ${result.status} Retry-After ${result.retryAfter.slice(0, 64)}` },
        endpoint: { health: 'failing', nextProbeAt: result.until, lease: { type: 'keep', busyUntil: result.until + leaseMs } },
      };
    case 'failed': {
      if (overdue) return disabledNow;
      const next = ctx.attempt < ctx.maxAttempts ? retrySchedule(ctx.policy)[ctx.attempt - 1] : undefined;
      const young = now - (state.failingSince ?? now) < COOLDOWN_MS;
      if (next && young && next.delayMs <= COOLDOWN_MS) {
        return {
          job: { type: 'retryable', error: result.error },
          endpoint: { health: 'failing', nextProbeAt: now + next.minMs, lease: { type: 'keep', busyUntil: now + next.maxMs + leaseMs } },
        };
      }
      return {
        job: { type: 'retryable', error: result.error },
        endpoint: { health: 'failing', nextProbeAt: now + COOLDOWN_MS, lease: { type: 'pass', armedUntil: now + COOLDOWN_MS } },
        ...(next ? { rejoin: { notBefore: now + next.minMs } } : {}),
      };
    }
    case 'gone':
      return {
        job: { type: 'discarded', reason: DeliveryDiscardReason.gone, error: 'HTTP 410 Gone: endpoint disabled' },
        endpoint: { health: 'failing', nextProbeAt: null, disable: DisabledReason.gone, lease: { type: 'pass', armedUntil: null } },
      };
    case 'rejected':
      return {
        job: { type: 'discarded', reason: DeliveryDiscardReason.http_4xx, error: `HTTP ${result.status}` },
        endpoint: { health: 'failing', nextProbeAt: null, ...(overdue ? { disable: DisabledReason.failing } : {}), lease: { type: 'pass', armedUntil: null } },
      };
    case 'blocked':
      return {
        job: { type: 'discarded', reason: DeliveryDiscardReason.ssrf_blocked, error: result.error },
        endpoint: { health: 'failing', nextProbeAt: null, ...(overdue ? { disable: DisabledReason.failing } : {}), lease: { type: 'pass', armedUntil: null } },
      };
    default:
      return assertNever(result);
  }
}

/** A delivery's request timeout unless the options set one (real ms). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * The endpoint lease's terms for these options on this clock: every part that takes or moves a lease (the
 * publisher in the intake, the deliveries, the sweep) derives them here, so they agree.
 */
export const webhookLeaseTerms = (options: WebhookOptions | undefined, clock: Clock): LeaseTerms =>
  options?.lease ?? leaseTerms(options?.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, clock.speed ?? 1);

