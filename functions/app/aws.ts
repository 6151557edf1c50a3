import * as z from 'zod';
import { kmsClient, readSecretString, secretsClient } from '../platform/aws.ts';
import { systemClock } from '../platform/clock.ts';
import { parseConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { powertoolsMetrics } from '../platform/metrics.ts';
import { systemRng } from '../platform/rng.ts';
import { KmsSecretKey } from '../platform/secret-key.ts';
import type { SecretKey } from '../platform/secret-key.ts';
import { XrayTracing } from '../platform/xray.ts';
import { awsJobClientRuntime, awsJobRuntime } from '../jobs/aws.ts';
import type { JobsAwsConfig } from '../jobs/aws.ts';
import type { JobClientRuntime } from '../jobs/client-runtime.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import { queues, tableNamesFromEnv } from './catalog.ts';
import type { SystemHost } from './host.ts';

export { tableEnvName, tableNamesFromEnv } from './catalog.ts';

/**
 * A Lambda's host, built once per cold start: the job layer with its clients (retries off, traced), the
 * table names, this function's logger, metrics and tracer under `service`. What only some functions use is
 * a part the entry point adds (withSesMail and withMailLinks of ./mail-parts.ts, {@link withSecretKey},
 * {@link readSecret}, the calls configuration): each builds its own client, so a bundle holds the clients
 * and contexts its function runs and nothing else (docs/architecture.md, "Bundles"). A function that runs
 * jobs (a worker, the rescuer) has the whole job runtime ({@link lambdaHost}); one that only enqueues and
 * reads them has its client alone ({@link lambdaClientHost}), without the runners.
 *
 * `tracing` is on inside Lambda only (functions/platform/xray.ts); each entry point adds its
 * `handlerMiddleware()`, which opens the invocation's subsegment that every span and annotation joins.
 */
export interface LambdaHost<J extends JobClientRuntime = JobClientRuntime> {
  host: SystemHost & { jobs: J };
  config: JobsAwsConfig;
  tracing: XrayTracing;
}

/** What an entry point adds to its host, given the base host (never the job layer: that is the host's). */
export type LambdaHostPart = (base: LambdaHost) => Partial<Omit<SystemHost, 'jobs'>>;

function assemble<J extends JobClientRuntime>(service: string, tracing: XrayTracing, jobs: { runtime: J; config: JobsAwsConfig; clients: { dynamo: SystemHost['db'] } }, parts: LambdaHostPart[]): LambdaHost<J> {
  const base: LambdaHost<J> = {
    host: {
      jobs: jobs.runtime,
      db: jobs.clients.dynamo,
      tableNames: tableNamesFromEnv(),
      clock: systemClock,
      rng: systemRng(),
      logger: createLogger(service),
      metrics: powertoolsMetrics(service),
    },
    config: jobs.config,
    tracing,
  };
  for (const part of parts) base.host = { ...base.host, ...part(base) };
  return base;
}

/** Builds the host of the function `service`, which runs jobs, with `parts` (each given the base host) merged in. */
export function lambdaHost(service: string, ...parts: LambdaHostPart[]): LambdaHost<JobRuntime> {
  const tracing = new XrayTracing(service);
  return assemble(service, tracing, awsJobRuntime(service, queues, tracing), parts);
}

/** Builds the host of the function `service`, which runs no job (its job layer is the client alone), with `parts` merged in. */
export function lambdaClientHost(service: string, ...parts: LambdaHostPart[]): LambdaHost<JobClientRuntime> {
  const tracing = new XrayTracing(service);
  return assemble(service, tracing, awsJobClientRuntime(service, queues, tracing), parts);
}

/** The endpoint-secrets key's ARN: lib/ sets it only on the functions that may use the key. */
const secretKeyEnv = z.object({ WEBHOOK_SECRETS_KEY_ARN: z.string().startsWith('arn:').optional() });

/** The endpoint-secrets key (KMS), where lib/ gave this function one: the APIs and the webhooks workers. */
export const withSecretKey = ({ tracing }: LambdaHost): { secretKey?: SecretKey } => {
  const { WEBHOOK_SECRETS_KEY_ARN } = parseConfig(secretKeyEnv);
  return WEBHOOK_SECRETS_KEY_ARN ? { secretKey: new KmsSecretKey(kmsClient({ capture: (client) => tracing.capture(client) }), WEBHOOK_SECRETS_KEY_ARN) } : {};
};

/** A Secrets Manager secret's string, read once at cold start (the intake's signing secret). */
export const readSecret = (secretArn: string): Promise<string> => readSecretString(secretsClient(), secretArn);
