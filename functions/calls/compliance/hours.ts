import { DateTime } from 'luxon';
import { firstInstantAtWallTime } from '../window.ts';
import type { CallingWindow } from '../window.ts';

/**
 * A calling window evaluated in several zones at once: open only while it is open in every one. This is
 * `nextWindowOpening` (functions/calls/window.ts) generalised; one zone gives exactly its answer, with the
 * same DST handling (each day's opening and closing are instants computed in the zone, so 09:00 stays
 * 09:00 local across a clock change; a start in a spring-forward gap opens at the jump; one in the
 * repeated hour opens at the first). Weekdays are each zone's own: Monday in Tokyo is not Monday in Los
 * Angeles.
 *
 * ```
 *   zone A   ····[=======A=======)··············[=======A=======)······
 *   zone B   ·········[=======B=======)··············[=======B=======)·
 *   all      ·········[===========)··················[===========)······
 *                     ▲ next opening: the latest of the openings, if it comes before the earliest closing
 * ```
 *
 * Windows in different zones may never overlap (09:00–17:00 in Kaliningrad and in Kamchatka: 11 hours
 * apart, an 8-hour window). Offsets repeat yearly, so when no common instant comes within
 * {@link NEVER_HORIZON_MS} (a year and five weeks: every DST period and weekday of a year, and the week
 * after), there is none: the answer is null.
 */
export type WindowHours = Pick<CallingWindow, 'start' | 'end' | 'weekdays'>;

const DAY_MS = 86_400_000;

/** How far ahead a common opening is looked for before the answer is "never". */
export const NEVER_HORIZON_MS = 400 * DAY_MS;

/** An interval [open, close) of epoch ms. */
export type Interval = readonly [open: number, close: number];

/**
 * The window's open intervals in one zone, in order: first the one that contains `fromMs` or follows it,
 * then each later one, up to `untilMs` (an interval that opens after it is not given).
 */
export function* openIntervals(window: WindowHours, zone: string, fromMs: number, untilMs: number): Generator<Interval, void, undefined> {
  const today = DateTime.fromMillis(fromMs, { zone });
  for (let offset = 0; ; offset++) {
    const day = new Date(Date.UTC(today.year, today.month - 1, today.day + offset));
    const weekday = day.getUTCDay() === 0 ? 7 : day.getUTCDay();
    if (!window.weekdays.includes(weekday)) {
      if (day.getTime() - 2 * DAY_MS > untilMs) return;
      continue;
    }
    const open = firstInstantAtWallTime(day, window.start, zone);
    if (open > untilMs) return;
    const close = firstInstantAtWallTime(day, window.end, zone);
    // A window inside a spring-forward gap (02:00–02:30 on the day 02:00 is skipped) is empty that day.
    if (close <= fromMs || close <= open) continue;
    yield [open, close];
  }
}

/** Whether the window is open at `nowMs` in every one of `zones`. */
export function windowOpenFor(window: WindowHours, zones: readonly string[], nowMs: number): boolean {
  return nextOpeningFor(window, zones, nowMs, nowMs) === nowMs;
}

/**
 * The earliest instant at or after `nowMs` at which the window is open in every one of `zones`: `nowMs`
 * itself when it is open now, null when it never is (no common instant within {@link NEVER_HORIZON_MS}, or
 * before `untilMs` when given).
 *
 * @example
 * const hours = { start: '09:00', end: '17:00', weekdays: [1, 2, 3, 4, 5] };
 * nextOpeningFor(hours, ['America/New_York', 'America/Los_Angeles'], Date.parse('2026-06-01T12:00:00Z'));
 * // → Date.parse('2026-06-01T16:00:00Z') (09:00 in Los Angeles; New York is open until 21:00Z)
 * nextOpeningFor(hours, ['Europe/Kaliningrad', 'Asia/Kamchatka'], Date.parse('2026-06-01T12:00:00Z'));
 * // → null
 */
export function nextOpeningFor(window: WindowHours, zones: readonly string[], nowMs: number, untilMs = nowMs + NEVER_HORIZON_MS): number | null {
  if (zones.length === 0) throw new RangeError('a calling window needs at least one zone');
  const streams = zones.map((zone) => openIntervals(window, zone, nowMs, untilMs));
  const pull = (stream: Iterator<Interval, void>): Interval | undefined => {
    const step = stream.next();
    return step.done ? undefined : step.value;
  };
  const current = streams.map(pull);
  let t = nowMs;
  while (true) {
    let latestOpen = t;
    let earliestClose = Infinity;
    for (let i = 0; i < streams.length; i++) {
      let interval = current[i];
      while (interval !== undefined && interval[1] <= t) interval = pull(streams[i]!);
      current[i] = interval;
      if (interval === undefined) return null; // this zone does not open again before untilMs
      latestOpen = Math.max(latestOpen, interval[0]);
      earliestClose = Math.min(earliestClose, interval[1]);
    }
    if (latestOpen < earliestClose) return latestOpen <= untilMs ? latestOpen : null;
    // No common instant before earliestClose: move past it (the zone that closes first moves on).
    t = latestOpen;
    if (t > untilMs) return null;
  }
}
