import { assertNever } from '../platform/assert.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { CountStore } from './counts.ts';
import type { Decision } from './decide.ts';
import type { Discards } from './discards.ts';
import type { Dispatcher } from './dispatch.ts';
import { describeError } from './outcomes.ts';
import { keyTime } from './row.ts';
import type { JobRow } from './row.ts';
import { isPending, JobState } from './states.ts';
import type { TransitionName } from './states.ts';
import type { AttemptedJob, ClaimedJob, JobStore } from './store.ts';

/**
 * A change to apply to a job, by whoever decided it:
 * - `run`: the executor, after a handler's run, on its claim;
 * - `lost`: the rescuer, for a running job whose lease expired (only `retry` or `discard`);
 * - `retryNow`, `wake`, `cancel`: ops and domains, through the job client (`retryNow` and `cancel` with the
 *   row a bulk action matched, and only from the state it matched in: `expect`);
 * - `cancelRequested`: a wake-up found that the job's domain asked to stop it;
 * - `redispatch`: nothing to write, the row's wake-up is sent again (early, or lost);
 * - `attempted`: a new job whose first attempt was made before it existed (JobClient.enqueueAttempted),
 *   created in the state that attempt decided.
 */
export type JobChange =
  | { type: 'run'; job: ClaimedJob; decision: Decision; durationMs: number }
  | { type: 'lost'; job: JobRow; decision: Decision }
  | { type: 'retryNow'; id: string }
  | { type: 'retryNow'; row: JobRow; expect: JobState }
  | { type: 'wake'; id: string }
  | { type: 'cancel'; id: string; expect?: { state: JobState; seq: number } }
  | { type: 'cancelRequested'; job: JobRow }
  | { type: 'redispatch'; row: JobRow }
  | { type: 'attempted'; job: AttemptedJob };

/**
 * The one path that applies a decision about a job: it writes the change as the named conditional
 * transition (a discard through {@link Discards}, which counts it and runs the kind's hook), tallies it in
 * the job counts, deletes the Scheduler schedule the job no longer needs (one made for a wake-up the job
 * left behind before it fired), and sends the row's wake-up when the job waits again. A refused write
 * throws the store's typed error and sends nothing. A lost send is logged, not thrown: the change is
 * recorded, and the rescuer finds a due job that nobody woke.
 */
export class JobChanges {
  private readonly store: JobStore;
  private readonly dispatcher: Dispatcher;
  private readonly discards: Discards;
  private readonly counts: CountStore;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(options: { store: JobStore; dispatcher: Dispatcher; discards: Discards; counts: CountStore; clock: Clock; logger: Logger }) {
    this.store = options.store;
    this.dispatcher = options.dispatcher;
    this.discards = options.discards;
    this.counts = options.counts;
    this.clock = options.clock;
    this.logger = options.logger;
  }

  /**
   * Writes `change`, counts it, drops a schedule the job left behind, then wakes the job if it waits again
   * (unless its handler snoozed it dormant: whoever hands work on wakes it, or the rescuer once its check
   * comes). Returns the row as written.
   */
  async apply(change: JobChange): Promise<JobRow> {
    const now = this.clock.now();
    const { row, before } = await this.write(change, now);
    if (change.type === 'redispatch') {
      await this.wake(row);
      return row;
    }
    await this.counts.record((tally) => tally.row(row, before));
    await this.dropLeftSchedule(change.type === 'cancelRequested' ? 'cancel' : change.type === 'run' || change.type === 'lost' || change.type === 'attempted' ? undefined : change.type, row, now);
    const pulled = change.type === 'wake' ? await this.pullCheckForward(row, now) : row;
    const decision = change.type === 'run' ? change.decision : change.type === 'attempted' ? change.job.decision : undefined;
    const dormant = decision?.type === 'snooze' && decision.dormant === true;
    if (isPending(pulled.state) && !dormant) await this.wake(pulled);
    return pulled;
  }

  /**
   * A claim, as the executor made it: counted, and the schedule of the wake-up it left deleted if it has
   * not fired (a claim: another wake-up of the same seq came first; a claimNext: the job was taken before
   * its own wake-up).
   */
  async claimed(job: JobRow, transition: 'claim' | 'claimNext'): Promise<void> {
    await this.counts.record((tally) => tally.row(job));
    await this.dropLeftSchedule(transition, job, this.clock.now());
  }

  private async write(change: JobChange, now: number): Promise<{ row: JobRow; before?: JobRow }> {
    switch (change.type) {
      case 'run':
        return { row: await this.recordRun(change.job, change.decision, change.durationMs, now) };
      case 'lost':
        return { row: await this.recordLost(change.job, change.decision, now) };
      case 'retryNow': {
        const before = 'row' in change ? change.row : await this.store.mustGet(change.id);
        return { row: await this.store.retryNow(before, now, 'expect' in change ? { state: change.expect } : undefined), before };
      }
      case 'wake':
        return { row: await this.store.wake(change.id, now) };
      case 'cancel':
        return { row: await this.store.cancel(change.id, now, change.expect) };
      case 'cancelRequested':
        return { row: await this.store.cancelRequested(change.job, now) };
      case 'redispatch':
        return { row: change.row };
      case 'attempted':
        return { row: change.job.decision.type === 'discard' ? await this.discards.attempted(change.job, change.job.decision) : await this.store.insertAttempted(change.job) };
      default:
        return assertNever(change);
    }
  }

  /**
   * Deletes the Scheduler schedule of a wake-up the job has just left behind, if it has not fired yet: a
   * claim of that wake-up's seq that another wake-up brought (the rescuer's, an early retry), a wake or
   * retry that moved the job to the next seq, a cancel of the job waiting on it. Each schedule is deleted
   * by the one transition that leaves it; a lost delete is harmless (the schedule fires, finds a stale
   * wake-up and is dropped).
   */
  private async dropLeftSchedule(transition: TransitionName | undefined, row: JobRow, now: number): Promise<void> {
    const schedule = row.wakeSchedule;
    if (!schedule || Date.parse(schedule.at) <= now) return;
    const left =
      transition === 'claim' ? schedule.seq === row.seq
      : transition === 'wake' || transition === 'retryNow' || transition === 'claimNext' ? schedule.seq === row.seq - 1
      : transition === 'cancel' ? schedule.seq === row.seq && row.prevState !== JobState.running
      : false;
    if (!left) return;
    try {
      await this.dispatcher.unschedule(row.id, schedule.seq);
    } catch (error) {
      this.logger.warn('schedule not deleted; it will fire and find nothing to run', { jobId: row.id, seq: schedule.seq, error: describeError(error) });
    }
  }

  /**
   * A woken job whose rescuer check comes later than for a job due now has it moved to then, so a lost
   * wake-up (or a lost worker) is found as soon as for any due job. Most woken jobs' checks are early
   * enough already (the entry made when they were enqueued): nothing is written for them.
   */
  private async pullCheckForward(row: JobRow, now: number): Promise<JobRow> {
    const dueBy = this.store.checkDueBy(row.queue, now);
    if (keyTime(row.checkAt) <= dueBy) return row;
    try {
      return await this.store.recheck(row, dueBy);
    } catch (error) {
      // Moved on already (claimed, cancelled): its own write placed the check.
      this.logger.debug('check not pulled forward', { jobId: row.id, error: describeError(error) });
      return row;
    }
  }

  private recordRun(job: ClaimedJob, decision: Decision, durationMs: number, now: number): Promise<JobRow> {
    switch (decision.type) {
      case 'complete':
        return this.store.complete(job, now, durationMs);
      case 'retry':
        return this.store.retry(job, now, decision.at, decision.error, durationMs);
      case 'snooze':
        return this.store.snooze(job, now, decision.until, decision.reason, decision.dormant === true);
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
