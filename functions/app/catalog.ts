import * as z from 'zod';
import { parseConfig } from '../platform/config.ts';
import type { TableDefinition } from '../platform/tables.ts';
import type { JobKind, QueueSpec } from '../jobs/index.ts';
import { jobsTable } from '../jobs/row.ts';
import { supplierInvokeKind } from '../calendar/kinds.ts';
import { calendarTable } from '../calendar/model.ts';
import { calendarQueues } from '../calendar/queues.ts';
import { callsKinds } from '../calls/kinds.ts';
import { callsTable } from '../calls/model.ts';
import { callsQueues } from '../calls/queues.ts';
import { mailKinds } from '../mail/kinds.ts';
import { mailQueues } from '../mail/queues.ts';
import { mailTable } from '../mail/store.ts';
import { probeKind } from '../ops/probe.ts';
import { opsQueues } from '../ops/queues.ts';
import { webhooksTable } from '../webhooks/events.ts';
import { webhookKinds } from '../webhooks/kinds.ts';
import { webhooksQueues } from '../webhooks/queues.ts';

/**
 * What every deployed function and the CDK app agree on, as data: the tables and the job queues. It
 * imports each context's definitions only (never its handlers or routes), so a Lambda entry point that
 * enqueues a job on any queue does not carry the code of the context that runs it (docs/architecture.md,
 * "Bundles"). functions/app/system.ts re-exports it for the local host.
 */

/** Every table, by logical name: the job layer's and each context's. */
export const tables = {
  jobs: jobsTable,
  mail: mailTable,
  webhooks: webhooksTable,
  calls: callsTable,
  calendar: calendarTable,
} as const satisfies Record<string, TableDefinition>;
export type TableKey = keyof typeof tables;
export type TableNames = Record<TableKey, string>;

/** Every job queue, by name: one SQS queue and one worker function each on AWS. */
export const queues = {
  ...mailQueues,
  ...webhooksQueues,
  ...callsQueues,
  ...opsQueues,
  ...calendarQueues,
} as const satisfies Record<string, QueueSpec>;
export type QueueName = keyof typeof queues;
export const queueNames = Object.keys(queues) as QueueName[];

/** Every job kind (data only), in the order of the policy table: the rescuer, the ops routes and the panel read it. */
export const allKinds: readonly JobKind<unknown>[] = [...mailKinds, ...webhookKinds, ...callsKinds, probeKind, supplierInvokeKind] as readonly JobKind<unknown>[];

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
