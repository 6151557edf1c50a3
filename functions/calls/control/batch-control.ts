import * as z from 'zod';
import { RETRYABLE_CODES } from '../codes.ts';
import { BatchSettingError, BatchStatusConflictError } from './errors.ts';

/**
 * Campaign control, pure: a batch's statuses, every named change of status and the statuses it may start
 * from (the one authority the store builds its `status IN (...)` conditions from, as functions/jobs/states.ts
 * is for jobs), and the decisions behind `POST /v1/batches/{id}/pause|resume` and `PATCH /v1/batches/{id}`.
 *
 * ```
 *                 import ends                 startAt                  first dial
 *   Importing ───────────────► Scheduled ──────────────► Pending ─────────────────► InProgress ──► Finalised
 *       │ └──────────────────────────────────────────────▲  ▲ │ reschedule              │             ▲
 *       │        (no startAt, or it has passed)             │ └──► Scheduled            │             │
 *       │                                                   │                           │             │
 *       └─── pause from Importing, Scheduled, Pending or InProgress ──► Paused ◄────────┘             │
 *                         resume: back to the status it had (pausedFrom)  │ ├── all contacts final ────┘
 *                                                                         │ └── paused 30 days ──► Cancelled
 *   any status but Deleted ── DELETE ──► Deleted
 * ```
 *
 * While a batch is Paused, what would have moved it moves `pausedFrom` instead (an import that ends, a
 * start time that passes, a round that re-arms), so resume returns it to where it would be now.
 */
export const ControlStatus = {
  /** A large import is writing its pages (issue 26). */
  Importing: 'Importing',
  /** Waiting for its `startAt`. */
  Scheduled: 'Scheduled',
  /** Created (or started); nothing dialled yet. */
  Pending: 'Pending',
  InProgress: 'InProgress',
  /** No dial commits; calls in flight finish. `pausedFrom` says where resume returns it. */
  Paused: 'Paused',
  /** Every round used, or nothing left to retry. Terminal. */
  Finalised: 'Finalised',
  /** Paused for longer than {@link MAX_PAUSE_MS}: `batch.cancelled`. Terminal. */
  Cancelled: 'Cancelled',
  Deleted: 'Deleted',
} as const;
export type ControlStatus = (typeof ControlStatus)[keyof typeof ControlStatus];

/** The statuses a paused batch can come back to. */
export const pausableStatuses = [ControlStatus.Importing, ControlStatus.Scheduled, ControlStatus.Pending, ControlStatus.InProgress] as const;
export type PausableStatus = (typeof pausableStatuses)[number];

/** Statuses a batch never leaves, except by DELETE (Finalised, Cancelled) or at all (Deleted). */
export const finishedStatuses = [ControlStatus.Finalised, ControlStatus.Cancelled, ControlStatus.Deleted] as const;
export const isFinished = (status: ControlStatus): boolean => (finishedStatuses as readonly ControlStatus[]).includes(status);

/** How far ahead `startAt` may be. */
export const MAX_START_AHEAD_MS = 30 * 86_400_000;
/** How long a batch may stay paused before it is cancelled (`batch.cancelled`). */
export const MAX_PAUSE_MS = 30 * 86_400_000;

/**
 * Every named change of a batch's status and the statuses it may start from. The store builds each
 * conditional write's `status IN (...)` fragment from this table.
 */
export const batchTransitions = {
  /** The import job wrote its last page: the batch starts now (Pending) or at its `startAt` (Scheduled). */
  importDone: { from: [ControlStatus.Importing], to: [ControlStatus.Pending, ControlStatus.Scheduled] },
  /** Its `startAt` came: the start job hands it to its dialer. A start that fires into a deleted (or paused) batch does nothing to its status. */
  start: { from: [ControlStatus.Scheduled], to: [ControlStatus.Pending] },
  /** PATCH of `startAt` before the batch started: Scheduled for a time ahead, Pending for one that has passed. */
  reschedule: { from: [ControlStatus.Pending, ControlStatus.Scheduled], to: [ControlStatus.Scheduled, ControlStatus.Pending] },
  /** A dial committed (today's Pending/InProgress condition of the dial). */
  dial: { from: [ControlStatus.Pending, ControlStatus.InProgress], to: [ControlStatus.InProgress] },
  /** `POST …/pause`; `pausedFrom` keeps the status it left. */
  pause: { from: pausableStatuses, to: [ControlStatus.Paused] },
  /** `POST …/resume`: back to `pausedFrom`. */
  resume: { from: [ControlStatus.Paused], to: pausableStatuses },
  /** The finaliser found every contact final (rounds used, or nothing retryable), paused or not. */
  finalise: { from: [ControlStatus.InProgress, ControlStatus.Paused], to: [ControlStatus.Finalised] },
  /** Paused for longer than {@link MAX_PAUSE_MS}. */
  cancel: { from: [ControlStatus.Paused], to: [ControlStatus.Cancelled] },
  /** `DELETE /v1/batches/{id}`. */
  delete: {
    from: [
      ControlStatus.Importing,
      ControlStatus.Scheduled,
      ControlStatus.Pending,
      ControlStatus.InProgress,
      ControlStatus.Paused,
      ControlStatus.Finalised,
      ControlStatus.Cancelled,
    ],
    to: [ControlStatus.Deleted],
  },
} as const satisfies Record<string, { from: readonly ControlStatus[]; to: readonly ControlStatus[] }>;

export type BatchTransition = keyof typeof batchTransitions;
/** What a request or job asks of a batch; a refused one names it in its 409. */
export type BatchAction = BatchTransition | 'patch';

/** Whether `name` may start from `status`. */
export const canTransition = (name: BatchTransition, status: ControlStatus): boolean => (batchTransitions[name].from as readonly ControlStatus[]).includes(status);

/** What control reads of a batch. */
export interface ControlState {
  status: ControlStatus;
  /** Set while Paused: the status resume returns it to. */
  pausedFrom?: PausableStatus;
  /** Set while Paused: when the pause committed (epoch ms); the pause expiry job compares it. */
  pausedAt?: number;
  /** Its scheduled start (epoch ms), if it has one. */
  startAt?: number;
}

/**
 * A decision's result, written conditional on the status read: a named transition; `update`, fields
 * changed with the status left as it is (PATCH of a paused or importing batch's `startAt`); or `none`,
 * nothing to write (an idempotent repeat).
 */
export type ControlDecision = { change: BatchTransition | 'update' | 'none'; next: ControlState };

/**
 * `POST /v1/batches/{id}/pause`: Paused, remembering the status it left; already Paused → nothing to do
 * (idempotent, 200); Finalised, Cancelled or Deleted → 409.
 */
export function decidePause(batch: ControlState, nowMs: number): ControlDecision {
  if (batch.status === ControlStatus.Paused) return { change: 'none', next: batch };
  if (!canTransition('pause', batch.status)) throw new BatchStatusConflictError('pause', batch.status);
  return { change: 'pause', next: { ...batch, status: ControlStatus.Paused, pausedFrom: batch.status as PausableStatus, pausedAt: nowMs } };
}

/**
 * `POST /v1/batches/{id}/resume`: back to the status it had before the pause (`pausedFrom`, kept up to date
 * while it was paused; a Scheduled batch whose `startAt` passed meanwhile comes back Pending); a batch that
 * is not paused → nothing to do (idempotent, 200); Finalised, Cancelled or Deleted (a paused batch that
 * finalised, or was cancelled, included) → 409.
 */
export function decideResume(batch: ControlState, nowMs: number): ControlDecision {
  if (isFinished(batch.status)) throw new BatchStatusConflictError('resume', batch.status);
  if (batch.status !== ControlStatus.Paused) return { change: 'none', next: batch };
  if (!batch.pausedFrom) throw new Error('a Paused batch without pausedFrom: the pause wrote both or neither');
  const { pausedFrom, pausedAt: _pausedAt, ...rest } = batch;
  const status = pausedFrom === ControlStatus.Scheduled ? statusAfterImport(batch.startAt, nowMs) : pausedFrom;
  return { change: 'resume', next: { ...rest, status } };
}

/**
 * A change that happens to a batch on its own (an import that ends, a start time that passes, a dial):
 * applied to its status, or — while it is Paused — to the status resume returns it to. Null when the change
 * does not apply (a start job firing into a deleted or already started batch: it does nothing).
 */
export function applyUnderlying(batch: ControlState, change: 'importDone' | 'start', nowMs: number): ControlState | null {
  const current = batch.status === ControlStatus.Paused ? batch.pausedFrom : batch.status;
  if (current === undefined || !canTransition(change, current)) return null;
  const next: PausableStatus = change === 'importDone' ? statusAfterImport(batch.startAt, nowMs) : ControlStatus.Pending;
  return batch.status === ControlStatus.Paused ? { ...batch, pausedFrom: next } : { ...batch, status: next };
}

/** The status a new batch starts in: Importing for a large import; else Scheduled for a `startAt` ahead, Pending otherwise. */
export function initialStatus(options: { importing: boolean; startAt?: number }, nowMs: number): ControlStatus {
  if (options.importing) return ControlStatus.Importing;
  return statusAfterImport(options.startAt, nowMs);
}

/** A batch starts at the later of its `startAt` and the end of its import: Scheduled while `startAt` is ahead, Pending otherwise. */
export const statusAfterImport = (startAt: number | undefined, nowMs: number): PausableStatus =>
  startAt !== undefined && startAt > nowMs ? ControlStatus.Scheduled : ControlStatus.Pending;

/** `startAt` is at most {@link MAX_START_AHEAD_MS} ahead (a time in the past means "now"); beyond → 400 on `startAt`. */
export function checkStartAt(startAt: number, nowMs: number): void {
  if (startAt > nowMs + MAX_START_AHEAD_MS) {
    throw new BatchSettingError('startAt', `startAt may be at most 30 days ahead (${new Date(nowMs + MAX_START_AHEAD_MS).toISOString()})`);
  }
}

/** When a pause that committed at `pausedAt` cancels the batch. */
export const pauseExpiresAt = (pausedAt: number): number => pausedAt + MAX_PAUSE_MS;

/**
 * The pause expiry job (one per pause, due at {@link pauseExpiresAt}): cancel the batch if it is still in
 * the same pause (`pausedAt` as the job was made with) and the pause is 30 days old; otherwise nothing (it
 * was resumed, paused again later, finalised or deleted).
 */
export function decidePauseExpiry(batch: ControlState, pausedAt: number, nowMs: number): ControlDecision {
  if (batch.status !== ControlStatus.Paused || batch.pausedAt !== pausedAt || nowMs < pauseExpiresAt(pausedAt)) return { change: 'none', next: batch };
  const { pausedFrom: _from, ...rest } = batch;
  return { change: 'cancel', next: { ...rest, status: ControlStatus.Cancelled } };
}

/** What `PATCH /v1/batches/{id}` may change. Absent fields stay as they are. */
export interface BatchPatch {
  maxConcurrentCalls?: number;
  /** Epoch ms. */
  startAt?: number;
  /** Any value: the calling window's own schema checks it at the edge. */
  callingWindow?: unknown;
}

/**
 * `PATCH /v1/batches/{id}`: every field checked before anything is written.
 *
 * - the batch Finalised, Cancelled or Deleted → 409;
 * - `maxConcurrentCalls` above the tenant's limit → 400 on `maxConcurrentCalls` (it applies from the next dial);
 * - `startAt` more than 30 days ahead → 400 on `startAt`; on a batch that has started (InProgress, or
 *   Paused from InProgress) → 409; otherwise the batch becomes Scheduled (ahead) or Pending (passed) — or,
 *   while Importing or Paused, keeps its status and starts at the later of the new time and the import's
 *   end, or on resume.
 */
export function decidePatch(batch: ControlState, patch: BatchPatch, tenantLimit: number, nowMs: number): ControlDecision {
  if (isFinished(batch.status)) throw new BatchStatusConflictError('patch', batch.status);
  if (patch.maxConcurrentCalls !== undefined) checkMaxConcurrentCalls(patch.maxConcurrentCalls, tenantLimit);
  if (patch.startAt === undefined) return { change: patch.maxConcurrentCalls === undefined && patch.callingWindow === undefined ? 'none' : 'update', next: batch };
  checkStartAt(patch.startAt, nowMs);
  const underlying = batch.status === ControlStatus.Paused ? batch.pausedFrom : batch.status;
  if (underlying === ControlStatus.InProgress) throw new BatchStatusConflictError('patch', batch.status, 'it has started: startAt can no longer change');
  const startAt = patch.startAt;
  if (underlying === ControlStatus.Importing) return { change: 'update', next: { ...batch, startAt } };
  const status = statusAfterImport(startAt, nowMs);
  if (batch.status === ControlStatus.Paused) return { change: 'update', next: { ...batch, startAt, pausedFrom: status } };
  return { change: 'reschedule', next: { ...batch, startAt, status } };
}

/** A batch's `maxConcurrentCalls` is 1 to its tenant's limit; over it → 400 on `maxConcurrentCalls`. */
export function checkMaxConcurrentCalls(value: number, tenantLimit: number): void {
  if (!Number.isInteger(value) || value < 1 || value > tenantLimit) {
    throw new BatchSettingError('maxConcurrentCalls', `maxConcurrentCalls must be an integer from 1 to the tenant's limit (${tenantLimit})`);
  }
}

/** The batch's calls that may be in progress at once: its own limit (default: the tenant's), never above the tenant's current one (it may have been lowered since). */
export const effectiveConcurrency = (maxConcurrentCalls: number | undefined, tenantLimit: number): number => Math.min(maxConcurrentCalls ?? tenantLimit, tenantLimit);

/** The retryable codes, in codes.ts's order: the default `retryOn`. */
export const DEFAULT_RETRY_ON: readonly string[] = [...RETRYABLE_CODES];

/**
 * A batch's `retryOn`: the normalised codes that earn another round, a subset of the retryable ones
 * (codes.ts `RETRYABLE_CODES`), no repeats; absent → every retryable code (today's behaviour). An empty
 * list retries nothing.
 */
export const retryOnSchema = z
  .array(z.string().refine((code) => RETRYABLE_CODES.has(code), { message: `not a retryable code (one of ${DEFAULT_RETRY_ON.join(', ')})` }))
  .refine((codes) => new Set(codes).size === codes.length, { message: 'codes must not repeat' });

/** Whether a normalised code earns another round in a batch with this `retryOn` (absent: every retryable code). The intake's `retryable` answer and the finaliser's promotion both read it. */
export const retriedIn = (retryOn: readonly string[] | undefined, code: string): boolean => (retryOn === undefined ? RETRYABLE_CODES.has(code) : retryOn.includes(code) && RETRYABLE_CODES.has(code));
