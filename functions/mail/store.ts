import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../platform/clock.ts';
import { conditionFailure, Expression, putItem, transact, updateItem } from '../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../platform/dynamo.ts';
import type { TableDefinition } from '../platform/tables.ts';
import { windowOf } from './caps.ts';
import type { Cap } from './caps.ts';
import { LinkRefusedError, MarkRefusedError } from './errors.ts';

/**
 * The mail table, single-table (pk/sk). Mail owns the owner's contact state, so the calls context's
 * tenant row needs to know nothing about confirmation:
 *
 * | pk | sk | what |
 * |---|---|---|
 * | `TENANT#<tenantId>` | `OWNER` | the owner's contact: confirmed address, pending address with its token hash (and its raw token until mailed) |
 * | `TENANT#<tenantId>` | `NOTICE#<eventId>` | one owner.notify: sent (notifiedAt), dropped (burst cap) or skipped |
 * | `TENANT#<tenantId>` | `ACCESS#<requestId>` | one access request: pending, approved or denied |
 * | `TENANT#<tenantId>` | `ACCESS_BY#<email>` | the open request of an address (one per address per link lifetime) |
 * | `CAP#<cap>#<subject>` | `<window start>` | the jobs holding a slot of a cap in one hourly window |
 */
export const mailTable = {
  name: 'mail',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** How long notices and access requests are kept. */
export const MAIL_RECORD_RETENTION_SECONDS = 90 * 86400;

const tenantPk = (tenantId: string) => `TENANT#${tenantId}`;
export const contactKey = (tenantId: string) => ({ pk: tenantPk(tenantId), sk: 'OWNER' });
export const noticeKey = (tenantId: string, eventId: string) => ({ pk: tenantPk(tenantId), sk: `NOTICE#${eventId}` });
export const accessKey = (tenantId: string, requestId: string) => ({ pk: tenantPk(tenantId), sk: `ACCESS#${requestId}` });
export const accessByEmailKey = (tenantId: string, email: string) => ({ pk: tenantPk(tenantId), sk: `ACCESS_BY#${email.toLowerCase()}` });
export const capKey = (cap: Cap, subject: string, windowStart: number) => ({ pk: `CAP#${cap.name}#${subject}`, sk: iso(windowStart) });

const epochSeconds = (ms: number) => Math.floor(ms / 1000);

/** The owner's contact state, as stored. Only a confirmed address is ever mailed a notification. */
export interface OwnerContact {
  tenantId: string;
  /** The confirmed address (set only by a confirmation link). */
  email?: string;
  confirmedAt?: string;
  /** Hash of the token that confirmed `email`, so a reused link is told "used", not "invalid". */
  confirmedTokenHash?: string;
  /** An address waiting for its confirmation link. */
  pendingEmail?: string;
  pendingId?: string;
  pendingTokenHash?: string;
  /**
   * The pending link's raw token, kept only until its mail is sent: the mark (and a confirmation, or a
   * newer change) removes it, so no job row and no sent link's row ever holds it.
   */
  pendingToken?: string;
  pendingExpiresAt?: string;
  pendingRequestedAt?: string;
  /** Set after the confirmation mail was sent (send, then mark). */
  pendingMailedAt?: string;
  updatedAt: string;
}

export type NoticeStatus = 'sent' | 'dropped' | 'skipped';

/** What became of one owner.notify. */
export interface Notice {
  tenantId: string;
  eventId: string;
  template: string;
  status: NoticeStatus;
  jobId: string;
  /** sent: when the send succeeded (the mark is written after it). */
  notifiedAt?: string;
  droppedAt?: string;
  skippedAt?: string;
  /** dropped/skipped: why. */
  reason?: string;
  recipient?: string;
  messageId?: string;
  providerMessageId?: string;
  expiresAt: number;
}

export type AccessStatus = 'pending' | 'approved' | 'denied';

/** An access request: someone asks the tenant's owner for access; one link click decides it. */
export interface AccessRequest {
  tenantId: string;
  requestId: string;
  email: string;
  status: AccessStatus;
  createdAt: string;
  tokenHash: string;
  tokenExpiresAt: string;
  /** The links' raw token, kept only until the approval mail is sent (the mark, or a decision, removes it). */
  mailToken?: string;
  /** Set after the approval mail was sent (send, then mark). */
  mailedAt?: string;
  resolvedAt?: string;
  expiresAt: number;
}

/** Slots asked of several caps at once; all are taken or none. */
export interface SlotRequest {
  cap: Cap;
  subject: string;
}

export type SlotResult = { granted: true } | { granted: false; full: Cap[] };

/**
 * The mail context's DynamoDB store. Every change is a conditional write whose refusal becomes a typed
 * error ({@link LinkRefusedError}, {@link MarkRefusedError}).
 */
export class MailStore {
  readonly tableName: string;
  private readonly db: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  private async get<T>(key: Record<string, string>): Promise<T | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
    return result.Item as T | undefined;
  }

  // ─── Owner contact ─────────────────────────────────────────────────────────────────────────────────

  getContact(tenantId: string): Promise<OwnerContact | undefined> {
    return this.get<OwnerContact>(contactKey(tenantId));
  }

  /** The Update that makes `email` the pending owner address (superseding any earlier pending one), item `owner contact`. */
  pendingEmailItem(input: { tenantId: string; email: string; pendingId: string; token: string; tokenHash: string; expiresAt: number; now: number }): TransactItem {
    const e = new Expression()
      .set('tenantId', input.tenantId)
      .set('pendingEmail', input.email)
      .set('pendingId', input.pendingId)
      .set('pendingToken', input.token)
      .set('pendingTokenHash', input.tokenHash)
      .set('pendingExpiresAt', iso(input.expiresAt))
      .set('pendingRequestedAt', iso(input.now))
      .set('updatedAt', iso(input.now))
      .remove('pendingMailedAt');
    return updateItem('owner contact', this.tableName, contactKey(input.tenantId), e);
  }

  /**
   * Consumes a confirmation token: the pending address becomes the confirmed one, once. Refused (and
   * nothing changed) when the token is not the pending one, or has expired.
   */
  async confirmEmail(tenantId: string, tokenHash: string, now: number): Promise<OwnerContact> {
    const e = new Expression();
    e.when(e.eq('pendingTokenHash', tokenHash))
      .when(e.gt('pendingExpiresAt', iso(now)))
      .set('email', e.attr('pendingEmail'))
      .set('confirmedAt', iso(now))
      .set('confirmedTokenHash', tokenHash)
      .set('updatedAt', iso(now))
      .remove('pendingEmail', 'pendingId', 'pendingToken', 'pendingTokenHash', 'pendingExpiresAt', 'pendingRequestedAt', 'pendingMailedAt');
    try {
      const result = await this.db.send(
        new UpdateCommand({ TableName: this.tableName, Key: contactKey(tenantId), ...e.build(), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      );
      return result.Attributes as OwnerContact;
    } catch (error) {
      const failure = conditionFailure<OwnerContact>(error);
      if (!failure.failed) throw error;
      const stored = failure.item;
      if (stored?.confirmedTokenHash === tokenHash) throw new LinkRefusedError('used', `this link was used already: ${stored.email ?? 'the address'} is confirmed`, { cause: error });
      if (stored?.pendingTokenHash === tokenHash) throw new LinkRefusedError('expired', 'this link has expired; change the owner address again to get a new one', { cause: error });
      throw new LinkRefusedError('invalid', 'this link is not valid', { cause: error });
    }
  }

  /**
   * Send, then mark: records that the confirmation mail for `pendingId` went out, and drops its raw token
   * (the mail has it now). Refused if marked already or superseded.
   */
  async markConfirmationMailed(tenantId: string, pendingId: string, now: number): Promise<void> {
    const e = new Expression().set('pendingMailedAt', iso(now)).remove('pendingToken');
    e.when(e.eq('pendingId', pendingId)).when(e.notExists('pendingMailedAt'));
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: contactKey(tenantId), ...e.build() }));
    } catch (error) {
      if (conditionFailure(error).failed) throw new MarkRefusedError(`confirmation ${pendingId} of tenant ${tenantId} is marked already, confirmed or superseded`, { cause: error });
      throw error;
    }
  }

  /** Writes a confirmed contact directly (tests and data migrations; the product confirms through a link). */
  async putConfirmedContact(tenantId: string, email: string, now: number): Promise<void> {
    await this.db.send(
      new PutCommand({ TableName: this.tableName, Item: { ...contactKey(tenantId), tenantId, email, confirmedAt: iso(now), updatedAt: iso(now) } satisfies OwnerContact & Record<string, unknown> }),
    );
  }

  // ─── Notices (owner.notify) ────────────────────────────────────────────────────────────────────────

  getNotice(tenantId: string, eventId: string): Promise<Notice | undefined> {
    return this.get<Notice>(noticeKey(tenantId, eventId));
  }

  /** Records what became of an owner.notify, once; a second record for the same event is refused. */
  async putNotice(notice: Omit<Notice, 'expiresAt'>, now: number): Promise<Notice> {
    const item: Notice = { ...notice, expiresAt: epochSeconds(now) + MAIL_RECORD_RETENTION_SECONDS };
    const e = new Expression();
    e.when(e.notExists('pk'));
    try {
      await this.db.send(new PutCommand({ TableName: this.tableName, Item: { ...noticeKey(notice.tenantId, notice.eventId), ...item }, ...e.build() }));
    } catch (error) {
      if (conditionFailure(error).failed) throw new MarkRefusedError(`notice ${notice.eventId} of tenant ${notice.tenantId} is recorded already`, { cause: error });
      throw error;
    }
    return item;
  }

  /** A tenant's notices, newest event ids last (the panel lists drops with it). */
  async listNotices(tenantId: string, limit = 100): Promise<Notice[]> {
    const e = new Expression();
    const result = await this.db.send(
      new QueryCommand({
        TableName: this.tableName,
        ...e.forQuery(e.and(e.eq('pk', tenantPk(tenantId)), e.beginsWith('sk', 'NOTICE#'))),
        Limit: limit,
        ConsistentRead: true,
      }),
    );
    return (result.Items ?? []) as Notice[];
  }

  // ─── Access requests ───────────────────────────────────────────────────────────────────────────────

  getAccessRequest(tenantId: string, requestId: string): Promise<AccessRequest | undefined> {
    return this.get<AccessRequest>(accessKey(tenantId, requestId));
  }

  /** The open request of an address, if any: `{ requestId, tokenExpiresAt }`. */
  getOpenRequestOf(tenantId: string, email: string): Promise<{ requestId: string; tokenExpiresAt: string } | undefined> {
    return this.get(accessByEmailKey(tenantId, email));
  }

  /**
   * The writes that record a new access request: the request (item `access request`), and the address's
   * open-request row (`open request`), which refuses a second request from the same address while the
   * first one's links are alive.
   */
  accessRequestItems(request: Omit<AccessRequest, 'expiresAt'>, now: number): TransactItem[] {
    const expiresAt = epochSeconds(now) + MAIL_RECORD_RETENTION_SECONDS;
    const open = new Expression();
    open.when(open.or(open.notExists('pk'), open.le('tokenExpiresAt', iso(now))));
    const absent = new Expression();
    absent.when(absent.notExists('pk'));
    return [
      putItem(
        'open request',
        this.tableName,
        { ...accessByEmailKey(request.tenantId, request.email), requestId: request.requestId, tokenExpiresAt: request.tokenExpiresAt, expiresAt: epochSeconds(Date.parse(request.tokenExpiresAt)) + 86400 },
        open,
      ),
      putItem('access request', this.tableName, { ...accessKey(request.tenantId, request.requestId), ...request, expiresAt }, absent),
    ];
  }

  /** Runs a caller's transaction of named items (`transact` in platform/dynamo.ts): a cancellation is an outcome, by name. */
  transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return transact(this.db, items);
  }

  /** Consumes an access request's token: pending → approved or denied, once. Refused (nothing changed) otherwise. */
  async resolveAccessRequest(tenantId: string, requestId: string, tokenHash: string, decision: 'approved' | 'denied', now: number): Promise<AccessRequest> {
    const e = new Expression().set('status', decision).set('resolvedAt', iso(now)).remove('mailToken');
    e.when(e.eq('status', 'pending')).when(e.eq('tokenHash', tokenHash)).when(e.gt('tokenExpiresAt', iso(now)));
    try {
      const result = await this.db.send(
        new UpdateCommand({ TableName: this.tableName, Key: accessKey(tenantId, requestId), ...e.build(), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
      );
      return result.Attributes as AccessRequest;
    } catch (error) {
      const failure = conditionFailure<AccessRequest>(error);
      if (!failure.failed) throw error;
      const stored = failure.item;
      if (stored?.tokenHash !== tokenHash) throw new LinkRefusedError('invalid', 'this link is not valid', { cause: error });
      if (stored.status !== 'pending') throw new LinkRefusedError('used', `this request was ${stored.status} already`, { cause: error });
      throw new LinkRefusedError('expired', 'this link has expired; the request stays unanswered', { cause: error });
    }
  }

  /** Send, then mark: records that the approval mail went out, and drops its raw token. Refused if marked already. */
  async markAccessMailed(tenantId: string, requestId: string, now: number): Promise<void> {
    const e = new Expression().set('mailedAt', iso(now)).remove('mailToken');
    e.when(e.exists('pk')).when(e.notExists('mailedAt'));
    try {
      await this.db.send(new UpdateCommand({ TableName: this.tableName, Key: accessKey(tenantId, requestId), ...e.build() }));
    } catch (error) {
      if (conditionFailure(error).failed) throw new MarkRefusedError(`access request ${requestId} of tenant ${tenantId} is marked already`, { cause: error });
      throw error;
    }
  }

  // ─── Caps ──────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Takes a slot of each cap for `holder` (a job id) in the current window, all or none. A slot is a
   * member of the window's `holders` set, so taking it again is a no-op: a job that runs twice in one
   * window holds one slot. Refused when a window is full and `holder` is not in it already.
   */
  async takeSlots(holder: string, requests: readonly SlotRequest[], now: number): Promise<SlotResult> {
    const updates = requests.map(({ cap, subject }) => {
      const window = windowOf(cap, now);
      const e = new Expression();
      e.when(e.or(e.notExists('holders'), e.lt(e.size('holders'), cap.limit), e.contains('holders', holder)))
        .add('holders', new Set([holder]))
        .set('expiresAt', epochSeconds(window.end) + 86400);
      return updateItem(`cap ${cap.name} ${subject}`, this.tableName, capKey(cap, subject, window.start), e);
    });
    if (updates.length === 1) {
      try {
        await this.db.send(new UpdateCommand(updates[0]!.Update!));
        return { granted: true };
      } catch (error) {
        if (conditionFailure(error).failed) return { granted: false, full: [requests[0]!.cap] };
        throw error;
      }
    }
    const result = await this.transact(updates);
    if (result.committed) return { granted: true };
    const full = requests.filter((_, i) => result.refused[updates[i]!.name]?.code === 'ConditionalCheckFailed').map((r) => r.cap);
    // Contention, or a refusal no cap explains: not an answer about the caps.
    if (result.contention || full.length === 0) throw result.error;
    return { granted: false, full };
  }

  /** How many slots a cap's window holds (tests, the panel). */
  async slotsHeld(cap: Cap, subject: string, now: number): Promise<string[]> {
    const item = await this.get<{ holders?: Set<string> }>(capKey(cap, subject, windowOf(cap, now).start));
    return [...(item?.holders ?? [])].sort();
  }
}
