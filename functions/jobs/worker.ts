import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describeError } from './outcomes.ts';
import { wakeUpMessage } from './dispatch.ts';
import type { ExecutionResult, Executor } from './executor.ts';
import type { QueueName } from './queues.ts';
import type { Logger } from '../platform/logger.ts';

/** The SQS handler's result, with what each message led to (the local runtime and tests read `results`). */
export type WorkerResponse = SQSBatchResponse & { results?: ExecutionResult[] };

/**
 * The SQS worker entry point for one queue: it runs any set of kinds. Records run concurrently. A job's
 * failure is recorded by the executor and never thrown to SQS; only a failure to claim or record (an
 * infrastructure error) becomes a batch item failure, so SQS redelivers that one message and nothing else.
 * A malformed message is dropped: redelivery cannot mend it.
 */
export function createWorker(options: { queue: QueueName; executor: Executor; logger: Logger }) {
  const { queue, executor, logger } = options;
  const base = async (event: SQSEvent): Promise<WorkerResponse> => {
    const failures: { itemIdentifier: string }[] = [];
    const results: ExecutionResult[] = [];
    await Promise.all(
      event.Records.map(async (record) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(record.body);
        } catch {
          parsed = undefined;
        }
        const message = wakeUpMessage.safeParse(parsed);
        if (!message.success) {
          logger.error('malformed job message dropped', { messageId: record.messageId, body: record.body.slice(0, 200) });
          return;
        }
        try {
          results.push(await executor.execute(message.data, queue));
        } catch (error) {
          logger.error('job outcome not recorded; SQS will redeliver', { jobId: message.data.jobId, error: describeError(error) });
          failures.push({ itemIdentifier: record.messageId });
        }
      }),
    );
    return { batchItemFailures: failures, results };
  };
  return middy<SQSEvent, WorkerResponse>().handler(base);
}
