import { APPOINTMENT_GRID_MINUTES } from '../platform/appointments.ts';
import { tenantKeyPrefix } from '../platform/tenancy.ts';
/**
 * The hold grid, pure: which cells a booking holds, and their keys. Time is cut into fixed cells of
 * {@link CELL_MS} (5 minutes, aligned on the epoch, so on every zone's wall clock: offsets are whole
 * multiples of 5 minutes). A booking holds every cell that meets [start − buffer, end + buffer); the
 * booking's transaction puts one item per cell, each conditional on the cell being free (absent, or held
 * by a hold whose `expiresAt < now`), so two bookings whose padded intervals overlap share a cell and
 * exactly one commits — whatever their lengths:
 *
 * ```
 *   cells (5 min)   |09:00|09:05|09:10|09:15|09:20|09:25|09:30|09:35|09:40|09:45|09:50|
 *   A 09:10–09:40, buffer 5        [=====|=====|=====|=====|=====|=====|=====|=====]      09:05–09:45
 *   B 09:40–09:50, buffer 5                                        [=====|=====|=====|=====] 09:35–09:55
 *                                                           collide ▲ 09:35 and 09:40
 * ```
 *
 * The padding is each booking's own buffer on both sides, so two bookings collide when either one's
 * buffer reaches the other. Durations, buffers and bookable hours are whole multiples of 5 minutes
 * (schemas.ts), so a padded interval falls exactly on cell boundaries and no neighbour is refused for a
 * cell it does not overlap; the cover still rounds outward, so an off-grid interval can only collide more,
 * never less.
 *
 * Keys: every cell of one calendar shares a partition, `<tenant>#calendar#<calendar>#holds`, and sorts by
 * its UTC start (`cell#2026-03-02T15:05Z`): the availability route reads the held cells of [from, to) in
 * one Query (its own key range: tenant first), and a calendar's bookings are far below a partition's
 * 1,000 writes a second (a 90-minute padded booking is 18 cells).
 */

/** One cell of the hold grid. */
export const CELL_MINUTES = APPOINTMENT_GRID_MINUTES;
export const CELL_MS = CELL_MINUTES * 60_000;

/**
 * The most cells one booking may hold: its transaction carries them beside the appointment, the settle
 * job, the liveness ConditionChecks and the counters, within DynamoDB's 100 items.
 */
export const MAX_CELLS_PER_HOLD = 80;

/** The start of every cell that meets [start − buffer, end + buffer), in order. */
export function holdCells(start: number, end: number, bufferMs: number): number[] {
  if (!(end > start)) throw new RangeError('a booking ends after it starts');
  if (!(bufferMs >= 0)) throw new RangeError('a buffer is ≥ 0');
  const first = Math.floor((start - bufferMs) / CELL_MS) * CELL_MS;
  const last = Math.ceil((end + bufferMs) / CELL_MS) * CELL_MS;
  const cells: number[] = [];
  for (let cell = first; cell < last; cell += CELL_MS) cells.push(cell);
  if (cells.length > MAX_CELLS_PER_HOLD) throw new RangeError(`a booking holds at most ${MAX_CELLS_PER_HOLD} cells (${MAX_CELLS_PER_HOLD * CELL_MINUTES} min with its buffers), this one ${cells.length}`);
  return cells;
}

/** Whether two bookings collide: they share a cell. */
export function collide(a: { start: number; end: number; bufferMs: number }, b: { start: number; end: number; bufferMs: number }): boolean {
  const cells = new Set(holdCells(a.start, a.end, a.bufferMs));
  return holdCells(b.start, b.end, b.bufferMs).some((cell) => cells.has(cell));
}

/** The partition of a calendar's hold cells: the tenant first, so a Query never leaves its tenant. */
export const holdPartition = (tenantId: string, calendarId: string): string => `${tenantKeyPrefix(tenantId)}CAL#${calendarId}#HOLDS`;

/** A cell's sort key: its UTC start to the minute, so keys sort in time order. */
export const cellSortKey = (cellStart: number): string => {
  if (cellStart % CELL_MS !== 0) throw new RangeError(`${new Date(cellStart).toISOString()} is not the start of a ${CELL_MINUTES}-minute cell`);
  return `cell#${new Date(cellStart).toISOString().slice(0, 16)}Z`;
};

/** A cell's item key. */
export const holdCellKey = (tenantId: string, calendarId: string, cellStart: number): { pk: string; sk: string } => ({
  pk: holdPartition(tenantId, calendarId),
  sk: cellSortKey(cellStart),
});

/** The cell start a sort key names (the inverse of {@link cellSortKey}). */
export function cellStartOf(sk: string): number {
  const match = /^cell#(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})Z$/.exec(sk);
  const ms = match ? Date.parse(`${match[1]}:00Z`) : Number.NaN;
  if (!Number.isFinite(ms) || ms % CELL_MS !== 0) throw new RangeError(`not a hold cell key: ${sk}`);
  return ms;
}
