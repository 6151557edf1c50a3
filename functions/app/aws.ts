import * as z from 'zod';
import { awsJobRuntime } from '../jobs/aws.ts';
import type { AwsClients } from '../platform/aws.ts';
import type { JobsAwsConfig } from '../jobs/aws.ts';
import { systemClock } from '../platform/clock.ts';
import { parseConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { powertoolsMetrics } from '../platform/metrics.ts';
import { systemRng } from '../platform/rng.ts';
import { KmsSecretKey } from '../platform/secret-key.ts';
import { XrayTracing } from '../platform/xray.ts';
import { callsConfigFromEnv } from '../calls/config.ts';
import { parseMailConfig } from '../mail/config.ts';
import { transportFor } from '../mail/transport.ts';
import { queues, System, tables } from './system.ts';
import type { SystemHost, TableKey, TableNames } from './system.ts';

/**
 * The environment variable that carries a table's physical name on AWS: `jobs` → `JOBS_TABLE`,
 * `contactStates` → `CONTACT_STATES_TABLE`. lib/ sets it, {@link tableNamesFromEnv} reads it.
 */
export const tableEnvName = (key: string): string => `${key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}_TABLE`;

/** Every table's physical name, from the environment, checked once at cold start. */
export function tableNamesFromEnv(env: Record<string, string | undefined> = process.env): TableNames {
  const keys = Object.keys(tables) as TableKey[];
  const parsed = parseConfig(z.object(Object.fromEntries(keys.map((key) => [tableEnvName(key), z.string().min(3)]))), env) as Record<string, string>;
  return Object.fromEntries(keys.map((key) => [key, parsed[tableEnvName(key)]])) as TableNames;
}

/** The endpoint-secrets key's ARN: lib/ sets it only on the functions that may use the key (the API and the webhooks worker). */
const secretKeyEnv = z.object({ WEBHOOK_SECRETS_KEY_ARN: z.string().startsWith('arn:').optional() });

/**
 * The system on AWS, built once per Lambda cold start: the job layer with its clients (retries off,
 * traced), the table names, the calls configuration, the mail configuration and transport, the
 * endpoint-secrets key where this function may use it, and this function's logger, metrics and tracer
 * under `service`. The contexts themselves are built on first use (a worker builds only its own).
 *
 * `tracing` is on inside Lambda only (functions/platform/xray.ts); each entry point adds its
 * `handlerMiddleware()`, which opens the invocation's subsegment that every span and annotation joins.
 */
export function awsSystem(service: string): {
  system: System;
  host: SystemHost & Required<Pick<SystemHost, 'calls' | 'mail'>>;
  config: JobsAwsConfig;
  clients: AwsClients;
  tracing: XrayTracing;
} {
  const tracing = new XrayTracing(service);
  const { runtime, config, clients } = awsJobRuntime(service, queues, tracing);
  const { WEBHOOK_SECRETS_KEY_ARN } = parseConfig(secretKeyEnv);
  const mailConfig = parseMailConfig();
  const host = {
    jobs: runtime,
    db: clients.dynamo,
    tableNames: tableNamesFromEnv(),
    clock: systemClock,
    rng: systemRng(),
    logger: createLogger(service),
    metrics: powertoolsMetrics(service),
    calls: callsConfigFromEnv(process.env),
    mail: { config: mailConfig, transport: transportFor(mailConfig.transport, clients) },
    ...(WEBHOOK_SECRETS_KEY_ARN ? { secretKey: new KmsSecretKey(clients.kms, WEBHOOK_SECRETS_KEY_ARN) } : {}),
  } satisfies SystemHost;
  return { system: new System(() => host), host, config, clients, tracing };
}
