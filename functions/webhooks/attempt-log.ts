import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Expression, InvalidCursorError, keyCursor } from '../platform/dynamo.ts';
import { attemptsPartition, receivedPartition } from './attempts.ts';
import type { AttemptFilter, AttemptRow } from './attempts.ts';
import { webhooksTable } from './events.ts';

/** The `byReceived` index (events.ts). */
const RECEIVED_INDEX = webhooksTable.indexes[1].name;

/** The lowest and highest sort keys of a time range of the attempt log (`until` exclusive: `AT#<until>` sorts before any attempt at it). */
function range(filter: AttemptFilter): { low: string; high: string } {
  return { low: `AT#${filter.since ?? ''}`, high: filter.until === undefined ? 'AT$' : `AT#${filter.until}` };
}

/**
 * The attempt log's store (attempts.ts): one PutItem per attempt, the log read newest first a page at a
 * time, and the `byReceived` index asked which events an endpoint received.
 */
export class AttemptLog {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** Writes one attempt: a single PutItem (a delivered one carries `byReceived`'s keys in the same item). */
  async put(row: AttemptRow): Promise<void> {
    await this.db.send(new PutCommand({ TableName: this.tableName, Item: row }));
  }

  /**
   * One page of an endpoint's attempts, newest first: a Query of its own partition
   * (`TENANT#<tenantId>#ATTEMPTS#<hex>`) between `since` and `until`, `status` and `eventType` as a
   * filter (a filtered page may hold fewer than `limit`, even none, and still a cursor). The cursor names
   * the partition and must lie in the range asked: anything else is an `InvalidCursorError`.
   */
  async list(endpointId: string, filter: AttemptFilter, limit: number, cursor?: string): Promise<{ attempts: AttemptRow[]; cursor?: string }> {
    const partition = attemptsPartition(endpointId);
    const pages = keyCursor(['pk', 'sk'], { pk: partition });
    const startKey = pages.decode(cursor);
    const { low, high } = range(filter);
    if (startKey && !(startKey['sk']! >= low && startKey['sk']! <= high)) throw new InvalidCursorError();
    const e = new Expression();
    const filters: string[] = [];
    if (typeof filter.status === 'number') filters.push(e.eq('status', filter.status));
    else if (filter.status !== undefined) filters.push(e.eq('result', filter.status));
    if (filter.eventType !== undefined) filters.push(e.eq('eventType', filter.eventType));
    const key = e.and(e.eq('pk', partition), e.between('sk', low, high));
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(key, filters.length === 0 ? undefined : filters.length === 1 ? filters[0] : e.and(...filters)),
        ScanIndexForward: false,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const next = pages.encode(result.LastEvaluatedKey);
    return { attempts: (result.Items ?? []) as AttemptRow[], ...(next ? { cursor: next } : {}) };
  }

  /**
   * Which of `eventIds` the endpoint received (an attempt of it delivered), asking `byReceived` by key:
   * one Query per event, all at once. The index is eventually consistent: an attempt that delivered a
   * moment ago may not show yet.
   */
  async received(endpointId: string, eventIds: readonly string[]): Promise<Set<string>> {
    const partition = receivedPartition(endpointId);
    const found = await Promise.all(
      eventIds.map(async (eventId) => {
        const e = new Expression();
        const result = await this.db.send(
          new QueryCommand({ TableName: this.tableName, IndexName: RECEIVED_INDEX, ...e.forQuery(e.and(e.eq('receivedBy', partition), e.eq('receivedEvent', eventId))), Limit: 1 }),
        );
        return (result.Items ?? []).length > 0 ? eventId : undefined;
      }),
    );
    return new Set(found.filter((id): id is string => id !== undefined));
  }
}
