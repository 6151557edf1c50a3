import { withErrors } from '../platform/http.ts';
import { defineModule } from '../jobs/index.ts';
import type { JobHandler } from '../jobs/index.ts';
import { callsHttpError, callsRoutes } from './api.ts';
import { keyRoutes } from './keys-api.ts';
import type { CallsDeps } from './deps.ts';
import { dialHandler } from './dialer.ts';
import { finaliseHandler } from './finaliser.ts';
import { callsKinds } from './kinds.ts';
import { callsTable } from './model.ts';
import { watchdogHandler } from './watchdog.ts';

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
  // Kinds that wait on the outside world never share a queue with quick ones (docs/capacity.md): a dial
  // run waits on the placer for each of its calls; a watchdog or a finaliser is a few store round trips.
  // Batch size and concurrency here are the local host's; on AWS they come from the CDK context (lib/context.ts).
  queues: {
    /** calls.dial. */
    dial: { timeoutSeconds: 60, batchSize: 1, maxConcurrency: 5 },
    /** calls.watchdog, calls.finalise. */
    calls: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
  },
  kinds: callsKinds,
  handlers: (deps: CallsDeps): JobHandler<unknown>[] => [dialHandler(deps), watchdogHandler(deps), finaliseHandler(deps)] as JobHandler<unknown>[],
  routes: (deps: () => CallsDeps) => [...callsRoutes(deps), ...withErrors(callsHttpError, keyRoutes(deps))],
});
