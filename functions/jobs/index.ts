/**
 * The job layer's public surface: the vocabulary a context uses to declare its kinds, queues and module,
 * write handlers and enqueue jobs. It names no domain kind, queue or reason; handlers never import the
 * executor or the store.
 *
 * A handler only classifies: return normally (completed), `throw snooze(...)` (run later, no attempt
 * spent), `throw discard(reason, ...)` (permanent), or throw anything else (retryable, on the kind's
 * policy). Only this layer retries.
 */
export { defineKind, handle } from './kinds.ts';
export type { DiscardedJob, JobContext, JobHandler, JobKind } from './kinds.ts';
export { defineModule } from './module.ts';
export type { ContextModule } from './module.ts';
export { discard, snooze, JobDiscardReason, JobDiscard, JobSnooze } from './outcomes.ts';
export type { RunOutcome } from './outcomes.ts';
export type { DiscardReason } from './outcomes.ts';
export { JobState, allStates, pendingStates, terminalStates, bulkRetryStates, bulkCancelStates } from './states.ts';
export { DefaultBackoff, defaultPolicy, exponential, periodicPolicy, policy, retrySchedule, schedule, totalScheduleMs } from './policies.ts';
export type { Backoff, OnExhausted, Policy, ScheduleRow } from './policies.ts';
export type { QueueSpec } from './queues.ts';
export type { JobClient, EarlierAttempt, EnqueueOptions, PreparedJob, BulkRequest, BulkResult } from './client.ts';
export type { JobCounts } from './counts.ts';
export type { JobFilter, ListQuery } from './listing.ts';
export { MAX_CURSOR_LENGTH } from './listing.ts';
export type { AttemptRecord, JobRow, PeriodicStatus } from './row.ts';
export { DEFAULT_DISCARDED_RETENTION_DAYS } from './row.ts';
export type { RescueReport } from './rescuer.ts';
export type { TransactItem } from './store.ts';
export { JobNotFoundError, TransitionRefusedError, InvalidJobArgsError, DuplicateJobError } from './errors.ts';
