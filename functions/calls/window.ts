import { DateTime, IANAZone } from 'luxon';
import * as z from 'zod';
import { firstInstantAtWallTime } from '../platform/wall-time.ts';

const HH_MM = /^([01]\d|2[0-3]):[0-5]\d$/;

/** ISO weekdays: 1 = Monday … 7 = Sunday. */
export const ALL_WEEKDAYS = [1, 2, 3, 4, 5, 6, 7] as const;

/**
 * A batch's calling window: local times in an IANA time zone, on some weekdays. Calls are placed only
 * while local wall time is in [start, end).
 */
export const callingWindowSchema = z
  .strictObject({
    timezone: z.string().refine((zone) => IANAZone.isValidZone(zone), { message: 'not an IANA time zone (e.g. Europe/Berlin)' }),
    start: z.string().regex(HH_MM, 'expected HH:MM (24 h)'),
    end: z.string().regex(HH_MM, 'expected HH:MM (24 h)'),
    weekdays: z
      .array(z.number().int().min(1).max(7))
      .min(1)
      .refine((days) => new Set(days).size === days.length, { message: 'weekdays must not repeat' })
      .default([...ALL_WEEKDAYS]),
    /**
     * Evaluate the window in each contact's own zone (its timezone, its number's area code or region:
     * compliance/recipient.ts); false: in `timezone` for every contact. A batch stored before this
     * existed has none, and keeps the one zone.
     */
    perContact: z.boolean().default(true),
  })
  .refine((w) => !(HH_MM.test(w.start) && HH_MM.test(w.end)) || w.start < w.end, {
    message: 'end must be after start (windows across midnight are not supported)',
    path: ['end'],
  });

/** A stored window: `perContact` absent on batches stored before it existed (they keep the one zone). */
export type CallingWindow = Omit<z.infer<typeof callingWindowSchema>, 'perContact'> & { perContact?: boolean };

/**
 * When the window next opens, or `null` if `nowMs` is inside it.
 *
 * DST-correct: each day's opening and closing are computed as instants in the window's zone, so a window
 * keeps its local hours across a clock change. A start time that does not exist that day (a
 * spring-forward gap) opens when the clocks jump past it; one that exists twice (fall-back) opens at
 * the first of the two.
 *
 * @example
 * nextWindowOpening({ timezone: 'Europe/Berlin', start: '09:00', end: '17:00', weekdays: [1,2,3,4,5,6,7] }, Date.parse('2026-03-28T17:30:00Z'));
 * // → Date.parse('2026-03-29T07:00:00Z') (09:00 CEST, the day the clocks went forward)
 */
export function nextWindowOpening(window: CallingWindow, nowMs: number): number | null {
  const today = DateTime.fromMillis(nowMs, { zone: window.timezone });
  // 8 days always reaches an allowed weekday, whatever today is.
  for (let offset = 0; offset <= 7; offset++) {
    const day = new Date(Date.UTC(today.year, today.month - 1, today.day + offset));
    const weekday = day.getUTCDay() === 0 ? 7 : day.getUTCDay();
    if (!window.weekdays.includes(weekday)) continue;
    const open = firstInstantAtWallTime(day, window.start, window.timezone);
    const close = firstInstantAtWallTime(day, window.end, window.timezone);
    if (nowMs < open) return open;
    if (nowMs < close) return null;
  }
  throw new Error('unreachable: a window with at least one weekday opens within 8 days');
}

export { firstInstantAtWallTime } from '../platform/wall-time.ts';
