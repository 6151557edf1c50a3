/**
 * The calls context (brief §4): call-result intake, classification, the dialer, the watchdog and batch
 * rounds. What the composition root (functions/ops/system.ts) takes from it.
 */
import type { JobHandler } from '../jobs/index.ts';
import type { CallsDeps } from './deps.ts';
import { dialHandler } from './dialer.ts';
import { finaliseHandler } from './finaliser.ts';
import { watchdogHandler } from './watchdog.ts';

export { callsRoutes } from './api.ts';
export { callsTable } from './model.ts';
export { callsKinds, dialKind, finaliseKind, watchdogKind } from './kinds.ts';
export { callsDeps } from './deps.ts';
export type { CallsDeps, TenantWriteHook, TenantWriteContribution } from './deps.ts';
export { CallsStore } from './store.ts';
export { callsConfigFromEnv } from './config.ts';
export type { CallsConfig } from './config.ts';

/** The calls queue's handlers. */
export const callsHandlers = (deps: CallsDeps): JobHandler<never>[] =>
  [dialHandler(deps), watchdogHandler(deps), finaliseHandler(deps)] as unknown as JobHandler<never>[];
