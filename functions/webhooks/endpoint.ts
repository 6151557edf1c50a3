import { createHash } from 'node:crypto';
import * as z from 'zod';
import { ownedIds, tenantKeyPrefix } from '../platform/tenancy.ts';
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
 * An endpoint as stored (`pk = TENANT#<tenantId>#ENDPOINT#<hex>, sk = ENDPOINT`: {@link endpointKey}). Times are ISO-8601 UTC strings.
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
  /**
   * The signing secret (`whsec_…`), encrypted with the endpoint-secrets key and bound to this endpoint and
   * its tenant (functions/webhooks/secrets.ts). Never shown after registration.
   */
  secretCiphertext?: string;
  /** The signing secret in plaintext: only on endpoints registered before secrets were encrypted (read as they are until sealed). */
  secret?: string;
  createdAt: string;
  disabled: boolean;
  disabledReason?: DisabledReason;
  disabledAt?: string;
  failingSince?: string;
  nextProbeAt?: string;
  holder?: string;
  busyUntil?: string;
  watch?: string;
  /**
   * Deliveries made to the endpoint that succeeded, counted by the lease holder's last write of each run
   * (a delivery sent within another's run leaves no job row of its own: delivery.ts). Absent until the first.
   */
  delivered?: number;
  /** The client's `Idempotency-Key`, when it sent one (the endpoint id was derived from it). */
  idempotencyKey?: string;
  /** The sha256 of the keyed registration's canonical body, to tell a retry from a different request. */
  requestHash?: string;
  /** The owner's note about the endpoint (`description` on POST and PATCH), at most 500 characters. */
  description?: string;
  /**
   * The secret that signed before the last rotation (rotation.ts), sealed like `secretCiphertext`: every
   * delivery is signed with both until `previousSecretUntil`, then with the new one alone. At most two are live.
   */
  previousSecretCiphertext?: string;
  /** When the previous secret stops signing (24 h after its rotation, or at once with `expireOldNow`). */
  previousSecretUntil?: string;
  /** When the secret was last rotated. */
  rotatedAt?: string;
  /**
   * Set when its owner deleted the endpoint (`DELETE /v1/endpoints/{id}`, manage.ts): from then on no
   * delivery sends to it, every tenant route answers 404 for it, and it leaves its tenant's listing and
   * routing. The item itself stays as a tombstone until `expiresAt` (30 days, the table's TTL) so its
   * deliveries and attempts stay readable: a reader of the attempt log reads it with `getEndpoint` and
   * checks `deletedAt` itself. A deleted endpoint is also `disabled`, so every lease condition refuses it.
   */
  deletedAt?: string;
  /** The TTL of a deleted endpoint's tombstone (epoch seconds); absent on a live endpoint. */
  expiresAt?: number;
  /** Waiting deliveries the purge after its deletion discarded (`endpoint_deleted`), counted. */
  purged?: number;
  /** The `disabledAt` whose notice (owner mail, `endpoint.disabled` event) is committed: notices.ts. */
  noticedAt?: string;
}

/** What `GET /v1/endpoints/{id}` shows: never the secret (docs/webhooks.md, "Endpoints"). */
export const endpointViewSchema = z.object({
  endpointId: z.string(),
  tenantId: z.string(),
  url: z.string(),
  eventTypes: z.array(z.enum(eventTypes)).nullable(),
  createdAt: z.string(),
  failingSince: z.string().nullable(),
  disabled: z.boolean(),
  disabledReason: z.string().nullable(),
  disabledAt: z.string().nullable(),
  /** Deliveries that succeeded, counted by the lease holder (a delivery sent within another's run has no job to list). */
  delivered: z.number().int(),
  description: z.string().nullable(),
  /** The secret's rotation state: when it was last rotated, and until when the previous secret still signs too (null: none live). */
  rotation: z.object({ rotatedAt: z.string(), previousSecretUntil: z.string().nullable() }).nullable(),
});
export type EndpointView = z.infer<typeof endpointViewSchema>;

/** What `GET /v1/endpoints/{id}` shows: the view, and the deliveries waiting in its list now. */
export const endpointDetailSchema = endpointViewSchema.extend({
  /** Deliveries waiting for the endpoint's lease: published while it was busy (no job yet), or parked jobs. */
  waiting: z.number().int(),
});
export type EndpointDetail = z.infer<typeof endpointDetailSchema>;

export const endpointView = (row: EndpointRow): EndpointView => ({
  endpointId: row.endpointId,
  tenantId: row.tenantId,
  url: row.url,
  eventTypes: row.eventTypes ?? null,
  createdAt: row.createdAt,
  failingSince: row.failingSince ?? null,
  disabled: row.disabled,
  disabledReason: row.disabledReason ?? null,
  disabledAt: row.disabledAt ?? null,
  delivered: row.delivered ?? 0,
  description: row.description ?? null,
  rotation: row.rotatedAt ? { rotatedAt: row.rotatedAt, previousSecretUntil: row.previousSecretCiphertext && row.previousSecretUntil ? row.previousSecretUntil : null } : null,
});

/** Whether an endpoint wants events of this type. */
export const subscribes = (row: Pick<EndpointRow, 'eventTypes'>, type: EventType): boolean =>
  !row.eventTypes || row.eventTypes.length === 0 || row.eventTypes.includes(type);

/**
 * Endpoint ids name their tenant: `ep_<tenantId>.<32 hex>` (functions/platform/tenancy.ts `ownedIds`), so a
 * delivery, given its endpoint's id, builds the endpoint's keys without a read, and a tenant route builds
 * them from its scope (`inScope`): another tenant's endpoint id names nothing there.
 */
export const endpointIds = ownedIds('ep', 'an endpoint');

/** The partition of an endpoint's row and its discard markers: `TENANT#<tenantId>#ENDPOINT#<hex>`. */
export function endpointPartition(endpointId: string): string {
  const id = endpointIds.parse(endpointId);
  if (!id) throw new RangeError(`not an endpoint id: ${endpointId}`);
  return `${tenantKeyPrefix(id.tenantId)}ENDPOINT#${id.hex}`;
}

/** The endpoint id of an endpoint's partition key, if it is one. */
export function endpointIdOfPartition(pk: string): string | undefined {
  const match = /^TENANT#([^#]+)#ENDPOINT#([0-9a-f]{32})$/.exec(pk);
  return match ? endpointIds.make(match[1]!, match[2]!) : undefined;
}

export const endpointKey = (id: string) => ({ pk: endpointPartition(id), sk: 'ENDPOINT' as const });

/**
 * The entry an endpoint leaves in its tenant's partition when it is registered (in the same transaction):
 * publishing reads the tenant's endpoints from these, and `GET /v1/endpoints` lists them newest first (the
 * sort key starts with the registration time), each a Query of the tenant's own partition.
 */
export const tenantEndpointsPartition = (tenantId: string): string => `TENANT#${tenantId}`;
export const tenantEndpointKey = (tenantId: string, createdAt: string, endpointId: string) => ({ pk: tenantEndpointsPartition(tenantId), sk: `ENDPOINT#${createdAt}#${endpointId}` });

/**
 * The entry an endpoint leaves in the operators' index of every tenant's endpoints when it is registered
 * (in the same transaction): `GET /v1/ops/endpoints` (the panel) reads the newest with a Query of this one
 * partition instead of a Scan. Written once per endpoint and never updated, so the partition takes only
 * the registration rate.
 */
export const ENDPOINT_INDEX_PK = 'ENDPOINTS';
export const endpointIndexKey = (createdAt: string, endpointId: string) => ({ pk: ENDPOINT_INDEX_PK, sk: `${createdAt}#${endpointId}` });

/**
 * The wait list's partitions. A delivery's entry goes to one of {@link WAIT_SHARDS} partitions by a hash of
 * its id, apart from the endpoint row: a busy endpoint's entries are put (in the publishing transaction,
 * at twice the units) and deleted at its event rate, which under one key would pass half of DynamoDB's
 * per-partition rate for an endpoint taking a fifth of the results (docs/capacity.md). Whoever reads the
 * list reads every shard and merges them by sort key.
 */
export const WAIT_SHARDS = 2;
/** The partition of shard `n` of an endpoint's wait list: `TENANT#<tenantId>#WAITLIST#<hex>#<n>`. */
export function waitListPartition(endpointId: string, shard: number): string {
  const id = endpointIds.parse(endpointId);
  if (!id) throw new RangeError(`not an endpoint id: ${endpointId}`);
  return `${tenantKeyPrefix(id.tenantId)}WAITLIST#${id.hex}#${shard}`;
}
/** The endpoint id of a wait-list shard's partition key, if it is one. */
export function endpointIdOfWaitList(pk: string): string | undefined {
  const match = /^TENANT#([^#]+)#WAITLIST#([0-9a-f]{32})#\d+$/.exec(pk);
  return match ? endpointIds.make(match[1]!, match[2]!) : undefined;
}

/** Every partition of an endpoint's wait list. */
export const waitListPartitions = (endpointId: string): string[] => Array.from({ length: WAIT_SHARDS }, (_, n) => waitListPartition(endpointId, n));

/**
 * A delivery's place in its endpoint's wait list: `WAIT#<event timestamp>#<job id>` in the shard its id
 * hashes to, so the list is in the order the events happened (oldest first), and the delivery (or whoever
 * publishes it again) finds its entry from its event and ids alone. A delivery enqueued before deliveries
 * carried their event uses its job's creation time instead.
 */
export const waitKey = (endpointId: string, eventTimestamp: string, jobId: string) => ({
  pk: waitListPartition(endpointId, createHash('sha256').update(jobId).digest().readUInt32BE(0) % WAIT_SHARDS),
  sk: `WAIT#${eventTimestamp}#${jobId}`,
});

/** A record that a delivery was discarded (or may be: its last attempt started), for redeliver. */
export const discardMarkerKey = (endpointId: string, jobId: string) => ({ pk: endpointPartition(endpointId), sk: `DISCARDED#${jobId}` });

/** The deterministic id of the delivery of one event to one endpoint: a retried fanout creates no duplicate. */
export const deliveryJobId = (eventId: string, endpointId: string): string => `webhook.deliver:${eventId}:${endpointId}`;
