import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionFailure, Expression, IncompleteReadError, MAX_BATCH_GET_KEYS } from '../platform/dynamo.ts';
import { CHECK_SHARDS, checkPartition } from './row.ts';

/**
 * How far the rescuer has looked in each byCheck partition: one item per partition (`rescuer#c07`)
 * holding the sort key of the last entry it dealt with. Every entry behind it belongs to a finished job
 * (or one whose entry was moved ahead), so a pass reads only what came due since the last.
 */
export class Watermarks {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  static id(partition: number): string {
    return `rescuer#${checkPartition(partition)}`;
  }

  /** Each partition's watermark, in partition order (undefined: never walked). */
  async read(): Promise<(string | undefined)[]> {
    const keys = Array.from({ length: CHECK_SHARDS }, (_, n) => ({ id: Watermarks.id(n) }));
    const found = new Map<string, string>();
    for (let i = 0; i < keys.length; i += MAX_BATCH_GET_KEYS) {
      const result = await this.db.send(new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys.slice(i, i + MAX_BATCH_GET_KEYS), ConsistentRead: true } } }));
      const unprocessed = result.UnprocessedKeys?.[this.tableName]?.Keys?.length ?? 0;
      if (unprocessed > 0) throw new IncompleteReadError(unprocessed);
      for (const item of result.Responses?.[this.tableName] ?? []) found.set(item['id'] as string, item['checkedTo'] as string);
    }
    return keys.map((k) => found.get(k.id));
  }

  /** Moves a partition's watermark forward to `to`; never back (an overlapping pass that got further stands). */
  async advance(partition: number, to: string): Promise<void> {
    const e = new Expression();
    e.when(e.or(e.notExists('checkedTo'), e.lt('checkedTo', to))).set('checkedTo', to);
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: { id: Watermarks.id(partition) }, ...e.build() }));
    } catch (error) {
      if (!conditionFailure(error).failed) throw error;
    }
  }
}
