import type * as z from 'zod';
import type { Logger } from '../platform/logger.ts';
import { JobDiscardReason } from './outcomes.ts';
import type { DiscardReason } from './outcomes.ts';
import type { Policy } from './policies.ts';

/**
 * A job kind, declared as data: its stable dotted name, its policy, its queue, its timeout, the schema of
 * its arguments and the discard reasons its handler may give. Handlers are bound to kinds separately
 * ({@link handle}), so the table of kinds and policies can be read and printed without loading any handler.
 */
export interface JobKind<A = unknown> {
  readonly kind: string;
  /** The queue whose worker runs it: one its context declares. */
  readonly queue: string;
  readonly policy: Policy;
  /** A run longer than this is abandoned and counted as a retryable failure. */
  readonly timeoutSeconds: number;
  readonly args: z.ZodType<A>;
  /** The reasons its handler discards with (beside the job layer's own: exhausted, invalid_args, unknown_kind); ops filter on them. */
  readonly discardReasons: readonly DiscardReason[];
  /**
   * Which of `discardReasons` alert when the handler discards with them (`JobDiscardedAlert`), as an
   * exhausted discard does under a `discard_alert` policy: a discard that leaves something for a person to
   * repair (a phantom appointment in a customer's calendar). The others are counted, without an alert.
   */
  readonly alertingReasons: readonly DiscardReason[];
  /** Set for periodic kinds: one job per period, enqueued by the rescuer's tick. */
  readonly periodic?: { readonly everySeconds: number };
  readonly description: string;
}

const KIND_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const REASON_NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Declares a job kind. Refuses, at load time, a name that is not dotted lower case, a reason that is not
 * snake case, a reason the job layer gives itself, and an alerting reason that is not one of its reasons.
 *
 * @example
 * export const renderKind = defineKind({
 *   kind: 'report.render', queue: 'reports', policy: defaultPolicy, timeoutSeconds: 10,
 *   args: z.object({ reportId: z.string() }), discardReasons: ['template_missing'], description: 'renders a report',
 * });
 */
export function defineKind<A>(spec: {
  kind: string;
  queue: string;
  policy: Policy;
  timeoutSeconds?: number;
  args: z.ZodType<A>;
  discardReasons?: readonly DiscardReason[];
  alertingReasons?: readonly DiscardReason[];
  periodic?: { everySeconds: number };
  description: string;
}): JobKind<A> {
  if (!KIND_NAME.test(spec.kind)) throw new Error(`job kind "${spec.kind}" is not a dotted lower-case name`);
  if (spec.policy.maxAttempts < 1) throw new Error(`job kind ${spec.kind}: maxAttempts must be at least 1`);
  for (const reason of spec.discardReasons ?? []) {
    if (!REASON_NAME.test(reason)) throw new Error(`job kind ${spec.kind}: discard reason "${reason}" is not snake_case`);
    if (reason in JobDiscardReason) throw new Error(`job kind ${spec.kind}: "${reason}" is the job layer's own reason; do not declare it`);
  }
  for (const reason of spec.alertingReasons ?? []) if (!spec.discardReasons?.includes(reason)) throw new Error(`job kind ${spec.kind}: alerting reason "${reason}" is not a discard reason`);
  return { timeoutSeconds: 30, discardReasons: [], alertingReasons: [], ...spec };
}

/** What a handler can see of the job it runs. */
export interface JobContext {
  readonly id: string;
  readonly kind: string;
  /** This run's attempt, 1-based. A snoozed run gives its attempt back. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The kind's policy (a handler that plans around its own retries reads its schedule here). */
  readonly policy: Policy;
  /** Whether a retryable failure of this run would be the last: the job layer would discard it as exhausted. */
  readonly isLastAttempt: boolean;
  readonly createdAt: string;
  /** Aborted when the kind's timeout passes. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** The injected clock's now, epoch ms. */
  now(): number;
  /**
   * Hands work on within this worker: claims the waiting job `id` (any pending state, due or not) for this
   * worker to run right after this run, as its own attempt under its own lease, without a queue message.
   * `declined`: this invocation has no time left for another run of this kind, or the job's domain asked
   * to stop it; wake it instead (`JobClient.wake`). A finished or running job is refused with
   * `TransitionRefusedError`, as `wake` refuses it. At most one successor per run.
   */
  runNext(id: string): Promise<'claimed' | 'declined'>;
}

/** What a discard hook is told: the job being discarded, and why. */
export interface DiscardedJob {
  readonly id: string;
  readonly kind: string;
  readonly reason: DiscardReason;
  readonly error: string;
  /** The discard's time, epoch ms (the row's `finalizedAt`). */
  readonly at: number;
}

/** A kind bound to the code that runs it. */
export interface JobHandler<A = unknown> {
  readonly kind: JobKind<A>;
  run(args: A, ctx: JobContext): Promise<void>;
  /**
   * Runs whenever a discard of this kind is decided, whoever decided it (the handler's own discard,
   * attempts that ran out, or a last attempt lost with its worker: the rescuer's), just before the discard
   * is written; not for arguments that no longer parse. Running first, its effect survives a crash between
   * the two: the job stays running and is decided again, hook and all. So it must be idempotent, and
   * harmless if the discard is then refused. If it throws, the discard is not written (discards.ts).
   */
  onDiscard?(args: A, job: DiscardedJob): Promise<void>;
}

/**
 * Binds a handler to its kind. A handler only classifies: return, throw `snooze(...)`, throw `discard(...)`,
 * or throw. `onDiscard` runs whenever a discard of the kind is decided, before it is written.
 */
export const handle = <A>(
  kind: JobKind<A>,
  run: (args: A, ctx: JobContext) => Promise<void>,
  hooks: { onDiscard?: (args: A, job: DiscardedJob) => Promise<void> } = {},
): JobHandler<A> => ({ kind, run, ...(hooks.onDiscard ? { onDiscard: hooks.onDiscard } : {}) });
