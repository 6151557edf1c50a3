/**
 * The job layer's public surface: what a domain needs to declare kinds, write handlers and enqueue jobs.
 * Handlers never import the executor or the store.
 *
 * A handler only classifies: return normally (completed), `throw snooze(...)` (run later, no attempt
 * spent), `throw discard(reason, ...)` (permanent), or throw anything else (retryable, on the kind's
 * policy). Only this layer retries.
 */
export { defineKind, handle } from './kinds.ts';
export type { JobContext, JobHandler, JobKind } from './kinds.ts';
export { discard, snooze, DiscardReason, JobDiscard, JobSnooze } from './outcomes.ts';
export { JobState, allStates, pendingStates, terminalStates } from './states.ts';
export { policies, periodicPolicy, schedule, totalScheduleMs, DefaultBackoff, MailBackoff, WebhookBackoff } from './policies.ts';
export type { Backoff, Policy, PolicyKind, ScheduleRow } from './policies.ts';
export type { JobClient, EnqueueOptions, PreparedJob } from './client.ts';
export type { AttemptRecord, JobRow, PeriodicStatus } from './row.ts';
export type { TransactItem } from './store.ts';
export { queues } from './queues.ts';
export type { QueueName } from './queues.ts';
export { JobNotFoundError, TransitionRefusedError, InvalidJobArgsError, DuplicateJobError } from './errors.ts';
