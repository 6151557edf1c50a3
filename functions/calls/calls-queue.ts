import type { JobHandler } from '../jobs/index.ts';
import type { CallsDeps } from './deps.ts';
import { finaliseHandler } from './finaliser.ts';
import { watchdogHandler } from './watchdog.ts';
import { deferredWatchdogHandler } from './deferred-watchdog.ts';
import { importHandler } from './imports/job.ts';
import { pauseExpiryHandler, startHandler } from './control/jobs.ts';
import { suppressionImportHandler } from './compliance/suppression-import.ts';

// Each queue's handlers in a file of their own, so that a worker's entry imports its queue's code alone:
// the calls worker's bundle holds these jobs, not the dialer (docs/architecture.md, "Bundles").

/** The handlers of the `calls` queue (the calls worker's): the watchdogs, the finaliser, the import and control jobs, the suppression import. */
export const callsQueueHandlers = (deps: CallsDeps): JobHandler<unknown>[] =>
  [watchdogHandler(deps), deferredWatchdogHandler(deps), finaliseHandler(deps), importHandler(deps), startHandler(deps), pauseExpiryHandler(deps), suppressionImportHandler(deps)] as JobHandler<unknown>[];
