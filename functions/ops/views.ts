import * as z from 'zod';
import type { JobRow } from '../jobs/index.ts';

/** A job as the ops API lists it. */
export const jobSummarySchema = z.object({
  id: z.string(),
  kind: z.string(),
  state: z.string(),
  attempt: z.number().int(),
  maxAttempts: z.number().int(),
  scheduledAt: z.string(),
  /** When it reached a terminal state (completed, discarded, cancelled); null while pending. */
  finalizedAt: z.string().nullable(),
  discardReason: z.string().nullable(),
  errors: z.array(z.object({ attempt: z.number().int(), at: z.string(), error: z.string(), durationMs: z.number() })),
});

/** A job as the ops API shows it alone: the summary plus its whole attempt history. */
export const jobDetailSchema = jobSummarySchema.extend({
  queue: z.string(),
  args: z.unknown(),
  createdAt: z.string(),
  updatedAt: z.string(),
  snoozes: z.number().int(),
  lastSnooze: z.object({ at: z.string(), until: z.string(), reason: z.string() }).nullable(),
  attempts: z.array(
    z.object({ attempt: z.number().int(), at: z.string(), durationMs: z.number(), outcome: z.string(), error: z.string().optional() }),
  ),
});

export type JobSummary = z.infer<typeof jobSummarySchema>;
export type JobDetail = z.infer<typeof jobDetailSchema>;

export function jobSummary(row: JobRow): JobSummary {
  return {
    id: row.id,
    kind: row.kind,
    state: row.state,
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    scheduledAt: row.scheduledAt,
    finalizedAt: row.finalizedAt ?? null,
    discardReason: row.discardReason ?? null,
    errors: row.attempts.flatMap((a) => (a.error ? [{ attempt: a.attempt, at: a.at, error: a.error, durationMs: a.durationMs }] : [])),
  };
}

/**
 * Argument keys whose values are secrets: a mail job enqueued before the mail row kept its link's raw
 * token carries it in its arguments, and neither the ops API nor the panel shows it.
 */
export const SECRET_ARG_KEYS: readonly string[] = ['token'];

/** A job's arguments with secret values replaced by `[redacted]`. */
export function redactArgs(args: unknown): unknown {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return args;
  return Object.fromEntries(Object.entries(args).map(([key, value]) => [key, SECRET_ARG_KEYS.includes(key) ? '[redacted]' : value]));
}

export function jobDetail(row: JobRow): JobDetail {
  return {
    ...jobSummary(row),
    queue: row.queue,
    args: redactArgs(row.args),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    snoozes: row.snoozes,
    lastSnooze: row.lastSnooze ?? null,
    attempts: row.attempts,
  };
}

/** `GET /v1/ops/periodic`: every periodic kind with its last run (served by jobs-api.ts, read by the CLI and the panel). */
export const periodicListSchema = z.object({
  periodic: z.array(
    z.object({
      kind: z.string(),
      everySeconds: z.number(),
      lastRunAt: z.string().nullable(),
      lastOutcome: z.enum(['completed', 'failed']).nullable(),
      lastJobId: z.string().nullable(),
      lastFailureAt: z.string().nullable(),
      lastError: z.string().nullable(),
    }),
  ),
});
