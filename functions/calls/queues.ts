import type { QueueSpec } from '../jobs/index.ts';

/**
 * The calls context's job queues (data only: every Lambda's job client reads them, and functions/app/catalog.ts
 * lists them without importing the context's code).
 */
// Kinds that wait on the outside world never share a queue with quick ones (docs/capacity.md): a dial
// run waits on the placer for each of its calls; a watchdog or a finaliser is a few store round trips.
// Batch size and concurrency here are the local host's; on AWS they come from the CDK context (lib/context.ts).
export const callsQueues = {
  /** calls.dial. */
  dial: { timeoutSeconds: 60, batchSize: 1, maxConcurrency: 5 },
  /** calls.watchdog, calls.finalise. */
  calls: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
} as const satisfies Record<string, QueueSpec>;
