import { defineModule } from '../jobs/index.ts';
import { callsQueues } from './queues.ts';
import type { JobHandler } from '../jobs/index.ts';
import type { CallsDeps } from './deps.ts';
import { callsQueueHandlers } from './calls-queue.ts';
import { dialQueueHandlers } from './dial-queue.ts';
import { callsContextRoutes } from './routes.ts';
import { callsKinds } from './kinds.ts';
import { callsTable } from './model.ts';

export type { CallsDeps } from './deps.ts';
export type { AppointmentCalendars, CallsPorts, CallsEventType, Contribution, EventPublisher, OwnerMail } from './ports.ts';

/**
 * The calls context: tenants, their API keys and batches, the signed call-result intake with its classification, the
 * dialer, the watchdog and batch rounds. It announces events and asks for the owner's mail through the
 * ports it declares (ports.ts), which the composition root wires.
 */
export const callsModule = defineModule({
  name: 'calls',
  tables: { calls: callsTable },
  queues: callsQueues,
  kinds: callsKinds,
  handlers: (deps: CallsDeps): JobHandler<unknown>[] => [...dialQueueHandlers(deps), ...callsQueueHandlers(deps)],
  routes: (deps: () => CallsDeps) => callsContextRoutes(deps),
});
