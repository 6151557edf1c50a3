import type { MetricsSink } from '../platform/metrics.ts';
import { LeaseLostError, TransitionRefusedError } from './errors.ts';
import type { Decision } from './decide.ts';
import { DiscardReason } from './outcomes.ts';
import type { Policy } from './policies.ts';
import type { JobRow } from './row.ts';
import { JobState } from './states.ts';
import type { ClaimedJob, JobStore } from './store.ts';

/** The discard metrics. `JobDiscarded` carries kind and reason; `JobDiscardedAlert` (no dimensions) drives the alarm. */
export const DISCARD_METRIC = 'JobDiscarded';
export const DISCARD_ALERT_METRIC = 'JobDiscardedAlert';

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
  reason: DiscardReason.unknown_kind,
  error: `no handler for kind ${kind} ${where}`,
  alert: unknownKindPolicy.onExhausted === 'discard_alert',
});

/**
 * Every discard the job layer makes goes through here: the executor's (a handler's reason, attempts that
 * ran out, arguments that no longer parse, a kind nobody runs) and the rescuer's (a last attempt lost with
 * its lease: a crash, a timeout, out of memory). Each writes the discarded state and its reason with a
 * conditional write, then counts it: `JobDiscarded` by kind and reason, and `JobDiscardedAlert` when the
 * decision alerts. A write that is refused counts nothing; one whose answer was lost counts if a read shows
 * it landed.
 */
export class Discards {
  private readonly store: JobStore;
  private readonly metrics: MetricsSink;

  constructor(store: JobStore, metrics: MetricsSink) {
    this.store = store;
    this.metrics = metrics;
  }

  /** A claimed job's discard, written on the claim (the executor's). */
  async claimed(job: ClaimedJob, now: number, decision: DiscardDecision, durationMs: number): Promise<JobRow> {
    const row = await this.written(job, 'discarded', () => this.store.discard(job, now, decision.reason, decision.error, durationMs));
    this.count(job.kind, decision);
    return row;
  }

  /** A running job whose lease expired, discarded instead of rescheduled (the rescuer's). */
  async lost(job: JobRow, now: number, decision: DiscardDecision): Promise<JobRow> {
    const row = await this.written(job, 'lost', () => this.store.rescue(job, now, { discard: decision.reason }));
    this.count(job.kind, decision);
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

  private count(kind: string, decision: DiscardDecision): void {
    this.metrics.count(DISCARD_METRIC, { kind, reason: decision.reason });
    if (decision.alert) this.metrics.count(DISCARD_ALERT_METRIC);
  }
}
