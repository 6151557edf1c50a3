import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobChanges } from './apply.ts';
import { CountScope } from './counts.ts';
import { decide } from './decide.ts';
import type { CountStore, JobCounts } from './counts.ts';
import type { Dispatcher, WakeUp } from './dispatch.ts';
import { DuplicateJobError, InvalidJobArgsError, TransitionRefusedError } from './errors.ts';
import type { JobKind } from './kinds.ts';
import type { JobFilter, JobListing, ListQuery } from './listing.ts';
import { describeError } from './outcomes.ts';
import type { RunOutcome } from './outcomes.ts';
import { retentionSeconds } from './row.ts';
import type { JobRow } from './row.ts';
import { canTransition } from './states.ts';
import type { JobState } from './states.ts';
import type { JobStore, TransactItem } from './store.ts';

/** When and under which id to enqueue. A caller-chosen id makes the enqueue idempotent. */
export interface EnqueueOptions {
  /** Deterministic id; a second enqueue with the same id creates nothing. */
  id?: string;
  /** Due time, epoch ms (default: now). */
  at?: number;
  /** Due after this many ms (ignored when `at` is set). */
  delayMs?: number;
  /**
   * Send no wake-up: the job waits for whoever will wake it (`wake`, or a job handing work on with
   * `runNext`), and the rescuer wakes it once it is due if nobody did (only for {@link JobClient.enqueue}).
   */
  dormant?: boolean;
}

/** A job ready to commit inside the caller's transaction; pass it to {@link JobClient.afterCommit} once committed. */
export interface PreparedJob {
  id: string;
  kind: string;
  /** The state it is created in (scheduled or available): what the counts add once it is committed. */
  state: JobState;
  /** Whether committing it counts it (else its first transition does: counts.ts). */
  counted: boolean;
  item: TransactItem;
  wakeUp: WakeUp;
}

/**
 * An attempt made before its job existed (see {@link JobClient.enqueueAttempted}): when it started, how long
 * it took and what it came to; no `attempt` for an outcome reached without one (a discard decided up front).
 */
export interface EarlierAttempt {
  attempt?: { at: number; durationMs: number };
  outcome: RunOutcome;
}

/** A bulk retry or cancel: every job matching the filter (a state is required), or only counted (`dryRun`), or at most `limit` of them. */
export interface BulkRequest extends JobFilter {
  state: JobState;
  dryRun?: boolean;
  limit?: number;
}

/** What a bulk action found and did: jobs that matched, and how many of them it changed (0 on a dry run). */
export interface BulkResult {
  matched: number;
  changed: number;
}

/** Jobs a bulk action changes at once. */
const BULK_WIDTH = 10;

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
  private readonly counts: CountStore;
  private readonly listing: JobListing;
  private readonly clock: Clock;
  private readonly rng: Rng;
  private readonly logger: Logger;

  constructor(options: { store: JobStore; dispatcher: Dispatcher; changes: JobChanges; counts: CountStore; listing: JobListing; clock: Clock; rng: Rng; logger: Logger }) {
    this.store = options.store;
    this.dispatcher = options.dispatcher;
    this.changes = options.changes;
    this.counts = options.counts;
    this.listing = options.listing;
    this.clock = options.clock;
    this.rng = options.rng;
    this.logger = options.logger;
  }

  /**
   * Creates a job whose first attempt was already made, by whoever had the work in hand before there was a
   * job for it (a webhook delivery tried within the run of the delivery before it): the job layer decides
   * what that attempt means under the kind's policy, exactly as after a run of its own (decide.ts), and
   * creates the job in that state through the one path that applies decisions (apply.ts) — retryable at
   * its backoff, snoozed, or discarded (with the kind's discard hook, counted, a dead letter ops may retry)
   * — with the attempt as attempt 1 of its history. From then on it is a job like any other: only the job
   * layer runs it again. A job with this id already exists: nothing is written, and `undefined` is returned.
   *
   * @example
   * const row = await jobs.enqueueAttempted(deliverKind, args, { id, attempt: { at: started, durationMs }, outcome: { type: 'retryable', error: 'HTTP 503' } });
   */
  async enqueueAttempted<A>(kind: JobKind<A>, args: A, options: { id: string } & EarlierAttempt): Promise<JobRow | undefined> {
    const prepared = this.prepare(kind, args, { id: options.id });
    const now = this.clock.now();
    const decision = decide(options.outcome, { attempt: options.attempt ? 1 : 0, maxAttempts: kind.policy.maxAttempts }, kind.policy, now, this.rng, kind.alertingReasons);
    try {
      return await this.changes.apply({
        type: 'attempted',
        job: {
          id: prepared.id,
          kind: kind.kind,
          queue: kind.queue,
          args: (prepared.item.Put!.Item as JobRow).args,
          maxAttempts: kind.policy.maxAttempts,
          scheduledAt: now,
          now,
          counted: true,
          decision,
          ...(options.attempt ? { attempt: options.attempt } : {}),
        },
      });
    } catch (error) {
      if (error instanceof DuplicateJobError) return undefined;
      throw error;
    }
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
    // Inside a scope the count rides on the scope's one flush; a job due later is counted now, so it shows while it waits.
    const counted = this.counts.inScope() || at > now;
    const item = this.store.insertItem({ id, kind: kind.kind, queue: kind.queue, args: parsed.data, maxAttempts: kind.policy.maxAttempts, scheduledAt: at, now, counted, ...(options.dormant ? { dormant: true } : {}) });
    return { id, kind: kind.kind, state: (item.Put!.Item as JobRow).state, counted, item, wakeUp: { jobId: id, seq: 1, queue: kind.queue, at } };
  }

  /**
   * Enqueues one job on its own. With a caller-chosen id that exists already, nothing is written and
   * `created` is false. `createdAt`: the new row's (what orders it among its kind's jobs).
   */
  async enqueue<A>(kind: JobKind<A>, args: A, options: EnqueueOptions = {}): Promise<{ id: string; created: true; createdAt: string } | { id: string; created: false }> {
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
        counted: prepared.counted,
        ...(options.dormant ? { dormant: true } : {}),
      });
    } catch (error) {
      if (error instanceof DuplicateJobError) return { id: prepared.id, created: false };
      throw error;
    }
    if (options.dormant) await this.countCreated([prepared]);
    else await this.afterCommit([prepared]);
    return { id: prepared.id, created: true, createdAt: (put.Item as JobRow).createdAt };
  }

  /**
   * Counts the jobs committed in a caller's transaction and sends their wake-ups. Never throws: a lost send
   * is the rescuer's. With `wake: false` it only counts them: their domain will wake them (`wake`, or a job
   * handing work on with `runNext`), or the rescuer will once their check comes.
   */
  async afterCommit(prepared: readonly Pick<PreparedJob, 'id' | 'kind' | 'state' | 'counted' | 'wakeUp'>[], options: { wake?: boolean } = {}): Promise<void> {
    await this.countCreated(prepared);
    if (options.wake === false) return;
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

  /** Counts the creation of the jobs whose creator counts them (see `counted` in store.ts). */
  private async countCreated(prepared: readonly Pick<PreparedJob, 'kind' | 'state' | 'counted'>[]): Promise<void> {
    const counted = prepared.filter((job) => job.counted);
    if (counted.length === 0) return;
    await this.counts.record((tally) => {
      for (const job of counted) tally.move(job.kind, undefined, job.state);
    });
  }

  /** The Update that asks a job to stop, for a caller's transaction (see {@link JobStore.requestCancelItem}). */
  requestCancelItem(id: string): TransactItem {
    return this.store.requestCancelItem(id, this.clock.now());
  }

  /** The job layer's clock: what `since`/`until` filters and every job's times are in. */
  now(): number {
    return this.clock.now();
  }

  get(id: string): Promise<JobRow | undefined> {
    return this.store.get(id);
  }

  /** Jobs by state, kind, reason and when they reached their state, newest first (listing.ts). */
  list(query: ListQuery): Promise<{ jobs: JobRow[]; cursor?: string }> {
    return this.listing.list(query, this.clock.now());
  }

  /** The job counts of `kinds`, from the counters (counts.ts): per state and kind, and the dead letters kept, by kind and reason. */
  count(kinds: readonly string[]): Promise<JobCounts> {
    return this.counts.read(kinds, {
      now: this.clock.now(),
      discardedRetentionDays: this.store.discardedRetentionSeconds / 86400,
      cancelledRetentionDays: retentionSeconds.cancelled / 86400,
    });
  }

  /**
   * Retries every job matching `request` (discarded or cancelled, or waiting: any state ops may retry
   * from), as {@link retry} does one: each keeps its history and, if its attempts ran out, gets one more.
   * A dry run only counts. Each retry is conditional on the job still being in the state and at the seq
   * it matched in, so a bulk retry run again after a crash half-way retries the rest and nothing twice;
   * give it the first run's `until` so that jobs discarded again since are not taken for the rest.
   */
  retryMatching(request: BulkRequest, onProgress?: (result: BulkResult) => void): Promise<BulkResult> {
    if (!canTransition('retryNow', request.state)) throw new RangeError(`jobs in state ${request.state} cannot be retried`);
    return this.bulk(request, (row) => this.changes.apply({ type: 'retryNow', row, expect: row.state }), onProgress);
  }

  /** Cancels every job matching `request` (a waiting or running state), each only from the state and seq it matched in. */
  cancelMatching(request: BulkRequest, onProgress?: (result: BulkResult) => void): Promise<BulkResult> {
    if (!canTransition('cancel', request.state)) throw new RangeError(`jobs in state ${request.state} cannot be cancelled`);
    return this.bulk(request, (row) => this.changes.apply({ type: 'cancel', id: row.id, expect: { state: row.state, seq: row.seq } }), onProgress);
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

  private async bulk(request: BulkRequest, change: (row: JobRow) => Promise<JobRow>, onProgress?: (result: BulkResult) => void): Promise<BulkResult> {
    const limit = request.limit ?? Number.POSITIVE_INFINITY;
    const result: BulkResult = { matched: 0, changed: 0 };
    await this.counts.within(async () => {
      let pending: JobRow[] = [];
      const act = async () => {
        const done = await Promise.all(
          pending.map((row) =>
            change(row).then(
              () => 1,
              (error: unknown) => {
                // Moved on since it matched (run, retried or cancelled by someone else): not this action's.
                if (error instanceof TransitionRefusedError) return 0;
                throw error;
              },
            ),
          ),
        );
        result.changed += done.reduce((a, b) => a + b, 0);
        pending = [];
        onProgress?.({ ...result });
      };
      for await (const row of this.listing.each({ ...request, state: request.state }, this.clock.now())) {
        result.matched++;
        if (request.dryRun || result.changed + pending.length >= limit) continue;
        pending.push(row);
        if (pending.length >= BULK_WIDTH) await act();
      }
      if (pending.length > 0) await act();
    }, CountScope.bulk);
    return result;
  }
}
