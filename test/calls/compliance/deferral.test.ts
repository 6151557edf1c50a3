import { describe, expect, it } from 'vitest';
import { DeferReason, dialerNext, eligibleAt, planDialGroup } from '../../../functions/calls/compliance/deferral.ts';
import type { DialCandidate, DialPlanInput } from '../../../functions/calls/compliance/deferral.ts';
import { callIdFor } from '../../../functions/calls/model.ts';

const at = (iso: string) => Date.parse(iso);
const HOURS = { start: '09:00', end: '17:00', weekdays: [1, 2, 3, 4, 5, 6, 7] };
// Monday 1 June 2026, 14:00Z: 10:00 in New York, 09:00 in Chicago, 07:00 in Los Angeles, 16:00 in Berlin.
const NOW = at('2026-06-01T14:00:00Z');
const NY = ['America/New_York'];
const LA = ['America/Los_Angeles'];
const TX = ['America/Chicago'];
const RU = ['Europe/Kaliningrad', 'Asia/Kamchatka'];

/** A page of the round's list from position `from`, one zone set per contact. */
const page = (zones: (readonly string[])[], from = 0, pageNo = 0): DialCandidate[] =>
  zones.map((z, i) => ({ page: pageNo, pos: from + i, number: `+1555000${String(from + i).padStart(4, '0')}`, zones: z }));

const input = (candidates: DialCandidate[], over: Partial<DialPlanInput> = {}): DialPlanInput => ({
  hours: HOURS,
  candidates,
  capFreeAt: new Map(),
  nowMs: NOW,
  maxDials: 5,
  maxDeferrals: 40,
  ...over,
});

describe('a dial group’s plan: dial now, defer, or never', () => {
  it('DialsThoseInTheirWindowAndDefersTheRestEachUntilItsOwnOpening', () => {
    const plan = planDialGroup(input(page([NY, LA, NY, TX, LA], 7)));
    expect(plan.dial.map((c) => c.pos)).toEqual([7, 9, 10]);
    expect(plan.defer).toEqual([
      { page: 0, pos: 8, number: '+15550000008', notBefore: at('2026-06-01T16:00:00Z'), reason: DeferReason.window },
      { page: 0, pos: 11, number: '+15550000011', notBefore: at('2026-06-01T16:00:00Z'), reason: DeferReason.window },
    ]);
    expect(plan.unreachable).toEqual([]);
    expect(plan.decided).toBe(5);
    expect(plan.earliestDeferral).toBe(at('2026-06-01T16:00:00Z'));
  });

  it('KeepsEachDeferredContactBoundToItsListPositionAndSoToItsCallId', () => {
    const candidates = page([LA, NY], 3, 2);
    const plan = planDialGroup(input(candidates));
    const deferred = plan.defer[0]!;
    // Dialled later from the deferred list, it is the call its position names, as if dialled now.
    expect(callIdFor('b_1', deferred.number, { round: 1, page: deferred.page, pos: deferred.pos })).toBe(callIdFor('b_1', candidates[0]!.number, { round: 1, page: 2, pos: 3 }));
  });

  it('StopsAtTheFirstContactItHasNoDialLeftFor: the cursor skips nobody', () => {
    const plan = planDialGroup(input(page([NY, LA, NY, NY, NY]), { maxDials: 2 }));
    expect(plan.dial.map((c) => c.pos)).toEqual([0, 2]);
    expect(plan.defer.map((d) => d.pos)).toEqual([1]);
    expect(plan.decided).toBe(3); // position 3 waits for the next group, at the cursor
  });

  it('StopsAtTheFirstContactItHasNoRoomToDeferIn', () => {
    const plan = planDialGroup(input(page([LA, LA, NY, LA]), { maxDeferrals: 2 }));
    expect(plan.defer.map((d) => d.pos)).toEqual([0, 1]);
    expect(plan.dial.map((c) => c.pos)).toEqual([2]);
    expect(plan.decided).toBe(3);
  });

  it('DefersEveryoneWhenNoneIsInItsWindowAndWakesAtTheEarliest', () => {
    const early = at('2026-06-01T11:00:00Z'); // 07:00 New York, 06:00 Chicago, 04:00 Los Angeles
    const plan = planDialGroup(input(page([LA, TX, NY]), { nowMs: early }));
    expect(plan.dial).toEqual([]);
    expect(plan.defer.map((d) => [d.pos, new Date(d.notBefore).toISOString()])).toEqual([
      [0, '2026-06-01T16:00:00.000Z'],
      [1, '2026-06-01T14:00:00.000Z'],
      [2, '2026-06-01T13:00:00.000Z'],
    ]);
    expect(plan.earliestDeferral).toBe(at('2026-06-01T13:00:00Z'));
  });

  it('SetsAsideAContactWhoseWindowNeverOpensInAllItsZones', () => {
    const plan = planDialGroup(input(page([NY, RU, NY])));
    expect(plan.unreachable.map((c) => c.pos)).toEqual([1]);
    expect(plan.dial.map((c) => c.pos)).toEqual([0, 2]);
    expect(plan.earliestDeferral).toBeUndefined();
  });

  it('DefersANumberAtItsCapUntilItFreesInsideItsWindow', () => {
    const [ny1, ny2, ny3] = page([NY, NY, NY]);
    const capFreeAt = new Map([
      [ny1!.number, at('2026-06-01T15:30:00Z')], // frees during its window
      [ny2!.number, at('2026-06-01T22:00:00Z')], // frees after New York closes (21:00Z): the next morning
      [ny3!.number, at('2026-06-01T13:00:00Z')], // freed already
    ]);
    const plan = planDialGroup(input([ny1!, ny2!, ny3!], { capFreeAt }));
    expect(plan.defer).toEqual([
      { page: 0, pos: 0, number: ny1!.number, notBefore: at('2026-06-01T15:30:00Z'), reason: DeferReason.cap },
      { page: 0, pos: 1, number: ny2!.number, notBefore: at('2026-06-02T13:00:00Z'), reason: DeferReason.cap },
    ]);
    expect(plan.dial.map((c) => c.pos)).toEqual([2]);
  });

  it('NamesTheWindowWhenBothTheWindowAndTheCapHoldAContact', () => {
    const [la] = page([LA]);
    const plan = planDialGroup(input([la!], { capFreeAt: new Map([[la!.number, at('2026-06-01T18:00:00Z')]]) }));
    expect(plan.defer).toEqual([{ page: 0, pos: 0, number: la!.number, notBefore: at('2026-06-01T18:00:00Z'), reason: DeferReason.window }]);
  });

  it('WithoutAWindowOnlyTheCapDefers', () => {
    const [a, b] = page([LA, LA]);
    const plan = planDialGroup(input([a!, b!], { hours: undefined, capFreeAt: new Map([[b!.number, NOW + 60_000]]) }));
    expect(plan.dial.map((c) => c.pos)).toEqual([0]);
    expect(plan.defer).toEqual([{ page: 0, pos: 1, number: b!.number, notBefore: NOW + 60_000, reason: DeferReason.cap }]);
  });

  it('PlansTheDueEntriesOfTheDeferredListTheSameWay', () => {
    // Due entries come back in time order from anywhere in the list; one is still closed (its window changed).
    const due: DialCandidate[] = [
      { page: 3, pos: 17, number: '+15550003017', zones: NY },
      { page: 0, pos: 4, number: '+15550000004', zones: LA },
    ];
    const plan = planDialGroup(input(due));
    expect(plan.dial).toEqual([due[0]]);
    expect(plan.defer).toEqual([{ page: 0, pos: 4, number: '+15550000004', notBefore: at('2026-06-01T16:00:00Z'), reason: DeferReason.window }]);
  });
});

describe('eligible at: the first instant a contact may be dialled', () => {
  it('IsTheWindowsNextOpeningAfterTheCapFrees', () => {
    expect(eligibleAt(HOURS, NY, NOW)).toBe(NOW);
    expect(eligibleAt(HOURS, LA, NOW)).toBe(at('2026-06-01T16:00:00Z'));
    expect(eligibleAt(HOURS, NY, NOW, at('2026-06-01T22:00:00Z'))).toBe(at('2026-06-02T13:00:00Z'));
    expect(eligibleAt(undefined, NY, NOW, NOW - 1)).toBe(NOW);
    expect(eligibleAt(HOURS, RU, NOW)).toBeNull();
  });
});

describe('the dialer after a group: dial on, sleep until a deferral, or done — never a poll', () => {
  // [what, state, next]
  const cases: [string, Parameters<typeof dialerNext>[0], ReturnType<typeof dialerNext>][] = [
    ['list left under the cursor: dial on', { listLeft: true, earliestDeferral: NOW + 3_600_000, nowMs: NOW }, { next: 'dial' }],
    ['list done, a deferral ahead: sleep until it', { listLeft: false, earliestDeferral: NOW + 3_600_000, nowMs: NOW }, { next: 'sleep', until: NOW + 3_600_000 }],
    ['list done, a deferral due: dial it', { listLeft: false, earliestDeferral: NOW, nowMs: NOW }, { next: 'dial' }],
    ['list done, no deferral: the round is fully dialled', { listLeft: false, earliestDeferral: undefined, nowMs: NOW }, { next: 'done' }],
  ];
  it.each(cases)('%s', (_what, state, next) => {
    expect(dialerNext(state)).toEqual(next);
  });
});
