import { describe, expect, it } from 'vitest';
import { NEVER_HORIZON_MS, nextOpeningFor, openIntervals, windowOpenFor } from '../../../functions/calls/compliance/hours.ts';
import type { WindowHours } from '../../../functions/calls/compliance/hours.ts';
import { nextWindowOpening } from '../../../functions/calls/window.ts';
import { seededRng } from '../../../functions/platform/rng.ts';

const at = (iso: string) => Date.parse(iso);
const show = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const hours = (h: Partial<WindowHours> = {}): WindowHours => ({ start: '09:00', end: '17:00', weekdays: [1, 2, 3, 4, 5, 6, 7], ...h });

describe('one zone: exactly nextWindowOpening', () => {
  it('AgreesWithTheSingleZoneWindowAtRandomInstantsAndZones', () => {
    const rng = seededRng(27);
    const zones = ['Europe/Berlin', 'America/New_York', 'America/Los_Angeles', 'Australia/Adelaide', 'Asia/Kolkata', 'Pacific/Auckland', 'Australia/Lord_Howe', 'America/St_Johns'];
    const pad = (n: number) => String(n).padStart(2, '0');
    for (let i = 0; i < 400; i++) {
      const timezone = zones[rng.int(0, zones.length - 1)]!;
      const startMin = rng.int(0, 20 * 60);
      // At least 90 minutes long, so no window fits inside a spring-forward gap (there the single-zone
      // function names the jump as the opening of a window that is empty that day; the multi-zone one skips the day).
      const endMin = rng.int(startMin + 90, 24 * 60 - 1);
      const weekdays = [1, 2, 3, 4, 5, 6, 7].filter(() => rng.float() < 0.6);
      const window = { timezone, start: `${pad(Math.floor(startMin / 60))}:${pad(startMin % 60)}`, end: `${pad(Math.floor(endMin / 60))}:${pad(endMin % 60)}`, weekdays: weekdays.length ? weekdays : [3] };
      const now = at('2026-01-01T00:00:00Z') + rng.int(0, 365 * 86_400) * 1000;
      const single = nextWindowOpening(window, now);
      expect(show(nextOpeningFor(window, [timezone], now)), JSON.stringify({ window, now: show(now) })).toBe(show(single ?? now));
      expect(windowOpenFor(window, [timezone], now)).toBe(single === null);
    }
  });
});

describe('several zones: open only while open in every one', () => {
  // [what, hours, zones, now, next opening (null: never)]
  const cases: [string, WindowHours, string[], string, string | null][] = [
    ['before both: opens at the later opening (09:00 in Los Angeles)', hours(), ['America/New_York', 'America/Los_Angeles'], '2026-06-01T12:00:00Z', '2026-06-01T16:00:00Z'],
    ['inside both: open now', hours(), ['America/New_York', 'America/Los_Angeles'], '2026-06-01T18:00:00Z', '2026-06-01T18:00:00Z'],
    ['after the earlier close (17:00 in New York): the next day', hours(), ['America/New_York', 'America/Los_Angeles'], '2026-06-01T21:00:00Z', '2026-06-02T16:00:00Z'],
    ['eight US clocks: Honolulu opens last, New York closes first', hours(), ['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles', 'America/Anchorage', 'America/Adak', 'Pacific/Honolulu'], '2026-06-01T12:00:00Z', '2026-06-01T19:00:00Z'],
    ['windows that never overlap: Kaliningrad and Kamchatka, 11 h apart', hours(), ['Europe/Kaliningrad', 'Asia/Kamchatka'], '2026-06-01T12:00:00Z', null],
    ['adjacent windows share no instant: [13Z, 14Z) and [14Z, 15Z)', hours({ start: '09:00', end: '10:00' }), ['America/New_York', 'America/Chicago'], '2026-06-01T12:00:00Z', null],
    // Weekdays are each zone's own: Friday afternoon in Los Angeles is Saturday morning in Auckland.
    ['weekdays per zone: LA Friday is Auckland Saturday', hours({ weekdays: [1, 2, 3, 4, 5] }), ['America/Los_Angeles', 'Pacific/Auckland'], '2026-06-05T20:00:00Z', '2026-06-08T21:00:00Z'],
    // A 30-minute offset: Kolkata 09:00–17:00 is 03:30–11:30Z; London (BST) 08:00–16:00Z.
    ['a half-hour zone: Kolkata and London overlap from 08:00Z', hours(), ['Asia/Kolkata', 'Europe/London'], '2026-06-01T06:00:00Z', '2026-06-01T08:00:00Z'],
    ['a half-hour zone: after 11:30Z, the next morning', hours(), ['Asia/Kolkata', 'Europe/London'], '2026-06-01T11:30:00Z', '2026-06-02T08:00:00Z'],
    // Adelaide (+9:30, DST from Sunday 4 October 2026 at 02:00) and Perth (+8, no DST).
    ['Adelaide and Perth before Adelaide’s DST: Perth opens last', hours(), ['Australia/Adelaide', 'Australia/Perth'], '2026-10-02T00:00:00Z', '2026-10-02T01:00:00Z'],
    ['Adelaide alone on the day its clocks go forward: 09:00 ACDT', hours(), ['Australia/Adelaide'], '2026-10-03T08:00:00Z', '2026-10-03T22:30:00Z'],
    // US fall-back (Sunday 1 November 2026): 09:00–11:00 in New York and Chicago overlap 14–15Z before, 15–16Z after.
    ['across the US fall-back: the overlap moves an hour later', hours({ end: '11:00' }), ['America/New_York', 'America/Chicago'], '2026-10-31T15:30:00Z', '2026-11-01T15:00:00Z'],
    // London and New York, 09:00–14:30: 30 min in summer (13:00–13:30Z), 90 min while the US is on DST and the UK is not.
    ['EU/US: summer overlap', hours({ end: '14:30' }), ['Europe/London', 'America/New_York'], '2026-06-01T12:00:00Z', '2026-06-01T13:00:00Z'],
    ['EU/US: winter overlap', hours({ end: '14:30' }), ['Europe/London', 'America/New_York'], '2026-01-05T12:00:00Z', '2026-01-05T14:00:00Z'],
    ['EU/US: the three weeks the US is on DST and the UK is not', hours({ end: '14:30' }), ['Europe/London', 'America/New_York'], '2026-03-16T14:00:00Z', '2026-03-16T14:00:00Z'],
    // 09:00–13:30: London 08:00–12:30Z in summer, 09:00–13:30Z in winter; New York 13:00Z/14:00Z on. Only the
    // weeks between the EU and US clock changes overlap (13:00–13:30Z): from June, the next is 25 October.
    ['EU/US: an overlap that exists only between the two clock changes', hours({ end: '13:30' }), ['Europe/London', 'America/New_York'], '2026-06-01T12:00:00Z', '2026-10-25T13:00:00Z'],
  ];
  it.each(cases)('%s', (_what, window, zones, now, expected) => {
    expect(show(nextOpeningFor(window, zones, at(now)))).toBe(expected === null ? null : show(at(expected)));
    expect(windowOpenFor(window, zones, at(now))).toBe(expected === now);
  });

  it('GivesNullWhenNoCommonOpeningComesBeforeTheLimit', () => {
    const now = at('2026-06-01T12:00:00Z');
    expect(nextOpeningFor(hours({ end: '13:30' }), ['Europe/London', 'America/New_York'], now, at('2026-10-01T00:00:00Z'))).toBeNull();
    expect(nextOpeningFor(hours(), ['America/New_York', 'America/Los_Angeles'], now, at('2026-06-01T15:59:59Z'))).toBeNull();
    expect(nextOpeningFor(hours(), ['America/New_York', 'America/Los_Angeles'], now, at('2026-06-01T16:00:00Z'))).toBe(at('2026-06-01T16:00:00Z'));
    expect(NEVER_HORIZON_MS).toBeGreaterThan(366 * 86_400_000);
  });

  it('SkipsADayWhoseWindowFallsInsideTheSpringForwardGap', () => {
    // 02:00–02:30 does not exist in Berlin on Sunday 29 March 2026: no call that day, the next day at 02:00 CEST.
    const window = hours({ start: '02:00', end: '02:30' });
    expect(show(nextOpeningFor(window, ['Europe/Berlin'], at('2026-03-28T23:00:00Z')))).toBe(show(at('2026-03-30T00:00:00Z')));
  });

  it('RefusesNoZones', () => {
    expect(() => nextOpeningFor(hours(), [], 0)).toThrow(RangeError);
  });
});

describe('open intervals of one zone', () => {
  it('StartsWithTheIntervalThatContainsNowAndStopsAtTheLimit', () => {
    const intervals = [...openIntervals(hours({ weekdays: [1, 3] }), 'Europe/Berlin', at('2026-06-01T10:00:00Z'), at('2026-06-09T00:00:00Z'))].map(([o, c]) => `${show(o)}–${show(c)}`);
    // Monday 1 June (contains now), Wednesday 3, Monday 8; CEST is UTC+2.
    expect(intervals).toEqual([
      '2026-06-01T07:00:00.000Z–2026-06-01T15:00:00.000Z',
      '2026-06-03T07:00:00.000Z–2026-06-03T15:00:00.000Z',
      '2026-06-08T07:00:00.000Z–2026-06-08T15:00:00.000Z',
    ]);
  });
});
