import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createAwsClients, localCredentials, RequestCounter } from '../../functions/platform/aws.ts';
import type { AwsClients } from '../../functions/platform/aws.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { tables } from '../../functions/app/system.ts';
import type { TableNames } from '../../functions/app/system.ts';

/** The shared DynamoDB Local's endpoint (started once per run by global-setup). */
export const dynamoEndpoint = (): string => inject('dynamoEndpoint');

/** A fresh set of every redial table under a unique prefix, and clients bound to DynamoDB Local. */
export async function freshTables(): Promise<{ clients: AwsClients; tableNames: TableNames; counter: RequestCounter }> {
  const endpoint = dynamoEndpoint();
  const prefix = `t${randomBytes(5).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(
    endpoint,
    Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })),
  );
  const counter = new RequestCounter();
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials, requestCounter: counter });
  return { clients, tableNames, counter };
}
