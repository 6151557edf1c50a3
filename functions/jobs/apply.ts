import { assertNever } from '../platform/assert.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Decision } from './decide.ts';
import type { Discards } from './discards.ts';
import type { Dispatcher } from './dispatch.ts';
import { describeError } from './outcomes.ts';
import type { JobRow } from './row.ts';
import { isPending } from './states.ts';
import type { ClaimedJob, JobStore } from './store.ts';

/**
 * A change to apply to a job, by whoever decided it:
 * - `run`: the executor, after a handler's run, on its claim;
 * - `lost`: the rescuer, for a running job whose lease expired (only `retry` or `discard`);
 * - `retryNow`, `wake`, `cancel`: ops and domains, through the job client;
 * - `cancelRequested`: a wake-up found that the job's domain asked to stop it;
 * - `redispatch`: nothing to write, the row's wake-up is sent again (early, or lost).
 */
export type JobChange =
  | { type: 'run'; job: ClaimedJob; decision: Decision; durationMs: number }
  | { type: 'lost'; job: JobRow; decision: Decision }
  | { type: 'retryNow' | 'wake' | 'cancel'; id: string }
  | { type: 'cancelRequested'; job: JobRow }
  | { type: 'redispatch'; row: JobRow };

/**
 * The one path that applies a decision about a job: it writes the change as the named conditional
 * transition (a discard through {@link Discards}, which counts it and runs the kind's hook), then sends the
 * row's wake-up when the job waits again. A refused write throws the store's typed error and sends
 * nothing. A lost send is logged, not thrown: the change is recorded, and the rescuer finds a due job
 * that nobody woke.
 */
export class JobChanges {
  private readonly store: JobStore;
  private readonly dispatcher: Dispatcher;
  private readonly discards: Discards;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(options: { store: JobStore; dispatcher: Dispatcher; discards: Discards; clock: Clock; logger: Logger }) {
    this.store = options.store;
    this.dispatcher = options.dispatcher;
    this.discards = options.discards;
    this.clock = options.clock;
    this.logger = options.logger;
  }

  /** Writes `change`, then wakes the job if it waits again. Returns the row as written. */
  async apply(change: JobChange): Promise<JobRow> {
    const row = await this.write(change, this.clock.now());
    if (isPending(row.state)) await this.wake(row);
    return row;
  }

  private write(change: JobChange, now: number): Promise<JobRow> {
    switch (change.type) {
      case 'run':
        return this.recordRun(change.job, change.decision, change.durationMs, now);
      case 'lost':
        return this.recordLost(change.job, change.decision, now);
      case 'retryNow':
        return this.store.retryNow(change.id, now);
      case 'wake':
        return this.store.wake(change.id, now);
      case 'cancel':
        return this.store.cancel(change.id, now);
      case 'cancelRequested':
        return this.store.cancelRequested(change.job, now);
      case 'redispatch':
        return Promise.resolve(change.row);
      default:
        return assertNever(change);
    }
  }

  private recordRun(job: ClaimedJob, decision: Decision, durationMs: number, now: number): Promise<JobRow> {
    switch (decision.type) {
      case 'complete':
        return this.store.complete(job, now, durationMs);
      case 'retry':
        return this.store.retry(job, now, decision.at, decision.error, durationMs);
      case 'snooze':
        return this.store.snooze(job, now, decision.until, decision.reason);
      case 'discard':
        return this.discards.claimed(job, now, decision, durationMs);
      default:
        return assertNever(decision);
    }
  }

  private recordLost(job: JobRow, decision: Decision, now: number): Promise<JobRow> {
    switch (decision.type) {
      case 'retry':
        return this.store.rescue(job, now, { at: decision.at });
      case 'discard':
        return this.discards.lost(job, now, decision);
      // A lost attempt is classified retryable: decide() never completes or snoozes it.
      case 'complete':
      case 'snooze':
        throw new Error(`a lost attempt cannot end as ${decision.type}`);
      default:
        return assertNever(decision);
    }
  }

  private async wake(row: JobRow): Promise<void> {
    try {
      await this.dispatcher.dispatch({ jobId: row.id, seq: row.seq, queue: row.queue, at: Date.parse(row.scheduledAt) });
    } catch (error) {
      this.logger.error('wake-up not sent; the rescuer will send it', { jobId: row.id, error: describeError(error) });
    }
  }
}
