import { clockMs } from '../platform/clock.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import { assertNever, decide } from './decide.ts';
import type { Decision } from './decide.ts';
import { Discards, unknownKindDiscard } from './discards.ts';
import type { Dispatcher, WakeUpMessage } from './dispatch.ts';
import { ClaimRefusedError, LeaseLostError } from './errors.ts';
import type { JobHandler } from './kinds.ts';
import { classifyRun, describeError, DiscardReason } from './outcomes.ts';
import type { RunOutcome } from './outcomes.ts';
import { leaseMs, queues } from './queues.ts';
import type { QueueName } from './queues.ts';
import type { JobRow } from './row.ts';
import type { ClaimedJob, JobStore } from './store.ts';
import { periodicStatusId } from './store.ts';

// The discard metrics live with the one discard path (discards.ts); lib/ reads the alarm's name from here.
export { DISCARD_ALERT_METRIC, DISCARD_METRIC } from './discards.ts';

export interface ExecutorDeps {
  store: JobStore;
  dispatcher: Dispatcher;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  metrics: MetricsSink;
  handlers: readonly JobHandler<never>[];
}

/** What one wake-up led to (for logs, tests and benchmarks). */
export type ExecutionResult =
  | { jobId: string; result: 'completed' | 'retryable' | 'snoozed' | 'discarded' }
  | { jobId: string; result: 'dropped'; refusal: string }
  | { jobId: string; result: 'redispatched' }
  | { jobId: string; result: 'cancelled' }
  | { jobId: string; result: 'lease_lost' };

/**
 * Runs one wake-up: claim the job, run its handler under a timeout, classify the run, write the next
 * state on the claim, then send the next wake-up. A job's failure is recorded, never thrown; only an
 * infrastructure failure to claim or record escapes (the SQS message is then redelivered, and the claim
 * makes that safe).
 */
export class Executor {
  private readonly deps: ExecutorDeps;
  private readonly handlers: Map<string, JobHandler<unknown>>;
  private readonly discards: Discards;

  constructor(deps: ExecutorDeps) {
    this.deps = deps;
    this.handlers = new Map(deps.handlers.map((h) => [h.kind.kind, h as unknown as JobHandler<unknown>]));
    this.discards = new Discards(deps.store, deps.metrics);
  }

  async execute(message: WakeUpMessage, queue: QueueName): Promise<ExecutionResult> {
    const { store, clock, logger } = this.deps;
    let job: ClaimedJob;
    try {
      job = await store.claim(message.jobId, message.seq, clock.now(), clockMs(clock, leaseMs(queue)));
    } catch (error) {
      if (error instanceof ClaimRefusedError) return this.refused(error, message);
      throw error;
    }

    const handler = this.handlers.get(job.kind);
    const started = performance.now();
    let decision: Decision;
    if (!handler) {
      decision = unknownKindDiscard(job.kind, `on queue ${queue}`);
    } else {
      const parsed = handler.kind.args.safeParse(job.args);
      const outcome: RunOutcome = parsed.success
        ? classifyRun(await this.run(handler, parsed.data, job))
        : { type: 'discarded', reason: DiscardReason.invalid_args, error: `invalid args: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` };
      decision = decide(outcome, job, handler.kind.policy, clock.now(), this.deps.rng);
    }
    const durationMs = performance.now() - started;

    let row: JobRow;
    try {
      row = await this.record(job, decision, durationMs);
    } catch (error) {
      if (error instanceof LeaseLostError) {
        // The lease ran out and the rescuer moved the job on, or ops cancelled it: this run's result is void.
        logger.warn('outcome not recorded: claim lost', { jobId: job.id, kind: job.kind, state: error.current?.state });
        return { jobId: job.id, result: 'lease_lost' };
      }
      throw error;
    }

    if (handler?.kind.periodic) await this.recordPeriodic(job, decision);
    if (decision.type === 'retry' || decision.type === 'snooze') await this.wake(row);
    return { jobId: job.id, result: resultOf(decision) };
  }

  private async run(handler: JobHandler<unknown>, args: unknown, job: ClaimedJob): Promise<unknown> {
    const { clock, logger } = this.deps;
    const timeoutMs = Math.min(handler.kind.timeoutSeconds, queues[job.queue as QueueName]?.timeoutSeconds ?? Infinity) * 1000;
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
          createdAt: job.createdAt,
          signal: controller.signal,
          logger: logger.createChild({ persistentKeys: { jobId: job.id, kind: job.kind, attempt: job.attempt } }),
          now: () => clock.now(),
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

  private record(job: ClaimedJob, decision: Decision, durationMs: number): Promise<JobRow> {
    const { store, clock } = this.deps;
    const now = clock.now();
    switch (decision.type) {
      case 'complete':
        return store.complete(job, now, durationMs);
      case 'retry':
        return store.retry(job, now, decision.at, decision.error, durationMs);
      case 'snooze':
        return store.snooze(job, now, decision.until, decision.reason);
      case 'discard':
        return this.discards.claimed(job, now, decision, durationMs);
      default:
        return assertNever(decision);
    }
  }

  private async refused(error: ClaimRefusedError, message: WakeUpMessage): Promise<ExecutionResult> {
    const { store, clock, logger } = this.deps;
    const row = error.current;
    if (error.refusal === 'not_due' && row) {
      // Early (a Scheduler minute, a rounded timer): send it again for the time that remains.
      await this.wake(row);
      return { jobId: message.jobId, result: 'redispatched' };
    }
    if (error.refusal === 'cancel_requested' && row) {
      await store.cancelRequested(row, clock.now());
      return { jobId: message.jobId, result: 'cancelled' };
    }
    logger.debug('wake-up dropped', { jobId: message.jobId, seq: message.seq, refusal: error.refusal });
    return { jobId: message.jobId, result: 'dropped', refusal: error.refusal };
  }

  /** Sends the row's next wake-up. A failed send is logged, not thrown: the outcome is recorded, and the rescuer finds a due job that nobody woke. */
  private async wake(row: JobRow): Promise<void> {
    try {
      await this.deps.dispatcher.dispatch({ jobId: row.id, seq: row.seq, queue: row.queue, at: Date.parse(row.scheduledAt) });
    } catch (error) {
      this.deps.logger.error('wake-up not sent; the rescuer will send it', { jobId: row.id, error: describeError(error) });
    }
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
