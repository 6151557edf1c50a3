/**
 * What a handler's run means. A handler only classifies: it returns (completed), throws {@link snooze}
 * (run later, no attempt spent), throws {@link discard} (permanent), or throws anything else (retryable).
 * {@link classifyRun} is the one place that turns a run into an outcome.
 */

/**
 * The discard reasons the job layer itself gives; ops filter on them. `exhausted`: attempts ran out;
 * `invalid_args`: the stored arguments no longer parse; `unknown_kind`: no code here runs the kind. Every
 * other reason is a handler's, declared by its kind (`discardReasons`).
 */
export const JobDiscardReason = {
  exhausted: 'exhausted',
  invalid_args: 'invalid_args',
  unknown_kind: 'unknown_kind',
} as const;

/** Why a job was discarded: one of {@link JobDiscardReason} or a reason its kind declares. */
export type DiscardReason = string;

/** Thrown by a handler to run again later without spending an attempt. Build it with {@link snooze}. */
export class JobSnooze extends Error {
  override readonly name = 'JobSnooze';
  readonly until: number | undefined;
  readonly delayMs: number | undefined;
  readonly reason: string;

  constructor(when: { until: number } | { delayMs: number }, reason: string) {
    super(`snoozed: ${reason}`);
    this.until = 'until' in when ? when.until : undefined;
    this.delayMs = 'delayMs' in when ? when.delayMs : undefined;
    this.reason = reason;
  }
}

/** Thrown by a handler to give up for good. Build it with {@link discard}. */
export class JobDiscard extends Error {
  override readonly name = 'JobDiscard';
  readonly reason: DiscardReason;

  constructor(reason: DiscardReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * Run the job again at `until` (epoch ms) or after `delayMs`, spending no attempt.
 *
 * @example
 * if (capSpent) throw snooze({ until: nextWindowStart }, 'recipient cap');
 */
export const snooze = (when: { until: number } | { delayMs: number }, reason: string): JobSnooze => new JobSnooze(when, reason);

/**
 * Give up on the job permanently, with a reason ops can filter on: one its kind declares in
 * `discardReasons`, or the job layer's `invalid_args`.
 *
 * @example
 * if (!template) throw discard('template_missing', `no template ${args.templateId}`);
 */
export const discard = (reason: DiscardReason, message: string, options?: { cause?: unknown }): JobDiscard =>
  new JobDiscard(reason, message, options);

/** The classified result of one run of a handler. */
export type RunOutcome =
  | { type: 'completed' }
  | { type: 'snoozed'; until: number | undefined; delayMs: number | undefined; reason: string }
  | { type: 'discarded'; reason: DiscardReason; error: string }
  | { type: 'retryable'; error: string };

const MAX_ERROR_LENGTH = 1000;

/** A short, bounded description of an error for the attempt history. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/** Classifies a run: no error → completed; a snooze or discard signal → itself; anything else → retryable. */
export function classifyRun(error: unknown): RunOutcome {
  if (error === undefined) return { type: 'completed' };
  if (error instanceof JobSnooze) return { type: 'snoozed', until: error.until, delayMs: error.delayMs, reason: error.reason };
  if (error instanceof JobDiscard) return { type: 'discarded', reason: error.reason, error: describeError(error) };
  return { type: 'retryable', error: describeError(error) };
}
