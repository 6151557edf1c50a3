import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { TableDefinition } from '../platform/tables.ts';
import { defaultPolicy, defineKind } from '../jobs/index.ts';

/**
 * The events redial tells its customers about. A domain publishes an event inside its own transaction
 * (publish.ts): what delivers it to each subscribed endpoint commits with the change, so an event is never
 * announced for a change that did not commit, and never lost for one that did.
 */
export const EventType = {
  callCompleted: 'call.completed',
  batchRoundScheduled: 'batch.round_scheduled',
  batchFinalised: 'batch.finalised',
  /** A batch paused for longer than 30 days was cancelled: it dials no more (calls/control). */
  batchCancelled: 'batch.cancelled',
  /** A person asked on a call not to be called again: their number joined the tenant's suppression list (calls/compliance/opt-out.ts). */
  contactOptedOut: 'contact.opted_out',
  /** redial disabled one of the tenant's endpoints (410 Gone, or failing for 5 days): sent to its other endpoints (notices.ts). */
  endpointDisabled: 'endpoint.disabled',
  /** One of the tenant's endpoints was enabled again: sent to its other endpoints (notices.ts). */
  endpointEnabled: 'endpoint.enabled',
  /** The agent booked an appointment during a call: committed with Booked (calendar/booking.ts). */
  appointmentBooked: 'appointment.booked',
  /** The agent cancelled an appointment during the call: committed with the cancellation (calendar/booking.ts). */
  appointmentCancelled: 'appointment.cancelled',
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

/** An event as a delivery carries it (in its job's arguments, or in its wait-list entry). */
export const eventSchema: z.ZodType<WebhookEvent> = z.object({
  id: z.string().regex(/^[A-Za-z0-9._:@#-]{1,64}$/),
  tenantId: z.string().min(1).max(128),
  type: z.enum(eventTypes),
  timestamp: z.string().min(1).max(40),
  data: z.record(z.string(), z.unknown()),
});

/** A new event, stamped now. */
export const newEvent = (input: { tenantId: string; type: EventType; data: Record<string, unknown>; id?: string }, now: number): WebhookEvent => ({
  id: input.id ?? `evt_${randomUUID().replaceAll('-', '')}`,
  tenantId: input.tenantId,
  type: input.type,
  timestamp: new Date(now).toISOString(),
  data: input.data,
});

/**
 * The webhooks table: endpoints and their delivery state, single-table (pk/sk). Every item a tenant owns
 * has a partition key that begins with `TENANT#<tenantId>` (functions/platform/tenancy.ts); an endpoint id
 * names its tenant (`ep_<tenantId>.<hex>`), and `<hex>` below is its own part:
 *
 * | item | pk | sk |
 * |---|---|---|
 * | endpoint (config, health, lease, deliveries made) | `TENANT#<tenantId>#ENDPOINT#<hex>` | `ENDPOINT` |
 * | a delivery waiting for its endpoint (the wait list, `WAIT_SHARDS` = 2 shards) | `TENANT#<tenantId>#WAITLIST#<hex>#<0–1>` | `WAIT#<event timestamp>#<job id>` |
 * | a discarded delivery, for redeliver | `TENANT#<tenantId>#ENDPOINT#<hex>` | `DISCARDED#<job id>` |
 * | a tenant's endpoint (publishing and `GET /v1/endpoints` read these) | `TENANT#<tenantId>` | `ENDPOINT#<createdAt>#<endpoint id>` |
 * | the operators' index of every tenant's endpoints | `ENDPOINTS` | `<createdAt>#<endpoint id>` |
 * | an event, as written before deliveries carried theirs (read, never written) | `EVENT#<id>` | `EVENT` |
 * | an attempt to send an event to an endpoint, kept 30 days (attempts.ts) | `TENANT#<tenantId>#ATTEMPTS#<hex>` | `AT#<attempt time>#<event id>#<attempt>` |
 * | an event kept 30 days for recovery (kept-events.ts, `KEPT_SHARDS` = 4 shards an hour) | `TENANT#<tenantId>#EVENTS#<yyyy-mm-ddThh>#<0–3>` | `<event timestamp>#<event id>` |
 * | a recovery of an endpoint (recover.ts) | `TENANT#<tenantId>#ENDPOINT#<hex>` | `RECOVERY#<recovery id>` |
 *
 * An event travels with what delivers it: in its webhook.deliver job's arguments, or in its wait-list entry
 * while the endpoint is busy (publish.ts). `byWatch` is sparse: only endpoints that hold a lease, held one
 * since the last sweep, or are failing carry `watch`, so the periodic sweep reads just those. Keys only:
 * lease updates that leave `watch` alone (or set it to the value it has) write nothing to the index; the
 * sweep unwatches idle endpoints. `byReceived` is sparse too: only attempts that delivered carry its keys
 * (`receivedBy = TENANT#<tenantId>#RECEIVED#<hex>`, `receivedEvent = <event id>`).
 */
export const webhooksTable = {
  name: 'webhooks',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [
    { name: 'byWatch', partitionKey: 'watch', sortKey: 'pk', projection: 'KEYS_ONLY' },
    // Sparse: only an attempt that delivered carries these (attempts.ts), so a recovery asks by key whether
    // an event reached an endpoint, and the attempt's own PutItem is the only request.
    { name: 'byReceived', partitionKey: 'receivedBy', sortKey: 'receivedEvent', projection: 'KEYS_ONLY' },
  ],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** How long a waiting delivery's entry, and a discard marker, are kept. */
export const EVENT_RETENTION_SECONDS = 30 * 86400;

/** The key of an event written before deliveries carried their event. */
export const eventKey = (id: string) => ({ pk: `EVENT#${id}`, sk: 'EVENT' });

/**
 * webhook.fanout: the deliveries of an event whose tenant has more subscribed endpoints than the publishing
 * transaction takes (publish.ts); the event is in its arguments (or, for a fanout enqueued before events
 * travelled with their jobs, its stored item).
 */
export const webhookFanoutKind = defineKind({
  kind: 'webhook.fanout',
  queue: 'webhooks',
  policy: defaultPolicy,
  timeoutSeconds: 30,
  args: z.object({ eventId: z.string().min(1), event: eventSchema.optional(), exclude: z.array(z.string().max(128)).max(10).optional() }),
  discardReasons: ['not_found'],
  description: 'Enqueues the deliveries of an event to its tenant’s subscribed, enabled endpoints',
});
