import * as z from 'zod';
import { dynamoClient, schedulerClient, sqsClient } from '../platform/aws.ts';
import type { AwsClients } from '../platform/aws.ts';
import { systemClock } from '../platform/clock.ts';
import { jsonEnv, parseConfig, positiveNumberEnv } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { powertoolsMetrics } from '../platform/metrics.ts';
import { systemRng } from '../platform/rng.ts';
import type { Tracing } from '../platform/tracing.ts';
import { AwsDispatchTransport } from './dispatch.ts';
import type { QueueSpec } from './queues.ts';
import { DEFAULT_DISCARDED_RETENTION_DAYS } from './row.ts';
import { createJobClientRuntime } from './client-runtime.ts';
import type { JobClientRuntime, JobRuntimeDeps } from './client-runtime.ts';
import { createJobRuntime } from './runtime.ts';
import type { JobRuntime } from './runtime.ts';

/** The job layer's configuration on AWS; lib/ sets these on every function that enqueues or runs jobs. */
export const jobsAwsConfig = z.object({
  JOBS_TABLE: z.string().min(3),
  /** `{ "<queue>": { "url": ..., "arn": ... } }` for every job queue. */
  JOB_QUEUES: jsonEnv(z.record(z.string(), z.object({ url: z.string().url(), arn: z.string().startsWith('arn:') }))),
  SCHEDULER_GROUP: z.string().min(1),
  SCHEDULER_ROLE_ARN: z.string().startsWith('arn:'),
  RESCUE_AFTER_SECONDS: positiveNumberEnv(180),
  /** How long discarded jobs (the dead letters) stay before DynamoDB's TTL removes them. */
  DISCARDED_RETENTION_DAYS: positiveNumberEnv(DEFAULT_DISCARDED_RETENTION_DAYS),
});

export type JobsAwsConfig = z.infer<typeof jobsAwsConfig>;

/** What {@link awsJobRuntime} and {@link awsJobClientRuntime} build on: the configuration, the clients and the job layer's dependencies. */
interface AwsJobParts {
  deps: JobRuntimeDeps;
  config: JobsAwsConfig;
  clients: Pick<AwsClients, 'dynamo' | 'sqs' | 'scheduler'>;
}

/**
 * The job layer's dependencies for a Lambda at cold start over `queues`: configuration parsed once, clients
 * with retries off, each wrapped by `tracing.capture` (their requests traced, the trace passed on to SQS),
 * and the job layer's spans on `tracing`.
 */
function awsJobParts(service: string, queues: Readonly<Record<string, QueueSpec>>, tracing?: Tracing & { capture<T>(client: T): T }): AwsJobParts {
  const config = parseConfig(jobsAwsConfig);
  // The job layer's clients only: a function that uses another service builds that client itself
  // (functions/app/aws.ts), so no bundle carries a client its function does not call.
  const options = tracing ? { capture: <T>(client: T): T => tracing.capture(client) } : {};
  const clients = { dynamo: dynamoClient(options), sqs: sqsClient(options), scheduler: schedulerClient(options) };
  const deps: JobRuntimeDeps = {
    db: clients.dynamo,
    jobsTable: config.JOBS_TABLE,
    queues,
    transport: new AwsDispatchTransport({
      sqs: clients.sqs,
      scheduler: clients.scheduler,
      queues: config.JOB_QUEUES,
      scheduleGroup: config.SCHEDULER_GROUP,
      schedulerRoleArn: config.SCHEDULER_ROLE_ARN,
    }),
    clock: systemClock,
    rng: systemRng(),
    logger: createLogger(service),
    metrics: powertoolsMetrics(service),
    ...(tracing ? { tracing } : {}),
    rescueAfterMs: config.RESCUE_AFTER_SECONDS * 1000,
    discardedRetentionSeconds: config.DISCARDED_RETENTION_DAYS * 86400,
  };
  return { deps, config, clients };
}

/** The job layer for a Lambda that runs jobs (a worker, the rescuer), built once per cold start over `queues` (see {@link awsJobParts}). */
export function awsJobRuntime(
  service: string,
  queues: Readonly<Record<string, QueueSpec>>,
  tracing?: Tracing & { capture<T>(client: T): T },
): { runtime: JobRuntime; config: JobsAwsConfig; clients: Pick<AwsClients, 'dynamo' | 'sqs' | 'scheduler'> } {
  const { deps, config, clients } = awsJobParts(service, queues, tracing);
  return { runtime: createJobRuntime(deps), config, clients };
}

/** The job layer's client alone, for a Lambda that enqueues and reads jobs but runs none (the intake, the APIs, the links). */
export function awsJobClientRuntime(
  service: string,
  queues: Readonly<Record<string, QueueSpec>>,
  tracing?: Tracing & { capture<T>(client: T): T },
): { runtime: JobClientRuntime; config: JobsAwsConfig; clients: Pick<AwsClients, 'dynamo' | 'sqs' | 'scheduler'> } {
  const { deps, config, clients } = awsJobParts(service, queues, tracing);
  return { runtime: createJobClientRuntime(deps), config, clients };
}
