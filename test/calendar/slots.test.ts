import { describe, expect, it } from 'vitest';
import { CELL_MS } from '../../functions/calendar/holds.ts';
import { findSlots } from '../../functions/calendar/slots.ts';
import type { SlotQuery } from '../../functions/calendar/slots.ts';

const z = (iso: string) => Date.parse(iso);
const min = 60_000;

/** A query in UTC for a Monday morning, each test changing what it is about. */
function query(overrides: Partial<SlotQuery> = {}): SlotQuery {
  return {
    bookableHours: { mon: [['09:00', '12:00']] },
    calendarZone: 'UTC',
    contactZone: 'UTC',
    durationMinutes: 30,
    bufferMinutes: 10,
    maxDaysAhead: 14,
    now: z('2026-03-02T07:00:00Z'), // a Monday
    busy: [],
    heldCells: new Set(),
    ...overrides,
  };
}
const starts = (q: SlotQuery) => findSlots(q).map((s) => s.start);

describe('slots', () => {
  it('StepsByDurationPlusBufferFromEachRangesOpeningAndEndsInsideIt', () => {
    expect(starts(query({ to: z('2026-03-02T23:00:00Z') }))).toEqual(['2026-03-02T09:00:00Z', '2026-03-02T09:40:00Z', '2026-03-02T10:20:00Z', '2026-03-02T11:00:00Z']);
  });

  it('LeavesOutASlotThatMeetsABusyIntervalAndOneItsBufferReaches', () => {
    expect(starts(query({ to: z('2026-03-02T23:00:00Z'), busy: [{ start: z('2026-03-02T10:30:00Z'), end: z('2026-03-02T10:50:00Z') }] }))).toEqual([
      '2026-03-02T09:00:00Z',
      '2026-03-02T09:40:00Z',
      '2026-03-02T11:00:00Z', // its buffer starts at 10:50, where the busy time ends
    ]);
    // 10:15–10:20 overlaps no slot, but the 09:40 slot's buffer runs to 10:20 and the 10:20 slot's from 10:10.
    expect(starts(query({ to: z('2026-03-02T23:00:00Z'), busy: [{ start: z('2026-03-02T10:15:00Z'), end: z('2026-03-02T10:20:00Z') }] }))).toEqual([
      '2026-03-02T09:00:00Z',
      '2026-03-02T11:00:00Z',
    ]);
  });

  it('ReadsBusyIntervalsInAnyOrder', () => {
    const busy = [
      { start: z('2026-03-02T11:00:00Z'), end: z('2026-03-02T11:30:00Z') },
      { start: z('2026-03-02T08:00:00Z'), end: z('2026-03-02T09:20:00Z') },
    ];
    // 10:20's buffer ends at 11:00, where the second busy interval starts: touching is not meeting.
    expect(starts(query({ to: z('2026-03-02T23:00:00Z'), busy }))).toEqual(['2026-03-02T09:40:00Z', '2026-03-02T10:20:00Z']);
  });

  it('LeavesOutASlotWhoseHoldCellsAreHeldSoItOffersOnlyWhatCanBeBooked', () => {
    const heldCells = new Set([z('2026-03-02T09:15:00Z'), z('2026-03-02T11:35:00Z')]);
    // 09:00 holds 08:50–09:40; 11:00 holds 10:50–11:40.
    expect(starts(query({ to: z('2026-03-02T23:00:00Z'), heldCells }))).toEqual(['2026-03-02T09:40:00Z', '2026-03-02T10:20:00Z']);
    // A cell held just before the first slot's buffer takes nothing.
    expect(starts(query({ to: z('2026-03-02T23:00:00Z'), heldCells: new Set([z('2026-03-02T09:00:00Z') - 10 * min - CELL_MS]) }))).toHaveLength(4);
  });

  it('StartsFifteenMinutesFromNowByDefaultNeverBeforeNowAndEndsByMaxDaysAhead', () => {
    const now = z('2026-03-02T08:50:00Z');
    expect(starts(query({ now }))[0]).toBe('2026-03-02T09:40:00Z'); // 09:00 is within the 15-minute lead
    expect(starts(query({ now, from: z('2026-03-01T00:00:00Z') }))[0]).toBe('2026-03-02T09:00:00Z'); // an explicit from, but never the past
    expect(starts(query({ now: z('2026-03-02T09:10:00Z'), from: z('2026-03-02T08:00:00Z') }))[0]).toBe('2026-03-02T09:40:00Z');
    // Two days ahead of Monday 07:00 ends on Wednesday 07:00, before Wednesday's hours; a later `to` does not reach further.
    const daily = { mon: [['09:00', '12:00']], tue: [['09:00', '12:00']], wed: [['09:00', '12:00']] } as const;
    const slots = findSlots(query({ bookableHours: daily, maxDaysAhead: 2, limit: 50, to: z('2026-04-30T00:00:00Z') }));
    expect(slots).toHaveLength(8);
    expect(slots.at(-1)!.start).toBe('2026-03-03T11:00:00Z');
    expect(findSlots(query({ bookableHours: daily, maxDaysAhead: 2, limit: 50, to: z('2026-03-03T10:00:00Z') })).at(-1)!.end).toBe('2026-03-03T09:30:00Z'); // 09:40–10:10 would end after it
  });

  it('GivesTenByDefaultAndNeverMoreThanFifty', () => {
    const everyDay = { mon: [['00:00', '24:00']], tue: [['00:00', '24:00']] } as const;
    expect(findSlots(query({ bookableHours: everyDay }))).toHaveLength(10);
    expect(findSlots(query({ bookableHours: everyDay, limit: 500 }))).toHaveLength(50);
    expect(findSlots(query({ bookableHours: everyDay, limit: 3 }))).toHaveLength(3);
  });

  it('UsesTheWeekdayOfTheCalendarZoneAndGivesEachSlotInTheContactsZone', () => {
    // Monday 00:30 in Berlin is still Sunday in UTC; the Monday range is Berlin's.
    const slots = findSlots(
      query({ calendarZone: 'Europe/Berlin', contactZone: 'America/New_York', bookableHours: { mon: [['09:00', '10:00']] }, bufferMinutes: 0, now: z('2026-03-01T23:30:00Z'), limit: 2 }),
    );
    expect(slots).toEqual([
      { start: '2026-03-02T08:00:00Z', end: '2026-03-02T08:30:00Z', localStart: '2026-03-02T03:00:00-05:00', localEnd: '2026-03-02T03:30:00-05:00', timeZone: 'America/New_York' },
      { start: '2026-03-02T08:30:00Z', end: '2026-03-02T09:00:00Z', localStart: '2026-03-02T03:30:00-05:00', localEnd: '2026-03-02T04:00:00-05:00', timeZone: 'America/New_York' },
    ]);
  });

  it('KeepsLocalHoursAcrossTheSpringClockChange', () => {
    const q = query({ calendarZone: 'America/New_York', contactZone: 'America/New_York', bufferMinutes: 0, durationMinutes: 60, limit: 1 });
    const friday = findSlots({ ...q, bookableHours: { fri: [['09:00', '17:00']] }, now: z('2026-03-06T00:00:00Z') })[0]!;
    const monday = findSlots({ ...q, bookableHours: { mon: [['09:00', '17:00']] }, now: z('2026-03-07T00:00:00Z') })[0]!;
    expect([friday.start, friday.localStart]).toEqual(['2026-03-06T14:00:00Z', '2026-03-06T09:00:00-05:00']);
    expect([monday.start, monday.localStart]).toEqual(['2026-03-09T13:00:00Z', '2026-03-09T09:00:00-04:00']);
  });

  it('StepsInElapsedTimeThroughTheHourThatDoesNotExist', () => {
    // Sunday 2026-03-08 in New York: 01:00 EST to 04:00 EDT is two hours.
    const slots = findSlots(
      query({ calendarZone: 'America/New_York', contactZone: 'America/New_York', bookableHours: { sun: [['01:00', '04:00']] }, bufferMinutes: 0, durationMinutes: 60, now: z('2026-03-07T12:00:00Z'), to: z('2026-03-09T00:00:00Z') }),
    );
    expect(slots.map((s) => [s.localStart, s.localEnd])).toEqual([
      ['2026-03-08T01:00:00-05:00', '2026-03-08T03:00:00-04:00'],
      ['2026-03-08T03:00:00-04:00', '2026-03-08T04:00:00-04:00'],
    ]);
    // A range that opens inside the gap opens at the jump.
    const gap = findSlots(
      query({ calendarZone: 'America/New_York', contactZone: 'UTC', bookableHours: { sun: [['02:30', '04:00']] }, bufferMinutes: 0, durationMinutes: 30, now: z('2026-03-07T12:00:00Z'), to: z('2026-03-09T00:00:00Z') }),
    );
    expect(gap.map((s) => s.start)).toEqual(['2026-03-08T07:00:00Z', '2026-03-08T07:30:00Z']);
  });

  it('StepsInElapsedTimeThroughTheHourThatHappensTwice', () => {
    // Sunday 2026-11-01 in New York: 00:00 EDT to 03:00 EST is four hours; 01:00 comes twice.
    const slots = findSlots(
      query({ calendarZone: 'America/New_York', contactZone: 'America/New_York', bookableHours: { sun: [['00:00', '03:00']] }, bufferMinutes: 0, durationMinutes: 60, now: z('2026-10-31T12:00:00Z'), to: z('2026-11-02T00:00:00Z') }),
    );
    expect(slots.map((s) => s.localStart)).toEqual(['2026-11-01T00:00:00-04:00', '2026-11-01T01:00:00-04:00', '2026-11-01T01:00:00-05:00', '2026-11-01T02:00:00-05:00']);
    expect(slots.map((s) => s.start)).toEqual(['2026-11-01T04:00:00Z', '2026-11-01T05:00:00Z', '2026-11-01T06:00:00Z', '2026-11-01T07:00:00Z']);
  });

  it('OffersNothingForAnEmptyOrBackwardsWindow', () => {
    expect(findSlots(query({ from: z('2026-03-03T00:00:00Z'), to: z('2026-03-02T00:00:00Z') }))).toEqual([]);
    expect(findSlots(query({ bookableHours: {} }))).toEqual([]);
  });
});
