import { randomUUID } from 'node:crypto';
import { GetCommand, paginateQuery, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../platform/clock.ts';
import { conditionFailure, Expression, InvalidCursorError, keyCursor, putItem, queryKeyAttributes, updateItem } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import { ClaimRefusedError, DuplicateJobError, JobNotFoundError, LeaseLostError, TransitionRefusedError } from './errors.ts';
import type { ClaimRefusal } from './errors.ts';
import type { DiscardReason } from './outcomes.ts';
import { jobsTable, retentionSeconds, stateOrder } from './row.ts';
import type { AttemptRecord, JobRow, PeriodicStatus } from './row.ts';
import { allStates, isTerminal, JobState, pendingStates, transitions } from './states.ts';
import type { TransitionName } from './states.ts';

/** One named item of a DynamoDB TransactWriteItems request (see `transact` in platform/dynamo.ts). */
export type { TransactItem };

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
}

/** A claimed job: the row as the claim left it. */
export type ClaimedJob = JobRow & { state: 'running'; leaseToken: string; leaseUntil: string };

export interface ListQuery {
  state?: JobState;
  kind?: string;
  limit?: number;
  cursor?: string;
}

/**
 * The DynamoDB job store. Every state change is a named conditional write whose `state IN (...)` comes
 * from the transition table in states.ts; a refused condition becomes a typed error that carries the row
 * as stored (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), never a silent false.
 */
export class JobStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
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
      stateOrder: stateOrder(job.scheduledAt, job.id),
    };
    const e = new Expression();
    return putItem(`job ${job.id}`, this.tableName, row, e.when(is.absent(e)));
  }

  /** Creates a job on its own; an existing id raises {@link DuplicateJobError} and changes nothing. */
  async insert(job: NewJob): Promise<JobRow> {
    const item = this.insertItem(job);
    const put = item.Put!;
    try {
      await this.db.send(new PutCommand({ ...put, TableName: this.tableName, Item: put.Item }));
    } catch (error) {
      if (conditionFailure(error).failed) throw new DuplicateJobError(job.id);
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
   */
  async claim(id: string, seq: number, now: number, leaseMs: number): Promise<ClaimedJob> {
    const e = new Expression();
    const token = randomUUID();
    const leaseUntil = now + leaseMs;
    e.when(is.exists(e))
      .when(is.from(e, 'claim'))
      .when(is.currentSeq(e, seq))
      .when(is.due(e, now))
      .when(is.notCancelRequested(e))
      .set('state', JobState.running)
      .increment('attempt', 1)
      .set('leaseToken', token)
      .set('leaseUntil', iso(leaseUntil))
      .set('attemptedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('stateOrder', stateOrder(leaseUntil, id));
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
  snooze(job: ClaimedJob, now: number, until: number, reason: string): Promise<JobRow> {
    const e = this.reschedule(job, now, until, JobState.snoozed);
    e.increment('attempt', -1).increment('snoozes', 1).set('lastSnooze', { at: iso(now), until: iso(until), reason });
    return this.onClaim(job, e, 'snooze');
  }

  /** discard: the claim holder gives up (the handler's reason, or `exhausted`). */
  discard(job: ClaimedJob, now: number, reason: DiscardReason, error: string, durationMs: number): Promise<JobRow> {
    const e = this.finish(job, now, 'discard', JobState.discarded);
    e.set('discardReason', reason).append('attempts', attemptRecord(job, 'discarded', durationMs, error));
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
      e.set('state', JobState.discarded)
        .set('discardReason', next.discard)
        .set('finalizedAt', iso(now))
        .set('expiresAt', expiry(now, JobState.discarded))
        .set('stateOrder', stateOrder(now, job.id));
    } else {
      e.set('state', JobState.retryable)
        .set('scheduledAt', iso(next.at))
        .set('seq', job.seq + 1)
        .set('stateOrder', stateOrder(next.at, job.id));
    }
    return this.write(job.id, e, 'rescue');
  }

  /** cancel: ops stop a pending or running job. A running job's worker then finds its lease gone. */
  async cancel(id: string, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(is.exists(e))
      .when(is.from(e, 'cancel'))
      .set('state', JobState.cancelled)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', expiry(now, JobState.cancelled))
      .set('stateOrder', stateOrder(now, id))
      .remove('leaseToken', 'leaseUntil');
    return this.write(id, e, 'cancel');
  }

  /** cancel, for a pending job whose domain asked to stop it: applied when its wake-up arrives. */
  async cancelRequested(job: JobRow, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(is.from(e, 'cancel'))
      .when(e.exists('cancelRequestedAt'))
      .when(e.ne('state', JobState.running))
      .set('state', JobState.cancelled)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', expiry(now, JobState.cancelled))
      .set('stateOrder', stateOrder(now, job.id));
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
   * retryNow: ops run a discarded, cancelled or waiting job at once. History is kept; a job whose
   * attempts ran out is given one more (River's JobRetry).
   */
  async retryNow(id: string, now: number): Promise<JobRow> {
    const current = await this.mustGet(id);
    const e = new Expression();
    e.when(is.from(e, 'retryNow'))
      .when(is.currentSeq(e, current.seq))
      .set('state', JobState.available)
      .set('scheduledAt', iso(now))
      .set('seq', current.seq + 1)
      .set('maxAttempts', Math.max(current.maxAttempts, current.attempt + 1))
      .set('updatedAt', iso(now))
      .set('stateOrder', stateOrder(now, id))
      .remove('discardReason', 'finalizedAt', 'expiresAt', 'cancelRequestedAt', 'lastDispatchAt');
    return this.write(id, e, 'retryNow');
  }

  /**
   * wake: a waiting (scheduled, retryable, snoozed) job runs at once; a finished or running one is
   * refused, never revived. One write, no read: a waiting job has attempts left, so unlike retryNow
   * there is no budget to extend, and a domain's cancel request stands.
   */
  async wake(id: string, now: number): Promise<JobRow> {
    const e = new Expression();
    e.when(is.from(e, 'wake'))
      .set('state', JobState.available)
      .set('scheduledAt', iso(now))
      .increment('seq', 1)
      .set('updatedAt', iso(now))
      .set('stateOrder', stateOrder(now, id))
      .remove('lastDispatchAt');
    return this.write(id, e, 'wake');
  }

  /** Records that the rescuer re-sent a wake-up, so the next pass leaves it alone for a while. */
  async touchDispatch(job: JobRow, now: number, notSince: number): Promise<JobRow> {
    const e = new Expression();
    e.when(e.eq('state', job.state))
      .when(is.currentSeq(e, job.seq))
      .when(e.or(e.notExists('lastDispatchAt'), e.lt('lastDispatchAt', iso(notSince))))
      .set('lastDispatchAt', iso(now));
    return this.write(job.id, e, 'touchDispatch');
  }

  /** Jobs in `state` whose time in that state (scheduledAt, or leaseUntil when running) is at or before `before`. */
  async findDue(state: JobState, before: number, limit: number): Promise<JobRow[]> {
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: jobsTable.indexes[0].name,
        ...e.forQuery(e.and(e.eq('state', state), e.le('stateOrder', `${iso(before)}#~`))),
        Limit: limit,
      }),
    );
    return (result.Items ?? []) as JobRow[];
  }

  /**
   * How many jobs are in each state, optionally of one kind. Reads every row of the index (as a count,
   * no items returned): cheap locally, and on AWS proportional to the jobs kept (TTL bounds them).
   */
  async count(kind?: string): Promise<Record<JobState, number>> {
    const counts = Object.fromEntries(allStates.map((s) => [s, 0])) as Record<JobState, number>;
    await Promise.all(
      allStates.map(async (state) => {
        const e = new Expression();
        const pages = paginateQuery(
          { client: this.db },
          { TableName: this.tableName, IndexName: jobsTable.indexes[0].name, ...inState(e, state, kind), Select: 'COUNT' },
        );
        for await (const page of pages) counts[state] += page.Count ?? 0;
      }),
    );
    return counts;
  }

  /**
   * Jobs by state (newest first) and kind. Without a state, every state is read and merged (no cursor).
   * A cursor that is not one this state's listing gave out raises {@link InvalidCursorError}.
   */
  async list(query: ListQuery): Promise<{ jobs: JobRow[]; cursor?: string }> {
    const limit = Math.min(Math.max(query.limit ?? 50, 1), 200);
    if (!query.state) {
      if (query.cursor !== undefined) throw new InvalidCursorError();
      const perState = await Promise.all(allStates.map((state) => this.list({ state, limit, ...(query.kind ? { kind: query.kind } : {}) })));
      const jobs = perState
        .flatMap((page) => page.jobs)
        .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
        .slice(0, limit);
      return { jobs };
    }
    const jobs: JobRow[] = [];
    const pages = keyCursor(queryKeyAttributes(jobsTable, jobsTable.indexes[0].name), { state: query.state });
    let startKey: Record<string, unknown> | undefined = pages.decode(query.cursor);
    // A kind filter applies after Limit; read pages until the page is full (bounded: 10 reads).
    for (let page = 0; page < 10 && jobs.length < limit; page++) {
      const result = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: jobsTable.indexes[0].name,
          ...inState(new Expression(), query.state, query.kind),
          ScanIndexForward: false,
          Limit: limit - jobs.length,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      jobs.push(...((result.Items ?? []) as JobRow[]));
      startKey = result.LastEvaluatedKey;
      if (!startKey) break;
    }
    const cursor = pages.encode(startKey);
    return cursor ? { jobs, cursor } : { jobs };
  }

  /** Records a periodic kind's last run (kept beside the jobs, outside the byState index). */
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

  private finish(job: ClaimedJob, now: number, name: 'complete' | 'discard', state: JobState): Expression {
    const e = new Expression();
    e.when(is.from(e, name))
      .when(is.holdsLease(e, job.leaseToken))
      .set('state', state)
      .set('finalizedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', expiry(now, state))
      .set('stateOrder', stateOrder(now, job.id))
      .remove('leaseToken', 'leaseUntil');
    return e;
  }

  private reschedule(job: ClaimedJob, now: number, at: number, state: JobState): Expression {
    const e = new Expression();
    e.when(is.from(e, state === JobState.snoozed ? 'snooze' : 'retry'))
      .when(is.holdsLease(e, job.leaseToken))
      .set('state', state)
      .set('scheduledAt', iso(at))
      .set('seq', job.seq + 1)
      .set('updatedAt', iso(now))
      .set('stateOrder', stateOrder(at, job.id))
      .remove('leaseToken', 'leaseUntil');
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

  private async write(id: string, e: Expression, name: TransitionName | 'touchDispatch'): Promise<JobRow> {
    e.when(is.exists(e));
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

/** The Query of the byState index for one state, optionally kept to one kind. */
function inState(e: Expression, state: JobState, kind: string | undefined) {
  return e.forQuery(e.eq('state', state), kind ? e.eq('kind', kind) : undefined);
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

function expiry(now: number, state: JobState): number | undefined {
  const seconds = (retentionSeconds as Partial<Record<JobState, number>>)[state];
  return seconds === undefined ? undefined : Math.floor(now / 1000) + seconds;
}

export { pendingStates };
