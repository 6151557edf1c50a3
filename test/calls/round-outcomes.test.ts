import { describe, expect, it } from 'vitest';
import { batchKey, roundKey } from '../../functions/calls/model.ts';
import type { BatchRow, RoundRow } from '../../functions/calls/model.ts';
import { roundOutcomes } from '../../functions/calls/rounds.ts';

/** A batch id as redial makes them (it names its tenant). */
const B1 = `b_t.${'1'.repeat(32)}`;

/** A batch row with the fields roundOutcomes reads; the rest as a fresh batch has them. */
function batch(fields: Pick<BatchRow, 'round' | 'roundSize' | 'contactCount' | 'byCode'>): BatchRow {
  return {
    ...batchKey(B1),
    batchId: B1,
    tenantId: 't',
    status: 'InProgress',
    maxAttempts: 3,
    retry: { baseSeconds: 60, capSeconds: 600 },
    minConversationDurationSeconds: 10,
    createdAt: '2026-01-05T09:00:00.000Z',
    updatedAt: '2026-01-05T09:00:00.000Z',
    listPages: 1,
    dialPage: 0,
    dialPos: 0,
    dialComplete: false,
    nQueued: 0,
    nCalling: 0,
    nCompleted: 0,
    nRetryEligible: 0,
    finPage: 0,
    finPos: 0,
    nextPages: 0,
    nextSize: 0,
    ...fields,
  };
}

const row = (round: number, fields: Partial<RoundRow>): RoundRow => ({ ...roundKey(B1, round), round, ...fields });

describe('roundOutcomes: each round from the batch and the rows its finalisers wrote', () => {
  it('ARoundInProgressCountsWhatCompletedSoFarAndTheRestAsPending', () => {
    expect(roundOutcomes(batch({ round: 1, roundSize: 10, contactCount: 10, byCode: { COMPLETED: 3, NO_PICKUP: 2 } }), [])).toEqual([
      { round: 1, size: 10, byCode: { COMPLETED: 3, NO_PICKUP: 2 }, pending: 5, closed: false, recorded: true },
    ]);
  });

  it('AClosedRoundKeepsItsPromotedCodesAndTheNextCountsOnlyItsOwn', () => {
    // Round 1: 10 contacts, 6 completed for good, 4 promoted (3 NO_PICKUP, 1 TIMEOUT). Round 2: 4 contacts, 1 done so far.
    const rows = [row(1, { byCodeAfter: { COMPLETED: 6 }, 'retried:NO_PICKUP': 3, 'retried:TIMEOUT': 1 })];
    expect(roundOutcomes(batch({ round: 2, roundSize: 4, contactCount: 10, byCode: { COMPLETED: 7 } }), rows)).toEqual([
      { round: 1, size: 10, byCode: { COMPLETED: 6, NO_PICKUP: 3, TIMEOUT: 1 }, pending: 0, closed: true, recorded: true },
      { round: 2, size: 4, byCode: { COMPLETED: 1 }, pending: 3, closed: false, recorded: true },
    ]);
  });

  it('HalfWayThroughAPromotionTheRoundStillAddsUp', () => {
    // Round 1 done: COMPLETED 6, NO_PICKUP 4; the finaliser has promoted 1 NO_PICKUP so far (byCode 3 left).
    const rows = [row(1, { 'retried:NO_PICKUP': 1 })];
    expect(roundOutcomes(batch({ round: 1, roundSize: 10, contactCount: 10, byCode: { COMPLETED: 6, NO_PICKUP: 3 } }), rows)).toEqual([
      { round: 1, size: 10, byCode: { COMPLETED: 6, NO_PICKUP: 4 }, pending: 0, closed: false, recorded: true },
    ]);
  });

  it('ALastRoundFinalisedWithoutItsRowIsReadFromTheBatch', () => {
    const rows = [row(1, { byCodeAfter: { COMPLETED: 6 }, 'retried:NO_PICKUP': 4 })];
    expect(roundOutcomes(batch({ round: 2, roundSize: 4, contactCount: 10, byCode: { COMPLETED: 8, NO_PICKUP: 2 } }), rows)[1]).toEqual({
      round: 2,
      size: 4,
      byCode: { COMPLETED: 2, NO_PICKUP: 2 },
      pending: 0,
      closed: false,
      recorded: true,
    });
  });

  it('RoundsClosedBeforeRoundsWereRecordedSaySoInsteadOfGuessing', () => {
    expect(roundOutcomes(batch({ round: 2, roundSize: 4, contactCount: 10, byCode: { COMPLETED: 8 } }), [])).toEqual([
      { round: 1, size: 10, byCode: {}, pending: 0, closed: false, recorded: false },
      { round: 2, size: 4, byCode: {}, pending: 0, closed: false, recorded: false },
    ]);
  });
});
