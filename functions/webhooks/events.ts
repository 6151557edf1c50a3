import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { TableDefinition } from '../platform/tables.ts';
import { defaultPolicy, defineKind } from '../jobs/index.ts';
import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';

/**
 * The events redial tells its customers about. A domain records an event together with its
 * webhook.fanout job inside its own transaction ({@link prepareEvent}), so an event is never announced
 * for a change that did not commit, and never lost for one that did.
 */
export const EventType = {
  callCompleted: 'call.completed',
  batchRoundScheduled: 'batch.round_scheduled',
  batchFinalised: 'batch.finalised',
} as const;

export type EventType = (typeof EventType)[keyof typeof EventType];
export const eventTypes = Object.values(EventType) as [EventType, ...EventType[]];

/** An event as stored and as delivered (`{type, timestamp, data}` in the Standard Webhooks body). */
export interface WebhookEvent {
  /** `evt_…`; every delivery attempt carries it as `webhook-id`. */
  id: string;
  tenantId: string;
  type: EventType;
  /** ISO-8601 UTC. */
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * The webhooks table: events, endpoints and their delivery state, single-table (pk/sk).
 *
 * | item | pk | sk |
 * |---|---|---|
 * | event | `EVENT#<id>` | `EVENT` |
 * | endpoint (config, health, lease) | `ENDPOINT#<id>` | `ENDPOINT` |
 * | a parked delivery (the wait list) | `WAITLIST#<endpoint id>` | `WAIT#<job createdAt>#<job id>` |
 * | a discarded delivery, for redeliver | `ENDPOINT#<id>` | `DISCARDED#<job id>` |
 * | a tenant's endpoint (fanout reads these) | `TENANT#<tenantId>` | `ENDPOINT#<id>` |
 *
 * `byWatch` is sparse: only endpoints that hold a lease, held one since the last sweep, or are failing
 * carry `watch`, so the periodic sweep reads just those. Keys only: lease updates that leave `watch` alone
 * (or set it to the value it has) write nothing to the index; the sweep unwatches idle endpoints.
 */
export const webhooksTable = {
  name: 'webhooks',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [{ name: 'byWatch', partitionKey: 'watch', sortKey: 'pk', projection: 'KEYS_ONLY' }],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** How long an event is kept for redelivery. */
export const EVENT_RETENTION_SECONDS = 30 * 86400;

export const eventKey = (id: string) => ({ pk: `EVENT#${id}`, sk: 'EVENT' });

/** webhook.fanout: one webhook.deliver per subscribed, enabled endpoint of the event's tenant. */
export const webhookFanoutKind = defineKind({
  kind: 'webhook.fanout',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 30,
  args: z.object({ eventId: z.string().min(1) }),
  discardReasons: ['not_found'],
  description: 'Enqueues one webhook.deliver per subscribed, enabled endpoint of the event’s tenant',
});

/**
 * The writes that record an event and its fanout job, for the caller's TransactWriteItems; after the
 * commit, pass `jobs` to `JobClient.afterCommit`.
 *
 * @example
 * const event = prepareEvent(jobs, tables.webhooks, { tenantId, type: EventType.callCompleted, data }, clock.now());
 * const outcome = await transact(db, [...domainItems, ...event.items]);
 * await jobs.afterCommit(event.jobs);
 */
export function prepareEvent(
  jobs: JobClient,
  tableName: string,
  input: { tenantId: string; type: EventType; data: Record<string, unknown>; id?: string },
  now: number,
): { event: WebhookEvent; items: TransactItem[]; jobs: PreparedJob[] } {
  const event: WebhookEvent = {
    id: input.id ?? `evt_${randomUUID().replaceAll('-', '')}`,
    tenantId: input.tenantId,
    type: input.type,
    timestamp: new Date(now).toISOString(),
    data: input.data,
  };
  const fanout = jobs.prepare(webhookFanoutKind, { eventId: event.id }, { id: `webhook.fanout:${event.id}` });
  const put: TransactItem = {
    name: `event ${event.id}`,
    Put: {
      TableName: tableName,
      Item: { ...eventKey(event.id), ...event, expiresAt: Math.floor(now / 1000) + EVENT_RETENTION_SECONDS },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  return { event, items: [put, fanout.item], jobs: [fanout] };
}
