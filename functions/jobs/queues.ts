/**
 * The job queues: one SQS queue and one worker function each on AWS, one in-process queue each locally.
 * A job kind names its queue; a queue's worker runs every kind on it.
 */
export interface QueueSpec {
  /** The worker function's timeout. A claim's lease is this plus {@link LEASE_MARGIN_SECONDS}. */
  timeoutSeconds: number;
  /** Messages per worker invocation (SQS batch size, at most 10). */
  batchSize: number;
  /** Worker invocations at once (SQS event source maximum concurrency, at least 2). */
  maxConcurrency: number;
}

/** Clock skew allowance added to a worker's timeout to form its lease. */
export const LEASE_MARGIN_SECONDS = 5;

export const queues = {
  /** Ops' own kinds (ops.probe). */
  ops: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 2 },
  /** calls.dial, calls.watchdog, calls.finalise. */
  calls: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
  /** webhook.fanout, webhook.deliver. */
  webhooks: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 5 },
  /** owner.notify, access_request.approval_mail, owner.email_confirmation. */
  mail: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 2 },
} as const satisfies Record<string, QueueSpec>;

export type QueueName = keyof typeof queues;

export const queueNames = Object.keys(queues) as QueueName[];

/** The lease a worker of `queue` holds on a claimed job, in milliseconds. */
export const leaseMs = (queue: QueueName): number => (queues[queue].timeoutSeconds + LEASE_MARGIN_SECONDS) * 1000;
