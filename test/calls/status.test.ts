import { describe, expect, it } from 'vitest';
import { batchKey, callIdFor, callWithSlot, contactKey, parseCallId } from '../../functions/calls/model.ts';
import type { BatchRow, ContactRow } from '../../functions/calls/model.ts';
import { contactState } from '../../functions/calls/status.ts';

const batchId = `b_acme.${'5'.repeat(32)}`;
const number = '+14155550100';

/** A batch in round `round`, its dial cursor at (page, pos), in progress unless told otherwise. */
const batch = (over: Partial<BatchRow> = {}): BatchRow => ({
  ...batchKey(batchId),
  batchId,
  tenantId: 'acme',
  status: 'InProgress',
  round: 1,
  maxAttempts: 3,
  retry: { baseSeconds: 30, capSeconds: 3600 },
  minConversationDurationSeconds: 10,
  contactCount: 10,
  createdAt: '2026-01-05T09:00:00.000Z',
  updatedAt: '2026-01-05T09:00:00.000Z',
  listPages: 1,
  roundSize: 10,
  dialPage: 0,
  dialPos: 0,
  dialComplete: false,
  nQueued: 10,
  nCalling: 0,
  nCompleted: 0,
  nRetryEligible: 0,
  byCode: {},
  finPage: 0,
  finPos: 0,
  nextPages: 0,
  nextSize: 0,
  ...over,
});

/** The contact's completion of `round` at list position `pos` of that round. */
const completed = (round: number, code: string, pos = 3): ContactRow => ({
  ...contactKey(batchId, number),
  batchId,
  contactNumber: number,
  status: 'Completed',
  round,
  attempts: round,
  code,
  callId: callIdFor(batchId, number, { round, page: 0, pos }),
  updatedAt: '2026-01-05T09:00:00.000Z',
});

describe('a call id names its round and list position, bound to its batch and contact', () => {
  it('ParsesBackWhatTheDialerMade_WithOrWithoutItsSlotSuffix', () => {
    const id = callIdFor(batchId, number, { round: 2, page: 3, pos: 417 });
    expect(id).toMatch(/^call_[A-Za-z0-9_-]{22}\.r2\.p3\.417$/);
    expect(parseCallId(batchId, number, id)).toEqual({ round: 2, page: 3, pos: 417, shard: 0 });
    expect(parseCallId(batchId, number, callWithSlot(id, 5))).toEqual({ round: 2, page: 3, pos: 417, shard: 5 });
    expect(callWithSlot(id, 0)).toBe(id);
  });

  it('RefusesAnIdOfAnotherContactOrBatch_OrWithItsRoundOrPositionAltered_OrMalformed', () => {
    const id = callIdFor(batchId, number, { round: 1, page: 0, pos: 7 });
    expect(parseCallId(batchId, '+14155550101', id)).toBeUndefined();
    expect(parseCallId(`b_acme.${'6'.repeat(32)}`, number, id)).toBeUndefined();
    for (const altered of [id.replace('.r1.', '.r2.'), id.replace('.p0.', '.p1.'), id.replace(/\.7$/, '.8'), `${id}.s9`, `${id}x`, id.slice(1), 'call_not_one_we_placed', '']) {
      expect(parseCallId(batchId, number, altered), altered).toBeUndefined();
    }
  });
});

describe('a contact’s status, derived from its completion and the batch', () => {
  // [what, batch, its item, dialled in the batch's round, what the API shows]
  const cases: [string, BatchRow, ContactRow | undefined, boolean, ReturnType<typeof contactState>][] = [
    ['never dialled', batch(), undefined, false, { status: 'Queued', code: null, attempts: 0 }],
    ['dialled in round 1, no result yet', batch({ dialPos: 4 }), undefined, true, { status: 'Calling', code: null, attempts: 1 }],
    ['completed in the round', batch({ dialPos: 4 }), completed(1, 'COMPLETED'), true, { status: 'Completed', code: 'COMPLETED', attempts: 1 }],
    ['retryable, this round not closed yet', batch({ dialPos: 4 }), completed(1, 'NO_PICKUP'), true, { status: 'Completed', code: 'NO_PICKUP', attempts: 1 }],
    [
      'retryable, the finaliser’s step has passed it',
      batch({ dialPage: 1, dialComplete: true, finPos: 4 }),
      completed(1, 'NO_PICKUP'),
      true,
      { status: 'RetryEligible', code: 'NO_PICKUP', attempts: 1 },
    ],
    ['retryable, the finaliser’s step has not reached it', batch({ dialPage: 1, dialComplete: true, finPos: 3 }), completed(1, 'NO_PICKUP'), true, { status: 'Completed', code: 'NO_PICKUP', attempts: 1 }],
    ['retryable in the last round: no rounds left', batch({ round: 3, dialPage: 1, dialComplete: true, finPos: 9 }), completed(3, 'NO_PICKUP'), true, { status: 'Completed', code: 'NO_PICKUP', attempts: 3 }],
    ['promoted to round 2, not dialled yet', batch({ round: 2 }), completed(1, 'TIMEOUT'), false, { status: 'RetryEligible', code: 'TIMEOUT', attempts: 1 }],
    ['promoted to round 2 and dialled', batch({ round: 2, dialPos: 1 }), completed(1, 'TIMEOUT'), true, { status: 'Calling', code: null, attempts: 2 }],
    ['terminal in round 1, the batch in round 2', batch({ round: 2 }), completed(1, 'COMPLETED'), false, { status: 'Completed', code: 'COMPLETED', attempts: 1 }],
    ['finalised', batch({ status: 'Finalised', round: 2 }), completed(1, 'COMPLETED'), false, { status: 'Completed', code: 'COMPLETED', attempts: 1 }],
    ['deleted while its call was out', batch({ status: 'Deleted', dialPos: 5 }), undefined, true, { status: 'Calling', code: null, attempts: 1 }],
  ];
  it.each(cases)('%s', (_what, b, item, dialled, expected) => {
    expect(contactState(b, item, dialled)).toEqual(expected);
  });
});
