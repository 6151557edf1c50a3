import { randomBytes } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobClient } from '../jobs/index.ts';
import type { CallsConfig } from './config.ts';
import { BatchConfigCache } from './batch-config.ts';
import { ApiKeys } from './keys.ts';
import type { CallsPorts } from './ports.ts';
import type { CallsStore } from './store.ts';
import type { UploadStore } from './imports/uploads.ts';

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
  /** Tenants' API keys: the tenant routes' key check, with its per-container cache (keys.ts). */
  keys: ApiKeys;
  /** Where large contacts files are uploaded (S3 on AWS, a folder locally); absent: the upload routes answer 503. */
  uploads?: UploadStore | undefined;
  /** Cryptographically random bytes (API keys). */
  secureRandom: (bytes: number) => Buffer;
}

/** Builds the calls deps; one cache of batch settings and one of API keys per container. */
export function callsDeps(input: Omit<CallsDeps, 'batches' | 'wallClock' | 'keys' | 'secureRandom'> & { wallClock?: Clock; secureRandom?: (bytes: number) => Buffer }): CallsDeps {
  return {
    ...input,
    wallClock: input.wallClock ?? input.clock,
    batches: new BatchConfigCache(input.store),
    keys: new ApiKeys({ store: input.store, clock: input.clock, logger: input.logger }),
    secureRandom: input.secureRandom ?? randomBytes,
  };
}
