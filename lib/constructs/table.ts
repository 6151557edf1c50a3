import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { TableDefinition } from '../../functions/platform/tables.ts';

const stringKey = (name: string): dynamodb.Attribute => ({ name, type: dynamodb.AttributeType.STRING });

/** How a table outlives its stack. */
export interface TableLifecycle {
  /**
   * Deletion protection on, and the table kept when the stack is deleted (job rows are the truth; a
   * queue message only wakes them). Off for throw-away test stacks: the table is deleted with the stack.
   *
   * @default true
   */
  readonly protect?: boolean;
}

/**
 * The DynamoDB table for a {@link TableDefinition}: the same keys, indexes and TTL attribute the local
 * runtime creates from that definition, billed on demand, with point-in-time recovery. Its name is
 * CloudFormation's (never fixed), so a stack deployed again after a destroy creates a new table beside a
 * retained one instead of colliding with it.
 *
 * @example
 * const jobs = definedTable(this, 'JobsTable', jobsTable);
 */
export function definedTable(scope: Construct, id: string, definition: TableDefinition, lifecycle: TableLifecycle = {}): dynamodb.TableV2 {
  const protect = lifecycle.protect ?? true;
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
    deletionProtection: protect,
    removalPolicy: protect ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
}
