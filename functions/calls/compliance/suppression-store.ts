import { createHash } from 'node:crypto';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../../platform/clock.ts';
import { conditionCheck, Expression, InvalidCursorError, named, putItem, transact, updateItem } from '../../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../../platform/dynamo.ts';
import type { TenantScope } from '../../platform/tenancy.ts';
import { SUPPRESSION_SHARDS, suppressionAuditKey, suppressionKey, suppressionPartition, SuppressionSource } from './suppression.ts';
import type { SuppressionRow } from './suppression.ts';

/**
 * The tenant's suppression list in the calls table (keys: suppression.ts). Every change is one
 * transaction of the entry and its audit record, named `entry` and `audit`:
 *
 * ```
 *  put     entry  Update: createdAt, source (and callId/batchId) kept from the first put (if_not_exists);
 *                 reason replaced when one is given; updatedAt = now
 *          audit  Put <number>#<now>#added {source, reason?, callId?, batchId?}
 *  remove  entry  Delete, only if it exists (404 otherwise), the entry as it was returned
 *          audit  Put <number>#<now>#removed {source: api}
 * ```
 *
 * Putting a number already on the list is idempotent by design: the entry keeps when and how it first
 * came onto the list (`createdAt`, `source`), a new `reason` replaces the old one, and the audit partition
 * gets another `added` record (so a change of reason is on record). The dial's ConditionCheck
 * ({@link suppressionCheckItem}) asks only whether the entry exists.
 */

/** Audit records and opt-out markers are kept this long (the entry itself has no expiry: a number stays suppressed until removed). */
export const SUPPRESSION_AUDIT_RETENTION_SECONDS = 3 * 365 * 86400;

/** The longest `reason` kept. */
export const MAX_SUPPRESSION_REASON = 200;

/** The most entries one page of `GET /v1/suppressions` holds (also its default). */
export const MAX_SUPPRESSIONS_PAGE = 500;

/** What one put writes. */
export interface SuppressionPut {
  tenantId: string;
  number: string;
  reason?: string | undefined;
  source: SuppressionSource;
  /** For an opt-out: the call and batch it came from. */
  callId?: string | undefined;
  batchId?: string | undefined;
  now: number;
}

/** The audit record as stored. */
export interface SuppressionAuditRow {
  pk: string;
  sk: string;
  tenantId: string;
  number: string;
  action: 'added' | 'removed';
  at: string;
  source: SuppressionSource;
  reason?: string;
  callId?: string;
  batchId?: string;
  expiresAt: number;
}

const auditExpiry = (now: number) => Math.floor(now / 1000) + SUPPRESSION_AUDIT_RETENTION_SECONDS;

/**
 * The ConditionCheck a dial's transaction holds for each number it dials: the transaction commits only if
 * the number is not on its tenant's suppression list. Named `supp:<number>`; refused, it returns the
 * entry (ALL_OLD), so the dialer knows which contact to end `Suppressed` without a read.
 *
 * @example
 * const items = [...store.dialItems(dial), ...numbers.map((n) => suppressionCheckItem(store.tableName, batch.tenantId, n))];
 * const outcome = await transact(db, items);
 * if (!outcome.committed) for (const n of numbers) if (outcome.refused[suppressionItemName(n)]?.code === 'ConditionalCheckFailed') …
 */
export function suppressionCheckItem(tableName: string, tenantId: string, number: string): TransactItem {
  const e = new Expression();
  return conditionCheck(suppressionItemName(number), tableName, suppressionKey(tenantId, number), e.when(e.notExists('pk')), { returnStored: true });
}

/** The name of a number's suppression check in a dial's transaction. */
export const suppressionItemName = (number: string): string => `supp:${number}`;

/** The entry's and the audit record's items of one put (named `entry` and `audit`, or with a suffix when one transaction holds several). */
export function suppressionPutItems(tableName: string, put: SuppressionPut, suffix = ''): TransactItem[] {
  const at = iso(put.now);
  const e = new Expression();
  e.set('tenantId', put.tenantId)
    .set('number', put.number)
    .setIfNotExists('createdAt', at)
    .setIfNotExists('source', put.source)
    .set('updatedAt', at);
  if (put.reason !== undefined) e.set('reason', put.reason);
  if (put.callId !== undefined) e.setIfNotExists('callId', put.callId);
  if (put.batchId !== undefined) e.setIfNotExists('batchId', put.batchId);
  const audit: SuppressionAuditRow = {
    ...suppressionAuditKey(put.tenantId, put.number, at, 'added'),
    tenantId: put.tenantId,
    number: put.number,
    action: 'added',
    at,
    source: put.source,
    ...(put.reason !== undefined ? { reason: put.reason } : {}),
    ...(put.callId !== undefined ? { callId: put.callId } : {}),
    ...(put.batchId !== undefined ? { batchId: put.batchId } : {}),
    expiresAt: auditExpiry(put.now),
  };
  return [updateItem(`entry${suffix}`, tableName, suppressionKey(put.tenantId, put.number), e), putItem(`audit${suffix}`, tableName, audit)];
}

/**
 * The key of an opt-out's marker: one per number and call, written with `attribute_not_exists` beside
 * the opt-out's entry, so a replayed result finds it and writes (and announces) nothing again.
 */
export const optOutMarkerKey = (tenantId: string, number: string, callId: string) => ({
  pk: `TENANT#${tenantId}#SUPPAUDIT`,
  sk: `OPTOUT#${number}#${createHash('sha256').update(callId).digest('hex').slice(0, 32)}`,
});

/** The opt-out marker's item (named `opt-out`): only if this call's opt-out of this number is not recorded yet. */
export function optOutMarkerItem(tableName: string, input: { tenantId: string; number: string; callId: string; batchId: string; now: number }): TransactItem {
  const e = new Expression();
  const row = { ...optOutMarkerKey(input.tenantId, input.number, input.callId), tenantId: input.tenantId, number: input.number, callId: input.callId, batchId: input.batchId, at: iso(input.now), expiresAt: auditExpiry(input.now) };
  return putItem('opt-out', tableName, row, e.when(e.notExists('pk')));
}

/** The event id of a number's opt-out on a call: the same for every replay of the result, so its deliveries (whose job ids derive from it) are made once. */
export const optOutEventId = (tenantId: string, number: string, callId: string): string =>
  `evt_optout_${createHash('sha256').update(`${tenantId}\n${number}\n${callId}`).digest('hex').slice(0, 40)}`;

/** The listing's cursor: the shard and the last number read in it, bound to the tenant. */
interface ListPosition {
  shard: number;
  after?: string;
}

function encodeCursor(tenantId: string, position: ListPosition): string {
  return Buffer.from(JSON.stringify({ t: tenantId, s: position.shard, ...(position.after !== undefined ? { a: position.after } : {}) })).toString('base64url');
}

function decodeCursor(tenantId: string, cursor: string): ListPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  const v = value as { t?: unknown; s?: unknown; a?: unknown };
  if (typeof value !== 'object' || value === null || v.t !== tenantId) throw new InvalidCursorError();
  if (typeof v.s !== 'number' || !Number.isInteger(v.s) || v.s < 0 || v.s >= SUPPRESSION_SHARDS) throw new InvalidCursorError();
  if (v.a !== undefined && (typeof v.a !== 'string' || !/^\+[1-9]\d{1,14}$/.test(v.a))) throw new InvalidCursorError();
  return { shard: v.s, ...(typeof v.a === 'string' ? { after: v.a } : {}) };
}

/** The store of tenants' suppression lists (module comment). Reads and writes take the tenant from a {@link TenantScope}, as every tenant route's store does. */
export class SuppressionStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** A number's entry in the scope's tenant's list, read consistently. */
  async get(scope: TenantScope, number: string): Promise<SuppressionRow | undefined> {
    return this.getEntry(scope.tenantId, number);
  }

  /** Whether a number is on a tenant's list (a consistent read). The dial does not ask this: its ConditionCheck decides in its commit. */
  async isSuppressed(tenantId: string, number: string): Promise<boolean> {
    return (await this.getEntry(tenantId, number)) !== undefined;
  }

  private async getEntry(tenantId: string, number: string): Promise<SuppressionRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: suppressionKey(tenantId, number), ConsistentRead: true }));
    return result.Item as SuppressionRow | undefined;
  }

  /** Puts a number on the scope's tenant's list (idempotent, see the module comment): the entry and its audit record in one transaction. */
  async put(scope: TenantScope, input: Omit<SuppressionPut, 'tenantId'>): Promise<TransactOutcome> {
    return transact(this.db, suppressionPutItems(this.tableName, { ...input, tenantId: scope.tenantId }));
  }

  /**
   * Takes a number off the scope's tenant's list: the entry deleted only if it exists, and a `removed`
   * audit record, in one transaction. Undefined when it was not on the list (nothing written); a
   * contended transaction is returned as its outcome for the caller to answer 503.
   */
  async remove(scope: TenantScope, number: string, now: number): Promise<{ removed: SuppressionRow } | { removed: undefined; outcome?: TransactOutcome }> {
    const at = iso(now);
    const e = new Expression();
    e.when(e.exists('pk'));
    const { ConditionExpression, ExpressionAttributeNames } = e.build();
    const audit: SuppressionAuditRow = {
      ...suppressionAuditKey(scope.tenantId, number, at, 'removed'),
      tenantId: scope.tenantId,
      number,
      action: 'removed',
      at,
      source: SuppressionSource.api,
      expiresAt: auditExpiry(now),
    };
    const items = [
      named('entry', { Delete: { TableName: this.tableName, Key: suppressionKey(scope.tenantId, number), ConditionExpression, ExpressionAttributeNames, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } }),
      putItem('audit', this.tableName, audit),
    ];
    // The entry as it was is read first, for the answer; the Delete's condition is what decides. A number
    // not on the list (another tenant's, say) is a 404 without a write request.
    const before = await this.getEntry(scope.tenantId, number);
    if (!before) return { removed: undefined };
    const outcome = await transact(this.db, items);
    if (outcome.committed) return { removed: before ?? { ...suppressionKey(scope.tenantId, number), tenantId: scope.tenantId, number, source: SuppressionSource.api, createdAt: at } };
    if (!outcome.contention && outcome.refused['entry']?.code === 'ConditionalCheckFailed') return { removed: undefined };
    return { removed: undefined, outcome };
  }

  /**
   * A page of the scope's tenant's list: shard 0's entries in number order, then shard 1's, … (a Query
   * of one shard per request, so a page may be short and still have a cursor). The cursor names the
   * tenant: another tenant's is refused (`InvalidCursorError`).
   */
  async list(scope: TenantScope, limit: number, cursor?: string): Promise<{ entries: SuppressionRow[]; cursor?: string }> {
    const position = cursor === undefined ? { shard: 0 } : decodeCursor(scope.tenantId, cursor);
    const entries: SuppressionRow[] = [];
    let { shard, after } = position;
    while (shard < SUPPRESSION_SHARDS && entries.length < limit) {
      const pk = suppressionPartition(scope.tenantId, shard);
      const e = new Expression();
      const result = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          ...e.forQuery(e.eq('pk', pk)),
          Limit: limit - entries.length,
          ConsistentRead: true,
          ...(after !== undefined ? { ExclusiveStartKey: { pk, sk: `NUMBER#${after}` } } : {}),
        }),
      );
      const items = (result.Items ?? []) as SuppressionRow[];
      entries.push(...items);
      if (result.LastEvaluatedKey) {
        after = items.at(-1)?.number ?? String(result.LastEvaluatedKey['sk']).slice('NUMBER#'.length);
      } else {
        shard++;
        after = undefined;
      }
    }
    if (shard >= SUPPRESSION_SHARDS) return { entries };
    return { entries, cursor: encodeCursor(scope.tenantId, { shard, ...(after !== undefined ? { after } : {}) }) };
  }

  /** A number's audit records, oldest first (kept after a removal). */
  async audit(scope: TenantScope, number: string): Promise<SuppressionAuditRow[]> {
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({ TableName: this.tableName, ...e.forQuery(e.and(e.eq('pk', `TENANT#${scope.tenantId}#SUPPAUDIT`), e.beginsWith('sk', `${number}#`))), ConsistentRead: true }),
    );
    return (result.Items ?? []) as SuppressionAuditRow[];
  }

  /** Runs a transaction of this table's items (the import's and the intake's). */
  transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return transact(this.db, items);
  }
}
