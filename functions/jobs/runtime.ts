import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import { JobChanges } from './apply.ts';
import { JobClient } from './client.ts';
import { Discards } from './discards.ts';
import { Dispatcher } from './dispatch.ts';
import type { DispatchTransport } from './dispatch.ts';
import { Executor } from './executor.ts';
import type { JobHandler } from './kinds.ts';
import type { QueueSpec } from './queues.ts';
import { Rescuer } from './rescuer.ts';
import { JobStore } from './store.ts';
import { createWorker } from './worker.ts';

/** What the job layer needs from its host: a store, the queues, a way to send wake-ups, time, randomness, logs, metrics. */
export interface JobRuntimeDeps {
  db: DynamoDBDocumentClient;
  jobsTable: string;
  /** Every job queue, by name (the contexts declare them). */
  queues: Readonly<Record<string, QueueSpec>>;
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
  /** The one path that applies a decision about a job (executor, rescuer and client all use it). */
  changes: JobChanges;
  executor(queue: string, handlers: readonly JobHandler<unknown>[]): Executor;
  /** The SQS handler for one queue's kinds. */
  worker(queue: string, handlers: readonly JobHandler<unknown>[]): ReturnType<typeof createWorker>;
  /** The rescuer over every handler the system runs: their kinds' policies price lost attempts; their hooks run on its discards. */
  rescuer(handlers: readonly JobHandler<unknown>[], rescueAfterMs: number): Rescuer;
}

export function createJobRuntime(deps: JobRuntimeDeps): JobRuntime {
  const store = new JobStore(deps.db, deps.jobsTable);
  const dispatcher = new Dispatcher(deps.transport, deps.clock);
  // Every handler this runtime runs, by kind: the discard path finds a kind's onDiscard hook here.
  const handlers = new Map<string, JobHandler<unknown>>();
  const register = (list: readonly JobHandler<unknown>[]) => {
    for (const h of list) handlers.set(h.kind.kind, h);
    return new Map(list.map((h) => [h.kind.kind, h]));
  };
  const discards = new Discards({ store, metrics: deps.metrics, logger: deps.logger, handlers });
  const changes = new JobChanges({ store, dispatcher, discards, clock: deps.clock, logger: deps.logger });
  const client = new JobClient({ store, dispatcher, changes, clock: deps.clock, logger: deps.logger });
  const spec = (queue: string): QueueSpec => {
    const found = deps.queues[queue];
    if (!found) throw new Error(`no job queue "${queue}"`);
    return found;
  };
  const executor = (queue: string, list: readonly JobHandler<unknown>[]) => {
    for (const h of list) {
      if (h.kind.queue !== queue) throw new Error(`kind ${h.kind.kind} belongs to queue ${h.kind.queue}, not ${queue}`);
    }
    return new Executor({ store, changes, clock: deps.clock, rng: deps.rng, logger: deps.logger, queue: { name: queue, spec: spec(queue) }, handlers: register(list) });
  };
  return {
    store,
    dispatcher,
    client,
    changes,
    executor,
    worker: (queue, list) => createWorker({ executor: executor(queue, list), logger: deps.logger }),
    rescuer: (list, rescueAfterMs) => {
      register(list);
      return new Rescuer({ store, client, changes, clock: deps.clock, rng: deps.rng, logger: deps.logger, kinds: list.map((h) => h.kind), rescueAfterMs });
    },
  };
}
