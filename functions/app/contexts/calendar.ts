import type { BookingStore } from '../../calendar/booking-store.ts';
import { CalendarCredentials } from '../../calendar/credentials.ts';
import type { CalendarDeps, CalendarEventPublisher, CalendarPorts } from '../../calendar/module.ts';
import type { CalendarProvider } from '../../calendar/port.ts';
import { calendarLoader, CalendarSettingsStore } from '../../calendar/settings-store.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import type { SystemHost } from '../host.ts';

/** What only the functions that book (the tools, the settle worker) build: the provider and the booking's store. */
export interface CalendarBooking {
  provider: CalendarProvider;
  bookings: BookingStore;
}

/**
 * The calendar context over a host, its ports given (functions/app/wiring.ts wires them to the calls and
 * webhooks contexts; a worker wires what its kinds use). `booking` builds the provider and the booking's
 * store (./calendar-booking.ts), once, on first use: the functions that serve only the settings routes
 * (the APIs) pass none and bundle neither; asking one of them for the provider is a wiring error.
 */
export function buildCalendar(host: SystemHost, ports: CalendarPorts, booking?: (host: SystemHost) => CalendarBooking): CalendarDeps {
  const wallClock = host.wallClock ?? host.clock;
  const settings = new CalendarSettingsStore(host.db, host.tableNames.calendar);
  const credentials = host.secretKey ? new CalendarCredentials(host.secretKey, wallClock) : undefined;
  let built: CalendarBooking | undefined;
  const booked = (): CalendarBooking => {
    if (!booking) throw new Error('this function does not book appointments: it has no calendar provider (functions/app/contexts/calendar-booking.ts)');
    return (built ??= booking(host));
  };
  return {
    settings,
    credentials,
    loadCalendar: calendarLoader(settings, credentials),
    get provider() {
      return booked().provider;
    },
    get bookings() {
      return booked().bookings;
    },
    db: host.db,
    table: host.tableNames.calendar,
    jobs: host.jobs.client,
    ports,
    clock: host.clock,
    wallClock,
    rng: host.rng,
    logger: host.logger,
    metrics: host.metrics,
    toolsSecret: host.calendar?.toolsSecret,
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
