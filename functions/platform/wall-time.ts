import { DateTime } from 'luxon';

/**
 * Wall time in a zone, DST-correct (shared by the calls context's calling windows and the calendar
 * context's bookable hours).
 */

/** The first instant at which the wall clock in `zone` shows `hhmm` or later on the calendar day `day` (a UTC date). */
export function firstInstantAtWallTime(day: Date, hhmm: string, zone: string): number {
  const [hour, minute] = hhmm.split(':').map(Number) as [number, number];
  const wall = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), hour, minute);
  const offsetAt = (ms: number) => DateTime.fromMillis(ms, { zone }).offset * 60_000;
  const candidates = [...new Set([offsetAt(wall - 14 * 3_600_000), offsetAt(wall + 14 * 3_600_000)])].map((offset) => wall - offset);
  const valid = candidates.filter((t) => t + offsetAt(t) === wall);
  if (valid.length > 0) return Math.min(...valid);
  // A spring-forward gap: the wall time never shows. The window opens at the jump, between the two
  // candidates; find it by bisection (the instants are at most the gap apart, an hour or so).
  let lo = Math.min(...candidates);
  let hi = Math.max(...candidates);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (mid + offsetAt(mid) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}
