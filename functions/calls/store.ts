import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, GetCommand, paginateQuery, paginateScan, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { iso } from '../platform/clock.ts';
import { Expression } from '../platform/dynamo.ts';
import type { TransactItem } from '../jobs/index.ts';
import { BatchStatus, batchKey, CONTACT_PREFIX, ContactStatus, contactKey, countAttribute, LIST_PAGE_SIZE, listKey, listPrefix, tenantKey } from './model.ts';
import type { BatchRow, CompletionSource, ContactRow, ListPage, TenantRow } from './model.ts';

/** Condition fragments, named; every conditional write below is a list of these. */
const is = {
  exists: (e: Expression) => `attribute_exists(${e.name('pk')})`,
  absent: (e: Expression) => `attribute_not_exists(${e.name('pk')})`,
  /** The contact's call of this round is in progress: the only state a result may complete. */
  callingIn: (e: Expression, round: number) => `${e.name('status')} = ${e.value(ContactStatus.Calling)} AND ${e.name('round')} = ${e.value(round)}`,
  /** The call in progress is this one: a result or a watchdog of another call (an earlier round's) never matches. */
  theCall: (e: Expression, callId: string) => `${e.name('callId')} = ${e.value(callId)}`,
  /** The contact may be dialled in `round`: never dialled (round 1), or promoted by the last round's finaliser. */
  dialableIn: (e: Expression, round: number) =>
    round === 1
      ? `attribute_not_exists(${e.name('pk')})`
      : `${e.name('status')} = ${e.value(ContactStatus.RetryEligible)} AND ${e.name('round')} = ${e.value(round - 1)}`,
  /** A completed call of this round whose code is the one read (what the finaliser promotes). */
  completedIn: (e: Expression, round: number, code: string) =>
    `${e.name('status')} = ${e.value(ContactStatus.Completed)} AND ${e.name('round')} = ${e.value(round)} AND ${e.name('code')} = ${e.value(code)}`,
  /** The tenant has a free slot. */
  slotFree: (e: Expression) => `${e.name('active')} < ${e.name('concurrencyLimit')}`,
  /** The batch may dial in this round. */
  diallingRound: (e: Expression, round: number) =>
    `${e.inList('status', [BatchStatus.Pending, BatchStatus.InProgress])} AND ${e.name('round')} = ${e.value(round)}`,
  /** The batch is in progress in this round (calls complete, the finaliser works). */
  inProgressRound: (e: Expression, round: number) => `${e.name('status')} = ${e.value(BatchStatus.InProgress)} AND ${e.name('round')} = ${e.value(round)}`,
  /** Nobody moved the dial cursor since it was read. */
  dialCursorAt: (e: Expression, page: number, pos: number) => `${e.name('dialPage')} = ${e.value(page)} AND ${e.name('dialPos')} = ${e.value(pos)}`,
  /** Nobody moved the finaliser's cursor since it was read. */
  finCursorAt: (e: Expression, page: number, pos: number) => `${e.name('finPage')} = ${e.value(page)} AND ${e.name('finPos')} = ${e.value(pos)}`,
  /** This completion ends the round's last active call of a fully dialled round. */
  lastCall: (e: Expression) => `${e.name('dialComplete')} = ${e.value(true)} AND ${e.name('nCalling')} = ${e.value(1)}`,
  notLastCall: (e: Expression) => `NOT (${e.name('dialComplete')} = ${e.value(true)} AND ${e.name('nCalling')} = ${e.value(1)})`,
  /** The round is fully dialled and no call is in progress: the finaliser may run. */
  roundDone: (e: Expression) => `${e.name('dialComplete')} = ${e.value(true)} AND ${e.name('nCalling')} = ${e.value(0)}`,
};

/** Why one item of a cancelled transaction failed, with the item as stored when its condition failed. */
export interface CancelReason {
  /** `None`, `ConditionalCheckFailed`, `TransactionConflict`, `ThrottlingError`, … */
  code: string;
  item: Record<string, unknown> | undefined;
}

/** A transaction's result: committed, or cancelled with one reason per item (in item order). */
export type TransactResult = { committed: true } | { committed: false; reasons: CancelReason[] };

/** Item codes that mean "another writer was there", not "the state says no". */
export const CONTENTION_CODES: ReadonlySet<string> = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

/** A contact to complete, and how. */
export interface CompletionWrite {
  batchId: string;
  tenantId: string;
  contactNumber: string;
  round: number;
  /** The call to complete; undefined only for a watchdog enqueued before calls had ids (bound by its round alone). */
  callId: string | undefined;
  /** Whether this completion ends the last active call of a fully dialled round (see {@link is.lastCall}). */
  last: boolean;
  code: string;
  retryable: boolean;
  source: CompletionSource;
  report?: { reportedCode: string; emptyTranscription: boolean; durationSeconds: number };
  now: number;
}

/** A dial: which contact, where the cursor was, where it goes. */
export interface DialWrite {
  batch: BatchRow;
  contactNumber: string;
  page: number;
  pos: number;
  next: { page: number; pos: number };
  /** The call this dial places (`callIdFor` in model.ts). */
  callId: string;
  watchdogJobId: string;
  now: number;
}

/** DynamoDB left contact rows of a page unread (throttling): the read fails (503) rather than half-answers. */
export class IncompleteContactsReadError extends Error {
  override readonly name = 'IncompleteContactsReadError';
  constructor(unprocessed: number) {
    super(`${unprocessed} contact rows left unprocessed by BatchGetItem`);
  }
}

/**
 * The calls store: every write is a named conditional item for a TransactWriteItems, so a contact's
 * change, the tenant's slot, the batch's counters and the jobs and events they imply commit together.
 */
export class CallsStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  // ─── reads ──────────────────────────────────────────────────────────────────────────────────────

  async getTenant(tenantId: string): Promise<TenantRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: tenantKey(tenantId), ConsistentRead: true }));
    return result.Item as TenantRow | undefined;
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
   * Every batch, newest first, up to `limit`: a Scan of the table, for the local ops panel (on AWS a
   * tenant's batches would want an index; nothing deployed calls this).
   */
  async listBatches(limit = 100): Promise<BatchRow[]> {
    const rows: BatchRow[] = [];
    for await (const page of paginateScan({ client: this.db }, { TableName: this.tableName, FilterExpression: 'sk = :batch', ExpressionAttributeValues: { ':batch': 'BATCH' } })) {
      rows.push(...((page.Items ?? []) as BatchRow[]));
    }
    return rows.sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit);
  }

  /** One page of a round's dial list (immutable once written). */
  async getListPage(batchId: string, round: number, page: number): Promise<ListPage | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: listKey(batchId, round, page), ConsistentRead: true }));
    return result.Item as ListPage | undefined;
  }

  /**
   * Contact states by number, read consistently. Keys DynamoDB leaves unprocessed are reported, not
   * re-requested: the caller (a job) fails its run and the job layer decides when to try again.
   */
  async getContacts(batchId: string, numbers: readonly string[]): Promise<{ found: Map<string, ContactRow>; unprocessed: number }> {
    const found = new Map<string, ContactRow>();
    if (numbers.length === 0) return { found, unprocessed: 0 };
    if (numbers.length > 100) throw new RangeError('BatchGetItem takes at most 100 keys');
    const result = await this.db.send(
      new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: numbers.map((n) => contactKey(batchId, n)), ConsistentRead: true } } }),
    );
    for (const item of result.Responses?.[this.tableName] ?? []) found.set((item as ContactRow).contactNumber, item as ContactRow);
    return { found, unprocessed: result.UnprocessedKeys?.[this.tableName]?.Keys?.length ?? 0 };
  }

  /** Every item under the batch whose sort key starts with `prefix`, in key order (DynamoDB's pages followed). */
  async queryBatch<T>(batchId: string, prefix: string): Promise<T[]> {
    const items: T[] = [];
    const pages = paginateQuery(
      { client: this.db },
      {
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':pk': batchKey(batchId).pk, ':prefix': prefix },
        ConsistentRead: true,
      },
    );
    for await (const page of pages) items.push(...((page.Items ?? []) as T[]));
    return items;
  }

  /**
   * Up to `limit` contacts in upload order from position `offset`, with their state if dialled: a Query of
   * the round-1 list pages they are on (every page but the last holds {@link LIST_PAGE_SIZE} numbers) and a
   * consistent BatchGet of their contact rows. Keys DynamoDB leaves unprocessed fail the read
   * ({@link IncompleteContactsReadError}), not retried here.
   */
  async contactsPage(batchId: string, offset: number, limit: number): Promise<{ number: string; state: ContactRow | undefined }[]> {
    const first = Math.floor(offset / LIST_PAGE_SIZE);
    const last = Math.floor((offset + limit - 1) / LIST_PAGE_SIZE);
    const listed = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :first AND :last',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':pk': batchKey(batchId).pk, ':first': listKey(batchId, 1, first).sk, ':last': listKey(batchId, 1, last).sk },
        ConsistentRead: true,
      }),
    );
    const pages = (listed.Items ?? []) as ListPage[]; // in key order: page by page
    const numbers = pages.flatMap((page) => page.numbers).slice(offset - first * LIST_PAGE_SIZE, offset - first * LIST_PAGE_SIZE + limit);
    const chunks = Array.from({ length: Math.ceil(numbers.length / 100) }, (_, i) => numbers.slice(i * 100, (i + 1) * 100));
    const reads = await Promise.all(chunks.map((chunk) => this.getContacts(batchId, chunk)));
    const unprocessed = reads.reduce((n, r) => n + r.unprocessed, 0);
    if (unprocessed > 0) throw new IncompleteContactsReadError(unprocessed);
    const byNumber = new Map(reads.flatMap((r) => [...r.found]));
    return numbers.map((number) => ({ number, state: byNumber.get(number) }));
  }

  /** Every contact in upload order, with its state if it has been dialled (the local panel's view). */
  async listContacts(batchId: string): Promise<{ number: string; state: ContactRow | undefined }[]> {
    const [pages, states] = await Promise.all([this.queryBatch<ListPage>(batchId, listPrefix(1)), this.queryBatch<ContactRow>(batchId, CONTACT_PREFIX)]);
    const byNumber = new Map(states.map((s) => [s.contactNumber, s]));
    return pages.flatMap((page) => page.numbers.map((number) => ({ number, state: byNumber.get(number) })));
  }

  // ─── the transaction ────────────────────────────────────────────────────────────────────────────

  /** Runs one TransactWriteItems. A cancellation is a result (with each item's reason and stored item), not an error. */
  async transact(items: readonly TransactItem[]): Promise<TransactResult> {
    try {
      await this.db.send(new TransactWriteCommand({ TransactItems: [...items] }));
      return { committed: true };
    } catch (error) {
      if (error instanceof Error && error.name === 'TransactionCanceledException') {
        const raw = (error as { CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] }).CancellationReasons ?? [];
        return { committed: false, reasons: raw.map((r) => ({ code: r.Code ?? 'None', item: r.Item ? unmarshall(r.Item) : undefined })) };
      }
      throw error;
    }
  }

  // ─── tenants ────────────────────────────────────────────────────────────────────────────────────

  /** Creates or updates a tenant; a new limit or owner never resets the calls in progress. */
  upsertTenantItem(input: { tenantId: string; concurrencyLimit: number; ownerEmail: string | undefined; now: number }): TransactItem {
    const e = new Expression();
    const active = e.name('active');
    const createdAt = e.name('createdAt');
    const keep = [`${active} = if_not_exists(${active}, ${e.value(0)})`, `${createdAt} = if_not_exists(${createdAt}, ${e.value(iso(input.now))})`];
    e.set('tenantId', input.tenantId).set('concurrencyLimit', input.concurrencyLimit).set('updatedAt', iso(input.now));
    if (input.ownerEmail) e.set('ownerEmail', input.ownerEmail);
    else e.remove('ownerEmail');
    return this.update(tenantKey(input.tenantId), withSets(e.build(), keep));
  }

  // ─── batches ────────────────────────────────────────────────────────────────────────────────────

  /**
   * A new batch, its round-1 dial list, and a check that its tenant exists. The batch Put is item 0; if a
   * batch with its id exists (an idempotent retry), the cancellation carries that row.
   */
  createBatchItems(batch: BatchRow, pages: readonly ListPage[]): TransactItem[] {
    const check = new Expression();
    check.when(is.exists(check));
    const built = check.build();
    return [
      {
        Put: {
          TableName: this.tableName,
          Item: batch,
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'pk' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: tenantKey(batch.tenantId),
          ConditionExpression: built.ConditionExpression!,
          ExpressionAttributeNames: built.ExpressionAttributeNames,
        },
      },
      ...pages.map((page) => ({ Put: { TableName: this.tableName, Item: page } })),
    ];
  }

  /**
   * Deletes a batch: status Deleted, and the tenant gets back the slots of the batch's calls in progress
   * (their results will be ignored, so nothing else will). Conditional on the counts read, so a dial or
   * a result that lands in between cancels the transaction instead of leaking a slot.
   */
  deleteBatchItems(batch: BatchRow, now: number): TransactItem[] {
    const e = new Expression();
    e.when(`${e.name('status')} = ${e.value(batch.status)}`)
      .when(`${e.name('nCalling')} = ${e.value(batch.nCalling)}`)
      .set('status', BatchStatus.Deleted)
      .set('deletedAt', iso(now))
      .set('updatedAt', iso(now));
    const items: TransactItem[] = [this.update(batchKey(batch.batchId), e.build())];
    if (batch.nCalling > 0) {
      const t = new Expression();
      t.when(is.exists(t)).add('active', -batch.nCalling).set('updatedAt', iso(now));
      items.push(this.update(tenantKey(batch.tenantId), t.build()));
    }
    return items;
  }

  // ─── dialling ───────────────────────────────────────────────────────────────────────────────────

  /**
   * One dial, items [contact, tenant, batch]: the contact becomes Calling in this round, the tenant's
   * slot is taken (only if one is free), the batch counts the call and moves its cursor (only if nobody
   * moved it). The caller adds the watchdog job.
   */
  dialItems(d: DialWrite): TransactItem[] {
    const { batch, now } = d;
    const round = batch.round;
    const contact = new Expression();
    const attempts = contact.name('attempts');
    const countDial = `${attempts} = if_not_exists(${attempts}, ${contact.value(0)}) + ${contact.value(1)}`;
    contact
      .when(is.dialableIn(contact, round))
      .set('batchId', batch.batchId)
      .set('contactNumber', d.contactNumber)
      .set('status', ContactStatus.Calling)
      .set('round', round)
      .set('callId', d.callId)
      .set('watchdogJobId', d.watchdogJobId)
      .set('dialledAt', iso(now))
      .set('updatedAt', iso(now))
      .remove('code', 'retryable', 'completedAt', 'source', 'reportedCode', 'durationSeconds', 'emptyTranscription');

    const tenant = new Expression();
    tenant.when(is.exists(tenant)).when(is.slotFree(tenant)).add('active', 1).set('updatedAt', iso(now));

    const from = round === 1 ? ContactStatus.Queued : ContactStatus.RetryEligible;
    const b = new Expression();
    b.when(is.diallingRound(b, round))
      .when(is.dialCursorAt(b, d.page, d.pos))
      .set('status', BatchStatus.InProgress)
      .set('dialPage', d.next.page)
      .set('dialPos', d.next.pos)
      .set('dialComplete', d.next.page >= batch.listPages)
      .add(countAttribute(ContactStatus.Calling), 1)
      .add(countAttribute(from), -1)
      .set('updatedAt', iso(now));
    return [
      this.update(contactKey(batch.batchId, d.contactNumber), withSets(contact.build(), [countDial])),
      this.update(tenantKey(batch.tenantId), tenant.build()),
      this.update(batchKey(batch.batchId), b.build()),
    ];
  }

  /**
   * Moves the dial cursor past a contact that cannot be dialled, item [batch]. With `finaliseIf`
   * (the list ends here) the write also says whether calls are still in progress: `'calls_in_progress'`
   * expects some, `'round_done'` expects none (and the caller adds the finaliser job).
   */
  skipItem(batch: BatchRow, page: number, pos: number, next: { page: number; pos: number }, now: number, finaliseIf?: 'calls_in_progress' | 'round_done'): TransactItem {
    const e = new Expression();
    e.when(is.diallingRound(e, batch.round))
      .when(is.dialCursorAt(e, page, pos))
      .set('dialPage', next.page)
      .set('dialPos', next.pos)
      .set('dialComplete', next.page >= batch.listPages)
      .set('updatedAt', iso(now));
    if (finaliseIf === 'calls_in_progress') e.when(`${e.name('nCalling')} > ${e.value(0)}`);
    if (finaliseIf === 'round_done') e.when(`${e.name('nCalling')} = ${e.value(0)}`);
    return this.update(batchKey(batch.batchId), e.build());
  }

  // ─── completing a call ──────────────────────────────────────────────────────────────────────────

  /**
   * One completion, items [contact, tenant, batch]: the contact must be Calling in this round with this
   * call and becomes Completed with its normalised code; the tenant's slot is released; the batch counts
   * the code and, by the last-call condition, says whether this completion ends the round.
   */
  completionItems(c: CompletionWrite): TransactItem[] {
    const contact = new Expression();
    contact.when(is.callingIn(contact, c.round));
    if (c.callId !== undefined) contact.when(is.theCall(contact, c.callId));
    contact
      .set('status', ContactStatus.Completed)
      .set('code', c.code)
      .set('retryable', c.retryable)
      .set('source', c.source)
      .set('completedAt', iso(c.now))
      .set('updatedAt', iso(c.now));
    if (c.report) {
      contact.set('reportedCode', c.report.reportedCode).set('emptyTranscription', c.report.emptyTranscription).set('durationSeconds', c.report.durationSeconds);
    }

    const tenant = new Expression();
    tenant.when(is.exists(tenant)).add('active', -1).set('updatedAt', iso(c.now));

    const b = new Expression();
    const byCode = `${b.name('byCode')}.${b.name(c.code)}`;
    const countCode = `${byCode} = if_not_exists(${byCode}, ${b.value(0)}) + ${b.value(1)}`;
    b.when(is.inProgressRound(b, c.round))
      .when(c.last ? is.lastCall(b) : is.notLastCall(b))
      .add(countAttribute(ContactStatus.Calling), -1)
      .add(countAttribute(ContactStatus.Completed), 1)
      .set('updatedAt', iso(c.now));
    return [
      this.update(contactKey(c.batchId, c.contactNumber), contact.build()),
      this.update(tenantKey(c.tenantId), tenant.build()),
      this.update(batchKey(c.batchId), withSets(b.build(), [countCode])),
    ];
  }

  // ─── finalising a round ─────────────────────────────────────────────────────────────────────────

  /**
   * One step of the finaliser over the round's list, items [...contacts, next list page?, batch]: each
   * promoted contact goes Completed → RetryEligible (only if it still is Completed with the code read),
   * the promoted numbers become one page of the next round's list, and the batch moves the finaliser's
   * cursor and its counts (only if nobody moved the cursor).
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
    const items: TransactItem[] = promote.map((p) => {
      const e = new Expression();
      e.when(is.completedIn(e, batch.round, p.code)).set('status', ContactStatus.RetryEligible).set('updatedAt', iso(now));
      return this.update(contactKey(batch.batchId, p.contactNumber), e.build());
    });
    if (promote.length > 0) {
      const page: ListPage = { ...listKey(batch.batchId, batch.round + 1, batch.nextPages), round: batch.round + 1, page: batch.nextPages, numbers: promote.map((p) => p.contactNumber) };
      items.push({ Put: { TableName: this.tableName, Item: page } });
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
    const extra: string[] = [];
    if (promote.length > 0) {
      b.add('nextPages', 1)
        .add('nextSize', promote.length)
        .add(countAttribute(ContactStatus.Completed), -promote.length)
        .add(countAttribute(ContactStatus.RetryEligible), promote.length);
      for (const [code, n] of codeCounts) {
        const path = `${b.name('byCode')}.${b.name(code)}`;
        extra.push(`${path} = ${path} - ${b.value(n)}`);
      }
    }
    items.push(this.update(batchKey(batch.batchId), withSets(b.build(), extra)));
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
      .set('updatedAt', iso(now));
    return this.update(batchKey(batch.batchId), e.build());
  }

  /**
   * Re-arms a batch for its next round, item [batch]: the round's list is what the finaliser promoted,
   * the dial cursor starts again at its head (the seed's "reset the offset"). The caller adds the next
   * round's dialer, delayed, and the event.
   */
  rearmItem(batch: BatchRow, now: number): TransactItem {
    const e = new Expression();
    e.when(is.inProgressRound(e, batch.round))
      .when(is.roundDone(e))
      .when(is.finCursorAt(e, batch.finPage, batch.finPos))
      .when(`${e.name('nextSize')} = ${e.value(batch.nextSize)}`)
      .set('status', BatchStatus.InProgress)
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
      .set('updatedAt', iso(now));
    return this.update(batchKey(batch.batchId), e.build());
  }

  private update(key: Record<string, string>, built: ReturnType<Expression['build']>): TransactItem {
    return {
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: built.UpdateExpression!,
        ...(built.ExpressionAttributeNames ? { ExpressionAttributeNames: built.ExpressionAttributeNames } : {}),
        ...(built.ExpressionAttributeValues ? { ExpressionAttributeValues: built.ExpressionAttributeValues } : {}),
        // A refused condition returns the item as stored: the caller decides from it, without a read.
        ...(built.ConditionExpression ? { ConditionExpression: built.ConditionExpression, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
      },
    };
  }
}

/**
 * Adds SET assignments the builder cannot express (`if_not_exists`, a map entry by a code's name) to a
 * built update; their placeholders must come from the same {@link Expression}.
 */
function withSets(built: ReturnType<Expression['build']>, assignments: readonly string[]): ReturnType<Expression['build']> {
  if (assignments.length === 0) return built;
  const update = built.UpdateExpression ?? '';
  const merged = update.startsWith('SET ') ? `SET ${assignments.join(', ')}, ${update.slice(4)}` : `SET ${assignments.join(', ')} ${update}`.trim();
  return { ...built, UpdateExpression: merged };
}
