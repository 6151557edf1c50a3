import type { QueueSpec } from '../jobs/index.ts';

/**
 * The mail context's job queues (data only: every Lambda's job client reads them, and functions/app/catalog.ts
 * lists them without importing the context's code).
 */
export const mailQueues = {
  /** owner.notify, access_request.approval_mail, owner.email_confirmation. */
  mail: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 2 },
} as const satisfies Record<string, QueueSpec>;
