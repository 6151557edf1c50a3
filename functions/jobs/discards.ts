import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import { LeaseLostError, TransitionRefusedError } from './errors.ts';
import type { Decision } from './decide.ts';
import type { JobHandler } from './kinds.ts';
import { describeError, JobDiscardReason } from './outcomes.ts';
import type { Policy } from './policies.ts';
import type { JobRow } from './row.ts';
import { JobState } from './states.ts';
import type { AttemptedJob, ClaimedJob, JobStore } from './store.ts';

/** The discard metrics. `JobDiscarded` carries kind and reason; `JobDiscardedAlert` (no dimensions) drives the alarm. */
export const DISCARD_METRIC = 'JobDiscarded';
export const DISCARD_ALERT_METRIC = 'JobDiscardedAlert';
/** Counted when a kind's `onDiscard` hook fails (the discard is not written; the job is decided again later), by kind. */
export const DISCARD_HOOK_FAILED_METRIC = 'JobDiscardHookFailed';

/** A decision to discard: the reason ops filter on, the error kept in the history, and whether it alerts. */
export type DiscardDecision = Extract<Decision, { type: 'discard' }>;

/**
 * The policy of a kind this code does not run (a row left by a removed kind, or one of a newer deploy's):
 * it cannot run here, so it gets no attempt to spare, and its discard alerts. The executor and the rescuer
 * both use it, through {@link unknownKindDiscard}.
 */
export const unknownKindPolicy: Policy = { maxAttempts: 1, backoff: { type: 'none' }, jitter: 0, onExhausted: 'discard_alert' };

/** The discard of a job whose kind nobody here runs, whichever path finds it. */
export const unknownKindDiscard = (kind: string, where: string): DiscardDecision => ({
  type: 'discard',
  reason: JobDiscardReason.unknown_kind,
  error: `no handler for kind ${kind} ${where}`,
  alert: unknownKindPolicy.onExhausted === 'discard_alert',
});

/**
 * Every discard the job layer makes goes through here: the executor's (a handler's reason, attempts that
 * ran out, arguments that no longer parse, a kind nobody runs) and the rescuer's (a last attempt lost with
 * its lease: a crash, a timeout, out of memory). Each runs the kind's `onDiscard` hook, then writes the
 * discarded state and its reason with a conditional write, then counts it (`JobDiscarded` by kind and
 * reason, and `JobDiscardedAlert` when the decision alerts).
 *
 * The hook runs before the write, so its effect cannot be lost: a crash between the two leaves the job
 * running, and whoever decides about it next (the rescuer, when its lease expires) runs the hook again
 * before its own discard. A hook must therefore be idempotent and harmless if the discard does not
 * follow (the write refused: the claim was lost). A hook that throws leaves the job as it was, counted
 * (`JobDiscardHookFailed`) and thrown on: the job layer decides again later, and the discard is written
 * with its hook or not at all. A write that is refused counts nothing; one whose answer was lost counts if
 * a read shows it landed.
 */
export class Discards {
  private readonly store: JobStore;
  private readonly metrics: MetricsSink;
  private readonly logger: Logger;
  private readonly handlers: ReadonlyMap<string, JobHandler<unknown>>;

  constructor(options: { store: JobStore; metrics: MetricsSink; logger: Logger; handlers: ReadonlyMap<string, JobHandler<unknown>> }) {
    this.store = options.store;
    this.metrics = options.metrics;
    this.logger = options.logger;
    this.handlers = options.handlers;
  }

  /** A claimed job's discard, written on the claim (the executor's). */
  async claimed(job: ClaimedJob, now: number, decision: DiscardDecision, durationMs: number): Promise<JobRow> {
    await this.hook(job, now, decision);
    const row = await this.written(job, 'discarded', () => this.store.discard(job, now, decision.reason, decision.error, durationMs));
    this.count(row, decision);
    return row;
  }

  /** A running job whose lease expired, discarded instead of rescheduled (the rescuer's). */
  async lost(job: JobRow, now: number, decision: DiscardDecision): Promise<JobRow> {
    await this.hook(job, now, decision);
    const row = await this.written(job, 'lost', () => this.store.rescue(job, now, { discard: decision.reason }));
    this.count(row, decision);
    return row;
  }

  /**
   * A job created discarded, by an attempt made before it existed (JobClient.enqueueAttempted): the hook
   * runs first, as for every discard, then the row is put. A duplicate id raises DuplicateJobError: nothing
   * new was discarded, and nothing is counted.
   */
  async attempted(job: AttemptedJob, decision: DiscardDecision): Promise<JobRow> {
    await this.hook(job, job.now, decision);
    const row = await this.store.insertAttempted(job);
    this.count(row, decision);
    return row;
  }

  /**
   * Writes a discard. When its answer is an error that does not say whether it was applied (a dropped
   * connection, a 500), one consistent read decides: a discard that landed — the job discarded with this
   * attempt as its last, recorded as `outcome` — is returned (and counted) like any other, because
   * nobody else would count it (the message that comes back finds the job finished). Anything else is
   * the write's own error. A refused condition is never read for: nothing was written.
   */
  private async written(job: JobRow, outcome: 'discarded' | 'lost', write: () => Promise<JobRow>): Promise<JobRow> {
    try {
      return await write();
    } catch (error) {
      if (error instanceof TransitionRefusedError || error instanceof LeaseLostError) throw error;
      const stored = await this.store.get(job.id).catch(() => undefined);
      const last = stored?.attempts.at(-1);
      if (stored?.state === JobState.discarded && last?.attempt === job.attempt && last.outcome === outcome) return stored;
      throw error;
    }
  }

  private count(row: JobRow, decision: DiscardDecision): void {
    this.metrics.count(DISCARD_METRIC, { kind: row.kind, reason: decision.reason });
    if (decision.alert) this.metrics.count(DISCARD_ALERT_METRIC);
  }

  private async hook(job: Pick<JobRow, 'id' | 'kind' | 'args'>, now: number, decision: DiscardDecision): Promise<void> {
    const handler = this.handlers.get(job.kind);
    if (!handler?.onDiscard || decision.reason === JobDiscardReason.invalid_args) return;
    const args = handler.kind.args.safeParse(job.args);
    if (!args.success) return;
    try {
      await handler.onDiscard(args.data, { id: job.id, kind: job.kind, reason: decision.reason, error: decision.error, at: now });
    } catch (error) {
      this.metrics.count(DISCARD_HOOK_FAILED_METRIC, { kind: job.kind });
      this.logger.error('onDiscard hook failed; the discard is not written, the job is decided again later', { jobId: job.id, kind: job.kind, error: describeError(error) });
      throw error;
    }
  }
}
