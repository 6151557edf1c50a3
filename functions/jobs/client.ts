import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { JobChanges } from './apply.ts';
import type { Dispatcher, WakeUp } from './dispatch.ts';
import { DuplicateJobError, InvalidJobArgsError } from './errors.ts';
import type { JobKind } from './kinds.ts';
import { describeError } from './outcomes.ts';
import type { JobRow } from './row.ts';
import type { JobState } from './states.ts';
import type { JobStore, ListQuery, TransactItem } from './store.ts';

/** When and under which id to enqueue. A caller-chosen id makes the enqueue idempotent. */
export interface EnqueueOptions {
  /** Deterministic id; a second enqueue with the same id creates nothing. */
  id?: string;
  /** Due time, epoch ms (default: now). */
  at?: number;
  /** Due after this many ms (ignored when `at` is set). */
  delayMs?: number;
}

/** A job ready to commit inside the caller's transaction; pass it to {@link JobClient.afterCommit} once committed. */
export interface PreparedJob {
  id: string;
  item: TransactItem;
  wakeUp: WakeUp;
}

const ID_PATTERN = /^[A-Za-z0-9._:@#-]{1,200}$/;

/**
 * The job layer's client: what domains and ops use to enqueue, inspect, retry and cancel jobs.
 * Enqueue writes the row, then sends its wake-up; inside a domain transaction, {@link JobClient.prepare}
 * gives the row's Put and {@link JobClient.afterCommit} sends the wake-ups (the transactional outbox). If a
 * send is lost, the rescuer finds the job due and idle and sends it again.
 */
export class JobClient {
  private readonly store: JobStore;
  private readonly dispatcher: Dispatcher;
  private readonly changes: JobChanges;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(options: { store: JobStore; dispatcher: Dispatcher; changes: JobChanges; clock: Clock; logger: Logger }) {
    this.store = options.store;
    this.dispatcher = options.dispatcher;
    this.changes = options.changes;
    this.clock = options.clock;
    this.logger = options.logger;
  }

  /** Validates `args` and builds the job's Put for a caller's TransactWriteItems. Writes nothing. */
  prepare<A>(kind: JobKind<A>, args: A, options: EnqueueOptions = {}): PreparedJob {
    const parsed = kind.args.safeParse(args);
    if (!parsed.success) {
      throw new InvalidJobArgsError(
        kind.kind,
        parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
      );
    }
    const id = options.id ?? randomUUID();
    if (!ID_PATTERN.test(id)) throw new InvalidJobArgsError(kind.kind, [{ path: 'id', message: `job id must match ${ID_PATTERN.source}` }]);
    const now = this.clock.now();
    const at = options.at ?? now + (options.delayMs ?? 0);
    const item = this.store.insertItem({ id, kind: kind.kind, queue: kind.queue, args: parsed.data, maxAttempts: kind.policy.maxAttempts, scheduledAt: at, now });
    return { id, item, wakeUp: { jobId: id, seq: 1, queue: kind.queue, at } };
  }

  /** Enqueues one job on its own. With a caller-chosen id that exists already, nothing is written and `created` is false. */
  async enqueue<A>(kind: JobKind<A>, args: A, options: EnqueueOptions = {}): Promise<{ id: string; created: boolean }> {
    const prepared = this.prepare(kind, args, options);
    const put = prepared.item.Put!;
    try {
      await this.store.insert({
        id: prepared.id,
        kind: kind.kind,
        queue: kind.queue,
        args: (put.Item as JobRow).args,
        maxAttempts: kind.policy.maxAttempts,
        scheduledAt: prepared.wakeUp.at,
        now: Date.parse((put.Item as JobRow).createdAt),
      });
    } catch (error) {
      if (error instanceof DuplicateJobError) return { id: prepared.id, created: false };
      throw error;
    }
    await this.afterCommit([prepared]);
    return { id: prepared.id, created: true };
  }

  /** Sends the wake-ups of jobs committed in a caller's transaction. Never throws: a lost send is the rescuer's. */
  async afterCommit(prepared: readonly Pick<PreparedJob, 'id' | 'wakeUp'>[]): Promise<void> {
    await Promise.all(
      prepared.map(async (job) => {
        try {
          await this.dispatcher.dispatch(job.wakeUp);
        } catch (error) {
          this.logger.error('wake-up not sent after commit; the rescuer will send it', { jobId: job.id, error: describeError(error) });
        }
      }),
    );
  }

  /** The Update that asks a job to stop, for a caller's transaction (see {@link JobStore.requestCancelItem}). */
  requestCancelItem(id: string): TransactItem {
    return this.store.requestCancelItem(id, this.clock.now());
  }

  get(id: string): Promise<JobRow | undefined> {
    return this.store.get(id);
  }

  list(query: ListQuery): Promise<{ jobs: JobRow[]; cursor?: string }> {
    return this.store.list(query);
  }

  /** Jobs per state, optionally of one kind. */
  count(kind?: string): Promise<Record<JobState, number>> {
    return this.store.count(kind);
  }

  /** Runs a discarded, cancelled or waiting job now, keeping its history. */
  retry(id: string): Promise<JobRow> {
    return this.changes.apply({ type: 'retryNow', id });
  }

  /**
   * Runs a waiting job now: what a domain uses to hand work on (one job, done, waking the next that waited
   * for it). Unlike {@link retry}, a discarded or cancelled job is refused ({@link TransitionRefusedError}),
   * never revived.
   */
  wake(id: string): Promise<JobRow> {
    return this.changes.apply({ type: 'wake', id });
  }

  /** Cancels a pending or running job. */
  cancel(id: string): Promise<JobRow> {
    return this.changes.apply({ type: 'cancel', id });
  }
}
