import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, paginateQuery, PutCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { assertNever } from '../platform/assert.ts';
import { iso } from '../platform/clock.ts';
import { batchGet, conditionFailure, Expression, keyCursor, MAX_BATCH_GET_KEYS, named, projection, putItem, queryKeyAttributes, transact, updateItem } from '../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../platform/dynamo.ts';
import { EndpointExistsError, EndpointNotFoundError } from './errors.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import {
  discardMarkerKey,
  ENDPOINT_INDEX_PK,
  endpointIdOfPartition,
  endpointIds,
  endpointIndexKey,
  endpointKey,
  endpointPartition,
  tenantEndpointKey,
  tenantEndpointsPartition,
  waitListPartitions,
} from './endpoint.ts';
import type { DisabledReason, EndpointRow } from './endpoint.ts';
import { EVENT_RETENTION_SECONDS, eventKey, webhooksTable } from './events.ts';
import type { EventType, WebhookEvent } from './events.ts';
import type { EndpointChange } from './lease.ts';

/**
 * The `byWatch` partitions. An endpoint the sweep should look at carries `watch = endpoint#<shard>`, the
 * shard a hash of its id, so lease writes spread over {@link WATCH_SHARDS} index partitions instead of one
 * (docs/capacity.md). `endpoint` alone is the unsharded value rows written before carry; the sweep still
 * reads it, and any lease write moves such a row to its shard.
 */
export const WATCH_SHARDS = 16;
const LEGACY_WATCHED = 'endpoint';
/** The value of `watch` for one endpoint. */
export const watchValue = (endpointId: string): string => `endpoint#${createHash('sha256').update(endpointId).digest().readUInt32BE(0) % WATCH_SHARDS}`;
/** Every value of `watch` the sweep reads. */
export const watchPartitions = (): string[] => [...Array.from({ length: WATCH_SHARDS }, (_, i) => `endpoint#${i}`), LEGACY_WATCHED];

/**
 * A delivery waiting for its endpoint, as the wait list holds it: either one with no job yet (published while
 * the endpoint was busy: it carries its `event`, and `jobId` is the id its job will have if it ever needs one),
 * or a parked job (no `event`: the job `jobId` waits, dormant, to be handed the lease).
 */
export interface WaitEntry {
  pk: string;
  sk: string;
  jobId: string;
  parkedAt: string;
  /** Set on a delivery with no job: the event to send. Whoever holds the lease sends it within its own run. */
  event?: WebhookEvent;
  /** The parked job's event id. */
  eventId?: string;
  /**
   * Set for a delivery that failed as the probe and waits out its own backoff: it may not be woken to
   * probe before this time, but a success releases it with the others.
   */
  notBefore?: string;
}

/** A delivery that was discarded, or started its last attempt, kept for redeliver. */
export interface DiscardMarker {
  pk: string;
  sk: string;
  jobId: string;
  reason: string;
  at: string;
}

/** The endpoint attributes a publisher may write: the lease it takes for the delivery it commits (publish.ts). */
export const LEASE_ATTRIBUTES = ['pk', 'sk', 'disabled', 'holder', 'busyUntil', 'watch'] as const;

/** The endpoint attributes a publisher reads to route an event (never the secret): publish.ts. */
export const ROUTING_ATTRIBUTES = ['pk', 'sk', 'endpointId', 'tenantId', 'eventTypes', 'disabled', 'holder', 'busyUntil'] as const;
/** What a publisher knows of an endpoint. */
export type RoutingRow = Pick<EndpointRow, 'endpointId' | 'tenantId' | 'eventTypes' | 'disabled' | 'holder' | 'busyUntil'>;

/** Whether a wait-list entry is a delivery with no job yet (it carries its event). */
export const isPending = (entry: WaitEntry): entry is WaitEntry & { event: WebhookEvent } => entry.event !== undefined;

/** What happens to the lease in {@link WebhookStore.settle}. */
export type LeaseMove =
  | { type: 'keep'; busyUntil: number }
  | { type: 'pass'; to: string; busyUntil: number }
  | { type: 'release' };

/** Condition fragments, named. */
const is = {
  endpoint: (e: Expression) => e.exists('pk'),
  absent: (e: Expression) => e.notExists('pk'),
  enabled: (e: Expression) => e.eq('disabled', false),
  heldBy: (e: Expression, jobId: string) => e.eq('holder', jobId),
  /** Not deleted by its owner (a deleted endpoint's item stays as a tombstone: endpoint.ts `deletedAt`). */
  live: (e: Expression) => e.notExists('deletedAt'),
  /** Nobody holds the lease, or the holder let it expire. */
  free: (e: Expression, now: number) => e.or(e.notExists('holder'), e.lt('busyUntil', iso(now))),
};

/**
 * The webhooks context's DynamoDB store: endpoints, their lease and wait list, events, and discard
 * markers. Every lease change is a conditional write on the endpoint item; a refused one is reported as a
 * value (`undefined`, `'not_holder'`) because losing a race for the lease is an ordinary outcome here.
 */
export class WebhookStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  // ─── Endpoints ──────────────────────────────────────────────────────────────────────────────────────

  /**
   * Creates an endpoint, its tenant's index entry and its entry in the endpoint index together; an
   * existing id raises {@link EndpointExistsError} with the stored row.
   */
  async createEndpoint(row: EndpointRow): Promise<void> {
    const absent = new Expression();
    const result = await this.transact([
      putItem('endpoint', this.tableName, row, absent.when(is.absent(absent)), { returnStored: true }),
      putItem('tenant index', this.tableName, { ...tenantEndpointKey(row.tenantId, row.createdAt, row.endpointId), endpointId: row.endpointId }),
      putItem('endpoint index', this.tableName, { ...endpointIndexKey(row.createdAt, row.endpointId), endpointId: row.endpointId }),
    ]);
    if (result.committed) return;
    const endpoint = result.refused.endpoint;
    if (!result.contention && endpoint?.code === 'ConditionalCheckFailed') throw new EndpointExistsError(row.endpointId, endpoint.item as EndpointRow | undefined, { cause: result.error });
    throw result.error;
  }

  async getEndpoint(id: string): Promise<EndpointRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: endpointKey(id), ConsistentRead: true }));
    return result.Item as EndpointRow | undefined;
  }

  /**
   * A tenant route's endpoint: the row only when the id names the scope's tenant, read at the key the
   * scope builds (`endpointIds.inScope`); another tenant's endpoint id finds nothing, as an unknown id does.
   */
  async getEndpointIn(scope: TenantScope, id: string): Promise<EndpointRow | undefined> {
    const own = endpointIds.inScope(scope, id);
    return own ? this.getEndpoint(endpointIds.make(scope.tenantId, own.hex)) : undefined;
  }

  /**
   * A tenant's newest endpoints first, a page of up to `limit`: a Query of its own partition's endpoint
   * entries (`TENANT#<tenantId>`, `ENDPOINT#<createdAt>#<id>`, written with each), then a consistent BatchGet
   * of their rows. The cursor names the partition: one given to another tenant (or by the operators'
   * listing) raises `InvalidCursorError`.
   */
  listEndpoints(scope: TenantScope, limit: number, cursor?: string): Promise<{ endpoints: EndpointRow[]; cursor?: string }> {
    return this.listIndex(tenantEndpointsPartition(scope.tenantId), 'ENDPOINT#', limit, cursor);
  }

  /** Every tenant's newest endpoints first (the operators' index, `GET /v1/ops/endpoints`). */
  listAllEndpoints(limit: number, cursor?: string): Promise<{ endpoints: EndpointRow[]; cursor?: string }> {
    return this.listIndex(ENDPOINT_INDEX_PK, undefined, limit, cursor);
  }

  private async listIndex(partition: string, prefix: string | undefined, limit: number, cursor?: string): Promise<{ endpoints: EndpointRow[]; cursor?: string }> {
    const pages = keyCursor(['pk', 'sk'], { pk: partition });
    const startKey = pages.decode(cursor);
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(prefix === undefined ? e.eq('pk', partition) : e.and(e.eq('pk', partition), e.beginsWith('sk', prefix))),
        ScanIndexForward: false,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const ids = (result.Items ?? []).map((item) => item['endpointId'] as string);
    const rows: EndpointRow[] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      rows.push(...((await batchGet(this.db, this.tableName, ids.slice(i, i + MAX_BATCH_GET_KEYS).map(endpointKey))) as unknown as EndpointRow[]));
    }
    const byId = new Map(rows.map((row) => [row.endpointId, row]));
    const endpoints = ids.flatMap((id) => byId.get(id) ?? []);
    const next = pages.encode(result.LastEvaluatedKey);
    return next ? { endpoints, cursor: next } : { endpoints };
  }

  /** Every endpoint of a tenant, read consistently. */
  async tenantEndpoints(tenantId: string): Promise<EndpointRow[]> {
    const ids: string[] = [];
    const pages = paginateQuery({ client: this.db }, { TableName: this.tableName, ...under(new Expression(), tenantEndpointsPartition(tenantId), 'ENDPOINT#'), ConsistentRead: true });
    for await (const page of pages) for (const item of page.Items ?? []) ids.push(item['endpointId'] as string);
    const rows: EndpointRow[] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      const keys = ids.slice(i, i + MAX_BATCH_GET_KEYS).map(endpointKey);
      rows.push(...((await batchGet(this.db, this.tableName, keys)) as unknown as EndpointRow[]));
    }
    return rows;
  }

  /**
   * One page of endpoints whose secret is still stored in plaintext (registered before secrets were
   * encrypted): a Scan, for the one-off sealing (functions/webhooks/seal.ts); nothing deployed calls it.
   */
  async plaintextSecretEndpoints(cursor?: Record<string, unknown>): Promise<{ rows: EndpointRow[]; cursor?: Record<string, unknown> }> {
    const e = new Expression();
    const page = await this.db.send(
      new ScanCommand({ TableName: this.tableName, ...e.forScan(e.and(e.eq('sk', 'ENDPOINT'), e.exists('secret'))), ConsistentRead: true, ...(cursor ? { ExclusiveStartKey: cursor } : {}) }),
    );
    return { rows: (page.Items ?? []) as EndpointRow[], ...(page.LastEvaluatedKey ? { cursor: page.LastEvaluatedKey } : {}) };
  }

  /**
   * seal: replaces an endpoint's plaintext secret with its ciphertext, only if the plaintext is still the
   * one that was encrypted. Returns false if refused (sealed meanwhile, or gone).
   */
  async sealSecret(endpointId: string, plaintext: string, ciphertext: string): Promise<boolean> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(e.eq('secret', plaintext)).when(e.notExists('secretCiphertext')).set('secretCiphertext', ciphertext).remove('secret');
    return (await this.update(endpointId, e)) !== undefined;
  }

  /** enable: the endpoint takes deliveries again, with a clean record (no failingSince). */
  async enable(id: string): Promise<EndpointRow> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e)).set('disabled', false).remove('disabledReason', 'disabledAt', 'failingSince', 'nextProbeAt', 'noticedAt');
    const row = await this.update(id, e);
    if (!row) throw new EndpointNotFoundError(id);
    return row;
  }

  /**
   * disable: stop deliveries. With `failingSince`, only if the endpoint is still failing since then (the
   * sweep must not disable an endpoint that recovered after it looked). Returns undefined if refused.
   */
  async disable(id: string, reason: DisabledReason, now: number, failingSince?: string): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.enabled(e));
    if (failingSince !== undefined) e.when(e.eq('failingSince', failingSince));
    e.set('disabled', true).set('disabledReason', reason).set('disabledAt', iso(now)).set('watch', watchValue(id));
    return this.update(id, e);
  }

  // ─── Management (manage.ts, rotation.ts, notices.ts) ─────────────────────────────────────────────────

  /**
   * update: the owner's change of URL, event types or description, on a live endpoint only. A new URL
   * clears failingSince and the failing endpoint's rest (nextProbeAt): the old URL's failures say nothing
   * of the new one. `eventTypes: null` subscribes to every type; `description: null` removes it. Returns
   * the endpoint as it now is, or undefined if it is gone or deleted.
   */
  async updateEndpoint(id: string, patch: { url?: string; eventTypes?: EventType[] | null; description?: string | null }): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e));
    if (patch.url !== undefined) e.set('url', patch.url).remove('failingSince', 'nextProbeAt');
    if (patch.eventTypes === null) e.remove('eventTypes');
    else if (patch.eventTypes !== undefined) e.set('eventTypes', patch.eventTypes);
    if (patch.description === null) e.remove('description');
    else if (patch.description !== undefined) e.set('description', patch.description);
    return this.update(id, e);
  }

  /**
   * delete: in one transaction, the endpoint becomes a tombstone (`deletedAt`, disabled, kept until
   * `expiresAt`), leaves its tenant's index (listing, publishing) and the operators' index, and `extra`
   * (the purge job that discards what waits for it) commits with it. False if it was gone or deleted already.
   */
  async deleteEndpoint(row: EndpointRow, now: number, expiresAt: number, extra: readonly TransactItem[]): Promise<boolean> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e)).set('deletedAt', iso(now)).set('disabled', true).set('expiresAt', expiresAt).set('watch', watchValue(row.endpointId));
    const result = await this.transact([
      updateItem('endpoint', this.tableName, endpointKey(row.endpointId), e),
      named('tenant index', { Delete: { TableName: this.tableName, Key: tenantEndpointKey(row.tenantId, row.createdAt, row.endpointId) } }),
      named('endpoint index', { Delete: { TableName: this.tableName, Key: endpointIndexKey(row.createdAt, row.endpointId) } }),
      ...extra,
    ]);
    if (result.committed) return true;
    if (!result.contention && result.refused.endpoint?.code === 'ConditionalCheckFailed') return false;
    throw result.error;
  }

  /**
   * rotate: the new secret's ciphertext becomes the one that signs, on a live endpoint whose secret is still
   * the one the caller read (`expected`); `previous` (the old one's ciphertext) signs too until
   * `previousUntil`, or no previous is kept (`expireOldNow`). A secret older than the previous one is gone
   * either way: at most two are live. Returns the endpoint as it now is, or undefined if refused (gone,
   * deleted, or rotated meanwhile).
   */
  async rotateSecret(
    id: string,
    expected: Pick<EndpointRow, 'secretCiphertext' | 'secret'>,
    next: { ciphertext: string; previous?: { ciphertext: string; until: number } },
    now: number,
  ): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e));
    if (expected.secretCiphertext !== undefined) e.when(e.eq('secretCiphertext', expected.secretCiphertext));
    else e.when(e.notExists('secretCiphertext')).when(e.eq('secret', expected.secret));
    e.set('secretCiphertext', next.ciphertext).set('rotatedAt', iso(now)).remove('secret');
    if (next.previous) e.set('previousSecretCiphertext', next.previous.ciphertext).set('previousSecretUntil', iso(next.previous.until));
    else e.remove('previousSecretCiphertext', 'previousSecretUntil');
    return this.update(id, e);
  }

  /** Ends the previous secret now (`expireOldNow` with nothing else to change). Undefined if the endpoint is gone or deleted. */
  async expirePreviousSecret(id: string): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e)).remove('previousSecretCiphertext', 'previousSecretUntil');
    return this.update(id, e);
  }

  /** Counts deliveries the purge after a deletion discarded. */
  async addPurged(id: string, n: number): Promise<void> {
    if (n <= 0) return;
    const e = new Expression();
    e.when(is.endpoint(e)).add('purged', n);
    await this.update(id, e);
  }

  /** The write that marks a disable's notice committed (notices.ts): only for that disable, and only once. */
  noticedItem(id: string, disabledAt: string): TransactItem {
    const e = new Expression();
    e.when(is.endpoint(e)).when(e.eq('disabledAt', disabledAt)).when(e.notExists('noticedAt')).set('noticedAt', disabledAt);
    return updateItem('noticed', this.tableName, endpointKey(id), e);
  }

  /** enable, for a transaction (with the endpoint.enabled notice's job: endpoints.ts): a live endpoint only. */
  enableItem(id: string): TransactItem {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.live(e)).set('disabled', false).remove('disabledReason', 'disabledAt', 'failingSince', 'nextProbeAt', 'noticedAt');
    return updateItem('endpoint', this.tableName, endpointKey(id), e);
  }

  /** The entries of one wait-list shard from `cursor` on, oldest first, a page at a time (the purge and the expiry). */
  async waitListPage(partition: string, cursor?: string, limit = 100, olderThan?: string, filter?: string, filterExpression?: Expression): Promise<{ entries: WaitEntry[]; cursor?: string }> {
    const pages = keyCursor(['pk', 'sk'], { pk: partition });
    const startKey = pages.decode(cursor);
    // A filter is built on the caller's expression (its placeholders are that expression's).
    const e = filterExpression ?? new Expression();
    const key = olderThan === undefined ? e.and(e.eq('pk', partition), e.beginsWith('sk', 'WAIT#')) : e.and(e.eq('pk', partition), e.between('sk', 'WAIT#', `WAIT#${olderThan}`));
    const result = await this.db.send(new QueryCommand({ TableName: this.tableName, ...e.forQuery(key, filter), ConsistentRead: true, Limit: limit, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }));
    const next = pages.encode(result.LastEvaluatedKey);
    return { entries: (result.Items ?? []) as WaitEntry[], ...(next ? { cursor: next } : {}) };
  }

  // ─── Delivery ───────────────────────────────────────────────────────────────────────────────────────

  /**
   * One consistent read of what a delivery needs: its endpoint, whether it is in the wait list, and its
   * stored event when it does not carry it (`eventId`: a delivery enqueued before events travelled with jobs).
   */
  async readForDelivery(endpointId: string, eventId: string | undefined, wait: { pk: string; sk: string }): Promise<{ endpoint?: EndpointRow; event?: WebhookEvent; parked: boolean }> {
    const items = await batchGet(this.db, this.tableName, [endpointKey(endpointId), ...(eventId !== undefined ? [eventKey(eventId)] : []), wait]);
    const endpoint = items.find((i) => i['sk'] === 'ENDPOINT') as EndpointRow | undefined;
    const event = items.find((i) => i['sk'] === 'EVENT') as (WebhookEvent & Record<string, unknown>) | undefined;
    return { ...(endpoint ? { endpoint } : {}), ...(event ? { event } : {}), parked: items.some((i) => i['sk'] === wait.sk) };
  }

  /**
   * acquire: take the lease for `jobId` until `busyUntil`, if it is free, expired or already this job's
   * and the endpoint is enabled. Returns the endpoint as it now is, or undefined if refused.
   */
  async acquire(endpointId: string, jobId: string, now: number, busyUntil: number): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.enabled(e)).when(e.or(is.free(e, now), is.heldBy(e, jobId)));
    e.set('holder', jobId).set('busyUntil', iso(busyUntil)).set('watch', watchValue(endpointId));
    return this.update(endpointId, e);
  }

  /**
   * The lease taken by a publisher for the delivery it is about to commit (publish.ts), so that the events
   * published with or after it wait behind it instead of each being a job that finds the endpoint busy when
   * it runs. A free or expired lease of an enabled endpoint only; it names only the lease's attributes and
   * returns nothing (the intake may neither read nor write anything else of an endpoint: lib/access.ts).
   * True if taken.
   */
  async takeLeaseFor(endpointId: string, jobId: string, now: number, busyUntil: number): Promise<boolean> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.enabled(e)).when(is.free(e, now));
    e.set('holder', jobId).set('busyUntil', iso(busyUntil)).set('watch', watchValue(endpointId));
    return this.updateBlind(endpointId, e);
  }

  /**
   * Gives back a lease {@link takeLeaseFor} took for a delivery that was not committed after all (only if
   * that delivery still holds it), naming only the lease's attributes and reading nothing back. True if
   * given back.
   */
  async releaseTakenFor(endpointId: string, jobId: string): Promise<boolean> {
    const e = new Expression();
    e.when(is.heldBy(e, jobId)).remove('holder');
    return this.updateBlind(endpointId, e);
  }

  /**
   * renew: the holder extends its own lease before a send its lease would not outlast (lease.ts
   * `coversSend`), naming only `busyUntil` and reading nothing back. False if it no longer holds the lease
   * (it expired and someone else took it): the holder is fenced off and sends nothing more.
   */
  async renewLease(endpointId: string, holder: string, busyUntil: number): Promise<boolean> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.heldBy(e, holder)).set('busyUntil', iso(busyUntil));
    return this.updateBlind(endpointId, e);
  }

  /**
   * acquire for someone else: take a free or expired lease on behalf of a parked delivery (the holder's
   * last look at the wait list, and the sweep). Disabled endpoints too: their waiters must run to be
   * discarded. Returns undefined if the lease is not free.
   */
  async acquireFor(endpointId: string, jobId: string, now: number, busyUntil: number): Promise<EndpointRow | undefined> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.free(e, now));
    e.set('holder', jobId).set('busyUntil', iso(busyUntil)).set('watch', watchValue(endpointId));
    return this.update(endpointId, e);
  }

  /**
   * settle: the holder records what its attempt meant for the endpoint and moves the lease, in one
   * conditional write (`holder = me`). Returns 'not_holder' if it no longer holds the lease; the caller
   * then records the health part alone ({@link recordHealth}). Otherwise the endpoint as written.
   */
  async settle(endpointId: string, holder: string, change: EndpointChange | undefined, move: LeaseMove, now: number, delivered = 0): Promise<EndpointRow | 'not_holder'> {
    const e = new Expression();
    e.when(is.endpoint(e)).when(is.heldBy(e, holder));
    if (change) applyHealth(e, change, now);
    if (delivered > 0) e.add('delivered', delivered);
    switch (move.type) {
      case 'keep':
        e.set('busyUntil', iso(move.busyUntil));
        break;
      case 'pass':
        e.set('holder', move.to).set('busyUntil', iso(move.busyUntil));
        break;
      case 'release':
        // `watch` stays: taking the lease again sets it to the same value, so neither write touches the
        // byWatch index; the sweep takes an endpoint idle for a while out of the index (unwatch). So does
        // `busyUntil`, without a holder a free lease, which tells the sweep when the endpoint was last used.
        e.remove('holder');
        break;
      default:
        assertNever(move);
    }
    return (await this.update(endpointId, e)) ?? 'not_holder';
  }

  /** The health part of an attempt (and the deliveries it made), recorded by a delivery that no longer holds the lease. */
  async recordHealth(endpointId: string, change: EndpointChange, now: number, delivered = 0): Promise<void> {
    const e = new Expression();
    e.when(is.endpoint(e));
    applyHealth(e, { ...change, nextProbeAt: null }, now, { keepNextProbe: true });
    if (delivered > 0) e.add('delivered', delivered);
    if (change.health === 'failing') e.set('watch', watchValue(endpointId));
    if (!e.build().UpdateExpression) return;
    await this.update(endpointId, e);
  }

  /** releaseExpired: the sweep lets go of a lease its holder let expire (nobody waits). */
  async releaseExpired(endpointId: string, holder: string, busyUntil: string): Promise<boolean> {
    const e = new Expression();
    e.when(is.heldBy(e, holder)).when(e.eq('busyUntil', busyUntil)).remove('holder', 'busyUntil');
    return (await this.update(endpointId, e)) !== undefined;
  }

  /** unwatch: an idle endpoint that is healthy (or disabled) leaves the sweep's index. */
  async unwatch(endpointId: string): Promise<boolean> {
    const e = new Expression();
    e.when(is.endpoint(e))
      .when(e.notExists('holder'))
      .when(e.or(e.notExists('failingSince'), e.eq('disabled', true)))
      .remove('watch');
    return (await this.update(endpointId, e)) !== undefined;
  }

  /**
   * The oldest waiting deliveries of an endpoint: the first `limit` of every wait-list shard (and of the
   * unsharded partition older entries live in), merged in sort-key order, the first `limit` of those.
   */
  async waitListHead(endpointId: string, limit: number): Promise<WaitEntry[]> {
    const shards = await Promise.all(
      waitListPartitions(endpointId).map(async (partition) => {
        const result = await this.db.send(new QueryCommand({ TableName: this.tableName, ...under(new Expression(), partition, 'WAIT#'), ConsistentRead: true, Limit: limit }));
        return (result.Items ?? []) as WaitEntry[];
      }),
    );
    return mergeHeads(shards, limit);
  }

  /** How many deliveries wait in an endpoint's list now (a count of every shard, read consistently). */
  async countWaiting(endpointId: string): Promise<number> {
    const counts = await Promise.all(
      waitListPartitions(endpointId).map(async (partition) => {
        let n = 0;
        const pages = paginateQuery({ client: this.db }, { TableName: this.tableName, ...under(new Expression(), partition, 'WAIT#'), ConsistentRead: true, Select: 'COUNT' });
        for await (const page of pages) n += page.Count ?? 0;
        return n;
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * The oldest waiting deliveries that may probe at `at` (no `notBefore`, or one at or before it), each
   * shard read page by page until `limit` are found there, merged. Only a failing endpoint's probe hand-off
   * needs this filter.
   */
  async eligibleHead(endpointId: string, at: number, limit: number): Promise<WaitEntry[]> {
    const shards = await Promise.all(
      waitListPartitions(endpointId).map(async (partition) => {
        const found: WaitEntry[] = [];
        const e = new Expression();
        const pages = paginateQuery(
          { client: this.db, pageSize: 100 },
          { TableName: this.tableName, ...under(e, partition, 'WAIT#', e.or(e.notExists('notBefore'), e.le('notBefore', iso(at)))), ConsistentRead: true },
        );
        for await (const page of pages) {
          found.push(...((page.Items ?? []) as WaitEntry[]));
          if (found.length >= limit) break;
        }
        return found;
      }),
    );
    return mergeHeads(shards, limit);
  }

  /**
   * The Put of a delivery that has no job yet into its endpoint's wait list (publish.ts): it carries its
   * event; `jobId` is the id its job gets if it ever needs one. For the publisher's transaction, or alone.
   */
  pendingItem(key: { pk: string; sk: string }, jobId: string, event: WebhookEvent, now: number): TransactItem {
    return putItem(`wait ${jobId}`, this.tableName, { pk: key.pk, sk: key.sk, jobId, event, parkedAt: iso(now), expiresAt: Math.floor(now / 1000) + EVENT_RETENTION_SECONDS });
  }

  /** Puts a delivery that has no job yet into its endpoint's wait list (a fanout's, outside any transaction). */
  async putPending(key: { pk: string; sk: string }, jobId: string, event: WebhookEvent, now: number): Promise<void> {
    const put = this.pendingItem(key, jobId, event, now).Put!;
    await this.db.send(new PutCommand({ TableName: this.tableName, Item: put.Item }));
  }

  /**
   * The subscribed-event filter, state and lease of a tenant's endpoints, for routing an event (publish.ts):
   * eventually consistent (the second look, {@link leaseFree}, is consistent), and only
   * {@link ROUTING_ATTRIBUTES}: never the secret.
   */
  async routing(tenantId: string): Promise<RoutingRow[]> {
    const ids: string[] = [];
    const e = new Expression();
    const ProjectionExpression = e.projection(['pk', 'sk', 'endpointId']);
    const pages = paginateQuery({ client: this.db }, { TableName: this.tableName, ProjectionExpression, ...under(e, tenantEndpointsPartition(tenantId), 'ENDPOINT#') });
    for await (const page of pages) for (const item of page.Items ?? []) ids.push(item['endpointId'] as string);
    const rows: RoutingRow[] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      const keys = ids.slice(i, i + MAX_BATCH_GET_KEYS).map(endpointKey);
      rows.push(...((await batchGet(this.db, this.tableName, keys, { consistent: false, attributes: ROUTING_ATTRIBUTES })) as unknown as RoutingRow[]));
    }
    return rows;
  }

  /** One consistent read of an endpoint's lease (and whether it is disabled), nothing else of it. */
  async leaseOfEndpoint(endpointId: string): Promise<RoutingRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: endpointKey(endpointId), ConsistentRead: true, ...projection(ROUTING_ATTRIBUTES) }));
    return result.Item as RoutingRow | undefined;
  }

  /**
   * park: put a delivery in its endpoint's wait list (idempotent; a second park replaces the first).
   * `notBefore`: it is waiting out its own backoff after failing as the probe.
   */
  async park(key: { pk: string; sk: string }, jobId: string, now: number, notBefore?: number, eventId?: string): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: key.pk,
          sk: key.sk,
          jobId,
          parkedAt: iso(now),
          ...(eventId !== undefined ? { eventId } : {}),
          ...(notBefore !== undefined ? { notBefore: iso(notBefore) } : {}),
          expiresAt: Math.floor(now / 1000) + EVENT_RETENTION_SECONDS,
        },
      }),
    );
  }

  /** unpark: take a delivery out of the wait list (idempotent). */
  async unpark(key: { pk: string; sk: string }): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: key.pk, sk: key.sk } }));
  }

  // ─── Discard markers (redeliver) ────────────────────────────────────────────────────────────────────

  async markDiscarded(endpointId: string, jobId: string, reason: string, now: number): Promise<void> {
    await this.db.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...discardMarkerKey(endpointId, jobId), jobId, reason, at: iso(now), expiresAt: Math.floor(now / 1000) + EVENT_RETENTION_SECONDS },
      }),
    );
  }

  async discardMarkers(endpointId: string, cursor?: string, limit = 100): Promise<{ markers: DiscardMarker[]; cursor?: string }> {
    const pages = keyCursor(queryKeyAttributes(webhooksTable), { pk: endpointPartition(endpointId) });
    const startKey = pages.decode(cursor);
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...under(new Expression(), endpointPartition(endpointId), 'DISCARDED#'),
        ConsistentRead: true,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const next = pages.encode(result.LastEvaluatedKey);
    return { markers: (result.Items ?? []) as DiscardMarker[], ...(next ? { cursor: next } : {}) };
  }

  /** Deletes a marker unless it was written again since it was read (`at` changed): a re-discard keeps its own. */
  async deleteMarker(marker: DiscardMarker): Promise<boolean> {
    const e = new Expression();
    e.when(e.eq('at', marker.at));
    try {
      await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: marker.pk, sk: marker.sk }, ...e.build() }));
      return true;
    } catch (error) {
      if (conditionFailure(error).failed) return false;
      throw error;
    }
  }

  // ─── Events ─────────────────────────────────────────────────────────────────────────────────────────

  /** Commits an event with its fanout job (and whatever else the caller adds) in one transaction: a cancellation is an outcome, by name (`transact` in platform/dynamo.ts). */
  transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return transact(this.db, items);
  }

  /** An event, read eventually consistent (events never change; one not yet visible reads as absent). */
  async peekEvent(id: string): Promise<WebhookEvent | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: eventKey(id) }));
    return result.Item as WebhookEvent | undefined;
  }

  async getEvent(id: string): Promise<WebhookEvent | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: eventKey(id), ConsistentRead: true }));
    return result.Item as WebhookEvent | undefined;
  }

  // ─── Sweep ──────────────────────────────────────────────────────────────────────────────────────────

  /** Ids of the endpoints in one partition of the sparse `byWatch` index (leased or failing), a page at a time. */
  async watched(partition: string, cursor?: string, limit = 200): Promise<{ endpointIds: string[]; cursor?: string }> {
    const pages = keyCursor(queryKeyAttributes(webhooksTable, webhooksTable.indexes[0].name), { watch: partition });
    const startKey = pages.decode(cursor);
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: webhooksTable.indexes[0].name,
        ...e.forQuery(e.eq('watch', partition)),
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const next = pages.encode(result.LastEvaluatedKey);
    const ids = (result.Items ?? []).flatMap((i) => endpointIdOfPartition(i['pk'] as string) ?? []);
    return { endpointIds: ids, ...(next ? { cursor: next } : {}) };
  }

  // ─── Plumbing ───────────────────────────────────────────────────────────────────────────────────────

  /** A conditional update that returns the item as it now is, or undefined when the condition failed. */
  private async update(endpointId: string, e: Expression): Promise<EndpointRow | undefined> {
    try {
      const result = await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: endpointKey(endpointId), ...e.build(), ReturnValues: 'ALL_NEW' }));
      return result.Attributes as EndpointRow;
    } catch (error) {
      if (conditionFailure(error).failed) return undefined;
      throw error;
    }
  }

  /** A conditional update that reads nothing back (the intake's grant: lib/access.ts); false when the condition failed. */
  private async updateBlind(endpointId: string, e: Expression): Promise<boolean> {
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: endpointKey(endpointId), ...e.build(), ReturnValues: 'NONE' }));
      return true;
    } catch (error) {
      if (conditionFailure(error).failed) return false;
      throw error;
    }
  }
}

/** The first `limit` entries of several shards' heads (each in sort-key order), merged in sort-key order. */
function mergeHeads(shards: readonly WaitEntry[][], limit: number): WaitEntry[] {
  return shards
    .flat()
    .sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0))
    .slice(0, limit);
}

/** The Query of the items under `pk` whose sort key starts with `prefix`, optionally filtered. */
function under(e: Expression, pk: string, prefix: string, filter?: string) {
  return e.forQuery(e.and(e.eq('pk', pk), e.beginsWith('sk', prefix)), filter);
}

function applyHealth(e: Expression, change: EndpointChange, now: number, options: { keepNextProbe?: boolean } = {}): void {
  switch (change.health) {
    case 'healthy':
      e.remove('failingSince');
      break;
    case 'failing':
      e.setIfNotExists('failingSince', iso(now));
      break;
    default:
      assertNever(change.health);
  }
  if (!options.keepNextProbe) {
    if (change.nextProbeAt === null) e.remove('nextProbeAt');
    else e.set('nextProbeAt', iso(change.nextProbeAt));
  }
  if (change.disable) e.set('disabled', true).set('disabledReason', change.disable).set('disabledAt', iso(now));
}
