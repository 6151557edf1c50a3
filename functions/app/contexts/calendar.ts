import { BookingStore } from '../../calendar/booking-store.ts';
import { CalendarCredentials } from '../../calendar/credentials.ts';
import type { CalendarDeps, CalendarEventPublisher, CalendarPorts } from '../../calendar/module.ts';
import { GoogleCalendarProvider } from '../../calendar/google.ts';
import { calendarLoader, CalendarSettingsStore } from '../../calendar/settings-store.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import type { SystemHost } from '../host.ts';

/**
 * The calendar context over a host, its ports given (functions/app/system.ts wires them to the calls and
 * webhooks contexts; a worker wires what its kinds use). The provider is built here, once per container:
 * its access-token cache lives as long as the container. Its clock is the wall clock (deadlines and token
 * lifetimes are real seconds, never TIME_SCALE's); where the host sets no `calendar` URLs, it talks to Google.
 */
export function buildCalendar(host: SystemHost, ports: CalendarPorts): CalendarDeps {
  const wallClock = host.wallClock ?? host.clock;
  const settings = new CalendarSettingsStore(host.db, host.tableNames.calendar);
  const credentials = host.secretKey ? new CalendarCredentials(host.secretKey, wallClock) : undefined;
  const { toolsSecret, calendarBaseUrl, tokenUrl } = host.calendar ?? {};
  return {
    settings,
    credentials,
    loadCalendar: calendarLoader(settings, credentials),
    provider: new GoogleCalendarProvider({ clock: wallClock, ...(calendarBaseUrl ? { calendarBaseUrl } : {}), ...(tokenUrl ? { tokenUrl } : {}) }),
    bookings: new BookingStore(host.db, host.tableNames.calendar),
    db: host.db,
    table: host.tableNames.calendar,
    jobs: host.jobs.client,
    ports,
    clock: host.clock,
    wallClock,
    rng: host.rng,
    logger: host.logger,
    metrics: host.metrics,
    toolsSecret,
  };
}

/** The calendar context's events, published through the webhooks context's publisher (asked for on the first event). */
export function calendarEvents(publisher: () => Publisher): CalendarEventPublisher {
  return {
    prepare: async (input, now) => {
      const published = await publisher().prepare(input, now);
      return { eventId: published.event.id, items: published.items, jobs: [], afterCommit: () => published.afterCommit(), abandon: () => published.abandon() };
    },
  };
}

/** The batches port of a function that serves no calendar settings route (a worker): asking is a wiring error. */
export const noBatchLookups: CalendarPorts['batches'] = {
  live: () => Promise.reject(new Error('this function does not look up batches for calendars (only the API functions serve DELETE /v1/calendars/{calendarId})')),
};
