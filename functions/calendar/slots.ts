import { DateTime } from 'luxon';
import { firstInstantAtWallTime } from '../platform/wall-time.ts';
import { holdCells } from './holds.ts';
import type { Interval } from './port.ts';

/**
 * The slots the agent may offer, pure: starts on a `durationMinutes + bufferMinutes` grid inside the
 * calendar's bookable hours, free in the calendar (freeBusy, padded by the buffer) and in redial's own hold
 * grid, from `from` to `to`, at most `limit`.
 *
 * ```
 *   bookable (calendar zone)   09:00 ─────────────────────────────────────────────── 12:00
 *   grid, 30 min + 10 min      |09:00  |09:40  |10:20  |11:00  |11:40 ✗ (ends 12:10, after close)
 *   freeBusy busy                              [10:30 ── 10:50)
 *   slots                       09:00   09:40  ✗       11:00 (its buffer only touches 10:50)
 *                                              (10:20–10:50 overlaps)
 * ```
 *
 * - The grid restarts at each bookable range's opening and steps in elapsed time, so a slot lasts its
 *   duration even across a clock change. Openings are wall times computed per day in the calendar's zone
 *   (DST-correct: 09:00 stays 09:00 local; a range opening in a spring-forward gap opens at the jump).
 * - A slot [s, s + d) is refused if [s − buffer, s + d + buffer) meets a busy interval (the buffer keeps
 *   others' meetings at a distance too), or if any hold cell it would take is held (holds.ts): what this
 *   offers, the booking accepts unless someone else books it first.
 * - `from` defaults to now + {@link DEFAULT_LEAD_MS} and is never before now; `to` defaults to, and is never
 *   after, now + `maxDaysAhead` days. A slot starts at or after `from` and ends at or before `to`.
 * - Each slot is given in UTC (`Z`) and in the contact's zone, with the zone's name.
 */

/** `from` when the caller gives none. */
export const DEFAULT_LEAD_MS = 15 * 60_000;
export const DEFAULT_SLOT_LIMIT = 10;
export const MAX_SLOT_LIMIT = 50;

/** Weekday keys of `bookableHours`, Monday first (ISO weekday = index + 1). */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** Bookable hours: per weekday, `[start, end)` ranges of local wall time (`HH:MM`, end may be `24:00`), sorted and disjoint. */
export type BookableHours = Partial<Record<Weekday, readonly (readonly [string, string])[]>>;

/** What a slot search reads. */
export interface SlotQuery {
  bookableHours: BookableHours;
  /** The calendar's zone: bookable hours are its wall times. */
  calendarZone: string;
  /** The contact's zone (the campaign-control rule), in which `localStart`/`localEnd` are given. */
  contactZone: string;
  durationMinutes: number;
  bufferMinutes: number;
  maxDaysAhead: number;
  now: number;
  from?: number;
  to?: number;
  limit?: number;
  /** Busy intervals from freeBusy (their own events and redial's booked ones). */
  busy: readonly Interval[];
  /** Starts of the hold cells live holds take (expired ones left out). */
  heldCells: ReadonlySet<number>;
}

/** A slot as the availability route answers it. */
export interface Slot {
  /** UTC, `2026-03-02T15:00:00Z`. */
  start: string;
  end: string;
  /** In the contact's zone, with its offset: `2026-03-02T10:00:00-05:00`. */
  localStart: string;
  localEnd: string;
  timeZone: string;
}

const DAY_MS = 86_400_000;

/** The free slots of a query, in time order (see this file's comment). */
export function findSlots(query: SlotQuery): Slot[] {
  const durationMs = query.durationMinutes * 60_000;
  const bufferMs = query.bufferMinutes * 60_000;
  if (!(durationMs > 0) || !(bufferMs >= 0)) throw new RangeError('a slot has a positive duration and a buffer ≥ 0');
  const limit = Math.min(MAX_SLOT_LIMIT, Math.max(1, Math.floor(query.limit ?? DEFAULT_SLOT_LIMIT)));
  const horizon = query.now + query.maxDaysAhead * DAY_MS;
  const from = Math.max(query.now, query.from ?? query.now + DEFAULT_LEAD_MS);
  const to = Math.min(horizon, query.to ?? horizon);
  const step = durationMs + bufferMs;
  const busy = [...query.busy].sort((a, b) => a.start - b.start);
  const slots: Slot[] = [];
  if (!(from < to)) return slots;

  const firstDay = DateTime.fromMillis(from, { zone: query.calendarZone });
  for (let offset = 0; ; offset++) {
    const day = new Date(Date.UTC(firstDay.year, firstDay.month - 1, firstDay.day + offset));
    // A day's ranges open on that day, so none opens before its midnight, which is at most 14 h before 00:00 UTC.
    if (day.getTime() - 14 * 3_600_000 > to) return slots;
    const weekday = WEEKDAYS[(day.getUTCDay() + 6) % 7]!;
    for (const [open, close] of query.bookableHours[weekday] ?? []) {
      const opens = firstInstantAtWallTime(day, open, query.calendarZone);
      const closes = firstInstantAtWallTime(day, close, query.calendarZone);
      for (let start = opens; start + durationMs <= closes; start += step) {
        const end = start + durationMs;
        if (end > to) return slots;
        if (start < from) continue;
        if (meetsBusy(busy, start - bufferMs, end + bufferMs)) continue;
        if (holdCells(start, end, bufferMs).some((cell) => query.heldCells.has(cell))) continue;
        slots.push(slot(start, end, query.contactZone));
        if (slots.length >= limit) return slots;
      }
    }
  }
}

/** Whether [start, end) meets any of the busy intervals (sorted by start). */
function meetsBusy(busy: readonly Interval[], start: number, end: number): boolean {
  for (const interval of busy) {
    if (interval.start >= end) return false;
    if (interval.end > start) return true;
  }
  return false;
}

function slot(start: number, end: number, zone: string): Slot {
  const local = (ms: number) => DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true })!;
  return { start: utc(start), end: utc(end), localStart: local(start), localEnd: local(end), timeZone: zone };
}

/** An instant as UTC ISO-8601 without milliseconds when they are zero: `2026-03-02T15:00:00Z`. */
export const utc = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
