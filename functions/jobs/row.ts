import type { TableDefinition } from '../platform/tables.ts';
import type { DiscardReason } from './outcomes.ts';
import type { JobState } from './states.ts';

/** One real attempt in a job's history. */
export interface AttemptRecord {
  attempt: number;
  /** When the attempt started (ISO). */
  at: string;
  durationMs: number;
  outcome: 'completed' | 'retryable' | 'discarded' | 'lost';
  error?: string;
}

/** A job as stored. The row is the truth; a queue message only carries `{ jobId, seq }` to wake it. */
export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  state: JobState;
  /** The state the last transition left (the counters move a job from it to `state`); absent on a new job. */
  prevState?: JobState;
  /** The job is in the counts (counts.ts): set at creation when its creator counted it, else by its first transition. */
  counted?: boolean;
  /** Whether the job had been counted before the last transition (false: that transition counted its creation). */
  prevCounted?: boolean;
  args: unknown;
  /** Real attempts spent (a snooze gives its attempt back). */
  attempt: number;
  maxAttempts: number;
  /**
   * Wake-up generation: bumped whenever the job is (re)scheduled. A message carries the seq it was sent
   * for, so a message from an earlier schedule is recognised as stale and runs nothing.
   */
  seq: number;
  scheduledAt: string;
  createdAt: string;
  updatedAt: string;
  attemptedAt?: string;
  /**
   * When the job reached a terminal state. River's name for it (`finalized_at`, like the states), kept as
   * it is stored and served (GET /v1/ops/jobs/{id}); everywhere else redial spells it the British way
   * (finalise, finalised).
   */
  finalizedAt?: string;
  leaseToken?: string;
  leaseUntil?: string;
  discardReason?: DiscardReason;
  attempts: AttemptRecord[];
  snoozes: number;
  lastSnooze?: { at: string; until: string; reason: string };
  /** Set when the job's domain asked to stop it (in its own transaction); the next wake-up cancels it. */
  cancelRequestedAt?: string;
  /** The byCheck index's partition: the job's shard, fixed for its life ({@link checkShard}). */
  checkShard: string;
  /**
   * The byCheck index's sort key, `<ISO time>#<id>`: when the rescuer looks at the job if nothing has
   * moved it on by then. Set at enqueue (due time + its queue's lease; a dormant job's: creation + lease,
   * so a `runNext` claim, whose lease runs from then, finds it early enough) and moved only when a look
   * would come too late (a job woken, rescheduled or handed on to earlier) or by the rescuer itself; claims
   * and outcomes leave it, so they write nothing to the index (docs/job-layer.md, "The jobs table").
   */
  checkAt: string;
  /** The byDeadLetter index's partition (`discarded#<n>`, `cancelled#<n>`): only on jobs ops may retry. */
  deadLetter?: string;
  /** The byDeadLetter index's sort key, `<finalizedAt>#<id>`. */
  deadAt?: string;
  /** The Scheduler schedule made for a wake-up (seq and due time), so it is deleted when the job moves on first. */
  wakeSchedule?: { seq: number; at: string };
  /** Epoch seconds; DynamoDB's TTL removes finished jobs after their retention. */
  expiresAt?: number;
}

/** The last outcome of a periodic kind, kept for the panel (periodic jobs are never retried). */
export interface PeriodicStatus {
  id: string;
  kind: string;
  lastRunAt: string;
  lastOutcome: 'completed' | 'failed';
  lastJobId: string;
  lastFailureAt?: string;
  lastError?: string;
}

/** Partitions of the byCheck index: a job's writes land on one of these, by a hash of its id. */
export const CHECK_SHARDS = 32;
/** Partitions of the byDeadLetter index, per state. */
export const DEAD_LETTER_SHARDS = 8;

/**
 * The jobs table. Two sparse indexes, each written as seldom as the load allows (docs/job-layer.md, "The
 * jobs table"):
 * - `byCheck` (KEYS_ONLY): every job, once, under the time the rescuer must look at it (`checkAt`) in one
 *   of {@link CHECK_SHARDS} partitions. Claims and outcomes leave the key as it is, so they write nothing
 *   to it; the rescuer walks it in time order behind a watermark (rescuer.ts), and ops listings walk it
 *   with a BatchGet of the rows.
 * - `byDeadLetter` (ALL): discarded jobs, and jobs ops cancelled, by when they ended, in
 *   {@link DEAD_LETTER_SHARDS} partitions per state: what ops list, filter and retry in bulk.
 */
export const jobsTable = {
  name: 'jobs',
  partitionKey: 'id',
  indexes: [
    { name: 'byCheck', partitionKey: 'checkShard', sortKey: 'checkAt', projection: 'KEYS_ONLY' },
    { name: 'byDeadLetter', partitionKey: 'deadLetter', sortKey: 'deadAt' },
  ],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

export const CHECK_INDEX = jobsTable.indexes[0].name;
export const DEAD_LETTER_INDEX = jobsTable.indexes[1].name;

/** How long dead letters (discarded jobs) stay by default: a setting (DISCARDED_RETENTION_DAYS, CDK context `discardedRetentionDays`). */
export const DEFAULT_DISCARDED_RETENTION_DAYS = 30;

/** How long finished jobs stay before TTL removes them (discarded: {@link DEFAULT_DISCARDED_RETENTION_DAYS} unless configured). */
export const retentionSeconds = {
  completed: 7 * 86400,
  cancelled: 30 * 86400,
  discarded: DEFAULT_DISCARDED_RETENTION_DAYS * 86400,
} as const;

/** A stable shard of an id, 0 ≤ n < shards (FNV-1a): the same job always writes the same partition. */
export function shardOf(id: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/** The byCheck partition of shard `n`. */
export const checkPartition = (n: number): string => `c${String(n).padStart(2, '0')}`;
/** The byCheck partition of a job. */
export const checkShard = (id: string): string => checkPartition(shardOf(id, CHECK_SHARDS));
/** A byCheck sort key: the time, then the id (unique, so a watermark names one entry). */
export const checkKey = (atMs: number, id: string): string => `${new Date(atMs).toISOString()}#${id}`;
/** The byDeadLetter partition of shard `n` of a state. */
export const deadLetterPartition = (state: JobState, n: number): string => `${state}#${n}`;
/** The byDeadLetter sort key: when the job ended, then its id. */
export const deadKey = (atMs: number, id: string): string => `${new Date(atMs).toISOString()}#${id}`;
/** The time in a byCheck or byDeadLetter sort key. */
export const keyTime = (key: string): number => Date.parse(key.slice(0, key.indexOf('#')));
