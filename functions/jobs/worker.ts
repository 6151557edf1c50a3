import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Logger } from '../platform/logger.ts';
import { workerScope } from './counts.ts';
import type { CountStore } from './counts.ts';
import { wakeUpMessage } from './dispatch.ts';
import type { WakeUpMessage } from './dispatch.ts';
import type { ExecutionResult, Executor } from './executor.ts';
import { describeError } from './outcomes.ts';

/** Runs each record's execution, for a host that measures records one by one (the capacity benchmark's recorder). */
export type RecordHook = (job: WakeUpMessage, run: () => Promise<ExecutionResult>) => Promise<ExecutionResult>;

/** The SQS handler's result, with what each message led to (the local host and tests read `results`). */
export type WorkerResponse = SQSBatchResponse & { results?: ExecutionResult[] };

/**
 * The SQS worker entry point for one queue, in Powertools' partial-batch convention: each record is run
 * by the record handler, in parallel; a record whose handler throws becomes a batch item failure, so SQS
 * redelivers that one message and nothing else. The record handler throws only when a job's outcome could
 * not be claimed or recorded (an infrastructure error; the claim makes the redelivery safe): a job's own
 * failure is recorded by the executor and never thrown. A malformed message is dropped: redelivery cannot
 * mend it. A batch whose every record failed is answered like any other (no FullBatchFailureError): SQS
 * redelivers the failed items either way. The batch is one scope of the job counts: what its records
 * change is added to the counters once, when the batch ends.
 */
export function createWorker(options: { executor: Executor; counts: CountStore; logger: Logger; aroundRecord?: RecordHook; queue: string }) {
  const { executor, counts, logger } = options;
  const around: RecordHook = options.aroundRecord ?? ((_job, run) => run());
  return middy<SQSEvent, WorkerResponse>().handler(async (event) => {
    const results: ExecutionResult[] = [];
    const runRecord = async (record: SQSRecord): Promise<void> => {
      const message = wakeUpMessage.safeParse(parseJson(record.body));
      if (!message.success) {
        logger.error('malformed job message dropped', { messageId: record.messageId, body: record.body.slice(0, 200) });
        return;
      }
      try {
        results.push(await around(message.data, () => executor.execute(message.data)));
      } catch (error) {
        logger.error('job outcome not recorded; SQS will redeliver', { jobId: message.data.jobId, error: describeError(error) });
        throw error;
      }
    };
    // A processor per invocation: it holds the batch's records, and the local host runs batches concurrently.
    const processor = new BatchProcessor(EventType.SQS, { logger });
    const response = await counts.within(() => processPartialResponse(event, runRecord, processor, { throwOnFullBatchFailure: false }), workerScope(options.queue));
    return { ...response, results };
  });
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};
