import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';
import type { CallsConfig } from './config.ts';
import { BatchConfigCache } from './batch-config.ts';
import type { CallsStore } from './store.ts';

/**
 * What another context contributes to a tenant's PUT: items for the same TransactWriteItems and the jobs
 * among them (their wake-ups are sent after the commit). Mail adds the owner-email confirmation here.
 */
export interface TenantWriteContribution {
  items: TransactItem[];
  jobs: PreparedJob[];
}

/** A hook run on every tenant PUT before the write; its items commit with the tenant or not at all. */
export type TenantWriteHook = (input: { tenantId: string; concurrencyLimit: number; ownerEmail: string | undefined; now: number }) => Promise<TenantWriteContribution>;

/** What the calls context's handlers and routes draw on. */
export interface CallsDeps {
  store: CallsStore;
  jobs: JobClient;
  /** The webhooks table, where events are recorded (prepareEvent). */
  webhooksTable: string;
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
  /** Per-container cache of each batch's immutable settings (and a hint of its round). */
  batches: BatchConfigCache;
  /** Other contexts' contributions to a tenant's PUT (see {@link TenantWriteHook}). */
  tenantWriteHooks: readonly TenantWriteHook[];
}

/** Builds the calls deps; one cache per container. */
export function callsDeps(
  input: Omit<CallsDeps, 'batches' | 'tenantWriteHooks' | 'wallClock'> & { tenantWriteHooks?: readonly TenantWriteHook[]; wallClock?: Clock },
): CallsDeps {
  return { ...input, wallClock: input.wallClock ?? input.clock, batches: new BatchConfigCache(input.store), tenantWriteHooks: input.tenantWriteHooks ?? [] };
}
