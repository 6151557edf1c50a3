import { describe, expect, it } from 'vitest';
import { CELL_MS, MAX_CELLS_PER_HOLD, cellSortKey, cellStartOf, collide, holdCellKey, holdCells } from '../../functions/calendar/holds.ts';

const at = (hhmm: string) => Date.parse(`2026-03-02T${hhmm}:00Z`);
const min = 60_000;

describe('the hold grid', () => {
  it('CoversTheBookingAndBothBuffersInFiveMinuteCells', () => {
    const cells = holdCells(at('09:10'), at('09:40'), 5 * min);
    expect(cells[0]).toBe(at('09:05'));
    expect(cells.at(-1)).toBe(at('09:40'));
    expect(cells).toHaveLength(8); // 09:05 … 09:40, covering [09:05, 09:45)
    expect(cells.every((c, i) => i === 0 || c - cells[i - 1]! === CELL_MS)).toBe(true);
  });

  it('MakesOverlappingBookingsOfDifferentLengthsShareACell', () => {
    // A 30-minute booking and a 10-minute one inside it, then one that only its buffer reaches.
    expect(collide({ start: at('09:00'), end: at('09:30'), bufferMs: 0 }, { start: at('09:10'), end: at('09:20'), bufferMs: 0 })).toBe(true);
    expect(collide({ start: at('09:00'), end: at('10:00'), bufferMs: 0 }, { start: at('09:55'), end: at('11:25'), bufferMs: 0 })).toBe(true);
    expect(collide({ start: at('09:10'), end: at('09:40'), bufferMs: 5 * min }, { start: at('09:40'), end: at('09:50'), bufferMs: 0 })).toBe(true);
    // Either side's buffer is enough.
    expect(collide({ start: at('09:40'), end: at('09:50'), bufferMs: 0 }, { start: at('09:10'), end: at('09:40'), bufferMs: 5 * min })).toBe(true);
  });

  it('LetsBookingsThatOnlyTouchEachOtherBothCommit', () => {
    expect(collide({ start: at('09:00'), end: at('09:30'), bufferMs: 0 }, { start: at('09:30'), end: at('10:00'), bufferMs: 0 })).toBe(false);
    expect(collide({ start: at('09:00'), end: at('09:30'), bufferMs: 10 * min }, { start: at('09:40'), end: at('10:00'), bufferMs: 0 })).toBe(false);
  });

  it('RoundsAnOffGridIntervalOutwardSoItCollidesMoreNeverLess', () => {
    const cells = holdCells(at('09:02'), at('09:08'), 0);
    expect(cells).toEqual([at('09:00'), at('09:05')]);
    expect(collide({ start: at('09:02'), end: at('09:08'), bufferMs: 0 }, { start: at('09:07'), end: at('09:09'), bufferMs: 0 })).toBe(true);
  });

  it('RefusesABookingThatWouldNotFitOneTransaction', () => {
    expect(holdCells(at('09:00'), at('09:00') + MAX_CELLS_PER_HOLD * CELL_MS, 0)).toHaveLength(MAX_CELLS_PER_HOLD);
    expect(() => holdCells(at('09:00'), at('09:00') + MAX_CELLS_PER_HOLD * CELL_MS, 5 * min)).toThrow(/at most 80 cells/);
    expect(() => holdCells(at('09:00'), at('09:00'), 0)).toThrow(RangeError);
    expect(() => holdCells(at('09:00'), at('09:30'), -1)).toThrow(RangeError);
  });

  it('KeysEveryCellUnderItsTenantsCalendarPartitionSortedByTime', () => {
    expect(holdCellKey('t_acme', 'sales', at('15:05'))).toEqual({ pk: 'TENANT#t_acme#CAL#sales#HOLDS', sk: 'cell#2026-03-02T15:05Z' });
    const keys = holdCells(at('23:50'), at('00:10') + 86_400_000, 0).map((c) => cellSortKey(c));
    expect([...keys].sort()).toEqual(keys);
    expect(keys.map(cellStartOf)).toEqual(holdCells(at('23:50'), at('00:10') + 86_400_000, 0));
    expect(() => cellSortKey(at('15:03'))).toThrow(RangeError);
    expect(() => cellStartOf('cell#2026-03-02T15:03Z')).toThrow(RangeError);
    expect(() => cellStartOf('booking#x')).toThrow(RangeError);
  });
});
