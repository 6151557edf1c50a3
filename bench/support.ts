import { randomBytes } from 'node:crypto';
import { createAwsClients, localCredentials, RequestCounter } from '../functions/platform/aws.ts';
import type { AwsClients } from '../functions/platform/aws.ts';
import { ensureTables } from '../functions/platform/local/dynamodb-local.ts';
import { tables } from '../functions/app/system.ts';
import type { TableNames } from '../functions/app/system.ts';

/** Fresh tables under a unique prefix in a running DynamoDB Local, with a request counter on the clients. */
export async function benchTables(endpoint: string): Promise<{ clients: AwsClients; tableNames: TableNames; counter: RequestCounter }> {
  const prefix = `b${randomBytes(4).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(endpoint, Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
  const counter = new RequestCounter();
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials, requestCounter: counter });
  return { clients, tableNames, counter };
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-GB', { maximumFractionDigits: digits, minimumFractionDigits: digits });
