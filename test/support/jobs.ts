import { ManualClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import type { JobRuntime } from '../../functions/jobs/runtime.ts';
import type { JobHandler } from '../../functions/jobs/kinds.ts';
import type { DispatchTransport } from '../../functions/jobs/dispatch.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import { freshTables } from './dynamo.ts';

/** A sent wake-up, as a recording transport saw it. */
export interface Sent {
  kind: 'message' | 'schedule';
  queue: string;
  body: { jobId: string; seq: number };
  delaySeconds?: number;
  at?: number;
  name?: string;
}

/** A transport that only records what it was asked to send (tests drive the executor by hand). */
export class RecordingTransport implements DispatchTransport {
  readonly sent: Sent[] = [];
  failNext = 0;

  sendMessage(queue: string, body: string, delaySeconds: number): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('send lost (injected)'));
    }
    this.sent.push({ kind: 'message', queue, body: JSON.parse(body) as Sent['body'], delaySeconds });
    return Promise.resolve();
  }

  createSchedule(name: string, at: number, queue: string, body: string): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      return Promise.reject(new Error('send lost (injected)'));
    }
    this.sent.push({ kind: 'schedule', queue, body: JSON.parse(body) as Sent['body'], at, name });
    return Promise.resolve();
  }

  last(): Sent {
    const sent = this.sent.at(-1);
    if (!sent) throw new Error('nothing was sent');
    return sent;
  }
}

/** What a fixture is built from, for handlers that need it. */
/**
 * `settle(untilMs)`: runs every timer and message until nothing is due, up to `untilMs` of manual time
 * ahead (default: 30 days), jumping the clock from one due timer to the next.
 */
export function settler(clock: ManualClock, idle: () => Promise<unknown>): (untilMs?: number) => Promise<void> {
  return async (untilMs = 30 * 86400_000) => {
    const limit = clock.now() + untilMs;
    await idle();
    for (let i = 0; i < 100_000; i++) {
      const next = clock.nextTimerAt();
      if (next === undefined || next > limit) break;
      clock.set(Math.max(next, clock.now()));
      await idle();
    }
  };
}

export interface FixtureParts {
  jobs: JobRuntime;
  clients: Awaited<ReturnType<typeof freshTables>>['clients'];
  tableNames: Awaited<ReturnType<typeof freshTables>>['tableNames'];
  clock: ManualClock;
  logger: ReturnType<typeof createLogger>;
  metrics: MemoryMetrics;
}

/**
 * A job-layer fixture on DynamoDB Local with a manual clock and a seeded RNG, built by the local host.
 * With `transport: 'local'` wake-ups go through the in-process queues to real workers; `settle()`
 * advances the clock timer by timer until nothing is left to run. With the recording transport (the
 * default) nothing runs by itself: tests drive the executor.
 */
export async function jobsFixture(
  options: {
    /** The handlers the workers run; a function gets the fixture's parts first (for handlers that use the store or the job client). */
    handlers?: JobHandler<unknown>[] | ((parts: FixtureParts) => JobHandler<unknown>[]);
    transport?: 'recording' | 'local';
    seed?: number;
  } = {},
) {
  const { clients, tableNames, counter } = await freshTables();
  const clock = new ManualClock();
  const rng = seededRng(options.seed ?? 42);
  const metrics = new MemoryMetrics();
  const logger = createLogger('test');
  const recording = new RecordingTransport();
  let handlers: JobHandler<unknown>[] = [];
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng,
    logger,
    metrics,
    ...(options.transport === 'local' ? {} : { transport: recording }),
    handlers: ({ jobs }) => {
      handlers = typeof options.handlers === 'function' ? options.handlers({ jobs, clients, tableNames, clock, logger, metrics }) : (options.handlers ?? []);
      return handlers;
    },
  });
  const { jobs, queues: localQueues } = host;
  const transport: DispatchTransport = host.transport;
  const idle = () => host.idle();
  const settle = settler(clock, idle);

  return { clients, tableNames, counter, clock, rng, metrics, logger, recording, jobs, localQueues, transport, handlers, settle, idle, host };
}
