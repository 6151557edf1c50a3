import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobClient } from '../jobs/index.ts';
import type { CallsConfig } from './config.ts';
import { BatchConfigCache } from './batch-config.ts';
import type { CallsPorts } from './ports.ts';
import type { CallsStore } from './store.ts';

/** What the calls context's handlers and routes draw on. */
export interface CallsDeps {
  store: CallsStore;
  jobs: JobClient;
  /** What calls asks of other contexts: events for tenants' endpoints, the owner's mail. */
  ports: CallsPorts;
  clock: Clock;
  /**
   * The outside world's time, for what outside parties stamp: a result's signature timestamp. The same
   * as `clock` except under the local runtime's scaled time (TIME_SCALE), where the AI handler still
   * signs with the wall clock.
   */
  wallClock: Clock;
  rng: Rng;
  logger: Logger;
  config: CallsConfig;
  /** Per-container cache of each batch's immutable settings. */
  batches: BatchConfigCache;
}

/** Builds the calls deps; one cache per container. */
export function callsDeps(input: Omit<CallsDeps, 'batches' | 'wallClock'> & { wallClock?: Clock }): CallsDeps {
  return { ...input, wallClock: input.wallClock ?? input.clock, batches: new BatchConfigCache(input.store) };
}
