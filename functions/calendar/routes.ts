import { unavailable, withErrors } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { BookingDeps } from './booking-deps.ts';
import type { CalendarDeps } from './deps.ts';
import { calendarHttpError, settingsRoutes } from './settings-api.ts';
import { toolRoutes } from './tools-api.ts';

/**
 * What the agent's tools draw on, from the context's deps: the calls context's answers come through
 * `ports.calls`, which only the functions serving the tools are given (calendarTools, the local host);
 * elsewhere a tool request is answered 503 and nothing is read.
 */
export function bookingDepsOf(deps: CalendarDeps): BookingDeps {
  const calls = deps.ports.calls;
  if (!calls) throw unavailable('this function does not serve the agent’s calendar tools');
  return {
    store: deps.bookings,
    provider: deps.provider,
    loadCalendar: (tenantId, calendarId) => deps.loadCalendar(tenantId, calendarId),
    batchBooking: calls.batchBooking,
    liveness: calls.liveness,
    verifySignature: calls.verifySignature,
    jobs: deps.jobs,
    events: deps.ports.events,
    clock: deps.clock,
    wallClock: deps.wallClock,
    rng: deps.rng,
    logger: deps.logger,
  };
}

/**
 * Every route of the calendar context (the module's `routes`). A file of its own, apart from the job
 * handlers that module.ts also lists, so that the functions serving routes bundle no job's code.
 */
export const calendarContextRoutes = (deps: () => CalendarDeps): ApiRoute[] => {
  let booking: BookingDeps | undefined;
  return [...withErrors(calendarHttpError, [...settingsRoutes(deps), ...toolRoutes(() => (booking ??= bookingDepsOf(deps())))])];
};
