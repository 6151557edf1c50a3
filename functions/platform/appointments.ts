import * as z from 'zod';

/**
 * A batch's `appointments` settings: which of the tenant's calendars its agent books into, and how. Shared
 * vocabulary of two contexts, so it lives here: the calls context keeps it on the batch (the batch body's
 * schema, functions/calls/schemas.ts) and the calendar context reads it to offer and hold slots
 * (functions/calendar/schemas.ts re-exports it). Neither context may import the other (the structure gate).
 */

/** The hold grid's cell, in minutes (functions/calendar/holds.ts `CELL_MINUTES` is this). Durations, buffers and bookable hours are multiples of it. */
export const APPOINTMENT_GRID_MINUTES = 5;

/** The longest appointment and buffer: with both buffers, 360 minutes, 72 cells, within holds.ts' `MAX_CELLS_PER_HOLD` (80). */
export const MAX_DURATION_MINUTES = 240;
export const MAX_BUFFER_MINUTES = 60;

/** The message of a duration off the grid. */
export const GRID_MESSAGE = `minutes must be a multiple of ${APPOINTMENT_GRID_MINUTES} (the hold grid: functions/calendar/holds.ts)`;

/** Calendar ids tenants choose: short, URL- and key-safe (as the calls context's ids). */
export const calendarIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected 1–64 of A–Z, a–z, 0–9, _ and -');

/**
 * A batch's `appointments`. Durations and buffers are on the 5-minute hold grid, and short enough that a
 * booking with both buffers fits one transaction.
 */
export const appointmentsSchema = z.strictObject({
  calendarId: calendarIdSchema.describe('one of your calendars (`PUT /v1/calendars/{calendarId}`)'),
  durationMinutes: z.number().int().min(APPOINTMENT_GRID_MINUTES).max(MAX_DURATION_MINUTES).multipleOf(APPOINTMENT_GRID_MINUTES, GRID_MESSAGE),
  bufferMinutes: z.number().int().min(0).max(MAX_BUFFER_MINUTES).multipleOf(APPOINTMENT_GRID_MINUTES, GRID_MESSAGE).default(0),
  maxDaysAhead: z.number().int().min(1).max(90).default(14),
});
export type AppointmentsSettings = z.infer<typeof appointmentsSchema>;
