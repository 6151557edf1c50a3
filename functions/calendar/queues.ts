import type { QueueSpec } from '../jobs/index.ts';

/**
 * The calendar context's job queues (data only: every Lambda's job client reads them, and functions/app/catalog.ts
 * lists them without importing the context's code).
 */
export const calendarQueues = {
  /** supplier.invoke: waits on the calendar provider (a read, a delete, a token exchange), so it has a queue of its own. */
  calendar: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 2 },
} as const satisfies Record<string, QueueSpec>;
