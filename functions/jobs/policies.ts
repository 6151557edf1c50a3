import type { Rng } from '../platform/rng.ts';

/**
 * How long to wait after a failed attempt. `exponential`: initial · factor^(attempt−1), capped.
 * `schedule`: a fixed list of delays whose last entry repeats. `none`: never retried.
 */
export type Backoff =
  | { type: 'exponential'; initialSeconds: number; factor: number; capSeconds: number }
  | { type: 'schedule'; delaysSeconds: readonly number[] }
  | { type: 'none' };

/** What happens when the last attempt fails. */
export type OnExhausted =
  /** Discarded, and the alerting metric fires (the seed's "discarded + alert"). */
  | 'discard_alert'
  /** Discarded without an alert (webhook.deliver: its endpoint's own rules take over). */
  | 'discard'
  /** A periodic job: nothing is retried, the next period runs; the panel shows the last failure. */
  | 'next_period';

/** A retry policy, declared as data on a job kind. */
export interface Policy {
  maxAttempts: number;
  backoff: Backoff;
  /** Uniform jitter as a fraction of each delay: 0.1 means ±10 %. */
  jitter: number;
  onExhausted: OnExhausted;
}

/** River's and the seed's DefaultBackoff: 1 s doubling, capped at 15 min. */
export const DefaultBackoff: Backoff = { type: 'exponential', initialSeconds: 1, factor: 2, capSeconds: 15 * 60 };

/** Mail: 20 s, then ×3 per attempt (7 waits over 8 attempts, about 6.07 h in all). */
export const MailBackoff: Backoff = { type: 'exponential', initialSeconds: 20, factor: 3, capSeconds: Number.POSITIVE_INFINITY };

/** Webhook delivery: 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h each (17 waits over 18 attempts, about 5.32 days). */
export const WebhookBackoff: Backoff = {
  type: 'schedule',
  delaysSeconds: [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600],
};

const JITTER = 0.1;

const standard: Policy = { maxAttempts: 10, backoff: DefaultBackoff, jitter: JITTER, onExhausted: 'discard_alert' };
const mail: Policy = { maxAttempts: 8, backoff: MailBackoff, jitter: JITTER, onExhausted: 'discard_alert' };

/** Periodic jobs: one attempt; a failure waits for the next period. */
export const periodicPolicy: Policy = { maxAttempts: 1, backoff: { type: 'none' }, jitter: 0, onExhausted: 'next_period' };

/**
 * The policy of every job kind, keyed by its stable dotted name. This is the seed's policy table
 * (seeds/000: "Policy (declared on the job kind, as data)"), plus redial's own kinds:
 *
 * | kind | max attempts | backoff | exhausted |
 * |---|---|---|---|
 * | owner.notify, access_request.approval_mail, owner.email_confirmation | 8 | 20 s then ×3 | discarded + alert |
 * | webhook.fanout | 10 | DefaultBackoff | discarded + alert |
 * | webhook.deliver | 18 | 5 s, 5 min, 30 min, 2 h, 5 h, 10 h… | discarded; endpoint rules |
 * | webhook.wake | 10 | DefaultBackoff | discarded + alert |
 * | calls.dial, calls.watchdog, calls.finalise | 10 | DefaultBackoff | discarded + alert |
 * | ops.probe | 10 | DefaultBackoff | discarded + alert |
 *
 * The seed's corpus.index and corpus.reindex use DefaultBackoff with 10 attempts; redial has no search
 * index, so it declares no corpus kinds.
 */
export const policies = {
  'owner.notify': mail,
  'access_request.approval_mail': mail,
  'owner.email_confirmation': mail,
  'webhook.fanout': standard,
  'webhook.deliver': { maxAttempts: 18, backoff: WebhookBackoff, jitter: JITTER, onExhausted: 'discard' },
  // redial's own: wakes a parked delivery that was handed the lease while it was still running.
  'webhook.wake': standard,
  'calls.dial': standard,
  'calls.watchdog': standard,
  'calls.finalise': standard,
  'ops.probe': standard,
} as const satisfies Record<string, Policy>;

/** A kind that has a policy in {@link policies}. */
export type PolicyKind = keyof typeof policies;

/**
 * The un-jittered wait after attempt `attempt` (1-based) fails, in milliseconds.
 * Exponential: initial · factor^(attempt−1), capped. Schedule: the attempt's entry, the last repeating.
 */
export function baseDelayMs(backoff: Backoff, attempt: number): number {
  if (attempt < 1) throw new RangeError(`attempt is 1-based, got ${attempt}`);
  switch (backoff.type) {
    case 'exponential':
      return Math.min(backoff.capSeconds, backoff.initialSeconds * backoff.factor ** (attempt - 1)) * 1000;
    case 'schedule': {
      const delays = backoff.delaysSeconds;
      return (delays[Math.min(attempt, delays.length) - 1] ?? 0) * 1000;
    }
    case 'none':
      return 0;
  }
}

/** The jittered wait after attempt `attempt` fails: base · (1 + jitter · u), u uniform in [−1, 1). */
export function retryDelayMs(policy: Policy, attempt: number, rng: Rng): number {
  const base = baseDelayMs(policy.backoff, attempt);
  return Math.round(base * (1 + policy.jitter * (2 * rng.float() - 1)));
}

/** One row of a printed schedule. */
export interface ScheduleRow {
  /** The attempt that failed. */
  afterAttempt: number;
  delayMs: number;
  minMs: number;
  maxMs: number;
  /** Un-jittered time from the first attempt to the next one. */
  cumulativeMs: number;
}

/** Every wait a policy can impose, from the first failure to the last attempt; `ops policies` prints it. */
export function schedule(policy: Policy): ScheduleRow[] {
  if (policy.backoff.type === 'none') return [];
  const rows: ScheduleRow[] = [];
  let cumulative = 0;
  for (let attempt = 1; attempt < policy.maxAttempts; attempt++) {
    const delay = baseDelayMs(policy.backoff, attempt);
    cumulative += delay;
    rows.push({
      afterAttempt: attempt,
      delayMs: delay,
      minMs: Math.round(delay * (1 - policy.jitter)),
      maxMs: Math.round(delay * (1 + policy.jitter)),
      cumulativeMs: cumulative,
    });
  }
  return rows;
}

/** Total un-jittered time from the first attempt to the last one. */
export const totalScheduleMs = (policy: Policy): number => schedule(policy).at(-1)?.cumulativeMs ?? 0;
