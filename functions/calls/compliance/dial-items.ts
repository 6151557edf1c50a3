import { Expression, putItem, updateItem } from '../../platform/dynamo.ts';
import type { TransactItem } from '../../platform/dynamo.ts';
import { iso } from '../../platform/clock.ts';
import { CallCode } from '../codes.ts';
import { ContactStatus, batchPartition, callsExpiry, contactKey } from '../model.ts';
import { CAP_SLOT_TTL_MS, capClaimCondition, capSlotKey } from './cap.ts';
import type { CapSlotRow } from './cap.ts';
import type { DeferReason } from './deferral.ts';
import { suppressionCheckItem } from './suppression-store.ts';

/**
 * The items a dial group adds to its transaction for the compliance rules (docs/calls.md, "Campaign control
 * and compliance"): the per-number cap's slot claim, the suppression check, a deferred contact's entry and
 * mark, and the ending of a contact that is never to be dialled (suppressed, or no window ever open).
 *
 * ```
 *  deferred entry   pk <batch partition>#DEFER   sk Q#<round:3>#<notBefore ISO>#<page:5>.<pos:5>   {number, reason, page, pos, notBefore}
 *  position mark    pk <batch partition>#DEFER   sk P#<round:3>#<page:5>.<pos:5>                    {number, reason, until, dialledAt?}
 * ```
 *
 * The entries are the deferred list, read in time order (a Query up to now gives the due ones). A mark
 * says a list position behind the dial cursor was deferred in its round rather than dialled: the run's
 * watchdog skips it (its call, once placed, is its own group watchdog's), and the contact listing shows it
 * Queued with when and why. Both live in one partition of their own beside the batch's: a batch's
 * deferrals and deferred dials write there, never the batch row's partition.
 */

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const positionKey = (page: number, pos: number) => `${pad(page, 5)}.${pad(pos, 5)}`;

/** The partition of a batch's deferred list and position marks. */
export const deferPartition = (batchId: string): string => `${batchPartition(batchId)}#DEFER`;
/** A deferred entry's sort key: its round, when it may be dialled, its list position. */
export const deferEntrySk = (round: number, notBefore: number, page: number, pos: number): string => `Q#${pad(round, 3)}#${iso(notBefore)}#${positionKey(page, pos)}`;
/** The sort key of a list position's mark in a round. */
export const markSk = (round: number, page: number, pos: number): string => `P#${pad(round, 3)}#${positionKey(page, pos)}`;
/** The range of a round's entries due at `nowMs` (inclusive bounds for `BETWEEN`). */
export const dueEntriesRange = (round: number, nowMs: number): [string, string] => [`Q#${pad(round, 3)}#`, `Q#${pad(round, 3)}#${iso(nowMs)}~`];
/** The range of a round's entries, all of them. */
export const roundEntriesPrefix = (round: number): string => `Q#${pad(round, 3)}#`;
/** The marks of positions [from, to] of one page of a round (inclusive bounds for `BETWEEN`). */
export const marksRange = (round: number, page: number, fromPos: number, toPos: number): [string, string] => [markSk(round, page, fromPos), markSk(round, page, toPos)];

/** A deferred entry as stored. */
export interface DeferredEntry {
  pk: string;
  sk: string;
  batchId: string;
  round: number;
  page: number;
  pos: number;
  number: string;
  reason: DeferReason;
  notBefore: number;
  expiresAt: number;
}

/** A position's mark as stored. */
export interface PositionMark {
  pk: string;
  sk: string;
  round: number;
  page: number;
  pos: number;
  number: string;
  reason: DeferReason;
  /** When it was last deferred to (epoch ms). */
  until: number;
  /** When its deferred dial committed (epoch ms): its call is out, its group watchdog's. */
  dialledAt?: number;
}

/** A contact the group defers: its position, number, until when and why. */
export interface DeferWrite {
  page: number;
  pos: number;
  number: string;
  notBefore: number;
  reason: DeferReason;
}

/** The codes a contact ends with when it is never dialled in its round (no attempt spent). */
export const NeverDialledCode = {
  /** Its number is on its tenant's suppression list. */
  suppressed: CallCode.suppressed,
  /** Its calling window never opens in all its zones at once (e.g. 09:00–17:00 across every Russian zone). */
  noCallingWindow: CallCode.noCallingWindow,
} as const;
export type NeverDialledCode = (typeof NeverDialledCode)[keyof typeof NeverDialledCode];

/** Item builders of the compliance rules for one table. */
export class ComplianceItems {
  private readonly tableName: string;

  constructor(tableName: string) {
    this.tableName = tableName;
  }

  /** Claims cap slot `slot` of a number for a call dialled at `now` (named `cap:<number>`; a refusal returns the slot as stored). */
  capClaim(tenantId: string, number: string, slot: number, call: { callId: string; batchId: string }, now: number): TransactItem {
    const row: CapSlotRow = { ...capSlotKey(tenantId, number, slot), slot, at: now, callId: call.callId, batchId: call.batchId, expiresAt: Math.floor((now + CAP_SLOT_TTL_MS) / 1000) };
    const condition = capClaimCondition(now);
    return {
      name: `cap:${number}`,
      Put: {
        TableName: this.tableName,
        Item: row as unknown as Record<string, unknown>,
        ConditionExpression: condition.expression,
        ExpressionAttributeNames: condition.names,
        ExpressionAttributeValues: condition.values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** The number is not on its tenant's suppression list when the dial commits (named `supp:<number>`; suppression-store.ts). */
  notSuppressed(tenantId: string, number: string): TransactItem {
    return suppressionCheckItem(this.tableName, tenantId, number);
  }

  /** A deferral from the list: its entry and its position's mark (both new: the cursor condition makes it the position's first). */
  defer(batchId: string, round: number, d: DeferWrite, now: number): TransactItem[] {
    const pk = deferPartition(batchId);
    const entry: DeferredEntry = { pk, sk: deferEntrySk(round, d.notBefore, d.page, d.pos), batchId, round, page: d.page, pos: d.pos, number: d.number, reason: d.reason, notBefore: d.notBefore, expiresAt: callsExpiry(now) };
    const mark: PositionMark = { pk, sk: markSk(round, d.page, d.pos), round, page: d.page, pos: d.pos, number: d.number, reason: d.reason, until: d.notBefore };
    return [putItem(`defer:${d.page}.${d.pos}`, this.tableName, entry), putItem(`mark:${d.page}.${d.pos}`, this.tableName, { ...mark, expiresAt: callsExpiry(now) })];
  }

  /** A due entry deferred again: the old entry goes (it must still be there: no other run took it), a new one comes, the mark says until when. */
  redefer(entry: DeferredEntry, d: DeferWrite, now: number): TransactItem[] {
    const old = new Expression();
    old.when(old.exists('pk'));
    const moved: DeferredEntry = { ...entry, sk: deferEntrySk(entry.round, d.notBefore, entry.page, entry.pos), reason: d.reason, notBefore: d.notBefore, expiresAt: callsExpiry(now) };
    const mark = new Expression();
    mark.set('until', d.notBefore).set('reason', d.reason).set('expiresAt', callsExpiry(now));
    return [
      { name: `defer:${entry.page}.${entry.pos}`, Delete: { TableName: this.tableName, Key: { pk: entry.pk, sk: entry.sk }, ...old.build() } },
      putItem(`defer+:${entry.page}.${entry.pos}`, this.tableName, moved),
      updateItem(`mark:${entry.page}.${entry.pos}`, this.tableName, { pk: entry.pk, sk: markSk(entry.round, entry.page, entry.pos) }, mark),
    ];
  }

  /** A due entry taken off the list: dialled now (its mark records when) or ended; it must still be there, so two runs never take it twice. */
  take(entry: DeferredEntry, now: number, dialled: boolean): TransactItem[] {
    const old = new Expression();
    old.when(old.exists('pk'));
    const items: TransactItem[] = [{ name: `defer:${entry.page}.${entry.pos}`, Delete: { TableName: this.tableName, Key: { pk: entry.pk, sk: entry.sk }, ...old.build() } }];
    if (dialled) {
      const mark = new Expression();
      mark.when(mark.exists('pk')).when(mark.notExists('dialledAt')).set('dialledAt', now);
      items.push(updateItem(`mark:${entry.page}.${entry.pos}`, this.tableName, { pk: entry.pk, sk: markSk(entry.round, entry.page, entry.pos) }, mark));
    }
    return items;
  }

  /**
   * Ends a contact that is never dialled in this round — suppressed, or its window never opens — with its
   * code and no attempt spent: its item says Completed in the round (so no result, watchdog or later dial
   * of the round writes it again, and the finaliser never promotes it: neither code is retryable).
   */
  neverDialled(batchId: string, number: string, round: number, code: NeverDialledCode, now: number): TransactItem {
    const e = new Expression();
    e.when(e.or(e.notExists('pk'), e.lt('round', round)))
      .set('batchId', batchId)
      .set('contactNumber', number)
      .set('status', code === NeverDialledCode.suppressed ? ContactStatus.Suppressed : ContactStatus.Completed)
      .set('round', round)
      .set('attempts', round - 1)
      .set('code', code)
      .set('retryable', false)
      .set('source', 'dialer')
      .set('completedAt', iso(now))
      .set('updatedAt', iso(now))
      .set('expiresAt', callsExpiry(now))
      .remove('callId', 'reportedCode', 'emptyTranscription', 'durationSeconds');
    return updateItem(`end:${number}`, this.tableName, contactKey(batchId, number), e);
  }
}
