import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import { JobClient } from './client.ts';
import { Dispatcher } from './dispatch.ts';
import type { DispatchTransport } from './dispatch.ts';
import { Executor } from './executor.ts';
import type { JobHandler, JobKind } from './kinds.ts';
import type { QueueName } from './queues.ts';
import { Rescuer } from './rescuer.ts';
import { JobStore } from './store.ts';
import { createWorker } from './worker.ts';

/** What the job layer needs from its host: a store, a way to send wake-ups, time, randomness, logs, metrics. */
export interface JobRuntimeDeps {
  db: DynamoDBDocumentClient;
  jobsTable: string;
  transport: DispatchTransport;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  metrics: MetricsSink;
}

/** The job layer, assembled. Entry points (Lambda or local) build one and take what they need. */
export interface JobRuntime {
  store: JobStore;
  dispatcher: Dispatcher;
  client: JobClient;
  executor(handlers: readonly JobHandler<never>[]): Executor;
  /** The SQS handler for one queue's kinds. */
  worker(queue: QueueName, handlers: readonly JobHandler<never>[]): ReturnType<typeof createWorker>;
  rescuer(kinds: readonly JobKind<never>[], rescueAfterMs: number): Rescuer;
}

export function createJobRuntime(deps: JobRuntimeDeps): JobRuntime {
  const store = new JobStore(deps.db, deps.jobsTable);
  const dispatcher = new Dispatcher(deps.transport, deps.clock);
  const client = new JobClient({ store, dispatcher, clock: deps.clock, logger: deps.logger });
  const executor = (handlers: readonly JobHandler<never>[]) =>
    new Executor({ store, dispatcher, clock: deps.clock, rng: deps.rng, logger: deps.logger, metrics: deps.metrics, handlers });
  return {
    store,
    dispatcher,
    client,
    executor,
    worker: (queue, handlers) => {
      for (const h of handlers) {
        if (h.kind.queue !== queue) throw new Error(`kind ${h.kind.kind} belongs to queue ${String(h.kind.queue)}, not ${String(queue)}`);
      }
      return createWorker({ queue, executor: executor(handlers), logger: deps.logger });
    },
    rescuer: (kinds, rescueAfterMs) =>
      new Rescuer({ store, client, dispatcher, clock: deps.clock, rng: deps.rng, logger: deps.logger, metrics: deps.metrics, kinds, rescueAfterMs }),
  };
}
