import { BookingStore } from '../../calendar/booking-store.ts';
import { GoogleCalendarProvider } from '../../calendar/google.ts';
import type { SystemHost } from '../host.ts';
import type { CalendarBooking } from './calendar.ts';

/**
 * The provider and the booking's store, for the functions that book (the calendar tools, the calendar
 * worker, the local host): apart from ./calendar.ts so the APIs, which serve only the settings routes,
 * bundle neither. The provider is built once per container (its access-token cache lives as long), on the
 * wall clock (deadlines and token lifetimes are real seconds, never TIME_SCALE's); where the host sets no
 * `calendar` URLs, it talks to Google. `calendar.bookingStore` and `calendar.wrapProvider` put another store
 * or a wrapper in their place (the fault simulation's planted bugs, sim/bugs-calendar.ts).
 */
export function calendarBooking(host: SystemHost): CalendarBooking {
  const { calendarBaseUrl, tokenUrl, wrapProvider, bookingStore } = host.calendar ?? {};
  const provider = new GoogleCalendarProvider({ clock: host.wallClock ?? host.clock, ...(calendarBaseUrl ? { calendarBaseUrl } : {}), ...(tokenUrl ? { tokenUrl } : {}) });
  return {
    provider: wrapProvider ? wrapProvider(provider) : provider,
    bookings: bookingStore ? bookingStore(host.db, host.tableNames.calendar) : new BookingStore(host.db, host.tableNames.calendar),
  };
}
