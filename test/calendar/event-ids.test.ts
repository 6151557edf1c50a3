import { describe, expect, it } from 'vitest';
import { eventIdFor, isValidEventId } from '../../functions/calendar/event-ids.ts';

const base = { tenantId: 't_acme', calendarId: 'sales', callId: 'c_b1_1_0_0', start: Date.parse('2026-03-02T15:00:00Z'), counter: 1 };

describe('event ids', () => {
  it('IsSixtyFourLowercaseHexCharactersWhichGoogleAcceptsAsBase32hex', () => {
    const id = eventIdFor(base);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(isValidEventId(id)).toBe(true);
  });

  it('IsTheSameForTheSameInsertSoTheSettleJobCanRecomputeIt', () => {
    expect(eventIdFor({ ...base })).toBe(eventIdFor({ ...base }));
  });

  it('ChangesWithEachInsertCounterAndEachInputSoNoIdIsEverSentTwice', () => {
    const ids = [
      eventIdFor(base),
      eventIdFor({ ...base, counter: 2 }),
      eventIdFor({ ...base, counter: 3 }),
      eventIdFor({ ...base, tenantId: 't_other' }),
      eventIdFor({ ...base, calendarId: 'support' }),
      eventIdFor({ ...base, callId: 'c_b1_1_0_1' }),
      eventIdFor({ ...base, start: base.start + 30 * 60_000 }),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('DoesNotConfuseFieldsThatConcatenateToTheSameText', () => {
    expect(eventIdFor({ ...base, tenantId: 'a#b', calendarId: 'c' })).not.toBe(eventIdFor({ ...base, tenantId: 'a', calendarId: 'b#c' }));
  });

  it('RefusesACounterBelowOneOrAStartThatIsNoInstant', () => {
    expect(() => eventIdFor({ ...base, counter: 0 })).toThrow(RangeError);
    expect(() => eventIdFor({ ...base, counter: 1.5 })).toThrow(RangeError);
    expect(() => eventIdFor({ ...base, start: Number.NaN })).toThrow(RangeError);
  });

  it('ValidatesIdsByGooglesRules', () => {
    expect(isValidEventId('abcde')).toBe(true);
    expect(isValidEventId('0123456789abcdefghijklmnopqrstuv')).toBe(true);
    expect(isValidEventId('abcd')).toBe(false); // under 5
    expect(isValidEventId('a'.repeat(1024))).toBe(true);
    expect(isValidEventId('a'.repeat(1025))).toBe(false);
    expect(isValidEventId('abcdw')).toBe(false); // w is past base32hex's v
    expect(isValidEventId('ABCDE')).toBe(false); // lowercase only
    expect(isValidEventId('abc-de')).toBe(false);
  });
});
