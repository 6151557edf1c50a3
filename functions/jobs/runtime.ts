import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { clockMs } from '../platform/clock.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import { noTracing } from '../platform/tracing.ts';
import type { Tracing } from '../platform/tracing.ts';
import { JobChanges } from './apply.ts';
import { JobClient } from './client.ts';
import { CountStore } from './counts.ts';
import { Discards } from './discards.ts';
import { Dispatcher } from './dispatch.ts';
import type { DispatchTransport } from './dispatch.ts';
import { Executor } from './executor.ts';
import type { JobHandler } from './kinds.ts';
import { leaseMs } from './queues.ts';
import type { QueueSpec } from './queues.ts';
import { JobListing } from './listing.ts';
import { Rescuer, Watermarks } from './rescuer.ts';
import type { RescuerOptions } from './rescuer.ts';
import { JobStore } from './store.ts';
import { createWorker } from './worker.ts';
import type { RecordHook } from './worker.ts';

/** What the job layer needs from its host: a store, the queues, a way to send wake-ups, time, randomness, logs, metrics, traces. */
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
  /** Spans for each job run and each wake-up sent (X-Ray on AWS). @default noTracing */
  tracing?: Tracing;
  /**
   * How long after its due time a job nobody claimed is taken for a lost wake-up (RESCUE_AFTER_SECONDS):
   * the store places each job's first rescuer check that long after it is due. @default 180_000
   */
  rescueAfterMs?: number;
  /** How long discarded jobs stay (DISCARDED_RETENTION_DAYS). @default 30 days */
  discardedRetentionSeconds?: number;
}

/** The job layer, assembled. Entry points (Lambda or local) build one and take what they need. */
export interface JobRuntime {
  store: JobStore;
  dispatcher: Dispatcher;
  client: JobClient;
  /** The job counts (counters beside the jobs). */
  counts: CountStore;
  /** The one path that applies a decision about a job (executor, rescuer and client all use it). */
  changes: JobChanges;
  executor(queue: string, handlers: readonly JobHandler<unknown>[]): Executor;
  /** The SQS handler for one queue's kinds (`aroundRecord`: a host's hook around each record's run). */
  worker(queue: string, handlers: readonly JobHandler<unknown>[], aroundRecord?: RecordHook): ReturnType<typeof createWorker>;
  /**
   * The rescuer over every handler the system runs: their kinds' policies price lost attempts; their hooks
   * run on its discards. Its rescue delay is the runtime's unless given.
   */
  rescuer(handlers: readonly JobHandler<unknown>[], rescueAfterMs?: number, options?: Pick<RescuerOptions, 'budgetMs' | 'elapsed' | 'pageSize' | 'concurrency'>): Rescuer;
}

export function createJobRuntime(deps: JobRuntimeDeps): JobRuntime {
  const rescueAfterMs = deps.rescueAfterMs ?? 180_000;
  const spec = (queue: string): QueueSpec => {
    const found = deps.queues[queue];
    if (!found) throw new Error(`no job queue "${queue}"`);
    return found;
  };
  const store = new JobStore(deps.db, deps.jobsTable, {
    rescueAfterMs,
    // A job's check comes when its lease would end had it been claimed when due (a queue nobody declared: the rescue delay).
    checkAfterMs: (queue) => (deps.queues[queue] ? clockMs(deps.clock, leaseMs(spec(queue))) : rescueAfterMs),
    ...(deps.discardedRetentionSeconds !== undefined ? { discardedRetentionSeconds: deps.discardedRetentionSeconds } : {}),
  });
  const tracing = deps.tracing ?? noTracing;
  const dispatcher = new Dispatcher(deps.transport, deps.clock, tracing);
  const counts = new CountStore({ db: deps.db, tableName: deps.jobsTable, logger: deps.logger, metrics: deps.metrics, queues: Object.keys(deps.queues) });
  const watermarks = new Watermarks(deps.db, deps.jobsTable);
  const listing = new JobListing({ db: deps.db, tableName: deps.jobsTable, watermarks: () => watermarks.read() });
  // Every handler this runtime runs, by kind: the discard path finds a kind's onDiscard hook here.
  const handlers = new Map<string, JobHandler<unknown>>();
  const register = (list: readonly JobHandler<unknown>[]) => {
    for (const h of list) handlers.set(h.kind.kind, h);
    return new Map(list.map((h) => [h.kind.kind, h]));
  };
  const discards = new Discards({ store, metrics: deps.metrics, logger: deps.logger, handlers });
  const changes = new JobChanges({ store, dispatcher, discards, counts, clock: deps.clock, logger: deps.logger });
  const client = new JobClient({ store, dispatcher, changes, counts, listing, clock: deps.clock, rng: deps.rng, logger: deps.logger });
  const executor = (queue: string, list: readonly JobHandler<unknown>[]) => {
    for (const h of list) {
      if (h.kind.queue !== queue) throw new Error(`kind ${h.kind.kind} belongs to queue ${h.kind.queue}, not ${queue}`);
    }
    return new Executor({ store, changes, clock: deps.clock, rng: deps.rng, logger: deps.logger, tracing, queue: { name: queue, spec: spec(queue) }, handlers: register(list) });
  };
  return {
    store,
    dispatcher,
    client,
    counts,
    changes,
    executor,
    worker: (queue, list, aroundRecord) => createWorker({ executor: executor(queue, list), counts, logger: deps.logger, queue, ...(aroundRecord ? { aroundRecord } : {}) }),
    rescuer: (list, ownDelay, options = {}) => {
      register(list);
      return new Rescuer({
        store,
        client,
        changes,
        counts,
        listing,
        watermarks,
        db: deps.db,
        clock: deps.clock,
        rng: deps.rng,
        logger: deps.logger,
        kinds: list.map((h) => h.kind),
        rescueAfterMs: ownDelay ?? rescueAfterMs,
        ...options,
      });
    },
  };
}
