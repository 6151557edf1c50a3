import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

/**
 * A DynamoDB table declared once, as data: CDK (lib/) and the local runtime both build from it, so the
 * keys, indexes and TTL that tests run against are the ones that deploy.
 */
export interface TableDefinition {
  /** Logical name; the physical name is a prefix plus this. */
  name: string;
  partitionKey: string;
  sortKey?: string;
  indexes: readonly IndexDefinition[];
  /** Epoch-seconds attribute DynamoDB's TTL deletes by. */
  ttlAttribute?: string;
}

/** A global secondary index, all string keys. */
export interface IndexDefinition {
  name: string;
  partitionKey: string;
  sortKey?: string;
  /** Projected attributes; ALL when omitted. */
  projection?: 'ALL' | 'KEYS_ONLY';
}

/** The CreateTable request for a definition, as the local runtime and tests issue it (on-demand billing). */
export function createTableInput(def: TableDefinition, tableName: string): CreateTableCommandInput {
  const attributes = new Set<string>([def.partitionKey]);
  if (def.sortKey) attributes.add(def.sortKey);
  for (const index of def.indexes) {
    attributes.add(index.partitionKey);
    if (index.sortKey) attributes.add(index.sortKey);
  }
  const keys = (pk: string, sk?: string) => [
    { AttributeName: pk, KeyType: 'HASH' as const },
    ...(sk ? [{ AttributeName: sk, KeyType: 'RANGE' as const }] : []),
  ];
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    KeySchema: keys(def.partitionKey, def.sortKey),
    ...(def.indexes.length
      ? {
          GlobalSecondaryIndexes: def.indexes.map((index) => ({
            IndexName: index.name,
            KeySchema: keys(index.partitionKey, index.sortKey),
            Projection: { ProjectionType: index.projection ?? 'ALL' },
          })),
        }
      : {}),
  };
}
