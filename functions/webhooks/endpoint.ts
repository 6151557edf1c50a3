import { z } from 'zod';
import { eventTypes } from './events.ts';
import type { EventType } from './events.ts';

/** Why an endpoint was disabled. */
export const DisabledReason = {
  /** It answered 410 Gone. */
  gone: 'gone',
  /** It failed continuously for five days (counted from failingSince). */
  failing: 'failing',
} as const;
export type DisabledReason = (typeof DisabledReason)[keyof typeof DisabledReason];

/**
 * An endpoint as stored (`pk = ENDPOINT#<id>, sk = ENDPOINT`). Times are ISO-8601 UTC strings.
 *
 * The lease fields: `holder` is the webhook.deliver job allowed to talk to the endpoint, until
 * `busyUntil`. While the endpoint is failing, the holder is the probe; `nextProbeAt` is when the
 * endpoint may be tried next. `watch` puts the endpoint in the sparse `byWatch` index the sweep reads.
 */
export interface EndpointRow {
  pk: string;
  sk: 'ENDPOINT';
  endpointId: string;
  tenantId: string;
  url: string;
  /** Subscribed event types; absent means every type. */
  eventTypes?: EventType[];
  /** `whsec_…`; never shown after registration. */
  secret: string;
  createdAt: string;
  disabled: boolean;
  disabledReason?: DisabledReason;
  disabledAt?: string;
  failingSince?: string;
  nextProbeAt?: string;
  holder?: string;
  busyUntil?: string;
  watch?: string;
  /** The client's `Idempotency-Key`, when it sent one (the endpoint id was derived from it). */
  idempotencyKey?: string;
  /** The sha256 of the keyed registration's canonical body, to tell a retry from a different request. */
  requestHash?: string;
}

/** What `GET /v1/endpoints/{id}` shows: never the secret (docs/webhooks.md, "Endpoints"). */
export const endpointViewSchema = z.object({
  endpointId: z.string(),
  url: z.string(),
  eventTypes: z.array(z.enum(eventTypes)).nullable(),
  failingSince: z.string().nullable(),
  disabled: z.boolean(),
  disabledReason: z.string().nullable(),
});
export type EndpointView = z.infer<typeof endpointViewSchema>;

export const endpointView = (row: EndpointRow): EndpointView => ({
  endpointId: row.endpointId,
  url: row.url,
  eventTypes: row.eventTypes ?? null,
  failingSince: row.failingSince ?? null,
  disabled: row.disabled,
  disabledReason: row.disabledReason ?? null,
});

/** Whether an endpoint wants events of this type. */
export const subscribes = (row: Pick<EndpointRow, 'eventTypes'>, type: EventType): boolean =>
  !row.eventTypes || row.eventTypes.length === 0 || row.eventTypes.includes(type);

export const endpointKey = (id: string) => ({ pk: `ENDPOINT#${id}`, sk: 'ENDPOINT' as const });
export const tenantEndpointKey = (tenantId: string, endpointId: string) => ({ pk: `TENANT#${tenantId}`, sk: `ENDPOINT#${endpointId}` });

/**
 * A delivery's place in its endpoint's wait list: `WAIT#<job createdAt>#<job id>`, so the list is in
 * enqueue order (oldest first) and a delivery can find its own entry without storing anything.
 */
export const waitKey = (endpointId: string, jobCreatedAt: string, jobId: string) => ({ pk: `ENDPOINT#${endpointId}`, sk: `WAIT#${jobCreatedAt}#${jobId}` });

/** A record that a delivery was discarded (or may be: its last attempt started), for redeliver. */
export const discardMarkerKey = (endpointId: string, jobId: string) => ({ pk: `ENDPOINT#${endpointId}`, sk: `DISCARDED#${jobId}` });

/** The deterministic id of the delivery of one event to one endpoint: a retried fanout creates no duplicate. */
export const deliveryJobId = (eventId: string, endpointId: string): string => `webhook.deliver:${eventId}:${endpointId}`;
