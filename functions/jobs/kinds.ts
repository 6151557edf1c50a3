import type { z } from 'zod';
import type { Logger } from '../platform/logger.ts';
import type { Policy } from './policies.ts';
import type { QueueName } from './queues.ts';

/**
 * A job kind, declared as data: its stable dotted name, its policy, its queue, its timeout and the
 * schema of its arguments. Handlers are bound to kinds separately ({@link handle}), so the table of kinds
 * and policies can be read and printed without loading any handler.
 */
export interface JobKind<A = unknown> {
  readonly kind: string;
  readonly queue: QueueName;
  readonly policy: Policy;
  /** A run longer than this is abandoned and counted as a retryable failure. */
  readonly timeoutSeconds: number;
  readonly args: z.ZodType<A>;
  /** Set for periodic kinds: one job per period, enqueued by the rescuer's tick. */
  readonly periodic?: { readonly everySeconds: number };
  readonly description: string;
}

/**
 * Declares a job kind.
 *
 * @example
 * export const probeKind = defineKind({
 *   kind: 'ops.probe', queue: 'ops', policy: policies['ops.probe'], timeoutSeconds: 10,
 *   args: z.object({ failTimes: z.number().int() }), description: 'fails N times, then succeeds',
 * });
 */
export function defineKind<A>(spec: {
  kind: string;
  queue: QueueName;
  policy: Policy;
  timeoutSeconds?: number;
  args: z.ZodType<A>;
  periodic?: { everySeconds: number };
  description: string;
}): JobKind<A> {
  if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/.test(spec.kind)) throw new Error(`job kind "${spec.kind}" is not a dotted lower-case name`);
  if (spec.policy.maxAttempts < 1) throw new Error(`job kind ${spec.kind}: maxAttempts must be at least 1`);
  return { timeoutSeconds: 30, ...spec };
}

/** What a handler can see of the job it runs. */
export interface JobContext {
  readonly id: string;
  readonly kind: string;
  /** This run's attempt, 1-based. A snoozed run gives its attempt back. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly createdAt: string;
  /** Aborted when the kind's timeout passes. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** The injected clock's now, epoch ms. */
  now(): number;
}

/** A kind bound to the code that runs it. */
export interface JobHandler<A = unknown> {
  readonly kind: JobKind<A>;
  run(args: A, ctx: JobContext): Promise<void>;
}

/** Binds a handler to its kind. A handler only classifies: return, throw `snooze(...)`, throw `discard(...)`, or throw. */
export const handle = <A>(kind: JobKind<A>, run: (args: A, ctx: JobContext) => Promise<void>): JobHandler<A> => ({ kind, run });
