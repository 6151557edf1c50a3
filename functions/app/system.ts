import { assertNever } from '../platform/assert.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { JobHandler } from '../jobs/index.ts';
import { calendarModule } from '../calendar/module.ts';
import { callsModule } from '../calls/module.ts';
import { mailModule } from '../mail/module.ts';
import { opsModule } from '../ops/module.ts';
import { webhooksModule } from '../webhooks/module.ts';
import type { QueueName } from './catalog.ts';
import { apiRoutes } from './routes.ts';
import { calendarBooking } from './contexts/calendar-booking.ts';
import { callToolsPort } from './contexts/calendar-calls.ts';
import type { CallToolsPort } from '../calendar/ports.ts';
import type { CalendarBooking } from './contexts/calendar.ts';
import type { SystemHost } from './host.ts';
import { Contexts } from './wiring.ts';

/**
 * The composition root: redial's contexts, assembled once, with their job handlers and routes. The local
 * host, the simulation and the benches build a {@link System} over their host and take what they serve
 * from it; a context is built the first time something asks for it, so a worker
 * builds only its queue's contexts and listing the routes builds none. A Lambda entry point
 * (functions/app/lambda) takes only its part: the API functions {@link Contexts} and ./routes.ts (no job's
 * code), a worker its queue's handlers (docs/architecture.md, "Bundles").
 */

/** Every context, in the order the policy table lists them. */
export const modules = [mailModule, webhooksModule, callsModule, opsModule, calendarModule] as const;

export { allKinds, queueNames, queues, tableEnvName, tableNamesFromEnv, tables } from './catalog.ts';
export type { QueueName, TableKey, TableNames } from './catalog.ts';
export type { SystemHost } from './host.ts';
export { apiDocument, httpFunctionsByRoute, routesServedBy } from './routes.ts';
export type { HttpFunction } from './routes.ts';

type ModuleName = (typeof modules)[number]['name'];

/** Redial assembled over one host. Contexts are built on first use, once. */
export class System extends Contexts {
  /** The handlers of one queue's kinds: only the context that owns the queue is built. */
  handlers(queue: QueueName): JobHandler<unknown>[] {
    const owner = modules.find((m) => queue in m.queues);
    if (!owner) throw new Error(`no context owns queue ${queue}`);
    return this.handlersOf(owner.name).filter((h) => h.kind.queue === queue);
  }

  /** The calendar context books here (its settle job runs): the provider and the booking's store. */
  protected override calendarBooking(): (host: SystemHost) => CalendarBooking {
    return calendarBooking;
  }

  /** The agent's tools are served here (the local host): the calls context answers them. */
  protected override calendarCalls(): CallToolsPort {
    return callToolsPort(this.host, this.host.calendar?.toolsSecret);
  }

  /** Every handler of every context (the rescuer's: their policies price lost attempts, their hooks run on its discards). */
  allHandlers(): JobHandler<unknown>[] {
    return modules.flatMap((m) => [...this.handlersOf(m.name)]);
  }

  /**
   * Every route of the API (docs/openapi.json), the OpenAPI route itself included, each tenant route
   * followed by its operator copy (`/v1/ops/tenants/{tenantId}/…`). Builds nothing.
   */
  routes(): ApiRoute[] {
    return apiRoutes(this);
  }

  private handlersOf(name: ModuleName): readonly JobHandler<unknown>[] {
    switch (name) {
      default:
        return assertNever(name);
      case 'calls':
        return callsModule.handlers(this.calls);
      case 'mail':
        return mailModule.handlers(this.mail);
      case 'webhooks':
        return webhooksModule.handlers(this.webhooks);
      case 'ops':
        return opsModule.handlers(this.ops);
      case 'calendar':
        return calendarModule.handlers(this.calendar);
    }
  }
}
