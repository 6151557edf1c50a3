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
  /** Discarded, and the alerting metric fires ("discarded + alert"). */
  | 'discard_alert'
  /** Discarded without an alert (the kind's own rules take over, e.g. through its `onDiscard` hook). */
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

/** Every backoff gets ±10 % uniform jitter unless a policy says otherwise. */
export const DEFAULT_JITTER = 0.1;

/**
 * An exponential backoff: `initialSeconds · factor^(attempt−1)`, capped at `capSeconds`.
 *
 * @example
 * exponential({ initialSeconds: 20, factor: 3 }) // 20 s, 60 s, 180 s, …
 */
export const exponential = (spec: { initialSeconds: number; factor: number; capSeconds?: number }): Backoff => ({
  type: 'exponential',
  initialSeconds: spec.initialSeconds,
  factor: spec.factor,
  capSeconds: spec.capSeconds ?? Number.POSITIVE_INFINITY,
});

/**
 * A fixed schedule of delays, in seconds; its last entry repeats.
 *
 * @example
 * schedule([5, 300, 1800]) // 5 s, 5 min, then 30 min each
 */
export const schedule = (delaysSeconds: readonly number[]): Backoff => {
  if (delaysSeconds.length === 0) throw new RangeError('a schedule needs at least one delay');
  return { type: 'schedule', delaysSeconds };
};

/** River's DefaultBackoff: 1 s doubling, capped at 15 min. */
export const DefaultBackoff: Backoff = exponential({ initialSeconds: 1, factor: 2, capSeconds: 15 * 60 });

/**
 * A policy: `maxAttempts` and `backoff`, ±10 % jitter, discarded with an alert when exhausted unless said
 * otherwise.
 *
 * @example
 * policy({ maxAttempts: 8, backoff: exponential({ initialSeconds: 20, factor: 3 }) })
 */
export function policy(spec: { maxAttempts: number; backoff: Backoff; jitter?: number; onExhausted?: OnExhausted }): Policy {
  if (!Number.isInteger(spec.maxAttempts) || spec.maxAttempts < 1) throw new RangeError(`maxAttempts must be a whole number ≥ 1, got ${spec.maxAttempts}`);
  return { maxAttempts: spec.maxAttempts, backoff: spec.backoff, jitter: spec.jitter ?? DEFAULT_JITTER, onExhausted: spec.onExhausted ?? 'discard_alert' };
}

/** The default policy of a kind: DefaultBackoff, 10 attempts, discarded with an alert. */
export const defaultPolicy: Policy = policy({ maxAttempts: 10, backoff: DefaultBackoff });

/** Periodic jobs: one attempt; a failure waits for the next period. */
export const periodicPolicy: Policy = { maxAttempts: 1, backoff: { type: 'none' }, jitter: 0, onExhausted: 'next_period' };

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

/** One row of a printed retry schedule. */
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
export function retrySchedule(policy: Policy): ScheduleRow[] {
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
export const totalScheduleMs = (policy: Policy): number => retrySchedule(policy).at(-1)?.cumulativeMs ?? 0;
