import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { assertNever } from '../platform/assert.ts';
import { iso } from '../platform/clock.ts';
import { conditionFailure, Expression, Operand, putItem, updateItem } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import type { Decision } from './decide.ts';
import { needsSchedule } from './dispatch.ts';
import { ClaimRefusedError, DuplicateJobError, JobNotFoundError, LeaseLostError, TransitionRefusedError } from './errors.ts';
import type { ClaimRefusal } from './errors.ts';
import type { DiscardReason } from './outcomes.ts';
import { checkKey, checkShard, DEAD_LETTER_SHARDS, deadKey, deadLetterPartition, keyTime, retentionSeconds, shardOf } from './row.ts';
import type { AttemptRecord, JobRow, PeriodicStatus } from './row.ts';
import { isTerminal, JobState, pendingStates, transitions } from './states.ts';
import type { TransitionName } from './states.ts';

/** One named item of a DynamoDB TransactWriteItems request (see `transact` in platform/dynamo.ts). */
export type { TransactItem };

/** The writes the store makes besides the named transitions: the rescuer's look at a job. */
export type CheckWrite = 'touchDispatch' | 'recheck';

/** Condition fragments, named; each conditional write below is a list of these. */
const is = {
  /** The job is in one of the states the transition may start from. */
  from: (e: Expression, name: TransitionName) => e.inList('state', transitions[name].from),
  /** The wake-up is for the current schedule. */
  currentSeq: (e: Expression, seq: number) => e.eq('seq', seq),
  /** Its time has come. */
  due: (e: Expression, now: number) => e.le('scheduledAt', iso(now)),
  /** Its domain has not asked to stop it. */
  notCancelRequested: (e: Expression) => e.notExists('cancelRequestedAt'),
  /** The caller holds the claim. */
  holdsLease: (e: Expression, token: string) => e.eq('leaseToken', token),
  /** The claim's lease has run out. */
  leaseExpired: (e: Expression, now: number) => e.lt('leaseUntil', iso(now)),
  /** The rescuer's entry for the job is the one it read (no other pass or writer moved it since). */
  checkedAt: (e: Expression, checkAt: string) => e.eq('checkAt', checkAt),
  exists: (e: Expression) => e.exists('id'),
  absent: (e: Expression) => e.notExists('id'),
};

/** A job that is new: what {@link JobStore.insertItem} writes. */
export interface NewJob {
  id: string;
  kind: string;
  queue: string;
  args: unknown;
  maxAttempts: number;
  scheduledAt: number;
  now: number;
  /** Whether the caller counts its creation (counts.ts); if not, the job's first transition does. */
  counted: boolean;
  /** No wake-up will be sent for it (so no schedule is recorded): it waits to be woken, or for its check. */
  dormant?: boolean;
}

/**
 * A job created after an attempt that was made before it existed (a delivery tried within another job's
 * run): what {@link JobStore.insertAttemptedItem} writes. The job is created in the state the job layer
 * decided for that attempt (decide.ts), with the attempt in its history.
 */
export interface AttemptedJob extends NewJob {
  decision: Decision;
  /** The attempt, when one was made (a discard may come without one): when it started and how long it took. */
  attempt?: { at: number; durationMs: number };
}

/** A claimed job: the row as the claim left it. */
export type ClaimedJob = JobRow & { state: 'running'; leaseToken: string; leaseUntil: string };

/** The store's settings: when a job's rescuer checks are due, and how long dead letters stay. */
export interface JobStoreOptions {
  /**
   * How long after its due time a job nobody claimed is taken for a lost wake-up (RESCUE_AFTER_SECONDS):
   * the rescuer sends a job's wake-up again no sooner.
   * @default 180_000
   */
  rescueAfterMs?: number;
  /**
   * How long after a job is due its rescuer check comes: its queue's lease, in the clock's time (a job
   * claimed when due and whose worker died is found when the lease ends). @default rescueAfterMs
   */
  checkAfterMs?: (queue: string) => number;
  /** How long a discarded job stays (DISCARDED_RETENTION_DAYS). @default retentionSeconds.discarded */
  discardedRetentionSeconds?: number;
}

/**
 * The DynamoDB job store. Every state change is a named conditional write whose `state IN (...)` comes
 * from the transition table in states.ts; a refused condition becomes a typed error that carries the row
 * as stored (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), never a silent false.
 *
 * What each write does to the indexes (row.ts): the enqueue puts the job's byCheck entry; claims and
 * outcomes leave it; a write that makes the job due earlier than its entry says moves it (wake, retry now,
 * a retry or snooze shorter than the entry's wait, a hand-on to a job whose entry comes after the new
 * lease's end); only the rescuer moves it later. A discard (and an
 * ops cancel) puts the job's byDeadLetter entry; a retry takes it out.
 */
export class JobStore {
  readonly tableName: string;
  readonly rescueAfterMs: number;
  readonly discardedRetentionSeconds: number;
  private readonly db: DynamoDBDocumentClient;
  private readonly checkAfterMs: (queue: string) => number;

  constructor(db: DynamoDBDocumentClient, tableName: string, options: JobStoreOptions = {}) {
    this.db = db;
    this.tableName = tableName;
    this.rescueAfterMs = options.rescueAfterMs ?? 180_000;
    this.discardedRetentionSeconds = options.discardedRetentionSeconds ?? retentionSeconds.discarded;
    this.checkAfterMs = options.checkAfterMs ?? (() => this.rescueAfterMs);
  }

  /** The Put that creates a job, named `job <id>`; it joins a caller's TransactWriteItems (the outbox). */
  insertItem(job: NewJob): TransactItem {
    const row: JobRow = {
      id: job.id,
      kind: job.kind,
      queue: job.queue,
      state: job.scheduledAt > job.now ? JobState.scheduled : JobState.available,
      args: job.args,
      attempt: 0,
      maxAttempts: job.maxAttempts,
      seq: 1,
      scheduledAt: iso(job.scheduledAt),
      createdAt: iso(job.now),
      updatedAt: iso(job.now),
      attempts: [],
      snoozes: 0,
      checkShard: checkShard(job.id),
      // A dormant job may be taken at any moment by a `runNext` claim, whose lease runs from then: its entry is
      // placed as for a job due now, so that claim finds it early enough and moves nothing. One still waiting
      // when its check comes is seen not due by the rescuer and moved to its backstop (`scheduledAt`).
      checkAt: checkKey(this.checkDueBy(job.queue, job.dormant ? job.now : Math.max(job.scheduledAt, job.now)), job.id),
      ...(!job.dormant && needsSchedule(job.scheduledAt, job.now) ? { wakeSchedule: { seq: 1, at: iso(job.scheduledAt) } } : {}),
      ...(job.counted ? { counted: true } : {}),
    };
    const e = new Expression();
    return putItem(`job ${job.id}`, this.tableName, row, e.when(is.absent(e)));
  }

  /**
   * The Put that creates a job in the state an earlier attempt decided (see {@link AttemptedJob}): retryable
   * at the retry's time, snoozed until the snooze ends, discarded (a dead letter) or completed, its history
   * holding that attempt as attempt 1 (a snooze gives it back). Its check entry is placed as any new job's:
   * a lease after it is due.
   */
  insertAttemptedItem(job: AttemptedJob): TransactItem {
    const base = this.insertItem({ ...job, dormant: false, scheduledAt: job.now }).Put!.Item as JobRow;
    const { decision, attempt, now } = job;
    const record = (outcome: AttemptRecord['outcome'], error?: string): AttemptRecord[] =>
      attempt ? [{ attempt: 1, at: iso(attempt.at), durationMs: Math.round(attempt.durationMs), outcome, ...(error ? { error } : {}) }] : [];
    const waiting = (state: JobState, at: number, dormant = false): JobRow => ({
      ...base,
      state,
      scheduledAt: iso(at),
      checkAt: checkKey(this.checkDueBy(job.queue, at), job.id),
      ...(!dormant && needsSchedule(at, now) ? { wakeSchedule: { seq: 1, at: iso(at) } } : {}),
    });
    const ended = (state: JobState): JobRow => ({ ...base, state, finalizedAt: iso(now), ...(this.expiry(now, state) !== undefined ? { expiresAt: this.expiry(now, state)! } : {}) });
    let row: JobRow;
    switch (decision.type) {
      case 'complete':
        row = { ...ended(JobState.completed), attempt: attempt ? 1 : 0, attempts: record('completed') };
        break;
      case 'retry':
        row = { ...waiting(JobState.retryable, decision.at), attempt: attempt ? 1 : 0, attempts: record('retryable', decision.error) };
        break;
      case 'snooze':
        row = { ...waiting(JobState.snoozed, decision.until, decision.dormant === true), snoozes: 1, lastSnooze: { at: iso(now), until: iso(decision.until), reason: decision.reason } };
        break;
      case 'discard':
        row = {
          ...ended(JobState.discarded),
          attempt: attempt ? 1 : 0,
          attempts: record('discarded', decision.error),
          discardReason: decision.reason,
          deadLetter: deadLetterPartition(JobState.discarded, shardOf(job.id, DEAD_LETTER_SHARDS)),
          deadAt: deadKey(now, job.id),
        };
        break;
      default:
        return assertNever(decision);
    }
    const e = new Expression();
    return putItem(`job ${job.id}`, this.tableName, row, e.when(is.absent(e)));
  }

  /** Creates a job on its own in the state an earlier attempt decided; an existing id raises {@link DuplicateJobError}. */
  async insertAttempted(job: AttemptedJob): Promise<JobRow> {
    return this.put(job.id, this.insertAttemptedItem(job));
  }

  /** Creates a job on its own; an existing id raises {@link DuplicateJobError} and changes nothing. */
  async insert(job: NewJob): Promise<JobRow> {
    return this.put(job.id, this.insertItem(job));
  }

  private async put(id: string, item: TransactItem): Promise<JobRow> {
    const put = item.Put!;
    try {
      await this.db.send(new PutCommand({ ...put, TableName: this.tableName, Item: put.Item }));
    } catch (error) {
      if (conditionFailure(error).failed) throw new DuplicateJobError(id);
      throw error;
    }
    return put.Item as JobRow;
  }

  async get(id: string): Promise<JobRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id }, ConsistentRead: true }));
    const item = result.Item as JobRow | undefined;
    return item && 'state' in item ? item : undefined;
  }

  async mustGet(id: string): Promise<JobRow> {
    const row = await this.get(id);
    if (!row) throw new JobNotFoundError(id);
    return row;
  }

  /**
   * claim: a due job whose wake-up is current becomes running under a fresh lease, spending an attempt.
   * A duplicate, stale, early or cancelled wake-up raises {@link ClaimRefusedError} saying which.
   * No index entry changes.
   */
  async claim(id: string, seq: number, now: number, leaseMs: number): Promise<ClaimedJob> {
    const e = new Expression();
    const token = randomUUID();
    e.when(is.exists(e))
      .when(is.from(e, 'claim'))
      .when(is.currentSeq(e, seq))
      .when(is.due(e, now))
      .when(is.notCancelRequested(e));
    tracked(e)
      .set('state', JobState.running)
      .increment('attempt', 1)
      .set('leaseToken', token)
      .set('leaseUntil', iso(now + leaseMs))
      .set('attemptedAt', iso(now))
      .set('updatedAt', iso(now));
    try {
      const result = await this.db.send(
        new UpdateCommand({ TableName: this.tableName, Key: { id }, ...e.build(), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      );
      return result.Attributes as ClaimedJob;
    } catch (error) {
      const failure = conditionFailure<JobRow>(error);
      if (!failure.failed) throw error;
      throw new ClaimRefusedError(id, failure.item, claimRefusal(failure.item, seq, now), { cause: error });
    }
  }

  /**
   * claimNext: a waiting job (any pending state, due or not) becomes running under a fresh lease, spending an
   * attempt, for the worker whose job handed work on to it (see `JobContext.runNext`). Its seq moves on,
   * so a wake-up already on its way finds nothing to claim. A job of another queue (whose kinds the caller
   * does not run), a finished, running or cancel-requested one is refused ({@link TransitionRefusedError} with the row as stored).
   */
  async claimNext(id: string, queue: string, now: number, leaseMs: number): Promise<ClaimedJob> {
    const leaseUntil = now + leaseMs;
    // If this worker dies, the job must be found once its lease ends. An entry no later than that stays: a
    // dormant job's entry is placed as for a job due at its creation (insertItem), and the lease runs from
    // now, so a hand-on writes no index. A later entry (a job rescheduled far off, then handed on to early)
    // is moved to the lease's end by a second write, once the first is refused for it alone.
    try {
      return (await this.write(id, this.claimNextExpression(id, queue, now, leaseUntil, false), 'claimNext')) as ClaimedJob;
    } catch (error) {
      const current = error instanceof TransitionRefusedError ? error.current : undefined;
      const onlyLate =
        current !== undefined &&
        'state' in current &&
        (transitions.claimNext.from as readonly JobState[]).includes(current.state) &&
        current.queue === queue &&
        current.cancelRequestedAt === undefined &&
        // (a row with no entry at all gets one)
        (current.checkAt === undefined || current.checkAt > checkKey(leaseUntil, id));
      if (!onlyLate) throw error;
      return (await this.write(id, this.claimNextExpression(id, queue, now, leaseUntil, true), 'claimNext')) as ClaimedJob;
    }
  }

  /** complete: the claim holder records success. */
  complete(job: ClaimedJob, now: number, durationMs: number): Promise<JobRow> {
    const e = this.finish(job, now, 'complete', JobState.completed);
    e.append('attempts', attemptRecord(job, 'completed', durationMs));
    return this.onClaim(job, e, 'complete');
  }

  /** retry: the claim holder records a failure with attempts left; the job runs again at `at`. */
  retry(job: ClaimedJob, now: number, at: number, error: string, durationMs: number): Promise<JobRow> {
    const e = this.reschedule(job, now, at, JobState.retryable);
    e.append('attempts', attemptRecord(job, 'retryable', durationMs, error));
    return this.onClaim(job, e, 'retry');
  }

  /** snooze: the claim holder asks to run at `until`; the attempt is given back. */
  snooze(job: ClaimedJob, now: number, until: number, reason: string, dormant = false): Promise<JobRow> {
    const e = this.reschedule(job, now, until, JobState.snoozed, dormant);
    e.increment('attempt', -1).increment('snoozes', 1).set('lastSnooze', { at: iso(now), until: iso(until), reason });
    return this.onClaim(job, e, 'snooze');
  }

  /** discard: the claim holder gives up (the handler's reason, or `exhausted`). */
  discard(job: ClaimedJob, now: number, reason: DiscardReason, error: string, durationMs: number): Promise<JobRow> {
    const e = this.finish(job, now, 'discard', JobState.discarded);
    e.set('discardReason', reason).append('attempts', attemptRecord(job, 'discarded', durationMs, error));
    this.deadLetter(e, job.id, JobState.discarded, now);
    return this.onClaim(job, e, 'discard');
  }

  /**
   * rescue: a running job whose lease expired (its worker was lost) is counted as a failed attempt and
   * rescheduled at `next.at`, or discarded with `next.discard` as its reason (through discards.ts, which
   * counts it).
   */
  async rescue(job: JobRow, now: number, next: { at: number } | { discard: DiscardReason }): Promise<JobRow> {
    const e = new Expression();
    e.when(is.from(e, 'rescue')).when(is.holdsLease(e, job.leaseToken ?? '')).when(is.leaseExpired(e, now));
    const lost: AttemptRecord = {
      attempt: job.attempt,
      at: job.attemptedAt ?? iso(now),
      durationMs: Math.max(0, now - Date.parse(job.attemptedAt ?? iso(now))),
      outcome: 'lost',
      error: `worker lost: lease expired at ${job.leaseUntil ?? '?'}`,
    };
    e.append('attempts', lost).remove('leaseToken', 'leaseUntil').set('updatedAt', iso(now));
    if ('discard' in next) {
      e.set('state', JobState.discarded).set('discardReason', next.discard).set('finalizedAt', iso(now)).set('expiresAt', this.expiry(now, JobState.discarded));
      this.deadLetter(e, job.id, JobState.discarded, now);
    } else {
      // The rescuer is at this job's entry: it moves on to the retry's own check.
      e.set('state', JobState.retryable).set('scheduledAt', iso(next.at)).set('seq', job.seq + 1).set('checkAt', checkKey(this.checkDueBy(job.queue, next.at), job.id));
      this.scheduleIfFar(e, job.seq + 1, next.at, now);
    }
    return this.write(job.id, e, 'rescue');
  }

  /**
   * cancel: ops stop a pending or running job (a running job's worker then finds its lease gone). The job
   * becomes a dead letter ops may retry. With `expect`, only from that state and seq (a bulk cancel acts
   * on what it matched, nothing that moved on since).
   */
  async cancel(id: string, now: number, expect?: { state: JobState; seq: number }): Promise<JobRow> {
    const e = new Expression();
    e.when(is.exists(e)).when(is.from(e, 'cancel'));
    if (expect) e.when(e.eq('state', expect.state)).when(is.currentSeq(e, expect.seq));
    e.set('state', JobState.cancelled)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', this.expiry(now, JobState.cancelled))
      .remove('leaseToken', 'leaseUntil');
    this.deadLetter(e, id, JobState.cancelled, now);
    return this.write(id, e, 'cancel');
  }

  /** cancel, for a pending job whose domain asked to stop it: applied when its wake-up arrives. Not a dead letter. */
  async cancelRequested(job: JobRow, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(is.from(e, 'cancel'))
      .when(e.exists('cancelRequestedAt'))
      .when(e.ne('state', JobState.running))
      .set('state', JobState.cancelled)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', this.expiry(now, JobState.cancelled));
    return this.write(job.id, e, 'cancel');
  }

  /**
   * The Update that asks a job to stop, for a domain transaction (an event that makes a pending job moot),
   * named `cancel <id>`.
   * It never fails the caller's transaction on the job's state: a pending job is cancelled at its next
   * wake-up, a running one finishes as it would have.
   */
  requestCancelItem(id: string, now: number): TransactItem {
    const e = new Expression();
    e.when(is.exists(e)).set('cancelRequestedAt', iso(now));
    return updateItem(`cancel ${id}`, this.tableName, { id }, e);
  }

  /**
   * retryNow: ops run a discarded, cancelled or waiting job at once, given the row as read (the write is
   * refused if the job moved on since; with `expect`, also if it is no longer in that state). History is
   * kept; a job whose attempts ran out is given one more (River's JobRetry). It leaves the dead letters,
   * and its check comes after the rescue delay again.
   */
  async retryNow(current: JobRow, now: number, expect?: { state: JobState }): Promise<JobRow> {
    const id = current.id;
    const e = new Expression();
    e.when(is.from(e, 'retryNow')).when(is.currentSeq(e, current.seq));
    if (expect) e.when(e.eq('state', expect.state));
    e.set('state', JobState.available)
      .set('scheduledAt', iso(now))
      .set('seq', current.seq + 1)
      .set('maxAttempts', Math.max(current.maxAttempts, current.attempt + 1))
      .set('updatedAt', iso(now))
      .set('checkAt', checkKey(this.checkDueBy(current.queue, now), id))
      .remove('discardReason', 'finalizedAt', 'expiresAt', 'cancelRequestedAt', 'deadLetter', 'deadAt');
    return this.write(id, e, 'retryNow');
  }

  /**
   * wake: a waiting (scheduled, retryable, snoozed) job runs at once; a finished or running one is
   * refused, never revived. One write, no read: a waiting job has attempts left, so unlike retryNow
   * there is no budget to extend, and a domain's cancel request stands. Its check entry stays unless it
   * comes too late for a job due now (apply.ts pulls it forward then, with {@link recheck}).
   */
  async wake(id: string, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(is.from(e, 'wake'))
      .set('state', JobState.available)
      .set('scheduledAt', iso(now))
      .increment('seq', 1)
      .set('updatedAt', iso(now));
    return this.write(id, e, 'wake');
  }

  /**
   * Moves a job's check to `atMs` if its entry is still `row.checkAt` and the job has not moved on (same
   * state and seq): the rescuer's look at a job that is not due yet or still running, and the pull
   * forward after a wake.
   */
  recheck(row: JobRow, atMs: number): Promise<JobRow> {
    const e = new Expression();
    e.when(e.eq('state', row.state)).when(is.currentSeq(e, row.seq)).when(is.checkedAt(e, row.checkAt)).set('checkAt', checkKey(atMs, row.id));
    return this.write(row.id, e, 'recheck');
  }

  /**
   * Records that the rescuer re-sent a due job's wake-up: its next check comes a rescue delay from now, so
   * overlapping passes send it once (the write is refused to all but the first).
   */
  touchDispatch(row: JobRow, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(e.eq('state', row.state)).when(is.currentSeq(e, row.seq)).when(is.checkedAt(e, row.checkAt)).set('checkAt', checkKey(now + this.rescueAfterMs, row.id));
    return this.write(row.id, e, 'touchDispatch');
  }

  /** When a job of `queue` due at `dueMs` must be looked at by: the queue's lease after it is due. */
  checkDueBy(queue: string, dueMs: number): number {
    return dueMs + this.checkAfterMs(queue);
  }

  /** Records a periodic kind's last run (kept beside the jobs, outside both indexes). */
  async recordPeriodic(status: PeriodicStatus): Promise<void> {
    const e = new Expression();
    e.set('kind', status.kind).set('lastRunAt', status.lastRunAt).set('lastOutcome', status.lastOutcome).set('lastJobId', status.lastJobId);
    if (status.lastFailureAt) e.set('lastFailureAt', status.lastFailureAt).set('lastError', status.lastError ?? '');
    await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: { id: status.id }, ...e.build() }));
  }

  async getPeriodic(kind: string): Promise<PeriodicStatus | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: { id: periodicStatusId(kind) } }));
    return result.Item as PeriodicStatus | undefined;
  }

  /** Epoch seconds at which a job that ended in `state` at `now` expires. */
  expiry(now: number, state: JobState): number | undefined {
    const seconds = state === JobState.discarded ? this.discardedRetentionSeconds : (retentionSeconds as Partial<Record<JobState, number>>)[state];
    return seconds === undefined ? undefined : Math.floor(now / 1000) + seconds;
  }

  private deadLetter(e: Expression, id: string, state: JobState, now: number): void {
    e.set('deadLetter', deadLetterPartition(state, shardOf(id, DEAD_LETTER_SHARDS))).set('deadAt', deadKey(now, id));
  }

  /** A wake-up later than SQS's timers reach is a schedule: the row says which, so it is deleted if the job moves on first. */
  private scheduleIfFar(e: Expression, seq: number, at: number, now: number): void {
    if (needsSchedule(at, now)) e.set('wakeSchedule', { seq, at: iso(at) });
  }

  /** claimNext's write: with `moveCheck`, its entry moves to the lease's end; without, it must be there already or earlier. */
  private claimNextExpression(id: string, queue: string, now: number, leaseUntil: number, moveCheck: boolean): Expression {
    const e = new Expression();
    e.when(is.from(e, 'claimNext'))
      .when(e.eq('queue', queue))
      .when(is.notCancelRequested(e))
      .set('state', JobState.running)
      .increment('attempt', 1)
      .increment('seq', 1)
      .set('scheduledAt', iso(now))
      .set('leaseToken', randomUUID())
      .set('leaseUntil', iso(leaseUntil))
      .set('attemptedAt', iso(now))
      .set('updatedAt', iso(now));
    if (moveCheck) e.set('checkAt', checkKey(leaseUntil, id));
    else e.when(e.le('checkAt', checkKey(leaseUntil, id)));
    return e;
  }

  private finish(job: ClaimedJob, now: number, name: 'complete' | 'discard', state: JobState): Expression {
    const e = new Expression();
    e.when(is.from(e, name))
      .when(is.holdsLease(e, job.leaseToken))
      .set('state', state)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', this.expiry(now, state))
      .remove('leaseToken', 'leaseUntil');
    return e;
  }

  /** `dormant`: no wake-up will be sent (so no schedule is recorded); its check entry is what finds it once due. */
  private reschedule(job: ClaimedJob, now: number, at: number, state: JobState, dormant = false): Expression {
    const e = new Expression();
    e.when(is.from(e, state === JobState.snoozed ? 'snooze' : 'retry'))
      .when(is.holdsLease(e, job.leaseToken))
      .set('state', state)
      .set('scheduledAt', iso(at))
      .set('seq', job.seq + 1)
      .set('updatedAt', iso(now))
      .remove('leaseToken', 'leaseUntil');
    // The entry stays if the rescuer looks no later than it must; only a look that would come too late moves it.
    const dueBy = this.checkDueBy(job.queue, at);
    if (keyTime(job.checkAt) > dueBy) e.set('checkAt', checkKey(dueBy, job.id));
    if (dormant) e.remove('wakeSchedule');
    else this.scheduleIfFar(e, job.seq + 1, at, now);
    return e;
  }

  private async onClaim(job: ClaimedJob, e: Expression, name: TransitionName): Promise<JobRow> {
    try {
      return await this.write(job.id, e, name);
    } catch (error) {
      if (error instanceof TransitionRefusedError) throw new LeaseLostError(name, job.id, error.current, { cause: error });
      throw error;
    }
  }

  private async write(id: string, e: Expression, name: TransitionName | CheckWrite): Promise<JobRow> {
    e.when(is.exists(e));
    if (name !== 'touchDispatch' && name !== 'recheck') tracked(e);
    try {
      const result = await this.db.send(
        new UpdateCommand({ TableName: this.tableName, Key: { id }, ...e.build(), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      );
      return result.Attributes as JobRow;
    } catch (error) {
      const failure = conditionFailure<JobRow>(error);
      if (failure.failed) throw new TransitionRefusedError(name, id, failure.item, { cause: error });
      throw error;
    }
  }
}

/**
 * What every transition writes besides its own change, for the counts (counts.ts): the state it leaves
 * (`prevState`, read before the write, as DynamoDB evaluates a SET), and whether the job had been counted
 * (`prevCounted`; a job created uncounted is counted by its first transition, once).
 */
function tracked(e: Expression): Expression {
  return e.set('prevState', e.attr('state')).set('prevCounted', new Operand(`if_not_exists(${e.name('counted')}, ${e.value(false)})`)).set('counted', true);
}

/** The id of a periodic kind's status row. */
export const periodicStatusId = (kind: string): string => `periodic:${kind}`;

function claimRefusal(row: JobRow | undefined, seq: number, now: number): ClaimRefusal {
  if (!row || !('state' in row)) return 'missing';
  if (isTerminal(row.state)) return 'finished';
  if (row.state === JobState.running) return 'running';
  if (row.seq !== seq) return 'stale';
  if (row.cancelRequestedAt) return 'cancel_requested';
  if (Date.parse(row.scheduledAt) > now) return 'not_due';
  // The row satisfies every condition now; it changed between the write and this read.
  return 'stale';
}

function attemptRecord(job: ClaimedJob, outcome: AttemptRecord['outcome'], durationMs: number, error?: string): AttemptRecord {
  return { attempt: job.attempt, at: job.attemptedAt ?? job.updatedAt, durationMs: Math.round(durationMs), outcome, ...(error ? { error } : {}) };
}

export { pendingStates };
