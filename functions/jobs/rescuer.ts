import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import { iso } from '../platform/clock.ts';
import { Expression, IncompleteReadError, MAX_BATCH_GET_KEYS } from '../platform/dynamo.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobChanges } from './apply.ts';
import type { JobClient } from './client.ts';
import { CountScope } from './counts.ts';
import type { CountStore } from './counts.ts';
import { decide } from './decide.ts';
import type { Decision } from './decide.ts';
import { unknownKindDiscard } from './discards.ts';
import { TransitionRefusedError } from './errors.ts';
import type { JobKind } from './kinds.ts';
import type { JobListing } from './listing.ts';
import { describeError } from './outcomes.ts';
import { CHECK_INDEX, CHECK_SHARDS, checkPartition, keyTime } from './row.ts';
import type { JobRow } from './row.ts';
import { isTerminal, JobState, pendingStates } from './states.ts';
import type { JobStore } from './store.ts';
import type { Watermarks } from './watermarks.ts';

/** What one rescuer pass did. */
export interface RescueReport {
  /** Running jobs whose lease expired, rescheduled (or discarded when out of attempts). */
  expired: number;
  /** Due jobs nobody woke (a lost send), woken again. */
  rewoken: number;
  /** Periodic jobs enqueued for the current period. */
  periodic: number;
  /** Entries of the byCheck index looked at. */
  looked: number;
  /** Jobs not finished and not late (waiting for a later time, or running under a live lease): their check moved to then. */
  rechecked: number;
  /** False when the pass ran out of its time budget (or met a write it could not make) before it reached now in every partition: the next pass goes on from there. */
  caughtUp: boolean;
}

export interface RescuerOptions {
  store: JobStore;
  client: JobClient;
  /** The one path that applies decisions (a lost attempt's retry or discard, a re-sent wake-up). */
  changes: JobChanges;
  counts: CountStore;
  listing: JobListing;
  watermarks: Watermarks;
  db: DynamoDBDocumentClient;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Every kind the system runs: their policies price a lost attempt, the periodic ones are enqueued here. */
  kinds: readonly JobKind<unknown>[];
  /** A job due longer ago than this with no claim is taken for a lost wake-up. */
  rescueAfterMs: number;
  /** Entries of one partition read per Query. @default 100 */
  pageSize?: number;
  /** How long a pass may take, real ms (the Lambda's timeout leaves room after it). @default 40_000 */
  budgetMs?: number;
  /** Real ms elapsed since some origin (the budget's stopwatch). @default performance.now */
  elapsed?: () => number;
  /** Partitions walked at once. @default 8 */
  concurrency?: number;
}

/** Jobs of one page the rescuer deals with at once. */
const LOOKS_AT_ONCE = 16;

/** Runs `fn(0..n-1)` with at most `width` at once; the results in index order. */
async function inTurn<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, n) }, async () => {
      while (next < n) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

/** What the rescuer did with one entry: dealt with (the watermark may pass it), or not (it stops there until the next pass). */
type Look = 'done' | 'blocked';

/** How a pass's walk of one partition ended: at now, before now (out of time, or blocked), or before its first page (out of time). */
type Walk = 'caughtUp' | 'stopped' | 'unreached';

/**
 * The rescuer (River's name): a periodic pass that makes sure no job is lost. It walks the byCheck index
 * in time order, in every partition, from where the last pass stopped (its watermark) to now: each entry
 * is a job whose check came due. A finished job needs nothing (most are: a job's check comes a rescue
 * delay after it was due). A running job whose lease expired lost its worker: the attempt counts as
 * failed and the job is rescheduled (or discarded). A waiting job due longer ago than the rescue delay had
 * its wake-up lost: it is sent again. A job running under a live lease, or waiting for a later time, has
 * its check moved to then. Then the watermark moves past what was dealt with. It also enqueues each
 * periodic kind's job for the current period.
 *
 * A pass has a time budget: it pages through any backlog until the budget runs out, and the next pass
 * goes on from the watermark, starting at the first partition this one did not reach (a pass that
 * always began at c00 would leave the same last partitions out whenever the budget ran short). Every write is conditional on the entry it read, so overlapping passes do
 * no harm: one of them makes each change.
 */
export class Rescuer {
  private readonly options: RescuerOptions;
  private readonly kinds: Map<string, JobKind<unknown>>;
  /** The partition the next pass walks first. Held in memory: an instance lost (a cold start) starts again at c00. */
  private start = 0;

  constructor(options: RescuerOptions) {
    this.options = options;
    this.kinds = new Map(options.kinds.map((k) => [k.kind, k]));
  }

  /** One pass, at the clock's time (or `now`: a pass as of a later time, for a benchmark's last look). */
  async run(at?: { now?: number }): Promise<RescueReport> {
    const now = at?.now ?? this.options.clock.now();
    const elapsed = this.options.elapsed ?? (() => performance.now());
    const deadline = elapsed() + (this.options.budgetMs ?? 40_000);
    const report: RescueReport = { expired: 0, rewoken: 0, periodic: 0, looked: 0, rechecked: 0, caughtUp: true };
    await this.options.counts.within(async () => {
      report.periodic = await this.enqueuePeriodic(now);
      const marks = await this.options.watermarks.read();
      const start = this.start;
      const order = Array.from({ length: CHECK_SHARDS }, (_, i) => (start + i) % CHECK_SHARDS);
      const walks = new Array<Walk>(CHECK_SHARDS).fill('unreached');
      const concurrency = this.options.concurrency ?? 8;
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(concurrency, order.length) }, async () => {
          while (next < order.length) {
            const i = next++;
            const n = order[i]!;
            walks[i] = await this.walk(n, marks[n], now, () => elapsed() < deadline, report);
            if (walks[i] !== 'caughtUp') report.caughtUp = false;
          }
        }),
      );
      // The next pass starts at the first partition this one did not reach, so one that a spent budget
      // left out comes first next time instead of behind the same partitions again.
      const unreached = walks.indexOf('unreached');
      if (unreached !== -1) this.start = order[unreached]!;
    }, CountScope.rescuer);
    return report;
  }

  /**
   * Sends a wake-up for every waiting job, due or not. The local runtime runs it at start-up: its
   * in-process queues and timers did not survive the last stop, the job rows did.
   */
  async recover(): Promise<number> {
    let count = 0;
    const now = this.options.clock.now();
    for (const state of pendingStates) {
      for await (const row of this.options.listing.each({ state }, now)) {
        await this.options.changes.apply({ type: 'redispatch', row });
        count++;
      }
    }
    return count;
  }

  /** Walks one partition from its watermark to now. */
  private async walk(partition: number, mark: string | undefined, now: number, inTime: () => boolean, report: RescueReport): Promise<Walk> {
    const { db, store, watermarks } = this.options;
    let position = mark;
    for (let page = 0; ; page++) {
      if (!inTime()) return page === 0 ? 'unreached' : 'stopped';
      const e = new Expression();
      const key = e.and(e.eq('checkShard', checkPartition(partition)), e.between('checkAt', position ?? '0000', `${iso(now)}#\uffff`));
      const result = await db.send(
        new QueryCommand({ TableName: store.tableName, IndexName: CHECK_INDEX, ...e.forQuery(key), Limit: this.options.pageSize ?? 100 }),
      );
      const entries = (result.Items ?? []).map((i) => ({ id: i['id'] as string, checkAt: i['checkAt'] as string })).filter((entry) => entry.checkAt !== position);
      if (entries.length === 0) return 'caughtUp';
      const rows = await this.rows(entries.map((entry) => entry.id));
      const looks = await inTurn(entries.length, LOOKS_AT_ONCE, (i) => this.look(entries[i]!.checkAt, rows[i], now, report));
      report.looked += entries.length;
      const blocked = looks.indexOf('blocked');
      const last = blocked === -1 ? entries.at(-1)!.checkAt : blocked > 0 ? entries[blocked - 1]!.checkAt : undefined;
      if (last !== undefined) {
        await watermarks.advance(partition, last);
        position = last;
      }
      if (blocked !== -1) return 'stopped';
      if (!result.LastEvaluatedKey) return 'caughtUp';
    }
  }

  /** Deals with one entry whose check came due; a refused write is decided again with the row as it now is. */
  private async look(entryKey: string, found: JobRow | undefined, now: number, report: RescueReport): Promise<Look> {
    let row = found;
    for (let tries = 0; tries < 3; tries++) {
      // Gone (expired), finished, or its entry moved ahead since (another pass, a wake): nothing to do here.
      if (!row || isTerminal(row.state) || (row.checkAt !== entryKey && keyTime(row.checkAt) > now)) return 'done';
      try {
        await this.act(row, now, report);
        return 'done';
      } catch (error) {
        if (error instanceof TransitionRefusedError) {
          row = error.current;
          continue;
        }
        this.options.logger.error('rescue write failed; the job is looked at again later', { jobId: row.id, error: describeError(error) });
        return this.putOff(row, now);
      }
    }
    return 'blocked';
  }

  private async act(row: JobRow, now: number, report: RescueReport): Promise<void> {
    const { store, changes, rescueAfterMs } = this.options;
    if (row.state === JobState.running) {
      const leaseUntil = Date.parse(row.leaseUntil ?? iso(now));
      if (leaseUntil < now) {
        const kind = this.kinds.get(row.kind);
        // A lost attempt is a retryable failure, priced by the kind's policy; a kind nobody runs is discarded as the executor would.
        const decision: Decision = kind ? decide({ type: 'retryable', error: 'worker lost' }, row, kind.policy, now, this.options.rng) : unknownKindDiscard(row.kind, 'in the rescuer');
        await changes.apply({ type: 'lost', job: row, decision });
        report.expired++;
      } else {
        await store.recheck(row, leaseUntil + 1);
        report.rechecked++;
      }
      return;
    }
    const due = Date.parse(row.scheduledAt);
    if (due > now - rescueAfterMs) {
      // Not due yet: looked at when it is due and its lease would have run out. Due, but not for long
      // (a queue behind): looked at once it has been idle long enough to be taken for a lost wake-up.
      await store.recheck(row, Math.max(due > now ? store.checkDueBy(row.queue, due) : due + rescueAfterMs, now + 1));
      report.rechecked++;
      return;
    }
    if (row.cancelRequestedAt) {
      // Its domain asked to stop it and no wake-up came to do so: it is cancelled here.
      await changes.apply({ type: 'cancelRequested', job: row });
      return;
    }
    const touched = await store.touchDispatch(row, now);
    await changes.apply({ type: 'redispatch', row: touched });
    report.rewoken++;
  }

  /** A job the rescuer could not deal with now: its check moves a rescue delay on. 'blocked' if even that fails. */
  private async putOff(row: JobRow, now: number): Promise<Look> {
    try {
      await this.options.store.recheck(row, now + this.options.rescueAfterMs);
      return 'done';
    } catch (error) {
      this.options.logger.error('rescuer check not moved; the partition waits here for the next pass', { jobId: row.id, error: describeError(error) });
      return 'blocked';
    }
  }

  private async enqueuePeriodic(now: number): Promise<number> {
    const { client } = this.options;
    let count = 0;
    for (const kind of this.kinds.values()) {
      if (!kind.periodic) continue;
      const period = kind.periodic.everySeconds * 1000;
      const periodStart = Math.floor(now / period) * period;
      const { created } = await client.enqueue(kind, {}, { id: `${kind.kind}@${new Date(periodStart).toISOString()}` });
      if (created) count++;
    }
    return count;
  }

  /** The rows of `ids` in their order, with consistent BatchGets (the rescuer acts on what it reads). */
  private async rows(ids: readonly string[]): Promise<(JobRow | undefined)[]> {
    const { db, store } = this.options;
    const found = new Map<string, JobRow>();
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      const keys = [...new Set(ids.slice(i, i + MAX_BATCH_GET_KEYS))].map((id) => ({ id }));
      const result = await db.send(new BatchGetCommand({ RequestItems: { [store.tableName]: { Keys: keys, ConsistentRead: true } } }));
      const unprocessed = result.UnprocessedKeys?.[store.tableName]?.Keys?.length ?? 0;
      if (unprocessed > 0) throw new IncompleteReadError(unprocessed);
      for (const item of result.Responses?.[store.tableName] ?? []) found.set(item['id'] as string, item as JobRow);
    }
    return ids.map((id) => found.get(id));
  }
}
