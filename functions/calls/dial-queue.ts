import type { JobHandler } from '../jobs/index.ts';
import type { CallsDeps } from './deps.ts';
import { dialHandler } from './dialer.ts';

// Each queue's handlers in a file of their own, so that a worker's entry imports its queue's code alone:
// the dial worker's bundle holds the dialer, not the import jobs and csv-parse (docs/architecture.md, "Bundles").

/** The handlers of the `dial` queue (the dial worker's): calls.dial. */
export const dialQueueHandlers = (deps: CallsDeps): JobHandler<unknown>[] => [dialHandler(deps)] as JobHandler<unknown>[];
