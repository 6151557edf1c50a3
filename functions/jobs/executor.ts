import { assertNever } from '../platform/assert.ts';
import { clockMs } from '../platform/clock.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { Span, Tracing } from '../platform/tracing.ts';
import type { JobChanges } from './apply.ts';
import { decide } from './decide.ts';
import type { Decision } from './decide.ts';
import { unknownKindDiscard } from './discards.ts';
import type { WakeUpMessage } from './dispatch.ts';
import { ClaimRefusedError, LeaseLostError, TransitionRefusedError } from './errors.ts';
import type { JobHandler } from './kinds.ts';
import { classifyRun, describeError, JobDiscardReason } from './outcomes.ts';
import type { RunOutcome } from './outcomes.ts';
import { LEASE_MARGIN_SECONDS, leaseMs } from './queues.ts';
import type { QueueSpec } from './queues.ts';
import type { ClaimedJob, JobStore } from './store.ts';
import { periodicStatusId } from './store.ts';
import { isTerminal } from './states.ts';

// The discard metrics live with the one discard path (discards.ts); lib/ reads the alarm's name from here.
export { DISCARD_ALERT_METRIC, DISCARD_METRIC } from './discards.ts';

export interface ExecutorDeps {
  store: JobStore;
  changes: JobChanges;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Each wake-up runs in a span annotated with its job's id, kind and attempt (X-Ray on AWS). */
  tracing: Tracing;
  /** The queue this executor's worker serves: its timeout bounds each run and sets the lease. */
  queue: { name: string; spec: QueueSpec };
  handlers: ReadonlyMap<string, JobHandler<unknown>>;
}

/** What one wake-up led to (for logs, tests and benchmarks). */
export type ExecutionResult =
  | { jobId: string; result: 'completed' | 'retryable' | 'snoozed' | 'discarded' }
  | { jobId: string; result: 'dropped'; refusal: string }
  | { jobId: string; result: 'redispatched' }
  | { jobId: string; result: 'cancelled' }
  | { jobId: string; result: 'lease_lost' };

/**
 * Runs one wake-up: claim the job, run its handler under a timeout, classify the run, decide the next
 * state, and hand the decision to the one path that applies it (apply.ts: the write on the claim, then
 * the next wake-up). A job's failure is recorded, never thrown; only an infrastructure failure to claim or
 * record escapes (the SQS message is then redelivered, and the claim makes that safe).
 */
export class Executor {
  private readonly deps: ExecutorDeps;

  constructor(deps: ExecutorDeps) {
    this.deps = deps;
  }

  /**
   * Runs one wake-up in a span of its own (`job.run`), annotated with the job's id and, once claimed, its
   * kind and attempt: the keys an operator searches traces by (docs/operations.md, "Following one call
   * result"). What it led to is the span's metadata, not an annotation: a batch of ten runs stays within
   * X-Ray's 50 indexed annotations per trace. A job handed on to (`runNext`) runs in a span of its own.
   */
  execute(message: WakeUpMessage): Promise<ExecutionResult> {
    return this.deps.tracing.span('job.run', async (span) => {
      span.annotate('jobId', message.jobId);
      const result = await this.claimAndRun(message, span);
      span.describe('result', result);
      return result;
    });
  }

  private async claimAndRun(message: WakeUpMessage, span: Span): Promise<ExecutionResult> {
    const { store, clock, queue } = this.deps;
    const started = performance.now();
    let job: ClaimedJob;
    try {
      job = await store.claim(message.jobId, message.seq, clock.now(), clockMs(clock, leaseMs(queue.spec)));
    } catch (error) {
      if (error instanceof ClaimRefusedError) return this.refused(error, message);
      throw error;
    }
    span.annotate('kind', job.kind);
    span.annotate('attempt', job.attempt);
    await this.deps.changes.claimed(job, 'claim');
    return this.runClaimed(job, started);
  }

  /** A job handed on to, claimed by this worker: its run in a span of its own, as a wake-up's. */
  private runSuccessor(job: ClaimedJob, started: number): Promise<ExecutionResult> {
    return this.deps.tracing.span('job.run', async (span) => {
      span.annotate('jobId', job.id);
      span.annotate('kind', job.kind);
      span.annotate('attempt', job.attempt);
      const result = await this.runClaimed(job, started);
      span.describe('result', result);
      return result;
    });
  }

  /**
   * Runs a claimed job and records its outcome; then the job it handed work on to (`runNext`), if any, in
   * the same way, while the invocation (from `started`, real time) has time left for it.
   */
  private async runClaimed(job: ClaimedJob, started: number): Promise<ExecutionResult> {
    const { clock, logger, queue } = this.deps;
    const handler = this.deps.handlers.get(job.kind);
    const runStarted = performance.now();
    let successor: ClaimedJob | undefined;
    const runNext = async (id: string): Promise<'claimed' | 'declined'> => {
      if (successor) throw new Error(`job ${job.id} already handed work on to ${successor.id}`);
      // Room for one more run of this kind, as long as its timeout, inside the worker's own timeout.
      const needMs = Math.min(handler?.kind.timeoutSeconds ?? queue.spec.timeoutSeconds, queue.spec.timeoutSeconds) * 1000;
      if (performance.now() - started + needMs + LEASE_MARGIN_SECONDS * 1000 > queue.spec.timeoutSeconds * 1000) return 'declined';
      try {
        successor = await this.deps.store.claimNext(id, queue.name, clock.now(), clockMs(clock, leaseMs(queue.spec)));
        await this.deps.changes.claimed(successor, 'claimNext');
        return 'claimed';
      } catch (error) {
        // Waiting, but not for this worker: its domain asked to stop it, or it runs on another queue.
        const current = error instanceof TransitionRefusedError ? error.current : undefined;
        if (current && !isTerminal(current.state) && current.state !== 'running' && (current.cancelRequestedAt !== undefined || current.queue !== queue.name)) return 'declined';
        throw error;
      }
    };
    let decision: Decision;
    if (!handler) {
      decision = unknownKindDiscard(job.kind, `on queue ${queue.name}`);
    } else {
      const parsed = handler.kind.args.safeParse(job.args);
      const outcome: RunOutcome = parsed.success
        ? classifyRun(await this.run(handler, parsed.data, job, runNext))
        : { type: 'discarded', reason: JobDiscardReason.invalid_args, error: `invalid args: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
      decision = decide(outcome, job, handler.kind.policy, clock.now(), this.deps.rng, handler.kind.alertingReasons);
    }
    const durationMs = performance.now() - runStarted;

    // The successor does not wait for this job's outcome to be written: the two writes are independent.
    const next = successor ? this.runSuccessor(successor, started) : undefined;
    next?.catch(() => undefined);
    const result = await this.record(job, decision, durationMs, handler);
    if (next) {
      const followed = await next;
      logger.debug('ran the job handed on to', { jobId: job.id, next: followed.jobId, result: followed.result });
    }
    return result;
  }

  /** Applies a run's decision on its claim; a lost claim voids the run. */
  private async record(job: ClaimedJob, decision: Decision, durationMs: number, handler: JobHandler<unknown> | undefined): Promise<ExecutionResult> {
    const { logger } = this.deps;
    try {
      await this.deps.changes.apply({ type: 'run', job, decision, durationMs });
    } catch (error) {
      if (error instanceof LeaseLostError) {
        // The lease ran out and the rescuer moved the job on, or ops cancelled it: this run's result is void.
        logger.warn('outcome not recorded: claim lost', { jobId: job.id, kind: job.kind, state: error.current?.state });
        return { jobId: job.id, result: 'lease_lost' };
      }
      throw error;
    }

    if (handler?.kind.periodic) await this.recordPeriodic(job, decision);
    return { jobId: job.id, result: resultOf(decision) };
  }

  private async run(handler: JobHandler<unknown>, args: unknown, job: ClaimedJob, runNext: (id: string) => Promise<'claimed' | 'declined'>): Promise<unknown> {
    const { clock, logger, queue } = this.deps;
    const timeoutMs = Math.min(handler.kind.timeoutSeconds, queue.spec.timeoutSeconds) * 1000;
    const policy = handler.kind.policy;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`timed out after ${timeoutMs / 1000} s`);
        controller.abort(error);
        reject(error);
      }, timeoutMs);
    });
    try {
      await Promise.race([
        handler.run(args, {
          id: job.id,
          kind: job.kind,
          attempt: job.attempt,
          maxAttempts: job.maxAttempts,
          policy,
          // The same test decide() applies: a retryable failure now is discarded as exhausted.
          isLastAttempt: job.attempt >= job.maxAttempts || policy.backoff.type === 'none',
          createdAt: job.createdAt,
          signal: controller.signal,
          logger: logger.createChild({ persistentKeys: { jobId: job.id, kind: job.kind, attempt: job.attempt } }),
          now: () => clock.now(),
          runNext,
        }),
        timeout,
      ]);
      return undefined;
    } catch (error) {
      return error ?? new Error('handler threw undefined');
    } finally {
      clearTimeout(timer);
    }
  }

  private async refused(error: ClaimRefusedError, message: WakeUpMessage): Promise<ExecutionResult> {
    const { changes, logger } = this.deps;
    const row = error.current;
    if (error.refusal === 'not_due' && row) {
      // Early (a Scheduler minute, a rounded timer): send it again for the time that remains.
      await changes.apply({ type: 'redispatch', row });
      return { jobId: message.jobId, result: 'redispatched' };
    }
    if (error.refusal === 'cancel_requested' && row) {
      await changes.apply({ type: 'cancelRequested', job: row });
      return { jobId: message.jobId, result: 'cancelled' };
    }
    logger.debug('wake-up dropped', { jobId: message.jobId, seq: message.seq, refusal: error.refusal });
    return { jobId: message.jobId, result: 'dropped', refusal: error.refusal };
  }

  private async recordPeriodic(job: ClaimedJob, decision: Decision): Promise<void> {
    const now = new Date(this.deps.clock.now()).toISOString();
    const failed = decision.type === 'discard' || decision.type === 'retry';
    try {
      await this.deps.store.recordPeriodic({
        id: periodicStatusId(job.kind),
        kind: job.kind,
        lastRunAt: now,
        lastOutcome: failed ? 'failed' : 'completed',
        lastJobId: job.id,
        ...(failed ? { lastFailureAt: now, lastError: 'error' in decision ? decision.error : '' } : {}),
      });
    } catch (error) {
      this.deps.logger.warn('periodic status not recorded', { kind: job.kind, error: describeError(error) });
    }
  }
}

function resultOf(decision: Decision): 'completed' | 'retryable' | 'snoozed' | 'discarded' {
  switch (decision.type) {
    case 'complete':
      return 'completed';
    case 'retry':
      return 'retryable';
    case 'snooze':
      return 'snoozed';
    case 'discard':
      return 'discarded';
    default:
      return assertNever(decision);
  }
}
