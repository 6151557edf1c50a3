import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobClient } from './client.ts';
import { assertNever, decide } from './decide.ts';
import type { Decision } from './decide.ts';
import { Discards, unknownKindDiscard } from './discards.ts';
import type { Dispatcher } from './dispatch.ts';
import { TransitionRefusedError } from './errors.ts';
import type { JobKind } from './kinds.ts';
import { describeError } from './outcomes.ts';
import type { JobRow } from './row.ts';
import { JobState, pendingStates } from './states.ts';
import type { JobStore } from './store.ts';

/** What one rescuer pass did. */
export interface RescueReport {
  /** Running jobs whose lease expired, rescheduled (or discarded when out of attempts). */
  expired: number;
  /** Due jobs nobody woke (a lost send), woken again. */
  rewoken: number;
  /** Periodic jobs enqueued for the current period. */
  periodic: number;
}

export interface RescuerOptions {
  store: JobStore;
  client: JobClient;
  dispatcher: Dispatcher;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Where a discard is counted (a lost last attempt): the same metrics as the executor's. */
  metrics: MetricsSink;
  /** Every kind the system runs: their policies price a lost attempt, the periodic ones are enqueued here. */
  kinds: readonly JobKind<never>[];
  /** A job due longer ago than this with no claim is taken for a lost wake-up. */
  rescueAfterMs: number;
  /** Rows read per state per pass. */
  pageSize?: number;
}

/**
 * The rescuer (River's name): a periodic pass that makes sure no job is lost. It reschedules running
 * jobs whose lease expired (their worker crashed; the attempt counts as failed), re-sends the wake-up of
 * jobs that are due but idle (a send was lost), and enqueues each periodic kind's job for the current
 * period. Every change is a conditional write, so overlapping passes do no harm.
 */
export class Rescuer {
  private readonly options: RescuerOptions;
  private readonly kinds: Map<string, JobKind<never>>;
  private readonly discards: Discards;

  constructor(options: RescuerOptions) {
    this.options = options;
    this.kinds = new Map(options.kinds.map((k) => [k.kind, k]));
    this.discards = new Discards(options.store, options.metrics);
  }

  async run(): Promise<RescueReport> {
    const [expired, rewoken, periodic] = await Promise.all([this.rescueExpired(), this.rewakeIdle(), this.enqueuePeriodic()]);
    return { expired, rewoken, periodic };
  }

  /**
   * Sends a wake-up for every pending job, due or not. The local runtime runs it at start-up: its
   * in-process queues and timers did not survive the last stop, the job rows did.
   */
  async recover(): Promise<number> {
    const { store } = this.options;
    let count = 0;
    for (const state of pendingStates) {
      let cursor: string | undefined;
      do {
        const page = await store.list({ state, limit: 200, ...(cursor ? { cursor } : {}) });
        for (const row of page.jobs) {
          await this.wake(row);
          count++;
        }
        cursor = page.cursor;
      } while (cursor);
    }
    return count;
  }

  private async rescueExpired(): Promise<number> {
    const { store, clock, rng } = this.options;
    const now = clock.now();
    const rows = await store.findDue(JobState.running, now - 1, this.options.pageSize ?? 100);
    let count = 0;
    for (const row of rows) {
      const kind = this.kinds.get(row.kind);
      // A lost attempt is a retryable failure, priced by the kind's policy; a kind nobody runs is discarded as the executor would.
      const decision: Decision = kind ? decide({ type: 'retryable', error: 'worker lost' }, row, kind.policy, now, rng) : unknownKindDiscard(row.kind, 'in the rescuer');
      const rescued = await this.attempt(() => this.rescue(row, decision, now), row);
      if (!rescued) continue;
      count++;
      if (rescued.state === JobState.retryable) await this.wake(rescued);
    }
    return count;
  }

  /** Writes a lost attempt's decision: run it again, or discard it (through the one discard path). */
  private rescue(row: JobRow, decision: Decision, now: number): Promise<JobRow> {
    switch (decision.type) {
      case 'retry':
        return this.options.store.rescue(row, now, { at: decision.at });
      case 'discard':
        return this.discards.lost(row, now, decision);
      // A lost attempt is classified retryable: decide() never completes or snoozes it.
      case 'complete':
      case 'snooze':
        throw new Error(`a lost attempt cannot end as ${decision.type}`);
      default:
        return assertNever(decision);
    }
  }

  private async rewakeIdle(): Promise<number> {
    const { store, clock } = this.options;
    const now = clock.now();
    const cutoff = now - this.options.rescueAfterMs;
    let count = 0;
    for (const state of pendingStates) {
      const rows = await store.findDue(state, cutoff, this.options.pageSize ?? 100);
      for (const row of rows) {
        if (row.lastDispatchAt && Date.parse(row.lastDispatchAt) >= cutoff) continue;
        const touched = await this.attempt(() => store.touchDispatch(row, now, cutoff), row);
        if (!touched) continue;
        count++;
        await this.wake(touched);
      }
    }
    return count;
  }

  private async enqueuePeriodic(): Promise<number> {
    const { client, clock } = this.options;
    const now = clock.now();
    let count = 0;
    for (const kind of this.kinds.values()) {
      if (!kind.periodic) continue;
      const period = kind.periodic.everySeconds * 1000;
      const periodStart = Math.floor(now / period) * period;
      const { created } = await client.enqueue(kind, {} as never, { id: `${kind.kind}@${new Date(periodStart).toISOString()}` });
      if (created) count++;
    }
    return count;
  }

  /** A refused condition means another pass or a worker got there first: not an error. */
  private async attempt(write: () => Promise<JobRow>, row: JobRow): Promise<JobRow | undefined> {
    try {
      return await write();
    } catch (error) {
      if (error instanceof TransitionRefusedError) return undefined;
      this.options.logger.error('rescue write failed', { jobId: row.id, error: describeError(error) });
      return undefined;
    }
  }

  private async wake(row: JobRow): Promise<void> {
    try {
      await this.options.dispatcher.dispatch({ jobId: row.id, seq: row.seq, queue: row.queue, at: Date.parse(row.scheduledAt) });
    } catch (error) {
      this.options.logger.error('rescuer could not send a wake-up; the next pass will', { jobId: row.id, error: describeError(error) });
    }
  }
}
