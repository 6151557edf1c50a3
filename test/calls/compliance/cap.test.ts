import { describe, expect, it } from 'vitest';
import {
  CAP_WINDOW_MS,
  capClaimCondition,
  capFreesAt,
  capPartition,
  capSlotKey,
  decideCapSlot,
  DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H,
  slotCounts,
} from '../../../functions/calls/compliance/cap.ts';
import type { CapSlotRead } from '../../../functions/calls/compliance/cap.ts';
import { seededRng } from '../../../functions/platform/rng.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const H = 3_600_000;
const slot = (slotNo: number, hoursAgo: number): CapSlotRead => ({ slot: slotNo, at: NOW - hoursAgo * H });

describe('the frequency cap: which slot a dial claims', () => {
  it('DefaultsToThreeCallsIn24Hours', () => {
    expect(DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H).toBe(3);
    expect(CAP_WINDOW_MS).toBe(24 * H);
  });

  // [what, slots read, cap, decision]
  const cases: [string, CapSlotRead[], number, ReturnType<typeof decideCapSlot>][] = [
    ['no call yet: slot 0', [], 3, { claim: 0 }],
    ['the lowest free slot', [slot(0, 1), slot(2, 5)], 3, { claim: 1 }],
    ['a slot whose call is 24 h old is free again', [slot(0, 24), slot(1, 2), slot(2, 3)], 3, { claim: 0 }],
    ['a call just under 24 h old still counts', [slot(0, 23.99), slot(1, 2), slot(2, 3)], 3, { freesAt: NOW - 23.99 * H + 24 * H }],
    ['at the cap: wait for the oldest to turn 24 h old', [slot(0, 10), slot(1, 2), slot(2, 20)], 3, { freesAt: NOW + 4 * H }],
    ['a cap of one', [slot(0, 6)], 1, { freesAt: NOW + 18 * H }],
  ];
  it.each(cases)('%s', (_what, read, cap, decision) => {
    expect(decideCapSlot(read, cap, NOW)).toEqual(decision);
  });

  it('CountsSlotsAboveALoweredCapAndClaimsOnlyBelowIt', () => {
    // The cap went from 5 to 3: slots 3 and 4 still hold calls of the last 24 h.
    expect(decideCapSlot([slot(3, 1), slot(4, 2)], 3, NOW)).toEqual({ claim: 0 });
    // Four calls count against a cap of 3: two of them must age out (the 2nd oldest at 24 h).
    const over = [slot(0, 1), slot(1, 3), slot(3, 10), slot(4, 20)];
    expect(decideCapSlot(over, 3, NOW)).toEqual({ freesAt: NOW - 10 * H + 24 * H });
    expect(capFreesAt(over, 3, NOW)).toBe(NOW + 14 * H);
  });

  it('IsUnderTheCapWhenFewerCallsCount', () => {
    expect(capFreesAt([slot(0, 1), slot(1, 30)], 2, NOW)).toBeUndefined();
    expect(slotCounts(slot(0, 24), NOW)).toBe(false);
    expect(slotCounts(slot(0, 23), NOW)).toBe(true);
  });

  it('RefusesACapBelowOne', () => {
    expect(() => decideCapSlot([], 0, NOW)).toThrow(RangeError);
    expect(() => decideCapSlot([], 2.5, NOW)).toThrow(RangeError);
  });

  it('KeysEachNumbersSlotsUnderItsTenant', () => {
    expect(capPartition('acme', '+14155550101')).toBe('TENANT#acme#CAP#+14155550101');
    expect(capSlotKey('acme', '+14155550101', 2)).toEqual({ pk: 'TENANT#acme#CAP#+14155550101', sk: 'SLOT#02' });
    expect(capClaimCondition(NOW)).toEqual({ expression: 'attribute_not_exists(pk) OR #at <= :cutoff', names: { '#at': 'at' }, values: { ':cutoff': NOW - 24 * H } });
  });
});

/**
 * Dials racing for one number against a model of the conditional Put: each dial reads the slots (and the
 * tenant's cap) at one time and commits its claim later, when the claim's condition is checked on the
 * slot as it is then — as DynamoDB checks it inside the dial's transaction. Whatever the interleaving,
 * every committed call sees at most `cap` calls (itself included) in the 24 h before it, `cap` as its
 * dial read it; and no dial waits while the number is under its cap.
 */
function race(seed: number, lowerCapAt?: number): { claims: { at: number; cap: number }[]; violations: string[] } {
  const rng = seededRng(seed);
  const store = new Map<number, number>(); // slot → at
  let cap = 5;
  let now = NOW;
  const claims: { at: number; cap: number }[] = [];
  const violations: string[] = [];
  type Pending = { slot: number; cap: number };
  const dialers: (Pending | undefined)[] = [undefined, undefined, undefined, undefined];
  for (let step = 0; step < 400; step++) {
    now += rng.int(0, 3) * rng.int(0, 2 * H);
    if (lowerCapAt !== undefined && step === lowerCapAt) cap = 3;
    const d = rng.int(0, dialers.length - 1);
    const pending = dialers[d];
    if (!pending) {
      const read: CapSlotRead[] = [...store].map(([s, at]) => ({ slot: s, at }));
      const decision = decideCapSlot(read, cap, now);
      if ('claim' in decision) dialers[d] = { slot: decision.claim, cap };
      else if (decision.freesAt <= now) violations.push(`waited at ${now} for ${decision.freesAt}`);
      continue;
    }
    dialers[d] = undefined;
    const held = store.get(pending.slot);
    const { values } = capClaimCondition(now);
    if (held !== undefined && held > values[':cutoff']) continue; // refused: the transaction is cancelled
    store.set(pending.slot, now);
    claims.push({ at: now, cap: pending.cap });
    const inWindow = claims.filter((c) => c.at > now - CAP_WINDOW_MS).length;
    if (inWindow > pending.cap) violations.push(`${inWindow} calls in the 24 h before ${new Date(now).toISOString()} under a cap of ${pending.cap}`);
  }
  return { claims, violations };
}

describe('the frequency cap under racing dials (a model of the conditional write)', () => {
  it('NeverLetsMoreThanTheCapIntoAny24Hours', () => {
    let claims = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const result = race(seed);
      expect(result.violations, `seed ${seed}`).toEqual([]);
      claims += result.claims.length;
    }
    expect(claims).toBeGreaterThan(150 * 20); // the races did dial
  });

  it('NeverLetsMoreThanALoweredCapIntoAny24HoursAfterTheDialsThatReadIt', () => {
    for (let seed = 1; seed <= 150; seed++) expect(race(seed, 60).violations, `seed ${seed}`).toEqual([]);
  });
});
