import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../platform/clock.ts';
import { Expression, IncompleteReadError, InvalidCursorError, MAX_BATCH_GET_KEYS } from '../platform/dynamo.ts';
import { CHECK_INDEX, CHECK_SHARDS, checkPartition, DEAD_LETTER_INDEX, DEAD_LETTER_SHARDS, deadLetterPartition } from './row.ts';
import type { JobRow } from './row.ts';
import { JobState } from './states.ts';

/** What to list: every filter optional, and they combine. Times are epoch ms, on when the job reached its state. */
export interface JobFilter {
  state?: JobState;
  kind?: string;
  /** A discard reason (discarded jobs only). */
  reason?: string;
  since?: number;
  until?: number;
}

export interface ListQuery extends JobFilter {
  limit?: number;
  cursor?: string;
}

/** States whose jobs are listed from the dead letters (byDeadLetter): discarded, and cancelled by ops. */
export const deadLetterStates: readonly JobState[] = [JobState.discarded, JobState.cancelled];
/** States a job holds only while it is not finished: all are ahead of the rescuer's watermark in byCheck. */
const unfinishedStates: readonly JobState[] = [JobState.scheduled, JobState.available, JobState.running, JobState.retryable, JobState.snoozed];

/** When a job reached its state: when it ended, or its last change. */
export const reachedStateAt = (row: JobRow): number => Date.parse(row.finalizedAt ?? row.updatedAt);

/** Whether a row passes a filter (the state, kind, reason and time range). */
export function matches(row: JobRow, filter: JobFilter, now: number): boolean {
  if (filter.state && row.state !== filter.state) return false;
  if (filter.kind && row.kind !== filter.kind) return false;
  if (filter.reason && row.discardReason !== filter.reason) return false;
  const at = reachedStateAt(row);
  if (filter.since !== undefined && at < filter.since) return false;
  if (filter.until !== undefined && at > filter.until) return false;
  // DynamoDB's TTL deletes late: an expired row is gone for everyone already.
  if (row.expiresAt !== undefined && row.expiresAt * 1000 <= now) return false;
  return true;
}

/** An index entry: the job's id and the sort key it is listed under. */
interface Entry {
  id: string;
  sortKey: string;
  /** The whole row, from an index that projects it (byDeadLetter); absent from byCheck's keys. */
  row?: JobRow;
}

/** One partition of a sharded index, read newest first from a position. */
interface ShardReader {
  partition: string;
  /** The last entry taken and looked at (the cursor's position: the next page starts below it). */
  after: string | undefined;
  /** The last entry fetched into the buffer (the next fetch starts below it). */
  readTo: string | undefined;
  /** Nothing more to fetch. */
  done: boolean;
  buffer: Entry[];
}

/** How a listing reads one index. */
interface IndexPlan {
  index: string;
  partitionKey: string;
  sortKey: string;
  /** Its partitions, in cursor order. */
  partitions: string[];
  /** The sort key range read, both ends inclusive. */
  low: string;
  high: string;
  /** Whether entries carry the row (ALL projection) or need a BatchGet. */
  projected: boolean;
  /** The state listed (`*`: every state): a cursor is this listing's only. */
  state: string;
}

/** Newest first, at most this many entries of an index examined per page (a page may come back short, with a cursor). */
const PAGE_BUDGET = 2000;
const SHARD_PAGE = 100;

/**
 * Ops listings over the jobs table's sharded indexes, newest first, merged across partitions, with an
 * opaque cursor that holds each partition's position (and is refused unless it is this listing's, for
 * this state):
 * - discarded, and cancelled (by ops): the byDeadLetter index, by when the job ended; a `since`/`until`
 *   range is the key's range, kind and reason are filters on the rows it holds;
 * - every other state, or none: the byCheck index (keys only), the rows read with a BatchGet and filtered;
 *   unfinished states read only what lies ahead of the rescuer's watermark, where every unfinished job's
 *   entry is. A page examines at most {@link PAGE_BUDGET} entries and may come back short with a cursor.
 */
export class JobListing {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly watermarks: () => Promise<(string | undefined)[]>;

  constructor(options: { db: DynamoDBDocumentClient; tableName: string; watermarks: () => Promise<(string | undefined)[]> }) {
    this.db = options.db;
    this.tableName = options.tableName;
    this.watermarks = options.watermarks;
  }

  /** One page of jobs matching `query`, newest first; `cursor` asks for the next. */
  async list(query: ListQuery, now: number): Promise<{ jobs: JobRow[]; cursor?: string }> {
    const limit = Math.min(Math.max(query.limit ?? 50, 1), 200);
    const plan = await this.plan(query);
    const readers = decodeCursor(query.cursor, plan);
    const jobs: JobRow[] = [];
    let examined = 0;
    let taken: { entry: Entry; reader: ShardReader }[] = [];
    let full = false;

    // Looks at the entries taken, in order; stops at the one that fills the page (the rest are read again from the cursor).
    const look = async (): Promise<void> => {
      const rows = plan.projected ? taken.map((t) => t.entry.row) : await this.rows(taken.map((t) => t.entry.id));
      for (let i = 0; i < taken.length && !full; i++) {
        const { entry, reader } = taken[i]!;
        reader.after = entry.sortKey;
        const row = rows[i];
        if (row && matches(row, query, now)) jobs.push(row);
        full = jobs.length >= limit;
      }
      taken = [];
    };

    while (!full && examined < PAGE_BUDGET) {
      const next = await this.pop(plan, readers);
      if (!next) break;
      taken.push(next);
      examined++;
      if (taken.length >= MAX_BATCH_GET_KEYS) await look();
    }
    if (!full && taken.length > 0) await look();
    // A partition is finished when everything it holds was fetched and looked at.
    const finished = (r: ShardReader) => r.done && r.buffer.length === 0 && r.after === r.readTo;
    const more = readers.some((r) => !finished(r));
    return more ? { jobs, cursor: encodeCursor(plan, readers.map((r) => (finished(r) ? 0 : (r.after ?? null)))) } : { jobs };
  }

  /**
   * Every job matching `filter`, shard by shard (for a bulk action: no order, every match once). The
   * state is required: discarded and cancelled from the dead letters, the others from byCheck ahead of
   * the watermark.
   */
  async *each(filter: JobFilter & { state: JobState }, now: number): AsyncGenerator<JobRow> {
    const plan = await this.plan(filter);
    for (const partition of plan.partitions) {
      let below: string | undefined;
      for (;;) {
        const page = await this.query(plan, partition, below, 500);
        const rows = plan.projected ? page.entries.map((e) => e.row) : await this.rows(page.entries.map((e) => e.id));
        for (const row of rows) if (row && matches(row, filter, now)) yield row;
        if (page.done) break;
        below = page.entries.at(-1)!.sortKey;
      }
    }
  }

  private async plan(filter: JobFilter): Promise<IndexPlan> {
    const since = filter.since !== undefined ? iso(filter.since) : '0000';
    const until = filter.until !== undefined ? `${iso(filter.until)}#\uffff` : '9999';
    if (filter.state && deadLetterStates.includes(filter.state)) {
      return {
        index: DEAD_LETTER_INDEX,
        partitionKey: 'deadLetter',
        sortKey: 'deadAt',
        partitions: Array.from({ length: DEAD_LETTER_SHARDS }, (_, n) => deadLetterPartition(filter.state!, n)),
        low: since,
        high: until,
        projected: true,
        state: filter.state,
      };
    }
    const partitions = Array.from({ length: CHECK_SHARDS }, (_, n) => checkPartition(n));
    let low = '0000';
    if (filter.state && unfinishedStates.includes(filter.state)) {
      // Every unfinished job's entry is ahead of its partition's watermark; the lowest bounds them all.
      const marks = await this.watermarks();
      if (marks.every((m) => m !== undefined)) low = marks.reduce((a, b) => (b < a ? b : a))!;
    }
    return { index: CHECK_INDEX, partitionKey: 'checkShard', sortKey: 'checkAt', partitions, low, high: '9999', projected: false, state: filter.state ?? '*' };
  }

  /** The newest entry across the partitions not yet taken, refilling a partition's buffer as it runs out. */
  private async pop(plan: IndexPlan, readers: ShardReader[]): Promise<{ entry: Entry; reader: ShardReader } | undefined> {
    await Promise.all(
      readers
        .filter((r) => r.buffer.length === 0 && !r.done)
        .map(async (r) => {
          const page = await this.query(plan, r.partition, r.readTo, SHARD_PAGE);
          r.buffer = page.entries;
          r.done = page.done;
          if (page.entries.length > 0) r.readTo = page.entries.at(-1)!.sortKey;
        }),
    );
    let best: ShardReader | undefined;
    for (const r of readers) if (r.buffer.length > 0 && (!best || r.buffer[0]!.sortKey > best.buffer[0]!.sortKey)) best = r;
    if (!best) return undefined;
    return { entry: best.buffer.shift()!, reader: best };
  }

  /** Up to `limit` entries of one partition, newest first, below `below` (exclusive) when given. */
  private async query(plan: IndexPlan, partition: string, below: string | undefined, limit: number): Promise<{ entries: Entry[]; done: boolean }> {
    const high = below === undefined ? plan.high : predecessor(below);
    if (high < plan.low) return { entries: [], done: true };
    const e = new Expression();
    const key = e.and(e.eq(plan.partitionKey, partition), e.between(plan.sortKey, plan.low, high));
    const result = await this.db.send(
      new QueryCommand({ TableName: this.tableName, IndexName: plan.index, ...e.forQuery(key), ScanIndexForward: false, Limit: limit }),
    );
    const entries: Entry[] = (result.Items ?? []).map((item) => ({
      id: item['id'] as string,
      sortKey: item[plan.sortKey] as string,
      ...(plan.projected ? { row: item as JobRow } : {}),
    }));
    return { entries, done: !result.LastEvaluatedKey };
  }

  /** The rows of `ids`, in their order (undefined where a job is gone), with consistent BatchGets of up to 100. */
  private async rows(ids: readonly string[]): Promise<(JobRow | undefined)[]> {
    const found = new Map<string, JobRow>();
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      const keys = [...new Set(ids.slice(i, i + MAX_BATCH_GET_KEYS))].map((id) => ({ id }));
      const result = await this.db.send(new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }));
      const unprocessed = result.UnprocessedKeys?.[this.tableName]?.Keys?.length ?? 0;
      if (unprocessed > 0) throw new IncompleteReadError(unprocessed);
      for (const item of result.Responses?.[this.tableName] ?? []) found.set(item['id'] as string, item as JobRow);
    }
    return ids.map((id) => found.get(id));
  }
}

/** The largest key below `key` in DynamoDB's byte order (for a descending read that resumes after `key`). */
function predecessor(key: string): string {
  const last = key.charCodeAt(key.length - 1);
  return last > 0 ? `${key.slice(0, -1)}${String.fromCharCode(last - 1)}\uffff` : key.slice(0, -1);
}

const CURSOR_VERSION = 1;
/**
 * The longest cursor a listing gives out, in characters: one position per partition (32 for byCheck), each
 * a sort key of about 90 characters for redial's job ids, base64url: about 4,000; this leaves room for ids up
 * to about 180 characters and stays inside API Gateway's 10,240 bytes for a request line and its headers.
 */
export const MAX_CURSOR_LENGTH = 9000;
const SORT_KEY_SHAPE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[A-Za-z0-9._:@#-]{1,200}$/;

/**
 * A listing's cursor: base64url of `[version, index, state, positions]`, one position per
 * partition (`null`: not started, `0`: done, or the sort key of the last entry taken). Decoding accepts
 * only that shape for this listing's index and partitions, so a forged, truncated or foreign cursor is an
 * {@link InvalidCursorError} (a 400), and a cursor that passes can only name positions inside the
 * partitions this listing reads, for the state it lists.
 */
function encodeCursor(plan: IndexPlan, positions: (string | 0 | null)[]): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, plan.index, plan.state, positions])).toString('base64url');
}

function decodeCursor(cursor: string | undefined, plan: IndexPlan): ShardReader[] {
  const fresh = (partition: string, after: string | undefined, done: boolean): ShardReader => ({ partition, after, readTo: after, done, buffer: [] });
  if (cursor === undefined) return plan.partitions.map((p) => fresh(p, undefined, false));
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (!Array.isArray(value) || value.length !== 4) throw new InvalidCursorError();
  const [version, index, state, positions] = value as unknown[];
  if (version !== CURSOR_VERSION || index !== plan.index || state !== plan.state) throw new InvalidCursorError();
  if (!Array.isArray(positions) || positions.length !== plan.partitions.length) throw new InvalidCursorError();
  return plan.partitions.map((partition, i) => {
    const p: unknown = positions[i];
    if (p === null) return fresh(partition, undefined, false);
    if (p === 0) return fresh(partition, undefined, true);
    if (typeof p !== 'string' || !SORT_KEY_SHAPE.test(p)) throw new InvalidCursorError();
    return fresh(partition, p, false);
  });
}
