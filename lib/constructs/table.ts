import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { TableDefinition } from '../../functions/platform/tables.ts';

const stringKey = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

/**
 * The DynamoDB table for a {@link TableDefinition}: the same keys, indexes and TTL attribute the local
 * runtime creates from that definition, billed on demand, with point-in-time recovery, kept when the
 * stack is deleted (job rows are the truth; a queue message only wakes them).
 *
 * @example
 * const jobs = definedTable(this, 'JobsTable', jobsTable);
 */
export function definedTable(scope: Construct, id: string, definition: TableDefinition): dynamodb.TableV2 {
  return new dynamodb.TableV2(scope, id, {
    partitionKey: stringKey(definition.partitionKey),
    ...(definition.sortKey ? { sortKey: stringKey(definition.sortKey) } : {}),
    globalSecondaryIndexes: definition.indexes.map((index) => ({
      indexName: index.name,
      partitionKey: stringKey(index.partitionKey),
      ...(index.sortKey ? { sortKey: stringKey(index.sortKey) } : {}),
      projectionType: index.projection === 'KEYS_ONLY' ? dynamodb.ProjectionType.KEYS_ONLY : dynamodb.ProjectionType.ALL,
    })),
    ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
    billing: dynamodb.Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    removalPolicy: RemovalPolicy.RETAIN,
  });
}
