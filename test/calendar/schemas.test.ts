import { describe, expect, it } from 'vitest';
import { MAX_CELLS_PER_HOLD, holdCells } from '../../functions/calendar/holds.ts';
import { MAX_BUFFER_MINUTES, MAX_DURATION_MINUTES, appointmentsSchema, calendarBody, calendarResponse, calendarView } from '../../functions/calendar/schemas.ts';

const valid = {
  provider: 'google',
  timezone: 'America/New_York',
  bookableHours: { mon: [['09:00', '12:00'], ['13:00', '17:00']], fri: [['09:00', '24:00']] },
  credentials: { clientId: 'client.apps.googleusercontent.com', clientSecret: 'GOCSPX-secret', refreshToken: '1//refresh' },
};
/** The field paths and messages of a refused body. */
const issues = (result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) =>
  result.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];

describe('calendar settings', () => {
  it('TakesAGoogleCalendarWithItsHoursAndDefaultsToThePrimaryCalendar', () => {
    const parsed = calendarBody.parse(valid);
    expect(parsed.providerCalendarId).toBe('primary');
    expect(parsed.bookableHours.fri).toEqual([['09:00', '24:00']]);
    expect(calendarBody.safeParse({ ...valid, credentials: undefined }).success).toBe(true); // an update may keep the stored ones
  });

  it('RefusesBadHoursWithTheFieldPath', () => {
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { mon: [['09:00', '12:00'], ['11:00', '13:00']] } }))).toEqual(['bookableHours.mon.1.0: ranges are in order and do not overlap']);
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { mon: [['17:00', '09:00']] } }))).toEqual([
      'bookableHours.mon.0.1: a range ends after it starts (one across midnight is two ranges)',
    ]);
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { mon: [['09:07', '12:00']] } }))).toEqual([
      'bookableHours.mon.0.0: minutes must be a multiple of 5 (the hold grid: functions/calendar/holds.ts)',
    ]);
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { mon: [['24:00', '24:00']] } }))[0]).toBe('bookableHours.mon.0.0: expected HH:MM (24 h)');
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { monday: [['09:00', '12:00']] } }))[0]).toMatch(/^bookableHours: Unrecognized key/);
    expect(issues(calendarBody.safeParse({ ...valid, bookableHours: { mon: [] } }))).toEqual(['bookableHours: at least one bookable range']);
  });

  it('RefusesAnUnknownZoneProviderOrFieldAndIncompleteCredentials', () => {
    expect(issues(calendarBody.safeParse({ ...valid, timezone: 'Mars/Olympus' }))).toEqual(['timezone: not an IANA time zone (e.g. Europe/Berlin)']);
    expect(issues(calendarBody.safeParse({ ...valid, provider: 'outlook' }))[0]).toMatch(/^provider:/);
    expect(issues(calendarBody.safeParse({ ...valid, tenantId: 't_other' }))[0]).toMatch(/Unrecognized key/);
    expect(issues(calendarBody.safeParse({ ...valid, credentials: { clientId: 'c', clientSecret: 's' } }))[0]).toMatch(/^credentials.refreshToken:/);
  });

  it('NeverReturnsTheCredentials', () => {
    const stored = {
      calendarId: 'sales',
      provider: 'google' as const,
      providerCalendarId: 'primary',
      timezone: 'America/New_York',
      bookableHours: calendarBody.parse(valid).bookableHours,
      sealedCredentials: 'v1.sealed.GOCSPX-secret.1//refresh',
      updatedAt: '2026-03-02T14:00:00Z',
    };
    const view = calendarView(stored);
    expect(view.credentialsStored).toBe(true);
    expect(JSON.stringify(view)).not.toContain('sealed');
    expect(JSON.stringify(view)).not.toContain('GOCSPX');
    expect(calendarResponse.safeParse(view).success).toBe(true);
    // The response schema is strict: a view that carried credentials would not pass it.
    expect(calendarResponse.safeParse({ ...view, credentials: valid.credentials }).success).toBe(false);
    expect(calendarView({ ...stored, sealedCredentials: undefined }).credentialsStored).toBe(false);
  });
});

describe("a batch's appointments", () => {
  it('DefaultsTheBufferAndTheDaysAhead', () => {
    expect(appointmentsSchema.parse({ calendarId: 'sales', durationMinutes: 30 })).toEqual({ calendarId: 'sales', durationMinutes: 30, bufferMinutes: 0, maxDaysAhead: 14 });
  });

  it('KeepsDurationsAndBuffersOnTheGridAndWithinOneTransaction', () => {
    expect(issues(appointmentsSchema.safeParse({ calendarId: 'sales', durationMinutes: 25, bufferMinutes: 7 }))).toEqual([
      'bufferMinutes: minutes must be a multiple of 5 (the hold grid: functions/calendar/holds.ts)',
    ]);
    const longest = appointmentsSchema.parse({ calendarId: 'sales', durationMinutes: MAX_DURATION_MINUTES, bufferMinutes: MAX_BUFFER_MINUTES });
    const start = Date.parse('2026-03-02T09:03:00Z'); // even off the grid, the longest booking fits one transaction
    expect(holdCells(start, start + longest.durationMinutes * 60_000, longest.bufferMinutes * 60_000).length).toBeLessThanOrEqual(MAX_CELLS_PER_HOLD);
    expect(issues(appointmentsSchema.safeParse({ calendarId: 'sales', durationMinutes: 240, bufferMinutes: 65 }))[0]).toMatch(/^bufferMinutes:/);
    expect(issues(appointmentsSchema.safeParse({ calendarId: 'sales', durationMinutes: 0 }))[0]).toMatch(/^durationMinutes:/);
    expect(issues(appointmentsSchema.safeParse({ calendarId: 'sales', durationMinutes: 30, maxDaysAhead: 0 }))[0]).toMatch(/^maxDaysAhead:/);
    expect(issues(appointmentsSchema.safeParse({ calendarId: 'no spaces', durationMinutes: 30 }))[0]).toMatch(/^calendarId:/);
  });
});
