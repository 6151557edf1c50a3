import { capPartition, DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H } from './compliance/cap.ts';
import type { CapSlotRead } from './compliance/cap.ts';
import { deferPartition, dueEntriesRange, marksRange, markSk, roundEntriesPrefix } from './compliance/dial-items.ts';
import type { DeferredEntry, PositionMark } from './compliance/dial-items.ts';
import { GetCommand, paginateQuery, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../platform/clock.ts';
import { batchGet, batchWrite, MAX_BATCH_WRITE_ITEMS, conditionCheck, conditionFailure, Expression, keyCursor, MAX_BATCH_GET_KEYS, putItem, transact, updateItem } from '../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../platform/dynamo.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import { apiKeyKey, apiKeysPartition } from './keys.ts';
import type { ApiKeyRow, ApiKeyStore } from './keys.ts';
import {
  attemptKey,
  attemptPrefix,
  contactDataKey,
  contactPartition,
  contactShard,
  externalIdKey,
  BATCH_INDEX_PK,
  batchIds,
  batchIndexKey,
  BatchStatus,
  batchKey,
  callsExpiry,
  ContactStatus,
  contactKey,
  countAttribute,
  isDialled,
  LIST_PAGE_SIZE,
  listKey,
  RETRIED_PREFIX,
  ROUND_PREFIX,
  roundKey,
  SLOT_SHARDS,
  slotCount,
  slotKey,
  slotLimit,
  slotOfCall,
  slotShardsFor,
  tenantBatchesPartition,
  tenantBatchIndexKey,
  tenantKey,
} from './model.ts';
import type { AttemptRow, BatchRow, CompletionSource, ContactDataRow, ContactRow, ExternalIdRow, ListPage, RoundRow, SlotRow, TenantRow } from './model.ts';
import type { Contact } from './contacts/contact.ts';
import { dialledInRound as dialledThisRound } from './status.ts';
import { SuppressionStore } from './compliance/suppression-store.ts';

/** Condition fragments, named; every conditional write below is a list of these (calls/liveness.ts reads the completion's). */
export const is = {
  exists: (e: Expression) => e.exists('pk'),
  absent: (e: Expression) => e.notExists('pk'),
  /**
   * The contact has no completion in this round yet: never completed, or last completed in an earlier
   * round. A contact is dialled once a round, so its round's call completes once; a re-sent or late result
   * of the same call finds it completed.
   */
  notCompletedIn: (e: Expression, round: number) => e.or(e.notExists('pk'), e.lt('round', round)),
  /** The tenant has a free slot. */
  slotFree: (e: Expression) => e.lt('active', e.attr('limit')),
  /** The batch may dial in this round. */
  diallingRound: (e: Expression, round: number) => e.and(e.inList('status', [BatchStatus.Pending, BatchStatus.InProgress]), e.eq('round', round)),
  /**
   * The batch is in progress in this round (calls complete, the finaliser works) — or paused in it: a pause
   * stops dials only; calls in flight finish and their results apply, and a round whose contacts are all
   * final closes (control/batch-control.ts `finalise` from Paused).
   */
  inProgressRound: (e: Expression, round: number) => e.and(e.inList('status', [BatchStatus.InProgress, BatchStatus.Paused]), e.eq('round', round)),
  /** Nobody moved the dial cursor since it was read. */
  dialCursorAt: (e: Expression, page: number, pos: number) => e.and(e.eq('dialPage', page), e.eq('dialPos', pos)),
  /** The dial cursor has passed list position (page, pos): it was dialled in the round (model.ts `isDialled`). */
  dialled: (e: Expression, page: number, pos: number) => e.or(e.gt('dialPage', page), e.and(e.eq('dialPage', page), e.gt('dialPos', pos))),
  /** Nobody moved the finaliser's cursor since it was read. */
  finCursorAt: (e: Expression, page: number, pos: number) => e.and(e.eq('finPage', page), e.eq('finPos', pos)),
  /** This completion ends the round's last active call of a fully dialled round. */
  lastCall: (e: Expression) => e.and(e.eq('dialComplete', true), e.eq('nCalling', 1)),
  notLastCall: (e: Expression) => e.not(is.lastCall(e)),
  /** The round is fully dialled and no call is in progress: the finaliser may run. */
  roundDone: (e: Expression) => e.and(e.eq('dialComplete', true), e.eq('nCalling', 0)),
};

/** The artefacts of a contact's latest call its item keeps (the attempt item keeps `data` too). */
const LATEST_ARTEFACTS = ['recordingUrl', 'transcriptUrl', 'summary', 'endedReason'] as const;

/** A tenant as `PUT /v1/tenants/{id}` writes it. */
export interface TenantWrite {
  tenantId: string;
  concurrencyLimit: number;
  ownerEmail: string | undefined;
  /** Absent: the default (compliance/cap.ts). */
  maxCallsPerNumberPer24h?: number;
  now: number;
}

/** A call to complete, and how. */
export interface CompletionWrite {
  batchId: string;
  tenantId: string;
  contactNumber: string;
  /** The call's round and list position, as its id names them (model.ts `parseCallId`). */
  round: number;
  page: number;
  pos: number;
  /** The call's id, with its slot suffix: it names the slot shard to release, and is kept on the contact's item. */
  callId: string;
  /** Whether this completion ends the last active call of a fully dialled round (see {@link is.lastCall}). */
  last: boolean;
  code: string;
  retryable: boolean;
  source: CompletionSource;
  report?: { reportedCode: string; emptyTranscription: boolean; durationSeconds: number };
  /** The call's artefacts (the intake's; a TIMEOUT or a placer failure has none). */
  artefacts?: { recordingUrl?: string | undefined; transcriptUrl?: string | undefined; summary?: string | undefined; data?: Record<string, unknown> | undefined; endedReason?: string | undefined };
  /** When the call's dial committed, as the placer echoed it (ISO). */
  placedAt?: string;
  now: number;
}

/**
 * One dial group's write to its slot shard and its batch row: a group of the round's list at the cursor
 * (it moves the cursor past every position it decided) or of the due entries of the deferred list (the
 * cursor stays). The contacts it dials are not written: their positions are their calls. What the group
 * defers or ends changes the batch's counts here; their own items come from compliance/dial-items.ts.
 */
export interface DialWrite {
  batch: BatchRow;
  /** How many calls the group dials (0: it only defers or ends contacts, and takes no slot). */
  count: number;
  /** The cursor as read (the condition: nobody moved it). */
  page: number;
  pos: number;
  /** Where a list group leaves the cursor; absent for a group of the deferred list. */
  next?: { page: number; pos: number };
  /** The tenant's slot shard the group's calls take their slots from, and its limit as read (a group of more than one needs it). */
  slot: number;
  slotLimit: number;
  /** The run's watchdog a list group dials under; absent for a deferred group (its calls have a watchdog of their own). */
  watchdogJobId?: string;
  /** When the run's watchdog is opened by this dial (the run's first, or the first after a change of shard or a closed watchdog): its number in the round. */
  opensWatchdog?: number;
  /** Deferred entries: added by a list group (+), taken off by a deferred group (−). */
  deferredDelta?: number;
  /** List positions this group defers (the batch's `deferrals`). */
  deferralsAdded?: number;
  /** Contacts ended without a call: Suppressed, and Completed by code (NO_CALLING_WINDOW). */
  suppressed?: number;
  endedByCode?: Readonly<Record<string, number>>;
  /** The batch's own limit on its calls in progress, when it has one. */
  batchLimit?: number;
  /** A condition on the round's calls in progress as read (a group that completes the dialling without a call of its own). */
  callingIs?: number;
  now: number;
}

/**
 * The calls store: every write is a named conditional item for a TransactWriteItems, so a contact's
 * completion, the tenant's slot, the batch's counters and the jobs and events they imply commit together.
 * Items are named `contact`, `tenant` and `batch` (a finaliser step's: `next list page`, `round`); a
 * refused condition returns the item as stored, so a caller decides from the outcome without a read.
 */
export class CallsStore implements ApiKeyStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** The tenants' suppression lists, in this same table (compliance/suppression-store.ts). */
  suppressions(): SuppressionStore {
    return (this.suppressionStore ??= new SuppressionStore(this.db, this.tableName));
  }

  private suppressionStore: SuppressionStore | undefined;

  // ─── reads ──────────────────────────────────────────────────────────────────────────────────────

  /** The tenant row alone (its limit and owner); `active` there counts only calls dialled before the limit was sharded. */
  async getTenantRow(tenantId: string): Promise<TenantRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: tenantKey(tenantId), ConsistentRead: true }));
    return result.Item as TenantRow | undefined;
  }

  /** The tenant with its calls in progress (`active`): the row and its slot shards in one consistent read. */
  async getTenant(tenantId: string): Promise<TenantRow | undefined> {
    const items = await batchGet(this.db, this.tableName, [tenantKey(tenantId), ...Array.from({ length: SLOT_SHARDS }, (_, k) => slotKey(tenantId, k))]);
    const row = items.find((i) => i['sk'] === 'TENANT') as TenantRow | undefined;
    if (!row) return undefined;
    const slots = items.filter((i) => i['sk'] === 'SLOTS') as unknown as SlotRow[];
    return { ...row, active: (row.active ?? 0) + slots.reduce((n, slot) => n + slot.active, 0) };
  }

  /** The tenant's slot shards, read consistently (the dialer's view of where a slot is free). */
  async getSlots(tenantId: string): Promise<SlotRow[]> {
    const items = (await batchGet(this.db, this.tableName, Array.from({ length: SLOT_SHARDS }, (_, k) => slotKey(tenantId, k)))) as unknown as SlotRow[];
    return items.sort((a, b) => a.shard - b.shard);
  }

  async getBatch(batchId: string): Promise<BatchRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: batchKey(batchId), ConsistentRead: true }));
    return result.Item as BatchRow | undefined;
  }

  async getContact(batchId: string, contactNumber: string): Promise<ContactRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: contactKey(batchId, contactNumber), ConsistentRead: true }));
    return result.Item as ContactRow | undefined;
  }

  /**
   * A tenant route's batch: the row only when the id names the scope's tenant, read at the key the scope
   * builds (`batchIds.inScope`); another tenant's batch id finds nothing, as an unknown id does.
   */
  async getBatchIn(scope: TenantScope, batchId: string): Promise<BatchRow | undefined> {
    const id = batchIds.inScope(scope, batchId);
    return id ? this.getBatch(batchIds.make(scope.tenantId, id.hex)) : undefined;
  }

  /** The scope's tenant row with its calls in progress. */
  getTenantIn(scope: TenantScope): Promise<TenantRow | undefined> {
    return this.getTenant(scope.tenantId);
  }

  /**
   * A tenant's newest batches first, a page of up to `limit`: a Query of its own batch index
   * (`TENANT#<tenantId>#BATCHES`, one entry per batch, written with it), then a consistent BatchGet of
   * their rows. The cursor names the partition: one given to another tenant (or to the operators'
   * listing) raises `InvalidCursorError`.
   */
  listBatches(scope: TenantScope, limit: number, cursor?: string): Promise<{ batches: BatchRow[]; cursor?: string }> {
    return this.listIndex(tenantBatchesPartition(scope.tenantId), limit, cursor);
  }

  /** Every tenant's newest batches first (the operators' index, `GET /v1/ops/batches`), as {@link listBatches} reads its own. */
  listAllBatches(limit: number, cursor?: string): Promise<{ batches: BatchRow[]; cursor?: string }> {
    return this.listIndex(BATCH_INDEX_PK, limit, cursor);
  }

  private async listIndex(partition: string, limit: number, cursor?: string): Promise<{ batches: BatchRow[]; cursor?: string }> {
    const pages = keyCursor(['pk', 'sk'], { pk: partition });
    const startKey = pages.decode(cursor);
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(e.eq('pk', partition)),
        ScanIndexForward: false,
        Limit: limit,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    const ids = (result.Items ?? []).map((item) => item['batchId'] as string);
    const rows: BatchRow[] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      rows.push(...((await batchGet(this.db, this.tableName, ids.slice(i, i + MAX_BATCH_GET_KEYS).map(batchKey))) as unknown as BatchRow[]));
    }
    const byId = new Map(rows.map((row) => [row.batchId, row]));
    const batches = ids.flatMap((id) => byId.get(id) ?? []);
    const next = pages.encode(result.LastEvaluatedKey);
    return next ? { batches, cursor: next } : { batches };
  }

  // ─── API keys ───────────────────────────────────────────────────────────────────────────────────

  /** A key's item (its hash, never the key), read consistently: what the tenant auth step checks a presented key against. */
  async getApiKey(tenantId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: apiKeyKey(tenantId, keyId), ConsistentRead: true }));
    return result.Item as ApiKeyRow | undefined;
  }

  /** Every key of a tenant, revoked ones too, in key-id order. */
  async listApiKeys(tenantId: string): Promise<ApiKeyRow[]> {
    const rows: ApiKeyRow[] = [];
    const e = new Expression();
    const pages = paginateQuery({ client: this.db }, { TableName: this.tableName, ...e.forQuery(e.and(e.eq('pk', apiKeysPartition(tenantId)), e.beginsWith('sk', 'KEY#'))), ConsistentRead: true });
    for await (const page of pages) rows.push(...((page.Items ?? []) as ApiKeyRow[]));
    return rows;
  }

  /** A new key (item `key`, only if its id is new) and a check that its tenant exists (`tenant`). */
  createApiKeyItems(row: ApiKeyRow): TransactItem[] {
    const absent = new Expression();
    const tenant = new Expression();
    return [putItem('key', this.tableName, row, absent.when(is.absent(absent))), conditionCheck('tenant', this.tableName, tenantKey(row.tenantId), tenant.when(is.exists(tenant)))];
  }

  /** revoke: the key stops working (every container refuses it within `KEY_CACHE_MS`). Idempotent; undefined if there is no such key. */
  async revokeApiKey(tenantId: string, keyId: string, now: number): Promise<ApiKeyRow | undefined> {
    const e = new Expression();
    e.when(is.exists(e)).setIfNotExists('revokedAt', iso(now));
    try {
      const result = await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: apiKeyKey(tenantId, keyId), ...e.build(), ReturnValues: 'ALL_NEW' }));
      return result.Attributes as ApiKeyRow;
    } catch (error) {
      if (conditionFailure(error).failed) return undefined;
      throw error;
    }
  }

  /** lastUsedAt: set to `now` only if the key exists and its lastUsedAt is older than `everyMs` (so at most once a minute, whoever writes). */
  async touchApiKey(tenantId: string, keyId: string, now: number, everyMs: number): Promise<boolean> {
    const e = new Expression();
    e.when(is.exists(e)).when(e.or(e.notExists('lastUsedAt'), e.lt('lastUsedAt', iso(now - everyMs)))).set('lastUsedAt', iso(now));
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: apiKeyKey(tenantId, keyId), ...e.build(), ReturnValues: 'NONE' }));
      return true;
    } catch (error) {
      if (conditionFailure(error).failed) return false;
      throw error;
    }
  }

  /** The outcomes of a batch's closed rounds (model.ts `RoundRow`), in round order. */
  async getRounds(batchId: string): Promise<RoundRow[]> {
    return this.queryBatch<RoundRow>(batchId, ROUND_PREFIX);
  }

  /** One page of a round's dial list (immutable once written). */
  async getListPage(batchId: string, round: number, page: number): Promise<ListPage | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: listKey(batchId, round, page), ConsistentRead: true }));
    return result.Item as ListPage | undefined;
  }

  /**
   * Contact states by number (up to 100), read consistently. Keys DynamoDB leaves unprocessed fail the
   * read (`IncompleteReadError`), not re-requested: a job fails its run and the job layer decides
   * when to try again.
   */
  async getContacts(batchId: string, numbers: readonly string[]): Promise<Map<string, ContactRow>> {
    const rows = (await batchGet(this.db, this.tableName, numbers.map((n) => contactKey(batchId, n)))) as unknown as ContactRow[];
    return new Map(rows.map((row) => [row.contactNumber, row]));
  }

  /** Every item under the batch whose sort key starts with `prefix`, in key order (DynamoDB's pages followed). */
  async queryBatch<T>(batchId: string, prefix: string, pk: string = batchKey(batchId).pk): Promise<T[]> {
    const items: T[] = [];
    const e = new Expression();
    const pages = paginateQuery({ client: this.db }, { TableName: this.tableName, ...e.forQuery(e.and(e.eq('pk', pk), e.beginsWith('sk', prefix))), ConsistentRead: true });
    for await (const page of pages) items.push(...((page.Items ?? []) as T[]));
    return items;
  }

  /**
   * Up to `limit` contacts in upload order from position `offset`, with their state if dialled: a Query of
   * the round-1 list pages they are on (every page but the last holds {@link LIST_PAGE_SIZE} numbers) and a
   * consistent BatchGet of their contact rows. Keys DynamoDB leaves unprocessed fail the read
   * (`IncompleteReadError`), not retried here.
   */
  async contactsPage(batchId: string, offset: number, limit: number): Promise<{ number: string; state: ContactRow | undefined }[]> {
    const first = Math.floor(offset / LIST_PAGE_SIZE);
    const last = Math.floor((offset + limit - 1) / LIST_PAGE_SIZE);
    const e = new Expression();
    const listed = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(e.and(e.eq('pk', batchKey(batchId).pk), e.between('sk', listKey(batchId, 1, first).sk, listKey(batchId, 1, last).sk))),
        ConsistentRead: true,
      }),
    );
    const pages = (listed.Items ?? []) as ListPage[]; // in key order: page by page
    const numbers = pages.flatMap((page) => page.numbers).slice(offset - first * LIST_PAGE_SIZE, offset - first * LIST_PAGE_SIZE + limit);
    const chunks = Array.from({ length: Math.ceil(numbers.length / MAX_BATCH_GET_KEYS) }, (_, i) => numbers.slice(i * MAX_BATCH_GET_KEYS, (i + 1) * MAX_BATCH_GET_KEYS));
    const reads = await Promise.all(chunks.map((chunk) => this.getContacts(batchId, chunk)));
    const byNumber = new Map(reads.flatMap((found) => [...found]));
    return numbers.map((number) => ({ number, state: byNumber.get(number) }));
  }

  /**
   * The numbers of a later round (r > 1) that its dial has passed: a Query of round r's list pages up to the
   * dial cursor's. What `GET /v1/batches/{id}/contacts` needs to tell a contact Calling in round r from one
   * waiting for its dial (RetryEligible): round r's list is in another order than the upload's.
   */
  async dialledInRound(batch: BatchRow): Promise<Set<string>> {
    const last = Math.min(batch.dialPage, batch.listPages - 1);
    if (batch.round === 1 || last < 0) return new Set();
    const e = new Expression();
    const pages = paginateQuery(
      { client: this.db },
      { TableName: this.tableName, ...e.forQuery(e.and(e.eq('pk', batchKey(batch.batchId).pk), e.between('sk', listKey(batch.batchId, batch.round, 0).sk, listKey(batch.batchId, batch.round, last).sk))), ConsistentRead: true },
    );
    const dialled = new Set<string>();
    for await (const result of pages) {
      for (const page of (result.Items ?? []) as ListPage[]) page.numbers.forEach((number, pos) => isDialled(batch, page.page, pos) && dialled.add(number));
    }
    return dialled;
  }

  // ─── contact data ───────────────────────────────────────────────────────────────────────────────

  /**
   * The data items of a batch's contacts (model.ts `ContactDataRow`, and an `XID#` entry per externalId):
   * only contacts that carry something have one. Derived from the contacts alone, so writing them again
   * (a retried request with its Idempotency-Key, an import page run again) writes the same items.
   */
  static contactDataItems(batchId: string, contacts: readonly Contact[], now: number, firstPosition = 0): (ContactDataRow | (ExternalIdRow & { batchId: string }))[] {
    const expiresAt = callsExpiry(now);
    const items: (ContactDataRow | (ExternalIdRow & { batchId: string }))[] = [];
    for (const [i, c] of contacts.entries()) {
      if (c.externalId === undefined && c.variables === undefined && c.timezone === undefined && c.numberValid) continue;
      items.push({
        ...contactDataKey(batchId, c.number),
        batchId,
        contactNumber: c.number,
        ...(c.externalId !== undefined ? { externalId: c.externalId } : {}),
        ...(c.variables !== undefined ? { variables: c.variables } : {}),
        ...(c.timezone !== undefined ? { timezone: c.timezone } : {}),
        ...(c.numberValid ? {} : { numberValid: false as const }),
        ...(c.region !== undefined ? { region: c.region } : {}),
        expiresAt,
      });
      if (c.externalId !== undefined) items.push({ ...externalIdKey(batchId, c.externalId), batchId, contactNumber: c.number, position: firstPosition + i, expiresAt });
    }
    return items;
  }

  /**
   * Writes items with BatchWriteItem, {@link MAX_BATCH_WRITE_ITEMS} a request, `parallel` requests at a
   * time, each sent once: how many DynamoDB left unprocessed comes back (the caller ends its page, or
   * answers 503), and how many requests were sent.
   */
  async putItems(items: readonly Record<string, unknown>[], parallel = 8): Promise<{ unprocessed: number; requests: number }> {
    const chunks: Record<string, unknown>[][] = [];
    for (let i = 0; i < items.length; i += MAX_BATCH_WRITE_ITEMS) chunks.push(items.slice(i, i + MAX_BATCH_WRITE_ITEMS));
    let unprocessed = 0;
    for (let i = 0; i < chunks.length; i += parallel) {
      const results = await Promise.all(chunks.slice(i, i + parallel).map((chunk) => batchWrite(this.db, this.tableName, chunk)));
      unprocessed += results.reduce((n, r) => n + r.unprocessed.length, 0);
    }
    return { unprocessed, requests: chunks.length };
  }

  /** The data items of these contacts (consistent BatchGets of 100), by number; a contact without one is absent. Unprocessed keys fail the read. */
  async getContactData(batchId: string, numbers: readonly string[]): Promise<Map<string, ContactDataRow>> {
    const chunks = Array.from({ length: Math.ceil(numbers.length / MAX_BATCH_GET_KEYS) }, (_, i) => numbers.slice(i * MAX_BATCH_GET_KEYS, (i + 1) * MAX_BATCH_GET_KEYS));
    const reads = await Promise.all(chunks.map((chunk) => batchGet(this.db, this.tableName, chunk.map((n) => contactDataKey(batchId, n)))));
    return new Map((reads.flat() as unknown as ContactDataRow[]).map((row) => [row.contactNumber, row]));
  }

  /** The batch's contact with this externalId, if any: its number and its position in upload order. */
  async contactOfExternalId(batchId: string, externalId: string): Promise<{ number: string; position: number; state: ContactRow | undefined } | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: externalIdKey(batchId, externalId), ConsistentRead: true }));
    const entry = result.Item as ExternalIdRow | undefined;
    if (!entry) return undefined;
    return { number: entry.contactNumber, position: entry.position, state: await this.getContact(batchId, entry.contactNumber) };
  }

  /** A contact's calls, first round first (its attempt items). */
  async getAttempts(batchId: string, number: string): Promise<AttemptRow[]> {
    return this.queryBatch<AttemptRow>(batchId, attemptPrefix(number), contactPartition(batchId, contactShard(number)));
  }

  /**
   * Whether the contact at upload position `at` has been dialled in the batch's current round (what makes
   * it Calling, status.ts): round 1's list is the upload order, so its cursor says; a later round's list is
   * in another order, so the numbers its dial has passed are read ({@link dialledInRound}, one Query).
   */
  async dialledInCurrentRound(batch: BatchRow): Promise<(number: string, at: number) => boolean> {
    const laterRound = batch.round > 1 && dialledThisRound(batch, 0, 0) ? await this.dialledInRound(batch) : undefined;
    // A position the cursor passed but deferred is not dialled until its deferred dial (compliance/dial-items.ts).
    const waiting = await this.waitingInRound(batch);
    return (number, at) => !waiting.has(number) && (laterRound ? laterRound.has(number) : batch.round === 1 && dialledThisRound(batch, Math.floor(at / LIST_PAGE_SIZE), at % LIST_PAGE_SIZE));
  }

  /**
   * The contacts of the batch's round the dialer passed and deferred, not dialled since, by number (their
   * marks: one Query of the round's marks, only when the batch ever deferred one).
   */
  async waitingInRound(batch: BatchRow): Promise<Map<string, PositionMark>> {
    const waiting = new Map<string, PositionMark>();
    if ((batch.deferrals ?? 0) === 0) return waiting;
    const pages = paginateQuery(
      { client: this.db },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': deferPartition(batch.batchId), ':prefix': markSk(batch.round, 0, 0).slice(0, 'P#000#'.length) },
        ConsistentRead: true,
      },
    );
    for await (const result of pages) for (const mark of (result.Items ?? []) as PositionMark[]) if (mark.dialledAt === undefined) waiting.set(mark.number, mark);
    return waiting;
  }

  // ─── the transaction ────────────────────────────────────────────────────────────────────────────

  /** Runs one TransactWriteItems of named items (`transact` in platform/dynamo.ts): a cancellation is an outcome, by name. */
  transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return transact(this.db, items);
  }

  // ─── tenants ────────────────────────────────────────────────────────────────────────────────────

  /**
   * Creates or updates a tenant, items [tenant, slot 0…7]: the row, and its limit split over its slot
   * shards (shards it no longer uses get a limit of 0: their calls in progress still release their slots
   * there). A new limit or owner never resets the calls in progress.
   */
  upsertTenantItems(input: TenantWrite): TransactItem[] {
    const shards = slotShardsFor(input.concurrencyLimit);
    const slots = Array.from({ length: SLOT_SHARDS }, (_, shard) => {
      const e = new Expression();
      e.setIfNotExists('active', 0).set('tenantId', input.tenantId).set('shard', shard).set('limit', slotLimit(input.concurrencyLimit, shards, shard));
      return this.update(`slot ${shard}`, slotKey(input.tenantId, shard), e);
    });
    return [this.upsertTenantItem(input, shards), ...slots];
  }

  private upsertTenantItem(input: TenantWrite, shards: number): TransactItem {
    const e = new Expression();
    e.setIfNotExists('active', 0)
      .setIfNotExists('createdAt', iso(input.now))
      .set('tenantId', input.tenantId)
      .set('concurrencyLimit', input.concurrencyLimit)
      .set('slotShards', shards)
      .set('maxCallsPerNumberPer24h', input.maxCallsPerNumberPer24h ?? DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H)
      .set('updatedAt', iso(input.now));
    if (input.ownerEmail) e.set('ownerEmail', input.ownerEmail);
    else e.remove('ownerEmail');
    return this.update('tenant', tenantKey(input.tenantId), e);
  }

  // ─── batches ────────────────────────────────────────────────────────────────────────────────────

  /**
   * A new batch (item `batch`), its round-1 dial list (`list page <n>`), its entries in its tenant's batch
   * index (`tenant batch index`) and in the operators' (`batch index`), and a check that its tenant exists
   * (`tenant`). If a batch with its id exists (an idempotent retry), the refusal carries that row.
   */
  createBatchItems(batch: BatchRow, pages: readonly ListPage[]): TransactItem[] {
    const absent = new Expression();
    const tenant = new Expression();
    return [
      putItem('batch', this.tableName, batch, absent.when(is.absent(absent)), { returnStored: true }),
      conditionCheck('tenant', this.tableName, tenantKey(batch.tenantId), tenant.when(is.exists(tenant))),
      ...pages.map((page) => putItem(`list page ${page.page}`, this.tableName, page)),
      putItem('tenant batch index', this.tableName, { ...tenantBatchIndexKey(batch.tenantId, batch.createdAt, batch.batchId), batchId: batch.batchId }),
      putItem('batch index', this.tableName, { ...batchIndexKey(batch.createdAt, batch.batchId), batchId: batch.batchId, tenantId: batch.tenantId }),
    ];
  }

  /**
   * Deletes a batch, items [batch, tenant?]: status Deleted, and the tenant gets back the slots of the
   * batch's calls in progress (their results will be ignored, so nothing else will). Conditional on the counts read, so a dial or
   * a result that lands in between cancels the transaction instead of leaking a slot.
   */
  deleteBatchItems(batch: BatchRow, now: number): TransactItem[] {
    const e = new Expression();
    e.when(e.eq('status', batch.status))
      .when(e.eq('nCalling', batch.nCalling))
      .set('status', BatchStatus.Deleted)
      .set('deletedAt', iso(now))
      .set('updatedAt', iso(now));
    const items: TransactItem[] = [this.update('batch', batchKey(batch.batchId), e)];
    // Each shard gets back the slots this batch's calls hold there; calls dialled before the limit was
    // sharded (counted in nCalling, in no shard) give theirs back to the tenant row.
    let sharded = 0;
    for (let shard = 0; shard < SLOT_SHARDS; shard++) {
      const held = batch[slotCount(shard)] ?? 0;
      if (held === 0) continue;
      sharded += held;
      e.when(e.eq(slotCount(shard), held));
      const t = new Expression();
      t.when(is.exists(t)).increment('active', -held);
      items.push(this.update(`slot ${shard}`, slotKey(batch.tenantId, shard), t));
    }
    if (batch.nCalling - sharded > 0) {
      const t = new Expression();
      t.when(is.exists(t)).increment('active', -(batch.nCalling - sharded)).set('updatedAt', iso(now));
      items.push(this.update('tenant', tenantKey(batch.tenantId), t));
    }
    return items;
  }

  // ─── dialling ───────────────────────────────────────────────────────────────────────────────────

  /**
   * One dial of a group of k consecutive contacts, items [tenant, batch]: the tenant's slot shard gives k
   * slots (only if it has k free), the batch counts the k calls and moves its cursor past them (only if
   * nobody moved it). No contact item is written: a position behind the cursor is a call in progress until
   * its completion writes the contact (docs/calls.md). One write of the slot shard and of the batch row for
   * k calls. The caller adds the watchdog job when this dial opens one.
   */
  dialItems(d: DialWrite): TransactItem[] {
    const { batch, now } = d;
    const round = batch.round;
    const k = d.count;
    const suppressed = d.suppressed ?? 0;
    const ended = Object.values(d.endedByCode ?? {}).reduce((n, c) => n + c, 0);
    const deferredAfter = (batch.nDeferred ?? 0) + (d.deferredDelta ?? 0);
    if (k < 0 || deferredAfter < 0) throw new Error('a dial group cannot dial or take off fewer than none');
    const items: TransactItem[] = [];

    // The slots, from one shard of the tenant's limit (named `tenant`: a refusal there means not enough free
    // slots). One slot: `active < limit`. k slots: the limit as read, and `active ≤ limit − k` (a condition
    // cannot add), so the shard never holds more than its limit. A group that dials nobody takes none.
    if (k > 0) {
      const tenant = new Expression();
      tenant.when(is.exists(tenant));
      if (k === 1) tenant.when(is.slotFree(tenant));
      else tenant.when(tenant.eq('limit', d.slotLimit)).when(tenant.le('active', d.slotLimit - k));
      tenant.increment('active', k);
      items.push(this.update('tenant', slotKey(batch.tenantId, d.slot), tenant));
    }

    const from = round === 1 ? ContactStatus.Queued : ContactStatus.RetryEligible;
    const cursor = d.next ?? { page: d.page, pos: d.pos };
    const b = new Expression();
    b.when(is.diallingRound(b, round))
      .when(is.dialCursorAt(b, d.page, d.pos))
      // Only dial groups move the deferred count, each conditional on it: the count a group read is exact,
      // so the group that takes the last entry at the list's end knows it completes the dialling.
      .when((batch.nDeferred ?? 0) === 0 ? b.or(b.notExists('nDeferred'), b.eq('nDeferred', 0)) : b.eq('nDeferred', batch.nDeferred))
      .set('dialPage', cursor.page)
      .set('dialPos', cursor.pos)
      .set('dialComplete', cursor.page >= batch.listPages && deferredAfter === 0)
      .set('nDeferred', deferredAfter)
      .set('updatedAt', iso(now));
    // In progress from its first committed group, whether it dialled or only deferred or ended contacts
    // (the completion and the finaliser work on an InProgress batch).
    b.set('status', BatchStatus.InProgress);
    if (k > 0) {
      b.increment(countAttribute(ContactStatus.Calling), k)
        .increment(slotCount(d.slot), k, 0);
      // The batch's own limit: its calls in progress stay at or under it (as read when the dial commits).
      if (d.batchLimit !== undefined) b.when(b.le('nCalling', d.batchLimit - k));
      // A run's watchdog counts its calls' timeout from the round's latest list dial; a deferred group's calls have their own.
      if (d.next) b.set('lastDialAt', iso(now));
    }
    if (k + suppressed + ended > 0) b.increment(countAttribute(from), -(k + suppressed + ended));
    if (suppressed > 0) b.increment(countAttribute(ContactStatus.Suppressed), suppressed, 0);
    if (ended > 0) {
      b.increment(countAttribute(ContactStatus.Completed), ended);
      for (const [code, n] of Object.entries(d.endedByCode ?? {})) if (n > 0) b.increment(['byCode', code], n, 0);
    }
    if (d.deferralsAdded) b.increment('deferrals', d.deferralsAdded, 0);
    if (d.callingIs !== undefined) b.when(b.eq('nCalling', d.callingIs));
    // A dial that opens a watchdog names it open and counts it (the cursor condition means nobody opened
    // one since the batch was read); a later one dials under it only while it is still open (its watchdog
    // has not run yet: see closeWatchdogItem).
    if (d.watchdogJobId !== undefined) {
      if (d.opensWatchdog !== undefined) b.set('openWatchdog', d.watchdogJobId).set('watchdogs', d.opensWatchdog);
      else b.when(b.eq('openWatchdog', d.watchdogJobId));
    }
    items.push(this.update('batch', batchKey(batch.batchId), b));
    return items;
  }

  // ─── the compliance rules' reads (compliance/dial-items.ts) ─────────────────────────────────────

  /** The round's deferred entries due at `nowMs`, earliest first (at most `limit`). */
  async dueDeferrals(batchId: string, round: number, nowMs: number, limit: number): Promise<DeferredEntry[]> {
    const [low, high] = dueEntriesRange(round, nowMs);
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high',
        ExpressionAttributeValues: { ':pk': deferPartition(batchId), ':low': low, ':high': high },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    return (result.Items ?? []) as DeferredEntry[];
  }

  /** When the round's earliest deferred entry may be dialled, if it has any. */
  async firstDeferral(batchId: string, round: number): Promise<number | undefined> {
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': deferPartition(batchId), ':prefix': roundEntriesPrefix(round) },
        ConsistentRead: true,
        Limit: 1,
      }),
    );
    return (result.Items?.[0] as DeferredEntry | undefined)?.notBefore;
  }

  /** The marks of list positions [fromPos, toPos] of a round's page: which were deferred (and which of those dialled since). */
  async positionMarks(batchId: string, round: number, page: number, fromPos: number, toPos: number): Promise<Map<number, PositionMark>> {
    const marks = new Map<number, PositionMark>();
    if (toPos < fromPos) return marks;
    const [low, high] = marksRange(round, page, fromPos, toPos);
    const pages = paginateQuery(
      { client: this.db },
      { TableName: this.tableName, KeyConditionExpression: 'pk = :pk AND sk BETWEEN :low AND :high', ExpressionAttributeValues: { ':pk': deferPartition(batchId), ':low': low, ':high': high }, ConsistentRead: true },
    );
    for await (const result of pages) for (const item of (result.Items ?? []) as PositionMark[]) marks.set(item.pos, item);
    return marks;
  }

  /**
   * Each number's cap slots as stored (one Query a number, eventually consistent: the claim's condition
   * decides, this read only picks the slot to claim).
   */
  async capSlots(tenantId: string, numbers: readonly string[]): Promise<Map<string, CapSlotRead[]>> {
    const read = await Promise.all(
      numbers.map(async (number) => {
        const result = await this.db.send(
          new QueryCommand({ TableName: this.tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': capPartition(tenantId, number) }, ProjectionExpression: 'slot, #at', ExpressionAttributeNames: { '#at': 'at' } }),
        );
        return [number, (result.Items ?? []) as CapSlotRead[]] as const;
      }),
    );
    return new Map(read);
  }

  /**
   * Closes a dial run's watchdog, item [batch]: no dial names it after this commits (a later dial of its run
   * is refused and opens a watchdog of its own), so the positions behind the cursor as read are all it will
   * ever cover. Only if it is still the open one and the cursor is where it was read.
   */
  closeWatchdogItem(batch: BatchRow, watchdogJobId: string): TransactItem {
    const e = new Expression();
    e.when(e.eq('openWatchdog', watchdogJobId)).when(is.dialCursorAt(e, batch.dialPage, batch.dialPos)).remove('openWatchdog');
    return this.update('batch', batchKey(batch.batchId), e);
  }

  // ─── completing a call ──────────────────────────────────────────────────────────────────────────

  /**
   * One completion, items [contact, tenant, batch]: the contact must have no completion in the call's
   * round yet and gets its first, with the normalised code (the item is written here and nowhere else);
   * the tenant's slot shard the call names is released; the batch must be in progress in that round with
   * the call's list position dialled (behind the cursor), counts the code and, by the last-call
   * condition, says whether this completion ends the round.
   */
  completionItems(c: CompletionWrite): TransactItem[] {
    const contact = new Expression();
    contact
      .when(is.notCompletedIn(contact, c.round))
      .set('batchId', c.batchId)
      .set('contactNumber', c.contactNumber)
      .set('status', ContactStatus.Completed)
      .set('round', c.round)
      .set('attempts', c.round)
      .set('callId', c.callId)
      .set('code', c.code)
      .set('retryable', c.retryable)
      .set('source', c.source)
      .set('completedAt', iso(c.now))
      .set('updatedAt', iso(c.now))
      .set('expiresAt', callsExpiry(c.now));
    if (c.report) {
      contact.set('reportedCode', c.report.reportedCode).set('emptyTranscription', c.report.emptyTranscription).set('durationSeconds', c.report.durationSeconds);
    } else {
      // A TIMEOUT or INTERNAL_ERROR has no evidence: none of an earlier round's stays.
      contact.remove('reportedCode', 'emptyTranscription', 'durationSeconds');
    }

    // The latest call's artefacts on the contact (the listing and the export show them); none of an
    // earlier call's stays. All of them, `data` too, on the call's own attempt item.
    const artefacts = c.artefacts ?? {};
    for (const field of LATEST_ARTEFACTS) {
      const value = artefacts[field];
      if (value !== undefined) contact.set(field, value);
      else contact.remove(field);
    }
    const attempt: AttemptRow = {
      ...attemptKey(c.batchId, c.contactNumber, c.round),
      batchId: c.batchId,
      contactNumber: c.contactNumber,
      round: c.round,
      callId: c.callId,
      code: c.code,
      retryable: c.retryable,
      source: c.source,
      ...(c.report ? { reportedCode: c.report.reportedCode, durationSeconds: c.report.durationSeconds, emptyTranscription: c.report.emptyTranscription } : {}),
      ...(c.placedAt !== undefined ? { placedAt: c.placedAt } : {}),
      completedAt: iso(c.now),
      ...Object.fromEntries(Object.entries(artefacts).filter(([, v]) => v !== undefined)),
      expiresAt: callsExpiry(c.now),
    };

    // The slot goes back to the shard the call's id names.
    const slot = slotOfCall(c.callId);
    const tenant = new Expression();
    tenant.when(is.exists(tenant)).increment('active', -1);

    const b = new Expression();
    b.when(is.inProgressRound(b, c.round))
      .when(is.dialled(b, c.page, c.pos))
      .when(c.last ? is.lastCall(b) : is.notLastCall(b))
      .increment(['byCode', c.code], 1, 0)
      .increment(countAttribute(ContactStatus.Calling), -1)
      .increment(countAttribute(ContactStatus.Completed), 1)
      .increment(slotCount(slot), -1, 0)
      .set('updatedAt', iso(c.now));
    return [
      this.update('contact', contactKey(c.batchId, c.contactNumber), contact),
      this.update('tenant', slotKey(c.tenantId, slot), tenant),
      this.update('batch', batchKey(c.batchId), b),
      // One per round: the contact's condition admits one completion a round, and this commits with it.
      putItem('attempt', this.tableName, attempt),
    ];
  }

  // ─── finalising a round ─────────────────────────────────────────────────────────────────────────

  /**
   * One step of the finaliser over the round's list, items [next list page?, round?, batch]: the numbers it
   * promotes (read, completed in this round with a retryable code) become one page of the next round's
   * list, the round's outcomes count them by code (`round`), and the batch moves the finaliser's cursor and
   * its counts (only if nobody moved the cursor). No contact is written: a promoted contact is
   * RetryEligible because its item holds a retryable code of the round before (status.ts), and the next
   * round's dial makes it Calling by moving the cursor.
   */
  promotionItems(input: {
    batch: BatchRow;
    page: number;
    pos: number;
    next: { page: number; pos: number };
    promote: readonly { contactNumber: string; code: string }[];
    now: number;
  }): TransactItem[] {
    const { batch, now, promote } = input;
    const items: TransactItem[] = [];
    if (promote.length > 0) {
      const page: ListPage = { ...listKey(batch.batchId, batch.round + 1, batch.nextPages), round: batch.round + 1, page: batch.nextPages, numbers: promote.map((p) => p.contactNumber), expiresAt: callsExpiry(now) };
      items.push(putItem('next list page', this.tableName, page));
    }
    const b = new Expression();
    b.when(is.inProgressRound(b, batch.round))
      .when(is.roundDone(b))
      .when(is.finCursorAt(b, input.page, input.pos))
      .set('finPage', input.next.page)
      .set('finPos', input.next.pos)
      .set('updatedAt', iso(now));
    const codeCounts = new Map<string, number>();
    for (const p of promote) codeCounts.set(p.code, (codeCounts.get(p.code) ?? 0) + 1);
    if (promote.length > 0) {
      b.increment('nextPages', 1)
        .increment('nextSize', promote.length)
        .increment(countAttribute(ContactStatus.Completed), -promote.length)
        .increment(countAttribute(ContactStatus.RetryEligible), promote.length);
      for (const [code, n] of codeCounts) b.increment(['byCode', code], -n);
      const r = new Expression();
      r.set('round', batch.round).set('expiresAt', callsExpiry(now));
      for (const [code, n] of codeCounts) r.increment([`${RETRIED_PREFIX}${code}`], n, 0);
      items.push(this.update('round', roundKey(batch.batchId, batch.round), r));
    }
    items.push(this.update('batch', batchKey(batch.batchId), b));
    return items;
  }

  /** Ends a batch: Finalised, item [batch]; the caller adds the event and the owner's mail. */
  finaliseItem(batch: BatchRow, now: number): TransactItem {
    const e = new Expression();
    e.when(is.inProgressRound(e, batch.round))
      .when(is.roundDone(e))
      .when(is.finCursorAt(e, batch.finPage, batch.finPos))
      .set('status', BatchStatus.Finalised)
      .set('finalisedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', callsExpiry(now))
      // A paused batch finalises too: nothing is left to resume.
      .remove('pausedFrom');
    return this.update('batch', batchKey(batch.batchId), e);
  }

  /**
   * Re-arms a batch for its next round, item [batch]: the round's list is what the finaliser promoted,
   * the dial cursor starts again at its head ("reset the offset"). The caller adds the next
   * round's dialer, delayed, and the event.
   */
  rearmItem(batch: BatchRow, now: number): TransactItem {
    const e = new Expression();
    e.when(is.inProgressRound(e, batch.round))
      .when(is.roundDone(e))
      .when(is.finCursorAt(e, batch.finPage, batch.finPos))
      .when(e.eq('nextSize', batch.nextSize))
      // The status stays: InProgress, or Paused (the next round's dialer finds it paused; resume wakes it).
      .set('round', batch.round + 1)
      .set('listPages', batch.nextPages)
      .set('roundSize', batch.nextSize)
      .set('dialPage', 0)
      .set('dialPos', 0)
      .set('dialComplete', false)
      .set('finPage', 0)
      .set('finPos', 0)
      .set('nextPages', 0)
      .set('nextSize', 0)
      .set('watchdogs', 0)
      .set('updatedAt', iso(now))
      .set('expiresAt', callsExpiry(now));
    return this.update('batch', batchKey(batch.batchId), e);
  }

  /**
   * Closes a round's outcomes, item `round`: the batch's byCode as the round leaves it (after its
   * promotions). The finaliser adds it to the transaction that re-arms or finalises the batch, whose
   * conditions make it happen once.
   */
  closeRoundItem(batch: BatchRow, now: number): TransactItem {
    const e = new Expression();
    e.set('round', batch.round).set('byCodeAfter', batch.byCode).set('closedAt', iso(now)).set('expiresAt', callsExpiry(now));
    return this.update('round', roundKey(batch.batchId, batch.round), e);
  }

  /** An Update of this table; a refused condition returns the item as stored (ALL_OLD): the caller decides from it, without a read. */
  private update(name: string, key: Record<string, string>, e: Expression): TransactItem {
    return updateItem(name, this.tableName, key, e, { returnStored: true });
  }
}
