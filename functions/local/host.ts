import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TimerClock } from '../platform/clock.ts';
import { createApiHandler } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { createLogger } from '../platform/logger.ts';
import type { Logger } from '../platform/logger.ts';
import { MemoryMetrics } from '../platform/metrics.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import { startHttpServer } from '../platform/local/http-server.ts';
import type { LocalHttpServer } from '../platform/local/http-server.ts';
import { LocalQueue, LocalTransport } from '../platform/local/queues.ts';
import { sameOriginOnly } from '../platform/local/same-origin.ts';
import type { JobHandler } from '../jobs/index.ts';
import type { DispatchTransport } from '../jobs/dispatch.ts';
import { VISIBILITY_FACTOR } from '../jobs/queues.ts';
import { createJobRuntime } from '../jobs/runtime.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import { queueNames, queues, System } from '../app/system.ts';
import type { QueueName, SystemHost, TableNames } from '../app/system.ts';

/** How to assemble redial on one machine, over tables that exist already. */
export interface LocalHostOptions {
  db: DynamoDBDocumentClient;
  /** The job layer's own client, when it must differ from the contexts' (a benchmark counting its requests apart). @default db */
  jobsDb?: DynamoDBDocumentClient;
  tableNames: TableNames;
  clock: TimerClock;
  rng: Rng;
  logger?: Logger;
  metrics?: MetricsSink;
  /**
   * How many job-time milliseconds pass per real millisecond (a scaled clock's speed): a queue's
   * visibility timeout is stretched by it, so it stays six worker timeouts of real time. @default 1
   */
  speed?: number;
  /** Where wake-ups go. @default the in-process queues */
  transport?: DispatchTransport;
  /** The contexts' settings (the calls and mail configuration, webhook options, the wall clock). */
  contexts?: Pick<SystemHost, 'calls' | 'mail' | 'webhooks' | 'wallClock'>;
  /** The queues whose workers run. @default every queue */
  workers?: readonly QueueName[];
  /** What the workers run. @default each queue's context's handlers */
  handlers?: (host: { jobs: JobRuntime; system: System }) => readonly JobHandler<unknown>[];
  /** Run the rescuer on a timer (real ms). */
  rescuer?: { intervalMs: number; rescueAfterMs: number };
  /** Serve the API on 127.0.0.1 (`port` 0: any free port), with `extraRoutes` beside it; only `origins` may POST from a browser. */
  serve?: { port: number; extraRoutes?: (host: { jobs: JobRuntime; system: System }) => readonly ApiRoute[]; origins?: readonly string[] };
}

/** redial on one machine, assembled. */
export interface LocalHost {
  system: System;
  jobs: JobRuntime;
  /** One in-process queue per job queue (empty with a transport of the caller's). */
  queues: LocalQueue[];
  transport: DispatchTransport;
  /** The in-process transport, unless the caller gave its own (it counts what it sent). */
  local: LocalTransport | undefined;
  logger: Logger;
  metrics: MetricsSink;
  /** The API's URL, when served. */
  url: string | undefined;
  /** The queue named `name`. */
  queue(name: QueueName): LocalQueue;
  /** Resolves when every queue is idle (nothing visible, nothing in flight). */
  idle(): Promise<void>;
  /** Stops the workers, the rescuer's timer, the server and the contexts' connections. */
  stop(): Promise<void>;
}

/**
 * Assembles redial on one machine: the job layer over in-process queues and timers (each queue with its
 * context's batch size and concurrency, and a visibility timeout of {@link VISIBILITY_FACTOR} worker
 * timeouts, as on AWS), the composition root over it, a worker per queue handed SQS-shaped batches, and
 * optionally the rescuer on a timer and the API on 127.0.0.1. `npm start`, every test fixture and every
 * benchmark build redial through here.
 */
export async function createLocalHost(options: LocalHostOptions): Promise<LocalHost> {
  const logger = options.logger ?? createLogger('redial-local');
  const metrics = options.metrics ?? new MemoryMetrics();
  const speed = options.speed ?? 1;
  const stops: (() => Promise<void> | void)[] = [];
  const localQueues = options.transport
    ? []
    : queueNames.map(
        (name) =>
          new LocalQueue({
            name,
            clock: options.clock,
            batchSize: queues[name].batchSize,
            maxConcurrency: queues[name].maxConcurrency,
            visibilityMs: VISIBILITY_FACTOR * queues[name].timeoutSeconds * 1000 * speed,
            onError: (error) => logger.error('worker threw', { error: String(error) }),
          }),
      );
  const local = options.transport ? undefined : new LocalTransport(localQueues, options.clock);
  const transport: DispatchTransport = options.transport ?? local!;
  stops.push(async () => {
    local?.stop();
    await Promise.all(localQueues.map((q) => q.stop()));
  });
  const jobs = createJobRuntime({ db: options.jobsDb ?? options.db, jobsTable: options.tableNames.jobs, queues, transport, clock: options.clock, rng: options.rng, logger, metrics });
  const system = new System(() => ({ jobs, db: options.db, tableNames: options.tableNames, clock: options.clock, rng: options.rng, logger, metrics, ...options.contexts }));
  stops.push(() => system.close());

  const custom = options.handlers?.({ jobs, system });
  for (const queue of localQueues) {
    const name = queue.name as QueueName;
    if (options.workers && !options.workers.includes(name)) continue;
    const handlers = custom ? custom.filter((h) => h.kind.queue === name) : system.handlers(name);
    const worker = jobs.worker(name, handlers);
    queue.consume((event) => worker(event, {} as never));
  }

  if (options.rescuer) {
    const rescuer = jobs.rescuer(custom ?? system.allHandlers(), options.rescuer.rescueAfterMs);
    await rescuer.recover();
    const interval = setInterval(() => {
      rescuer.run().catch((error: unknown) => logger.error('rescuer pass failed', { error: String(error) }));
    }, options.rescuer.intervalMs);
    stops.push(() => clearInterval(interval));
  }

  let server: LocalHttpServer | undefined;
  if (options.serve) {
    const api = createApiHandler([...system.routes(), ...(options.serve.extraRoutes?.({ jobs, system }) ?? [])], logger);
    server = await startHttpServer({ port: options.serve.port, handler: options.serve.origins ? sameOriginOnly(api, options.serve.origins) : api });
    const started = server;
    stops.push(() => started.close());
  }

  return {
    system,
    jobs,
    queues: localQueues,
    transport,
    local,
    logger,
    metrics,
    url: server?.url,
    queue: (name) => {
      const found = localQueues.find((q) => q.name === name);
      if (!found) throw new Error(`no local queue ${name}`);
      return found;
    },
    idle: async () => {
      await Promise.all(localQueues.map((q) => q.idle()));
    },
    stop: async () => {
      for (const fn of stops.splice(0).reverse()) await fn();
    },
  };
}
