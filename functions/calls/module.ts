import { withErrors } from '../platform/http.ts';
import { defineModule } from '../jobs/index.ts';
import { callsQueues } from './queues.ts';
import type { JobHandler } from '../jobs/index.ts';
import { callsHttpError, callsRoutes } from './api.ts';
import { keyRoutes } from './keys-api.ts';
import type { CallsDeps } from './deps.ts';
import { callsQueueHandlers } from './calls-queue.ts';
import { dialQueueHandlers } from './dial-queue.ts';
import { callsKinds } from './kinds.ts';
import { callsTable } from './model.ts';
import { importRoutes } from './imports/routes.ts';
import { controlRoutes } from './control/routes.ts';
import { suppressionRoutes } from './compliance/suppression-api.ts';

export type { CallsDeps } from './deps.ts';
export type { CallsPorts, CallsEventType, Contribution, EventPublisher, OwnerMail } from './ports.ts';

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
  routes: (deps: () => CallsDeps) => [...callsRoutes(deps), ...withErrors(callsHttpError, [...keyRoutes(deps), ...importRoutes(deps), ...controlRoutes(deps), ...suppressionRoutes(deps)])],
});
