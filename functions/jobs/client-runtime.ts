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
import type { JobHandler } from './kinds.ts';
import { JobListing } from './listing.ts';
import { leaseMs } from './queues.ts';
import type { QueueSpec } from './queues.ts';
import { JobStore } from './store.ts';
import { Watermarks } from './watermarks.ts';

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

/**
 * The job layer as a function that runs no job has it: the client (enqueue, list, cancel, retry) over the
 * store, the dispatcher and the counts. Built alone (functions/jobs/aws.ts `awsJobClientRuntime`), its
 * bundle holds none of the runners (executor, worker, rescuer) that {@link createJobRuntime} adds.
 */
export interface JobClientRuntime {
  store: JobStore;
  dispatcher: Dispatcher;
  client: JobClient;
  /** The job counts (counters beside the jobs). */
  counts: CountStore;
  /** The one path that applies a decision about a job (executor, rescuer and client all use it). */
  changes: JobChanges;
}

/** The client runtime's parts that the runners share (functions/jobs/runtime.ts), inside the job layer only. */
export interface JobClientParts extends JobClientRuntime {
  listing: JobListing;
  watermarks: Watermarks;
  /** Every handler this runtime runs, by kind: the discard path finds a kind's onDiscard hook here (none in a client runtime). */
  handlers: Map<string, JobHandler<unknown>>;
  rescueAfterMs: number;
  tracing: Tracing;
  /** The queue `queue`'s spec; throws for a queue nobody declared. */
  spec: (queue: string) => QueueSpec;
}

/** Assembles the client runtime's parts over `deps` (createJobRuntime builds its runners on them). */
export function assembleJobClient(deps: JobRuntimeDeps): JobClientParts {
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
  const handlers = new Map<string, JobHandler<unknown>>();
  const discards = new Discards({ store, metrics: deps.metrics, logger: deps.logger, handlers });
  const changes = new JobChanges({ store, dispatcher, discards, counts, clock: deps.clock, logger: deps.logger });
  const client = new JobClient({ store, dispatcher, changes, counts, listing, clock: deps.clock, rng: deps.rng, logger: deps.logger });
  return { store, dispatcher, client, counts, changes, listing, watermarks, handlers, rescueAfterMs, tracing, spec };
}

/** The job layer's client alone, for a function that enqueues and reads jobs but runs none. */
export function createJobClientRuntime(deps: JobRuntimeDeps): JobClientRuntime {
  const { store, dispatcher, client, counts, changes } = assembleJobClient(deps);
  return { store, dispatcher, client, counts, changes };
}
