import { describe, expect, it } from 'vitest';
import { roundDelayMs } from '../../functions/calls/backoff.ts';
import { callingWindowSchema, nextWindowOpening } from '../../functions/calls/window.ts';
import type { CallingWindow } from '../../functions/calls/window.ts';
import { seededRng } from '../../functions/platform/rng.ts';

const at = (iso: string) => Date.parse(iso);
const window = (w: Partial<CallingWindow> & { timezone: string }): CallingWindow => ({ start: '09:00', end: '17:00', weekdays: [1, 2, 3, 4, 5, 6, 7], ...w });

describe('calling window: local hours in an IANA zone, DST-correct', () => {
  // [what, window, now, next opening (null: open now)]
  const cases: [string, CallingWindow, string, string | null][] = [
    ['inside: open now', window({ timezone: 'Europe/Berlin' }), '2026-01-05T10:00:00Z', null],
    ['at the start: open', window({ timezone: 'Europe/Berlin' }), '2026-01-05T08:00:00Z', null],
    ['a millisecond before the start', window({ timezone: 'Europe/Berlin' }), '2026-01-05T07:59:59.999Z', '2026-01-05T08:00:00Z'],
    ['at the end: closed until tomorrow', window({ timezone: 'Europe/Berlin' }), '2026-01-05T16:00:00Z', '2026-01-06T08:00:00Z'],
    // Spring forward in Berlin on Sunday 2026-03-29: 09:00 is 07:00Z that day, 08:00Z the day before.
    ['evening before spring-forward: opens at 09:00 CEST', window({ timezone: 'Europe/Berlin' }), '2026-03-28T17:30:00Z', '2026-03-29T07:00:00Z'],
    // Fall back in New York on Sunday 2026-11-01: 09:00 is 14:00Z that day, 13:00Z the day before.
    ['evening before fall-back: opens at 09:00 EST', window({ timezone: 'America/New_York' }), '2026-10-31T22:00:00Z', '2026-11-01T14:00:00Z'],
    // A start inside the spring-forward gap (02:00–03:00 does not exist): it opens at the jump.
    ['start in the gap opens when the clocks jump', window({ timezone: 'Europe/Berlin', start: '02:30', end: '04:00' }), '2026-03-28T23:00:00Z', '2026-03-29T01:00:00Z'],
    // A start that happens twice (01:30 on fall-back day): the first one.
    ['start in the repeated hour opens at the first', window({ timezone: 'America/New_York', start: '01:30', end: '03:00' }), '2026-11-01T04:00:00Z', '2026-11-01T05:30:00Z'],
    // Weekdays: Friday after hours → Monday morning.
    ['weekend skipped', window({ timezone: 'Europe/London', weekdays: [1, 2, 3, 4, 5] }), '2026-01-09T17:30:00Z', '2026-01-12T09:00:00Z'],
    ['Saturday only', window({ timezone: 'Asia/Tokyo', weekdays: [6] }), '2026-01-05T03:00:00Z', '2026-01-10T00:00:00Z'],
    ['a zone east of UTC across the date line', window({ timezone: 'Pacific/Auckland', start: '08:00', end: '20:00' }), '2026-01-05T08:00:00Z', '2026-01-05T19:00:00Z'],
  ];

  it.each(cases)('%s', (_what, w, now, expected) => {
    const opening = nextWindowOpening(w, at(now));
    expect(opening === null ? null : new Date(opening).toISOString()).toBe(expected === null ? null : new Date(at(expected)).toISOString());
  });

  it('RefusesAWindowThatEndsBeforeItStartsOrAnUnknownZone', () => {
    const bad = callingWindowSchema.safeParse({ timezone: 'Mars/Olympus', start: '17:00', end: '09:00', weekdays: [1, 1] });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['timezone', 'weekdays']));
    const backwards = callingWindowSchema.safeParse({ timezone: 'Europe/Berlin', start: '17:00', end: '09:00' });
    expect(backwards.error?.issues.map((i) => i.path.join('.'))).toEqual(['end']);
    expect(callingWindowSchema.parse({ timezone: 'Europe/Berlin', start: '09:00', end: '17:00' }).weekdays).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('round backoff: ExponentialWithJitter', () => {
  it('DoublesPerRoundUsedPlusOneToAThousandMillisecondsCapped', () => {
    const rng = seededRng(3);
    const retry = { baseSeconds: 30, capSeconds: 3600 };
    for (const rounds of [0, 1, 2, 3, 5]) {
      for (let i = 0; i < 50; i++) {
        const delay = roundDelayMs(rounds, retry, rng);
        const base = 30_000 * 2 ** rounds;
        expect(delay).toBeGreaterThanOrEqual(Math.min(3_600_000, base + 1));
        expect(delay).toBeLessThanOrEqual(Math.min(3_600_000, base + 1000));
      }
    }
    expect(roundDelayMs(10, retry, rng)).toBe(3_600_000);
  });

  it('IsTheSameForTheSameSeed', () => {
    const retry = { baseSeconds: 5, capSeconds: 600 };
    const a = [1, 2, 3].map((r) => roundDelayMs(r, retry, seededRng(9)));
    const b = [1, 2, 3].map((r) => roundDelayMs(r, retry, seededRng(9)));
    expect(a).toEqual(b);
  });
});
