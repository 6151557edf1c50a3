import type { Rng } from '../platform/rng.ts';

/**
 * How long a calls job (the dialer, the watchdogs, the finaliser, the control jobs) waits when another
 * transaction held the tenant or the batch. Here, not in dialer.ts, so that the calls worker's jobs do not
 * import the dialer (and its recipient zones) for one number.
 */
export const CONTENTION_SNOOZE_MS = 1_000;

/** A batch's delay between rounds, in seconds (docs/calls.md, "Rounds and the finaliser"). */
export interface RoundRetry {
  baseSeconds: number;
  capSeconds: number;
}

/** Defaults when a batch names no retry: 30 s doubling per round used, at most an hour. */
export const DEFAULT_ROUND_RETRY: RoundRetry = { baseSeconds: 30, capSeconds: 3600 };

/**
 * The rounds' `ExponentialWithJitter` (docs/calls.md, "Rounds and the finaliser"): the wait before
 * the next round is `min(cap, base · 2^roundsUsed + uniform 1..1000 ms)`. The jitter only has to keep
 * batches that finished together from dialling again on the same tick.
 */
export function roundDelayMs(roundsUsed: number, retry: RoundRetry, rng: Rng): number {
  const delay = retry.baseSeconds * 1000 * 2 ** roundsUsed;
  return Math.min(retry.capSeconds * 1000, delay + rng.int(1, 1000));
}
