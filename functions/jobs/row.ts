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
  /** When the rescuer last re-sent a wake-up. */
  lastDispatchAt?: string;
  /** Sort key of the byState index: the time that matters in this state, then the id. */
  stateOrder: string;
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

/**
 * The jobs table. `byState` lists jobs per state in time order: the rescuer finds due-but-idle and
 * expired-lease jobs with it, ops list jobs by state (and kind, as a filter) with it.
 */
export const jobsTable = {
  name: 'jobs',
  partitionKey: 'id',
  indexes: [{ name: 'byState', partitionKey: 'state', sortKey: 'stateOrder' }],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** How long finished jobs stay before TTL removes them. */
export const retentionSeconds = {
  completed: 7 * 86400,
  cancelled: 30 * 86400,
  discarded: 30 * 86400,
} as const;

export const stateOrder = (atMs: number, id: string): string => `${new Date(atMs).toISOString()}#${id}`;
