import { AsyncLocalStorage } from 'node:async_hooks';
import { randomInt } from 'node:crypto';
import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Expression, IncompleteReadError, MAX_BATCH_GET_KEYS } from '../platform/dynamo.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import { describeError } from './outcomes.ts';
import type { JobRow } from './row.ts';
import { allStates, JobState } from './states.ts';

/** Counter items per kind: a flush adds to one of them, so no counter takes more than its share of the writes. */
export const COUNT_SHARDS = 8;
/** Counter items per day of dead letters. */
export const DEAD_COUNT_SHARDS = 8;
/** Counted when a flush of counts is lost (its deltas are gone; the counts are off by them). */
export const COUNTS_LOST_METRIC = 'JobCountsLost';

/**
 * The id of one counter item of a kind, as flushes wrote them before counter items were kept per scope: still
 * read (and summed with the scopes' items), never written, so the counts a deployed stack kept carry over.
 */
export const kindCounterId = (kind: string, shard: number): string => `count#${kind}#${shard}`;
/** The id of one counter item of a scope (every kind its flushes touched, `<kind>:<state>` attributes). */
export const scopeCounterId = (scope: string, shard: number): string => `counts#${scope}#${shard}`;
/** The scope of a queue's worker batches. */
export const workerScope = (queue: string): string => `q:${queue}`;
/** The scopes every runtime flushes from besides its queues' workers: rescuer passes, bulk actions, a change outside any scope. */
export const CountScope = { rescuer: 'rescuer', bulk: 'bulk', direct: 'direct' } as const;
/** The attribute of a scope counter item that counts jobs of `kind` in `state`. */
const kindStateKey = (kind: string, state: JobState): string => `${kind}:${state}`;
/** The id of one counter item of a day's dead letters. */
export const deadCounterId = (day: string, shard: number): string => `dead#${day}#${shard}`;
/** The day (UTC, `yyyy-mm-dd`) of an ISO time or epoch ms. */
export const dayOf = (at: string | number): string => new Date(at).toISOString().slice(0, 10);

/**
 * What a run of the job layer changed, to be added to the counters in one flush: per kind, how many jobs
 * entered and left each state; per day, dead letters by kind and reason (discarded) or kind (cancelled by
 * ops) that came or went.
 */
export class Tally {
  readonly kinds = new Map<string, Map<JobState, number>>();
  readonly dead = new Map<string, Map<string, number>>();
  /** Flushed: its scope has ended, and what is counted now must go elsewhere. */
  closed = false;

  /** A job of `kind` moved from `from` (nothing: it is new) to `to`. */
  move(kind: string, from: JobState | undefined, to: JobState): void {
    if (from === to) return;
    const states = this.kinds.get(kind) ?? new Map<JobState, number>();
    this.kinds.set(kind, states);
    if (from) states.set(from, (states.get(from) ?? 0) - 1);
    states.set(to, (states.get(to) ?? 0) + 1);
  }

  /** A dead letter that ended on `day` came (+1) or went (−1). */
  deadLetter(day: string, key: string, delta: number): void {
    const keys = this.dead.get(day) ?? new Map<string, number>();
    this.dead.set(day, keys);
    keys.set(key, (keys.get(key) ?? 0) + delta);
  }

  /**
   * What a written row means for the counts: its move from the state it left (or, the first transition of a
   * job created uncounted, its arrival), and a dead letter it became or left.
   */
  row(row: JobRow, before?: JobRow): void {
    this.move(row.kind, row.prevCounted === false ? undefined : (before?.state ?? row.prevState), row.state);
    if (row.deadLetter && row.finalizedAt && before?.deadLetter !== row.deadLetter) this.deadLetter(dayOf(row.finalizedAt), deadLetterKey(row), 1);
    if (before?.deadLetter && before.finalizedAt && !row.deadLetter) this.deadLetter(dayOf(before.finalizedAt), deadLetterKey(before), -1);
  }

  merge(other: Tally): void {
    for (const [kind, states] of other.kinds) for (const [state, n] of states) this.add(this.kinds, kind, state, n);
    for (const [day, keys] of other.dead) for (const [key, n] of keys) this.add(this.dead, day, key, n);
  }

  isEmpty(): boolean {
    const nonzero = (m: Map<string, Map<string, number>>) => [...m.values()].some((inner) => [...inner.values()].some((n) => n !== 0));
    return !nonzero(this.kinds) && !nonzero(this.dead);
  }

  private add<K extends string>(map: Map<string, Map<K, number>>, outer: string, inner: K, n: number): void {
    const m = map.get(outer) ?? new Map<K, number>();
    map.set(outer, m);
    m.set(inner, (m.get(inner) ?? 0) + n);
  }
}

/** The dead-letter counter key of a row: `discarded|<kind>|<reason>` or `cancelled|<kind>`. */
const deadLetterKey = (row: JobRow): string => (row.state === JobState.discarded ? `discarded|${row.kind}|${row.discardReason ?? 'unknown'}` : `cancelled|${row.kind}`);

/** Job counts as the ops API serves them. */
export interface JobCounts {
  /** Per state: jobs in it now (waiting, running), or that ended in it (completed, cancelled: since counting began; discarded: still kept). */
  byState: Record<JobState, number>;
  /** Per kind, per state, the same. */
  byKind: Record<string, Record<JobState, number>>;
  /** Dead letters still kept: discarded jobs by kind and reason, and jobs ops cancelled, by kind. */
  deadLetters: { state: 'discarded' | 'cancelled'; kind: string; reason: string | null; count: number }[];
}

/**
 * The job counts, maintained as counters beside the jobs (never a read of an index): every change the job
 * layer makes is tallied in the scope it runs in — a worker's batch, a rescuer pass, a bulk action — and
 * the scope's tally is added to the counters in one UpdateItem per kind touched (ADD, on one of
 * {@link COUNT_SHARDS} items chosen in turn) when it ends, plus one per day of dead letters touched.
 * Outside a scope (an API request's retry) a change is flushed at once, but a job created outside any scope
 * and due at once (the call-result intake's fanout) is not counted by its creator: its first transition
 * (its claim, a few milliseconds later) counts it, so the intake writes no counter. Until then it is in no
 * count; so is a job whose wake-up was lost, until the rescuer's wake-up is claimed.
 *
 * Completed and cancelled jobs are counted since counting began (their rows expire; the counts do not);
 * discarded ones (dead letters) are counted by the day they ended, and only the days their retention
 * keeps are read, so the counts follow the listing. A flush is sent once: if it is lost (throttling, a
 * crash between a job's write and the end of its scope), the counts are off by what it held, and
 * {@link COUNTS_LOST_METRIC} says so.
 */
export class CountStore {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly logger: Logger;
  private readonly metrics: MetricsSink;
  private readonly scope = new AsyncLocalStorage<{ tally: Tally; name: string }>();
  private readonly scopes: readonly string[];
  private turn = randomInt(COUNT_SHARDS);

  /** `queues`: every queue whose workers flush counts (their scopes' counter items are read; see {@link workerScope}). */
  constructor(options: { db: DynamoDBDocumentClient; tableName: string; logger: Logger; metrics: MetricsSink; queues?: readonly string[] }) {
    this.db = options.db;
    this.tableName = options.tableName;
    this.logger = options.logger;
    this.metrics = options.metrics;
    this.scopes = [...(options.queues ?? []).map(workerScope), ...Object.values(CountScope)];
  }

  /**
   * Runs `fn` as one scope named `name` (a worker's {@link workerScope}, or a {@link CountScope}): what it
   * changes is tallied and flushed once, when it ends (even if it throws), to one counter item of the scope.
   */
  async within<T>(fn: () => Promise<T>, name: string = CountScope.bulk): Promise<T> {
    if (this.open()) return fn();
    if (!this.scopes.includes(name)) throw new RangeError(`no counter scope "${name}": its counts would never be read`);
    const tally = new Tally();
    try {
      return await this.scope.run({ tally, name }, fn);
    } finally {
      tally.closed = true;
      await this.flush(tally, name);
    }
  }

  /** Whether a scope is open here (a worker's batch, a rescuer pass, a bulk action). */
  inScope(): boolean {
    return this.open() !== undefined;
  }

  /** Counts a change: into the scope's tally, or flushed at once outside any scope. */
  async record(count: (tally: Tally) => void): Promise<void> {
    const current = this.open();
    if (current) return count(current);
    const tally = new Tally();
    count(tally);
    await this.flush(tally, CountScope.direct);
  }

  /**
   * Adds a tally to the counters: one UpdateItem on one of the scope's {@link COUNT_SHARDS} items for every
   * kind it touched (a worker's batch moves jobs of its own kinds and creates others': one write, not one per
   * kind), and one per day of dead letters it touched. Never throws.
   */
  async flush(tally: Tally, scope: string = CountScope.direct): Promise<void> {
    if (tally.isEmpty()) return;
    if (!this.scopes.includes(scope)) throw new RangeError(`no counter scope "${scope}": its counts would never be read`);
    const shard = this.turn++ % COUNT_SHARDS;
    const writes: Promise<void>[] = [];
    const e = new Expression();
    let moved = false;
    for (const [kind, states] of tally.kinds) {
      for (const [state, n] of states) {
        if (n === 0) continue;
        e.add(kindStateKey(kind, state), n);
        moved = true;
      }
    }
    if (moved) writes.push(this.update(scopeCounterId(scope, shard), e.set('scope', scope)));
    for (const [day, keys] of tally.dead) {
      const e = new Expression();
      for (const [key, n] of keys) if (n !== 0) e.add(key, n);
      // The counter of a day outlives every dead letter of it (the longest retention is read from here).
      e.set('day', day).set('expiresAt', Math.floor(Date.parse(day) / 1000) + 400 * 86400);
      writes.push(this.update(deadCounterId(day, shard % DEAD_COUNT_SHARDS), e));
    }
    await Promise.all(writes);
  }

  /**
   * The counts of `kinds`: their counter items (kinds × {@link COUNT_SHARDS}) and the dead-letter counters
   * of the days retention keeps (discarded: `discardedRetentionDays`, cancelled: 30, counted from `now`).
   * Eventually consistent reads, a BatchGet of at most 100 items each.
   */
  async read(kinds: readonly string[], options: { now: number; discardedRetentionDays: number; cancelledRetentionDays: number }): Promise<JobCounts> {
    const zero = () => Object.fromEntries(allStates.map((s) => [s, 0])) as Record<JobState, number>;
    const byKind: Record<string, Record<JobState, number>> = Object.fromEntries(kinds.map((k) => [k, zero()]));
    const byState = zero();
    const kindIds = [
      ...this.scopes.flatMap((scope) => Array.from({ length: COUNT_SHARDS }, (_, n) => scopeCounterId(scope, n))),
      ...kinds.flatMap((kind) => Array.from({ length: COUNT_SHARDS }, (_, n) => kindCounterId(kind, n))),
    ];
    const longest = Math.max(options.discardedRetentionDays, options.cancelledRetentionDays);
    const days = Array.from({ length: longest + 1 }, (_, i) => dayOf(options.now - i * 86400_000));
    const deadIds = days.flatMap((day) => Array.from({ length: DEAD_COUNT_SHARDS }, (_, n) => deadCounterId(day, n)));
    const items = await this.batchGet([...kindIds, ...deadIds]);
    const dead = new Map<string, number>();
    const kept = (day: string, state: string) =>
      Date.parse(day) >= Date.parse(dayOf(options.now)) - (state === 'discarded' ? options.discardedRetentionDays : options.cancelledRetentionDays) * 86400_000;
    for (const item of items) {
      if (typeof item['day'] === 'string') {
        for (const [key, value] of Object.entries(item)) {
          if (!key.includes('|') || typeof value !== 'number' || !kept(item['day'], key.split('|')[0]!)) continue;
          dead.set(key, (dead.get(key) ?? 0) + value);
        }
        continue;
      }
      if (typeof item['scope'] === 'string') {
        for (const [key, value] of Object.entries(item)) {
          const at = key.lastIndexOf(':');
          const counts = at > 0 ? byKind[key.slice(0, at)] : undefined;
          const state = key.slice(at + 1) as JobState;
          // Discarded comes from the dead-letter counters below, which follow retention.
          if (!counts || typeof value !== 'number' || !(state in counts) || state === JobState.discarded) continue;
          counts[state] += value;
        }
        continue;
      }
      // A counter item of one kind, written before counter items were kept per scope.
      const kind = item['kind'];
      if (typeof kind !== 'string' || !byKind[kind]) continue;
      for (const state of allStates) {
        // Discarded comes from the dead-letter counters below, which follow retention.
        if (state === JobState.discarded) continue;
        const n = item[state];
        if (typeof n === 'number') byKind[kind][state] += n;
      }
    }
    const deadLetters: JobCounts['deadLetters'] = [];
    for (const [key, count] of dead) {
      if (count === 0) continue;
      const [state, kind, reason] = key.split('|') as ['discarded' | 'cancelled', string, string | undefined];
      if (!byKind[kind]) continue;
      deadLetters.push({ state, kind, reason: reason ?? null, count });
      if (state === 'discarded') byKind[kind].discarded += count;
    }
    for (const counts of Object.values(byKind)) for (const state of allStates) byState[state] += counts[state];
    deadLetters.sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind) || (a.reason ?? '').localeCompare(b.reason ?? ''));
    return { byState, byKind, deadLetters };
  }

  /**
   * The scope's tally, if it is still open. Work started inside a scope may outlive it (in one process, a
   * wake-up sent by a bulk retry runs its job on the local host's queues in the retry's async context):
   * once the scope has flushed, that work counts on its own.
   */
  private open(): Tally | undefined {
    const current = this.scope.getStore();
    return current && !current.tally.closed ? current.tally : undefined;
  }

  private async update(id: string, e: Expression): Promise<void> {
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: { id }, ...e.build() }));
    } catch (error) {
      this.metrics.count(COUNTS_LOST_METRIC);
      this.logger.error('job counts not written; the counts are off by this flush', { counter: id, error: describeError(error) });
    }
  }

  private async batchGet(ids: readonly string[]): Promise<Record<string, unknown>[]> {
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) chunks.push(ids.slice(i, i + MAX_BATCH_GET_KEYS));
    const pages = await Promise.all(
      chunks.map(async (chunk) => {
        const result = await this.db.send(new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: chunk.map((id) => ({ id })) } } }));
        const unprocessed = result.UnprocessedKeys?.[this.tableName]?.Keys?.length ?? 0;
        if (unprocessed > 0) throw new IncompleteReadError(unprocessed);
        return result.Responses?.[this.tableName] ?? [];
      }),
    );
    return pages.flat();
  }
}
