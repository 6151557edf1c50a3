import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobChanges } from './apply.ts';
import type { JobClient } from './client.ts';
import { decide } from './decide.ts';
import type { Decision } from './decide.ts';
import { unknownKindDiscard } from './discards.ts';
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
  /** The one path that applies decisions (a lost attempt's retry or discard, a re-sent wake-up). */
  changes: JobChanges;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Every kind the system runs: their policies price a lost attempt, the periodic ones are enqueued here. */
  kinds: readonly JobKind<unknown>[];
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
  private readonly kinds: Map<string, JobKind<unknown>>;

  constructor(options: RescuerOptions) {
    this.options = options;
    this.kinds = new Map(options.kinds.map((k) => [k.kind, k]));
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
          await this.options.changes.apply({ type: 'redispatch', row });
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
      const rescued = await this.attempt(() => this.options.changes.apply({ type: 'lost', job: row, decision }), row);
      if (rescued) count++;
    }
    return count;
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
        await this.options.changes.apply({ type: 'redispatch', row: touched });
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
      const { created } = await client.enqueue(kind, {}, { id: `${kind.kind}@${new Date(periodStart).toISOString()}` });
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
}
