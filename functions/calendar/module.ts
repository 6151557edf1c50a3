import { defineModule } from '../jobs/index.ts';
import type { JobHandler } from '../jobs/index.ts';
import type { CalendarDeps } from './deps.ts';
import { supplierInvokeKind } from './kinds.ts';
import { settleHandler } from './settle-job.ts';
import { calendarTable } from './model.ts';
import { calendarQueues } from './queues.ts';
import { calendarContextRoutes } from './routes.ts';

export type { CalendarConfig, CalendarDeps } from './deps.ts';
export type { CalendarBatches, CalendarEventPublisher, CalendarEventType, CalendarPorts } from './ports.ts';

/**
 * The calendar context: tenants' calendars and the appointments an agent books during a call
 * (docs/appointments.md). It asks for batches' liveness and publishes appointment events through the ports
 * it declares (ports.ts), which the composition root wires.
 *
 * Its handler is the settle job (settle-job.ts, supplier.invoke). One hook point is left for the booking side:
 * - routes.ts `calendarContextRoutes`: `...toolRoutes(deps)` (tools-api.ts), the agent's tools (`auth:
 *   'none'`, signed as the intake is): functions/app/routes.ts serves a calendar route of `auth: 'none'`
 *   from the `calendarTools` function.
 */
export const calendarModule = defineModule({
  name: 'calendar',
  tables: { calendar: calendarTable },
  queues: calendarQueues,
  kinds: [supplierInvokeKind],
  handlers: (deps: CalendarDeps): JobHandler<unknown>[] => [
    settleHandler({ store: deps.bookings, provider: deps.provider, loadCalendar: (tenantId, calendarId) => deps.loadCalendar(tenantId, calendarId), wallClock: deps.wallClock, logger: deps.logger }) as JobHandler<unknown>,
  ],
  // The agent's tools join calendarContextRoutes (routes.ts): `...toolRoutes(deps)`.
  routes: (deps: () => CalendarDeps) => calendarContextRoutes(deps),
});
