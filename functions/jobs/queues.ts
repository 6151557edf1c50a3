/**
 * A job queue: one SQS queue and one worker function each on AWS, one in-process queue each locally. The
 * contexts declare their queues (each module's `queues`); a job kind names its queue, and a queue's worker
 * runs every kind on it.
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

/**
 * A queue's visibility timeout as a multiple of its worker's timeout: AWS's advice for SQS event sources
 * (at least 6×), so a message is not handed to a second worker while the first may still run it. CDK
 * (lib/constructs/job-queue.ts) and the local host both use it.
 */
export const VISIBILITY_FACTOR = 6;

/** The lease a worker of a queue holds on a claimed job, in milliseconds. */
export const leaseMs = (spec: QueueSpec): number => (spec.timeoutSeconds + LEASE_MARGIN_SECONDS) * 1000;

/** The visibility timeout of a queue's messages, in seconds. */
export const visibilitySeconds = (spec: QueueSpec): number => VISIBILITY_FACTOR * spec.timeoutSeconds;
