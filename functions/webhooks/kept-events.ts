import { createHash } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Expression, putItem } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import { tenantKeyPrefix } from '../platform/tenancy.ts';
import { EVENT_RETENTION_SECONDS } from './events.ts';
import type { WebhookEvent } from './events.ts';

/**
 * Kept events (docs/webhooks.md, "Recovery"): every event published to a tenant that has an endpoint is
 * kept 30 days, keyed by its tenant and time, so a recovery (recover.ts) finds the events published while
 * an endpoint was disabled, or did not subscribe to them, within its window.
 * The Put joins the publishing transaction (publish.ts), so an event is kept exactly when it is published.
 *
 * | item | pk | sk |
 * |---|---|---|
 * | a kept event | `TENANT#<tenantId>#EVENTS#<yyyy-mm-ddThh>#<shard>` | `<event timestamp>#<event id>` |
 *
 * An hour of a tenant's events is spread over {@link KEPT_SHARDS} partitions by a hash of the event id:
 * the largest tenant publishes a fifth of the results at the burst, and one partition per hour would take
 * all of its transactional writes (docs/capacity.md). A reader of a time window reads every shard of every
 * hour in it; a recovery does not need them in order.
 */
export const KEPT_SHARDS = 4;
const HOUR_MS = 3600_000;

/** A kept event as stored. */
export interface KeptEventRow {
  pk: string;
  sk: string;
  event: WebhookEvent;
  expiresAt: number;
}

/** The hour partition of a time (`yyyy-mm-ddThh`, UTC). */
export const hourOf = (ms: number): string => new Date(ms).toISOString().slice(0, 13);

/** The partition of one shard of one hour of a tenant's kept events. */
export const keptPartition = (tenantId: string, hour: string, shard: number): string => `${tenantKeyPrefix(tenantId)}EVENTS#${hour}#${shard}`;

/** The key of a kept event. */
export function keptKey(event: WebhookEvent): { pk: string; sk: string } {
  const shard = createHash('sha256').update(event.id).digest().readUInt32BE(0) % KEPT_SHARDS;
  return { pk: keptPartition(event.tenantId, hourOf(Date.parse(event.timestamp)), shard), sk: `${event.timestamp}#${event.id}` };
}

/** The Put of a kept event, for the publishing transaction. */
export function keptEventItem(tableName: string, event: WebhookEvent): TransactItem {
  const row: KeptEventRow = { ...keptKey(event), event, expiresAt: Math.floor(Date.parse(event.timestamp) / 1000) + EVENT_RETENTION_SECONDS };
  return putItem(`kept ${event.id}`, tableName, row);
}

/** Where a reader of a window of kept events is: the hour, the shard, and the last key read there. */
export interface KeptPosition {
  /** The hour's start, epoch ms. */
  hour: number;
  shard: number;
  /** The sort key of the last event read in this shard of this hour. */
  after?: string;
}

/**
 * Reads a tenant's kept events of a window `[since, until)`, a page at a time, from a position a caller
 * keeps between pages ({@link KeptPosition}; `undefined` when the window is read to its end).
 */
export class KeptEvents {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** Where reading a window starts. */
  static start(since: number): KeptPosition {
    return { hour: Math.floor(since / HOUR_MS) * HOUR_MS, shard: 0 };
  }

  /**
   * Up to `limit` kept events of the window from `at`, in one Query of one shard of one hour (an empty page
   * moves on to the next shard or hour), and where the next page starts.
   */
  async page(tenantId: string, window: { since: string; until: string }, at: KeptPosition, limit: number): Promise<{ events: WebhookEvent[]; next: KeptPosition | undefined }> {
    const e = new Expression();
    const key = e.and(e.eq('pk', keptPartition(tenantId, hourOf(at.hour), at.shard)), e.between('sk', window.since, window.until));
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(key),
        ConsistentRead: true,
        Limit: limit,
        ...(at.after !== undefined ? { ExclusiveStartKey: { pk: keptPartition(tenantId, hourOf(at.hour), at.shard), sk: at.after } } : {}),
      }),
    );
    const rows = (result.Items ?? []) as KeptEventRow[];
    // `until` is exclusive: an event at exactly `until` sorts after `<until>` (its `#<id>`), so BETWEEN keeps it out.
    const events = rows.map((r) => r.event);
    const last = result.LastEvaluatedKey?.['sk'] as string | undefined;
    if (last !== undefined) return { events, next: { hour: at.hour, shard: at.shard, after: last } };
    if (at.shard + 1 < KEPT_SHARDS) return { events, next: { hour: at.hour, shard: at.shard + 1 } };
    const nextHour = at.hour + HOUR_MS;
    return { events, next: new Date(nextHour).toISOString() < window.until ? { hour: nextHour, shard: 0 } : undefined };
  }
}
