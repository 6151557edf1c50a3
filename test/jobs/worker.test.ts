import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';
import { jobsFixture, RecordingTransport } from '../support/jobs.ts';
import { testKinds, testQueue } from './kinds.ts';

const sqsEvent = (bodies: string[]): SQSEvent => ({
  Records: bodies.map((body, i) => ({
    messageId: `m-${i}`,
    receiptHandle: `r-${i}`,
    body,
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'x', ApproximateFirstReceiveTimestamp: '0' },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:redial-ops',
    awsRegion: 'eu-west-1',
  })),
});

describe('the SQS worker entry point', () => {
  it('RecordsJobFailuresAndNeverThrowsThemToSqs', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const ok = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    const failing = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 3 });
    const gone = await fx.jobs.client.enqueue(kinds.pickyKind, { status: 410 });
    const worker = fx.jobs.worker('ops', kinds.handlers);

    const response = await worker(
      sqsEvent([
        JSON.stringify({ jobId: ok.id, seq: 1 }),
        JSON.stringify({ jobId: failing.id, seq: 1 }),
        JSON.stringify({ jobId: gone.id, seq: 1 }),
        'not json at all',
        JSON.stringify({ jobId: ok.id, seq: 1 }), // a duplicate in the same batch
      ]),
      {} as never,
    );
    expect(response.batchItemFailures).toEqual([]);
    expect(response.results?.map((r) => r.result).sort()).toEqual(['completed', 'discarded', 'dropped', 'retryable']);
    expect((await fx.jobs.store.mustGet(failing.id)).state).toBe('retryable');
  });

  it('ReportsOnlyAFailureToRecordAsABatchItemFailure', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    // Same DynamoDB, but a table that is not there: every claim is an infrastructure error.
    const broken = createJobRuntime({
      db: fx.clients.dynamo,
      jobsTable: 'no-such-table',
      queues: { ops: testQueue },
      transport: new RecordingTransport(),
      clock: new ManualClock(),
      rng: seededRng(1),
      logger: createLogger('test'),
      metrics: new MemoryMetrics(),
    });
    const worker = broken.worker('ops', kinds.handlers);
    const response = await worker(sqsEvent([JSON.stringify({ jobId: id, seq: 1 }), 'garbage']), {} as never);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-0' }]);
    // Redelivered to a healthy worker, the message runs the job once.
    const healthy = fx.jobs.worker('ops', kinds.handlers);
    const retried = await healthy(sqsEvent([JSON.stringify({ jobId: id, seq: 1 })]), {} as never);
    expect(retried.batchItemFailures).toEqual([]);
    expect(kinds.runsOf(id)).toHaveLength(1);
  });

  it('RefusesAKindThatBelongsToAnotherQueue', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture();
    const foreign = { ...kinds.handlers[0]!, kind: { ...kinds.handlers[0]!.kind, queue: 'calls' } };
    expect(() => fx.jobs.worker('ops', [foreign as never])).toThrow(/belongs to queue calls/);
  });
});
