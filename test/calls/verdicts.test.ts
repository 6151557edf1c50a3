import { describe, expect, it } from 'vitest';
import { judgeCompletionCancel } from '../../functions/calls/completion.ts';
import { judgeDialCancel } from '../../functions/calls/dialer.ts';
import { FINALISE_CHUNK } from '../../functions/calls/finaliser.ts';
import { LIST_PAGE_SIZE } from '../../functions/calls/model.ts';
import { cancelledOutcome } from '../../functions/platform/dynamo.ts';
import type { Refusal as CancelReason } from '../../functions/platform/dynamo.ts';

const ok: CancelReason = { code: 'None', item: undefined };
const failed = (item?: Record<string, unknown>): CancelReason => ({ code: 'ConditionalCheckFailed', item });
// DynamoDB's reasons come in item order; the outcome names them as the store and the caller named the items.
const completion = (reasons: CancelReason[]) => cancelledOutcome(['contact', 'tenant', 'batch', 'cancel watchdog'], reasons, new Error('cancelled'));
const dial = (reasons: CancelReason[]) => cancelledOutcome(['tenant', 'batch', 'job watchdog'], reasons, new Error('cancelled'));
const batch = (over: Record<string, unknown> = {}) => ({ status: 'InProgress', round: 1, dialComplete: false, dialPage: 0, dialPos: 9, nCalling: 3, ...over });

describe('reading a cancelled completion from the items DynamoDB returns, without a read', () => {
  // The call's id named round 1, list position (0, 4).
  const plan = { round: 1, page: 0, pos: 4, last: false };
  // [what, reasons (contact, tenant, batch, …), verdict]
  const cases: [string, CancelReason[], ReturnType<typeof judgeCompletionCancel>][] = [
    ['contact already completed in the call’s round (a re-sent or late result)', [failed({ status: 'Completed', round: 1, callId: 'call_b' }), ok, ok], { type: 'ignored', reason: 'not_calling' }],
    ['contact completed in a later round (the call is an earlier round’s)', [failed({ status: 'Completed', round: 2, callId: 'call_c' }), ok, failed(batch({ round: 2 }))], { type: 'ignored', reason: 'another_call' }],
    ['an earlier round’s call while the batch is in a later round', [ok, ok, failed(batch({ round: 2, dialPage: 1, dialPos: 0 }))], { type: 'ignored', reason: 'another_call' }],
    ['a position the dial cursor has not reached (never dialled)', [ok, ok, failed(batch({ dialPage: 0, dialPos: 4 }))], { type: 'ignored', reason: 'not_dialled' }],
    ['batch deleted', [ok, ok, failed(batch({ status: 'Deleted' }))], { type: 'ignored', reason: 'batch_deleted' }],
    ['batch finalised', [ok, ok, failed(batch({ status: 'Finalised' }))], { type: 'ignored', reason: 'batch_not_in_progress' }],
    ['batch gone', [ok, ok, failed(undefined)], { type: 'ignored', reason: 'no_such_batch' }],
    ['the last call of a fully dialled round', [ok, ok, failed(batch({ dialComplete: true, dialPage: 1, dialPos: 0, nCalling: 1 }))], { type: 'replan', plan: { ...plan, last: true } }],
    ['another writer held an item', [ok, ok, { code: 'TransactionConflict', item: undefined }], { type: 'contention' }],
    ['throttled', [ok, { code: 'ThrottlingError', item: undefined }, ok], { type: 'contention' }],
    ['an item nobody expected failed', [ok, ok, ok, failed(undefined)], { type: 'unexplained' }],
    ['the batch refused with nothing wrong that it shows', [ok, ok, failed(batch({ dialPage: 0, dialPos: 9 }))], { type: 'unexplained' }],
  ];
  it.each(cases)('%s', (_what, reasons, verdict) => {
    expect(judgeCompletionCancel(completion(reasons), plan)).toEqual(verdict);
  });

  it('TheLastCallVariantGoesBackWhenTheRoundIsNotOverAfterAll', () => {
    expect(judgeCompletionCancel(completion([ok, ok, failed(batch({ dialComplete: true, dialPage: 1, dialPos: 0, nCalling: 2 }))]), { ...plan, last: true })).toEqual({ type: 'replan', plan });
  });
});

describe('reading a cancelled dial', () => {
  const cases: [string, CancelReason[], ReturnType<typeof judgeDialCancel>][] = [
    ['tenant at its limit', [failed({ active: 3, limit: 3 }), ok, ok], 'no_slot'],
    ['tenant missing', [failed(undefined), ok, ok], 'unexplained'],
    ['batch changed (deleted, cursor moved, its watchdog closed)', [failed({}), failed({}), ok], 'batch_changed'],
    ['conflict', [{ code: 'TransactionConflict', item: undefined }, ok, ok], 'contention'],
    ['only the watchdog job failed', [ok, ok, failed(undefined)], 'unexplained'],
  ];
  it.each(cases)('%s', (_what, reasons, verdict) => {
    expect(judgeDialCancel(dial(reasons))).toBe(verdict);
  });
});

describe('DynamoDB limits', () => {
  it('AFinaliserStepReadsItsContactsInOneBatchGet_AndItsListPageHoldsThem', () => {
    // Each step: one BatchGetItem of its contacts (at most 100 keys); it writes the next round's list page, the round, the batch.
    expect(FINALISE_CHUNK).toBeLessThanOrEqual(100);
    expect(FINALISE_CHUNK).toBeLessThanOrEqual(LIST_PAGE_SIZE);
  });
});
