import { assertNever } from '../platform/assert.ts';
import type { Rng } from '../platform/rng.ts';
import { JobDiscardReason } from './outcomes.ts';
import type { DiscardReason, RunOutcome } from './outcomes.ts';
import { retryDelayMs } from './policies.ts';
import type { Policy } from './policies.ts';

/** What the job layer writes after a run (or a lost one): the next state and, where it runs again, when. */
export type Decision =
  | { type: 'complete' }
  | { type: 'retry'; at: number; error: string }
  | { type: 'snooze'; until: number; reason: string; dormant?: boolean }
  | { type: 'discard'; reason: DiscardReason; error: string; alert: boolean };

/**
 * Turns a classified run into the next state under the kind's policy. Pure: the clock's now and the
 * RNG are passed in. A retryable failure on the last attempt becomes a discard with reason `exhausted`,
 * kept apart from a discard the handler chose. A handler's discard alerts only when its reason is one of
 * the kind's `alertingReasons` (kinds.ts); an exhausted one, when the policy says `discard_alert`.
 */
export function decide(
  outcome: RunOutcome,
  job: { attempt: number; maxAttempts: number },
  policy: Policy,
  now: number,
  rng: Rng,
  alertingReasons: readonly DiscardReason[] = [],
): Decision {
  switch (outcome.type) {
    case 'completed':
      return { type: 'complete' };
    case 'snoozed':
      return { type: 'snooze', until: Math.max(now, outcome.until ?? now + (outcome.delayMs ?? 0)), reason: outcome.reason, ...(outcome.dormant ? { dormant: true } : {}) };
    case 'discarded':
      return { type: 'discard', reason: outcome.reason, error: outcome.error, alert: alertingReasons.includes(outcome.reason) };
    case 'retryable':
      if (job.attempt >= job.maxAttempts || policy.backoff.type === 'none') {
        return { type: 'discard', reason: JobDiscardReason.exhausted, error: outcome.error, alert: policy.onExhausted === 'discard_alert' };
      }
      return { type: 'retry', at: now + retryDelayMs(policy, job.attempt, rng), error: outcome.error };
    default:
      return assertNever(outcome);
  }
}
