import { describe, expect, it } from 'vitest';
import { judgeCompletionCancel } from '../../functions/calls/completion.ts';
import { judgeDialCancel } from '../../functions/calls/dialer.ts';
import { FINALISE_CHUNK } from '../../functions/calls/finaliser.ts';
import { cancelledOutcome } from '../../functions/platform/dynamo.ts';
import type { Refusal as CancelReason } from '../../functions/platform/dynamo.ts';

const ok: CancelReason = { code: 'None', item: undefined };
const failed = (item?: Record<string, unknown>): CancelReason => ({ code: 'ConditionalCheckFailed', item });
// DynamoDB's reasons come in item order; the outcome names them as the store and the caller named the items.
const completion = (reasons: CancelReason[]) => cancelledOutcome(['contact', 'tenant', 'batch', 'cancel watchdog'], reasons, new Error('cancelled'));
const dial = (reasons: CancelReason[]) => cancelledOutcome(['contact', 'tenant', 'batch', 'job watchdog'], reasons, new Error('cancelled'));
const batch = (over: Record<string, unknown> = {}) => ({ status: 'InProgress', round: 1, dialComplete: false, nCalling: 3, ...over });

describe('reading a cancelled completion from the items DynamoDB returns, without a read', () => {
  const plan = { round: 1, last: false };
  // The intake's view: the result names its call; the round is only the cached hint.
  const intake = { callId: 'call_b', roundKnown: false };
  // [what, reasons (contact, tenant, batch, …), verdict]
  const cases: [string, CancelReason[], ReturnType<typeof judgeCompletionCancel>][] = [
    ['contact never dialled', [failed(undefined), ok, ok], { type: 'ignored', reason: 'not_dialled' }],
    ['contact already completed', [failed({ status: 'Completed', round: 1, callId: 'call_b' }), ok, ok], { type: 'ignored', reason: 'not_calling' }],
    ['contact promoted, waiting for its next round', [failed({ status: 'RetryEligible', round: 1, callId: 'call_b' }), ok, ok], { type: 'ignored', reason: 'not_calling' }],
    ['the same call, Calling in a later round than the hint', [failed({ status: 'Calling', round: 2, callId: 'call_b' }), ok, failed(batch({ round: 2 }))], { type: 'replan', plan: { round: 2, last: false } }],
    ['another call of the contact is in progress (a later round)', [failed({ status: 'Calling', round: 2, callId: 'call_c' }), ok, failed(batch({ round: 2 }))], { type: 'ignored', reason: 'another_call' }],
    ['batch deleted', [ok, ok, failed(batch({ status: 'Deleted' }))], { type: 'ignored', reason: 'batch_deleted' }],
    ['batch gone', [ok, ok, failed(undefined)], { type: 'ignored', reason: 'no_such_batch' }],
    ['the last call of a fully dialled round', [ok, ok, failed(batch({ dialComplete: true, nCalling: 1 }))], { type: 'replan', plan: { round: 1, last: true } }],
    ['another writer held an item', [ok, ok, { code: 'TransactionConflict', item: undefined }], { type: 'contention' }],
    ['throttled', [ok, { code: 'ThrottlingError', item: undefined }, ok], { type: 'contention' }],
    ['an item nobody expected failed', [ok, ok, ok, failed(undefined)], { type: 'unexplained' }],
  ];
  it.each(cases)('%s', (_what, reasons, verdict) => {
    expect(judgeCompletionCancel(completion(reasons), plan, intake)).toEqual(verdict);
  });

  it('AJobThatNamesItsRoundDoesNotFollowTheContactIntoAnotherRound', () => {
    expect(judgeCompletionCancel(completion([failed({ status: 'Calling', round: 2, callId: 'call_c' }), ok, ok]), plan, { callId: 'call_b', roundKnown: true })).toEqual({
      type: 'ignored',
      reason: 'another_call',
    });
    // A watchdog enqueued before calls had ids is bound by its round alone.
    expect(judgeCompletionCancel(completion([failed({ status: 'Calling', round: 2 }), ok, ok]), plan, { callId: undefined, roundKnown: true })).toEqual({ type: 'ignored', reason: 'another_call' });
  });

  it('TheLastCallVariantGoesBackWhenTheRoundIsNotOverAfterAll', () => {
    expect(judgeCompletionCancel(completion([ok, ok, failed(batch({ dialComplete: true, nCalling: 2 }))]), { round: 1, last: true }, intake)).toEqual({ type: 'replan', plan: { round: 1, last: false } });
  });
});

describe('reading a cancelled dial', () => {
  const cases: [string, CancelReason[], ReturnType<typeof judgeDialCancel>][] = [
    ['tenant at its limit', [ok, failed({ active: 3, concurrencyLimit: 3 }), ok, ok], 'no_slot'],
    ['tenant missing', [ok, failed(undefined), ok, ok], 'unexplained'],
    ['batch changed (deleted, cursor moved)', [ok, failed({}), failed({}), ok], 'batch_changed'],
    ['contact not dialable', [failed({ status: 'Completed' }), ok, ok, ok], 'contact_not_dialable'],
    ['conflict', [{ code: 'TransactionConflict', item: undefined }, ok, ok, ok], 'contention'],
    ['only the watchdog job failed', [ok, ok, ok, failed(undefined)], 'unexplained'],
  ];
  it.each(cases)('%s', (_what, reasons, verdict) => {
    expect(judgeDialCancel(dial(reasons))).toBe(verdict);
  });
});

describe('DynamoDB limits', () => {
  it('AFinaliserStepStaysUnderTheHundredItemTransactionLimit', () => {
    // Each step: one Update per promoted contact, the next round's list page, the batch.
    expect(FINALISE_CHUNK + 2).toBeLessThanOrEqual(100);
  });
});
