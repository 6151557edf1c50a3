import type { QueueSpec } from '../jobs/index.ts';

/**
 * The webhooks context's job queues (data only: every Lambda's job client reads them, and functions/app/catalog.ts
 * lists them without importing the context's code).
 */
// Deliveries wait on customers' endpoints (up to the request timeout); fanout, wake-ups and the sweep are
// store round trips: separate queues, so a slow endpoint never holds a fanout back (docs/capacity.md).
// Batch size and concurrency here are the local host's; on AWS they come from the CDK context (lib/context.ts).
export const webhooksQueues = {
  /** webhook.deliver. */
  deliveries: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
  /** webhook.fanout, webhook.wake, webhook.sweep. */
  webhooks: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
} as const satisfies Record<string, QueueSpec>;
