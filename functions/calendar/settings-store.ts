import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { batchGet, conditionCheck, Expression, keyCursor, MAX_BATCH_GET_KEYS, transact, updateItem } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import type { CalendarCredentials } from './credentials.ts';
import { calendarIndexKey, calendarKey } from './model.ts';
import type { CalendarAccess } from './port.ts';
import type { BookableHoursBody, StoredCalendar } from './schemas.ts';

/**
 * Tenants' calendar settings on DynamoDB (the `calendar` table, keys in model.ts): one item per calendar
 * (`TENANT#<t>#CAL#<id>` / `CALENDAR`, credentials sealed) and one entry per calendar in its tenant's
 * listing (`TENANT#<t>#CALENDARS` / `<id>`), written and deleted together.
 *
 * A calendar also records the batches that name it in their `appointments` (`batchIds`, a string set) and
 * how many times one was added (`uses`): a batch's creation adds itself in the batch's own transaction
 * ({@link CalendarSettingsStore.useForBatchItem}, conditional on the calendar existing), and a calendar's
 * delete is conditional on `uses` being what it read, so a batch created between the delete's check of the
 * batches and its write cancels the delete instead of being left naming a deleted calendar.
 */

/** A calendar as stored: its settings and the batches that named it. */
export interface CalendarRecord extends StoredCalendar {
  tenantId: string;
  createdAt: string;
  /** Batches that named this calendar when they were created (finished ones are pruned by a refused delete). */
  batchIds: string[];
  /** How many batches were ever added: the delete's condition (a batch added since the check cancels it). */
  uses: number;
}

/** A calendar's settings and, when credentials are stored, what the provider needs to talk to it. */
export interface LoadedCalendar {
  settings: StoredCalendar;
  /** Unsealed credentials, the provider's calendar id and the calendar's zone; undefined when no credentials are stored. */
  access: CalendarAccess | undefined;
}

/** The settings a PUT writes (the credentials apart: sealed, or kept). */
export interface CalendarSettingsInput {
  provider: 'google';
  providerCalendarId: string;
  timezone: string;
  bookableHours: BookableHoursBody;
}

/** What a PUT came to. */
export type PutCalendarOutcome =
  | { committed: true; stored: StoredCalendar; created: boolean }
  /** No credentials were given and none are stored: a new calendar needs them. */
  | { committed: false; reason: 'credentials_required' }
  /** Another write held one of the items: nothing was written. */
  | { committed: false; reason: 'contention' };

/** What a delete came to. */
export type DeleteCalendarOutcome = 'deleted' | 'absent' | 'changed';

/** Condition fragments, named. */
const is = {
  exists: (e: Expression) => e.exists('pk'),
  /** Credentials are stored (an update without new ones keeps them). */
  withCredentials: (e: Expression) => e.exists('sealedCredentials'),
  /** No batch was added since `uses` was read. */
  usesAt: (e: Expression, uses: number) => (uses === 0 ? e.or(e.notExists('uses'), e.eq('uses', 0)) : e.eq('uses', uses)),
};

const LISTING_PARTITION = (tenantId: string) => calendarIndexKey(tenantId, '-').pk;

export class CalendarSettingsStore {
  private readonly db: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** The table's name (the calls context's port puts an item here in a batch's transaction). */
  get table(): string {
    return this.tableName;
  }

  /**
   * Creates or updates a calendar and its listing entry in one transaction. `sealedCredentials` replaces
   * the stored ones; undefined keeps them, and is refused (`credentials_required`) when none are stored:
   * the condition decides, so a calendar deleted meanwhile is not recreated without credentials.
   */
  async put(scope: TenantScope, calendarId: string, settings: CalendarSettingsInput, sealedCredentials: string | undefined, now: number): Promise<PutCalendarOutcome> {
    const at = new Date(now).toISOString();
    const e = new Expression()
      .set('tenantId', scope.tenantId)
      .set('calendarId', calendarId)
      .set('provider', settings.provider)
      .set('providerCalendarId', settings.providerCalendarId)
      .set('timezone', settings.timezone)
      .set('bookableHours', settings.bookableHours)
      .set('updatedAt', at)
      .setIfNotExists('createdAt', at);
    if (sealedCredentials !== undefined) e.set('sealedCredentials', sealedCredentials);
    else e.when(is.withCredentials(e));
    const listing = new Expression().set('calendarId', calendarId).setIfNotExists('createdAt', at);
    const outcome = await transact(this.db, [
      updateItem('calendar', this.tableName, calendarKey(scope.tenantId, calendarId), e, { returnStored: true }),
      updateItem('listing', this.tableName, calendarIndexKey(scope.tenantId, calendarId), listing),
    ]);
    if (!outcome.committed) {
      if (outcome.refused['calendar']?.code === 'ConditionalCheckFailed') return { committed: false, reason: 'credentials_required' };
      if (outcome.contention) return { committed: false, reason: 'contention' };
      throw outcome.error;
    }
    // Read back: the answer shows the calendar as stored (a DELETE that committed right after leaves what was written).
    const record = await this.get(scope.tenantId, calendarId);
    if (record) return { committed: true, stored: storedOf(record), created: record.createdAt === at };
    return { committed: true, stored: { calendarId, ...settings, ...(sealedCredentials !== undefined ? { sealedCredentials } : {}), updatedAt: at }, created: true };
  }

  /** A calendar of the scope's tenant (consistent read). */
  getIn(scope: TenantScope, calendarId: string): Promise<CalendarRecord | undefined> {
    return this.get(scope.tenantId, calendarId);
  }

  /** A tenant's calendar (consistent read); for the tool routes, whose tenant is the signed call's batch's. */
  async get(tenantId: string, calendarId: string): Promise<CalendarRecord | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: calendarKey(tenantId, calendarId), ConsistentRead: true }));
    return result.Item ? recordOf(result.Item) : undefined;
  }

  /** The scope's calendars in id order, a page of up to `limit`: a Query of its listing, then a consistent BatchGet of the items. */
  async list(scope: TenantScope, limit: number, cursor?: string): Promise<{ calendars: CalendarRecord[]; cursor?: string }> {
    const partition = LISTING_PARTITION(scope.tenantId);
    const pages = keyCursor(['pk', 'sk'], { pk: partition });
    const startKey = pages.decode(cursor);
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({ TableName: this.tableName, ...e.forQuery(e.eq('pk', partition)), Limit: limit, ConsistentRead: true, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
    );
    const ids = (result.Items ?? []).map((item) => item['calendarId'] as string);
    const rows: CalendarRecord[] = [];
    for (let i = 0; i < ids.length; i += MAX_BATCH_GET_KEYS) {
      const items = await batchGet(this.db, this.tableName, ids.slice(i, i + MAX_BATCH_GET_KEYS).map((id) => calendarKey(scope.tenantId, id)));
      rows.push(...items.map(recordOf));
    }
    const byId = new Map(rows.map((row) => [row.calendarId, row]));
    const calendars = ids.flatMap((id) => byId.get(id) ?? []);
    const next = pages.encode(result.LastEvaluatedKey);
    return next ? { calendars, cursor: next } : { calendars };
  }

  /**
   * Deletes a calendar and its listing entry, only if no batch was added to it since `uses` was read
   * (`changed` otherwise: check the batches again). `absent`: there was no such calendar.
   */
  async delete(scope: TenantScope, calendarId: string, uses: number): Promise<DeleteCalendarOutcome> {
    const e = new Expression();
    e.when(is.exists(e)).when(is.usesAt(e, uses));
    const outcome = await transact(this.db, [
      { name: 'calendar', Delete: { TableName: this.tableName, Key: calendarKey(scope.tenantId, calendarId), ...e.build(), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
      { name: 'listing', Delete: { TableName: this.tableName, Key: calendarIndexKey(scope.tenantId, calendarId) } },
    ]);
    if (outcome.committed) return 'deleted';
    const refused = outcome.refused['calendar'];
    if (refused?.code === 'ConditionalCheckFailed') return refused.item ? 'changed' : 'absent';
    if (outcome.contention) return 'changed';
    throw outcome.error;
  }

  /**
   * Takes finished batches off a calendar's `batchIds` (those a refused delete found no longer live), only
   * if no batch was added since `uses` was read. Returns whether it did; a refusal is harmless (the next
   * delete prunes again).
   */
  async forgetBatches(scope: TenantScope, calendarId: string, finished: readonly string[], uses: number): Promise<boolean> {
    const current = await this.get(scope.tenantId, calendarId);
    if (!current || current.uses !== uses) return false;
    const remaining = current.batchIds.filter((id) => !finished.includes(id));
    if (remaining.length === current.batchIds.length) return true;
    const e = new Expression();
    e.when(is.exists(e)).when(is.usesAt(e, uses));
    if (remaining.length === 0) e.remove('batchIds');
    else e.set('batchIds', new Set(remaining));
    const outcome = await transact(this.db, [updateItem('calendar', this.tableName, calendarKey(scope.tenantId, calendarId), e)]);
    return outcome.committed;
  }

  /**
   * The item a new batch's transaction carries when it names this calendar in its `appointments`: the
   * batch joins the calendar's `batchIds` (and `uses` counts it), only if the calendar exists — named
   * `calendar`, so a refusal tells the batch's creator which item it was.
   */
  useForBatchItem(tenantId: string, calendarId: string, batchId: string): TransactItem {
    const e = new Expression().add('batchIds', new Set([batchId])).add('uses', 1);
    e.when(is.exists(e));
    return updateItem('calendar', this.tableName, calendarKey(tenantId, calendarId), e);
  }

  /** A ConditionCheck that the calendar exists, for a transaction that relies on it without changing it. */
  existsCheck(tenantId: string, calendarId: string): TransactItem {
    const e = new Expression();
    return conditionCheck('calendar', this.tableName, calendarKey(tenantId, calendarId), e.when(is.exists(e)));
  }
}

/**
 * The reader the tool routes and the settle job use (functions/calendar/tools-api.ts, settle-job.ts): a
 * tenant's calendar with its credentials unsealed, or undefined when there is no such calendar. Without
 * `credentials` (a host with no secrets key) a calendar that has sealed credentials throws.
 *
 * @example
 * const loadCalendar = calendarLoader(store, credentials);
 * const calendar = await loadCalendar(batch.tenantId, batch.appointments.calendarId);
 * if (!calendar?.access) throw …; // no such calendar, or no credentials stored
 */
export function calendarLoader(
  store: CalendarSettingsStore,
  credentials: CalendarCredentials | undefined,
): (tenantId: string, calendarId: string) => Promise<LoadedCalendar | undefined> {
  return async (tenantId, calendarId) => {
    const record = await store.get(tenantId, calendarId);
    if (!record) return undefined;
    const settings = storedOf(record);
    if (record.sealedCredentials === undefined) return { settings, access: undefined };
    if (!credentials) throw new Error('this function has no key to open calendar credentials with (lib/access.ts `calendarCredentials`)');
    const opened = await credentials.open(tenantId, calendarId, record.sealedCredentials);
    return { settings, access: { providerCalendarId: record.providerCalendarId, timeZone: record.timezone, credentials: opened } };
  };
}

/** The settings of a record, without what the store keeps beside them. */
export function storedOf(record: CalendarRecord): StoredCalendar {
  return {
    calendarId: record.calendarId,
    provider: record.provider,
    providerCalendarId: record.providerCalendarId,
    timezone: record.timezone,
    bookableHours: record.bookableHours,
    ...(record.sealedCredentials !== undefined ? { sealedCredentials: record.sealedCredentials } : {}),
    updatedAt: record.updatedAt,
  };
}

function recordOf(item: Record<string, unknown>): CalendarRecord {
  const batchIds = item['batchIds'];
  return {
    tenantId: item['tenantId'] as string,
    calendarId: item['calendarId'] as string,
    provider: item['provider'] as 'google',
    providerCalendarId: item['providerCalendarId'] as string,
    timezone: item['timezone'] as string,
    bookableHours: item['bookableHours'] as BookableHoursBody,
    ...(typeof item['sealedCredentials'] === 'string' ? { sealedCredentials: item['sealedCredentials'] } : {}),
    createdAt: item['createdAt'] as string,
    updatedAt: item['updatedAt'] as string,
    batchIds: batchIds instanceof Set ? [...(batchIds as Set<string>)].sort() : [],
    uses: typeof item['uses'] === 'number' ? item['uses'] : 0,
  };
}
