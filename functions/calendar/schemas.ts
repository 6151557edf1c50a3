import { IANAZone } from 'luxon';
import * as z from 'zod';
import { calendarIdSchema, GRID_MESSAGE } from '../platform/appointments.ts';
import { CELL_MINUTES } from './holds.ts';
import { WEEKDAYS } from './slots.ts';

export { appointmentsSchema, calendarIdSchema, MAX_BUFFER_MINUTES, MAX_DURATION_MINUTES } from '../platform/appointments.ts';
export type { AppointmentsSettings } from '../platform/appointments.ts';

/**
 * The calendar context's request and response schemas, validated at the edge (a 400 names the field and
 * nothing is written): `PUT/GET/DELETE /v1/calendars/{calendarId}` (settings-api.ts) use {@link calendarBody}
 * and {@link calendarResponse}. A batch's `appointments` is shared with the calls context, so its schema
 * lives in functions/platform/appointments.ts (re-exported here).
 */

export const calendarParams = z.object({ calendarId: calendarIdSchema });

const MINUTES = GRID_MESSAGE;
const TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;
const minutesOf = (hhmm: string): number => (hhmm === '24:00' ? 1440 : Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5)));

/** A wall time `HH:MM` (24 h) on the 5-minute grid; `24:00` is allowed as a range's end (midnight). */
const wallTime = (options: { endOfDay: boolean }) =>
  z
    .string()
    .refine((t) => TIME.test(t) || (options.endOfDay && t === '24:00'), { message: options.endOfDay ? 'expected HH:MM (24 h) or 24:00' : 'expected HH:MM (24 h)' })
    .refine((t) => !(TIME.test(t) || t === '24:00') || minutesOf(t) % CELL_MINUTES === 0, { message: MINUTES });

/** One bookable range `[start, end)`, e.g. `["09:00", "17:00"]`. Ranges across midnight are two ranges. */
const bookableRange = z
  .tuple([wallTime({ endOfDay: false }), wallTime({ endOfDay: true })])
  .refine(([start, end]) => minutesOf(end) > minutesOf(start), { message: 'a range ends after it starts (one across midnight is two ranges)', path: [1] });

const bookableDay = z
  .array(bookableRange)
  .max(12)
  .superRefine((ranges, ctx) => {
    for (let i = 1; i < ranges.length; i++) {
      if (minutesOf(ranges[i]![0]) < minutesOf(ranges[i - 1]![1])) ctx.addIssue({ code: 'custom', path: [i, 0], message: 'ranges are in order and do not overlap' });
    }
  });

/** `{mon: [["09:00","17:00"]], …}`: per weekday, ranges of the calendar zone's wall time; at least one range. */
export const bookableHoursSchema = z
  .strictObject(Object.fromEntries(WEEKDAYS.map((day) => [day, bookableDay.optional()])) as Record<(typeof WEEKDAYS)[number], z.ZodOptional<typeof bookableDay>>)
  .refine((hours) => Object.values(hours).some((ranges) => ranges && ranges.length > 0), { message: 'at least one bookable range' });
export type BookableHoursBody = z.infer<typeof bookableHoursSchema>;

const timezone = z.string().refine((zone) => IANAZone.isValidZone(zone), { message: 'not an IANA time zone (e.g. Europe/Berlin)' });

/** A Google OAuth client and a refresh token with calendar access. Stored encrypted; never returned. */
export const googleCredentialsSchema = z.strictObject({
  clientId: z.string().min(1).max(512),
  clientSecret: z.string().min(1).max(512),
  refreshToken: z.string().min(1).max(2048),
});

/**
 * `PUT /v1/calendars/{calendarId}`. `credentials` may be left out on an update (the stored ones stay);
 * the route refuses a new calendar without them. They are not checked against Google here: the first
 * availability request does. `providerCalendarId` (Google's id of the calendar: `primary`, or an address)
 * is returned by GET, unlike the credentials.
 */
export const calendarBody = z.strictObject({
  provider: z.enum(['google']),
  providerCalendarId: z.string().min(1).max(1024).default('primary'),
  credentials: googleCredentialsSchema.optional(),
  timezone,
  bookableHours: bookableHoursSchema,
});
export type CalendarBody = z.infer<typeof calendarBody>;

/** A calendar's settings as GET answers them: never its credentials, only whether some are stored. */
export const calendarResponse = z.strictObject({
  calendarId: z.string(),
  provider: z.enum(['google']),
  providerCalendarId: z.string(),
  timezone: z.string(),
  bookableHours: bookableHoursSchema,
  credentialsStored: z.boolean(),
  updatedAt: z.string(),
});
export type CalendarResponse = z.infer<typeof calendarResponse>;

/** What the store keeps of a calendar (credentials sealed, as endpoint secrets are). */
export interface StoredCalendar {
  calendarId: string;
  provider: 'google';
  providerCalendarId: string;
  timezone: string;
  bookableHours: BookableHoursBody;
  /** The sealed credentials, if any. */
  sealedCredentials?: string;
  updatedAt: string;
}

/** The GET view of a stored calendar, built field by field so that nothing sealed can leak into it. */
export function calendarView(stored: StoredCalendar): CalendarResponse {
  return {
    calendarId: stored.calendarId,
    provider: stored.provider,
    providerCalendarId: stored.providerCalendarId,
    timezone: stored.timezone,
    bookableHours: stored.bookableHours,
    credentialsStored: stored.sealedCredentials !== undefined,
    updatedAt: stored.updatedAt,
  };
}
