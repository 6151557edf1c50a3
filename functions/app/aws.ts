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
import { awsJobRuntime } from '../jobs/aws.ts';
import type { JobsAwsConfig } from '../jobs/aws.ts';
import { queues, tableNamesFromEnv } from './catalog.ts';
import type { SystemHost } from './host.ts';

export { tableEnvName, tableNamesFromEnv } from './catalog.ts';

/**
 * A Lambda's host, built once per cold start: the job layer with its clients (retries off, traced), the
 * table names, this function's logger, metrics and tracer under `service`. What only some functions use is
 * a part the entry point adds (withSesMail and withMailLinks of ./mail-parts.ts, {@link withSecretKey},
 * {@link readSecret}, the calls configuration): each builds its own client, so a bundle holds the clients
 * and contexts its function runs and nothing else (docs/architecture.md, "Bundles").
 *
 * `tracing` is on inside Lambda only (functions/platform/xray.ts); each entry point adds its
 * `handlerMiddleware()`, which opens the invocation's subsegment that every span and annotation joins.
 */
export interface LambdaHost {
  host: SystemHost;
  config: JobsAwsConfig;
  tracing: XrayTracing;
}

/** Builds the host of the function `service`, with `parts` (each given the base host) merged in. */
export function lambdaHost(service: string, ...parts: ((base: LambdaHost) => Partial<SystemHost>)[]): LambdaHost {
  const tracing = new XrayTracing(service);
  const { runtime, config, clients } = awsJobRuntime(service, queues, tracing);
  const base: LambdaHost = {
    host: {
      jobs: runtime,
      db: clients.dynamo,
      tableNames: tableNamesFromEnv(),
      clock: systemClock,
      rng: systemRng(),
      logger: createLogger(service),
      metrics: powertoolsMetrics(service),
    },
    config,
    tracing,
  };
  for (const part of parts) base.host = { ...base.host, ...part(base) };
  return base;
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
