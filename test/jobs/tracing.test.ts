import type { SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, handle } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { DefaultBackoff } from '../../functions/jobs/policies.ts';
import { jobsFixture } from '../support/jobs.ts';
import { RecordingTracing } from '../support/tracing.ts';

const sqsEvent = (messages: { jobId: string; seq: number }[]): SQSEvent =>
  ({ Records: messages.map((m, i) => ({ messageId: `m-${i}`, receiptHandle: `r-${i}`, body: JSON.stringify(m) })) }) as SQSEvent;

/**
 * A kind that fails its first attempt, and annotates the span it runs in after a random pause: runs of one
 * batch overlap, and each must still land in its own span.
 */
function tracedKind(tracing: RecordingTracing) {
  const kind = defineKind({
    kind: 'test.traced',
    queue: 'ops',
    policy: { maxAttempts: 5, backoff: DefaultBackoff, jitter: 0.1, onExhausted: 'discard_alert' },
    args: z.object({ pauseMs: z.number() }),
    description: 'fails once, annotating its span',
  });
  const handler = handle(kind, async (args, ctx) => {
    await new Promise((resolve) => setTimeout(resolve, args.pauseMs));
    tracing.annotate('seenBy', ctx.id);
    if (ctx.attempt === 1) throw new Error('first attempt fails');
  });
  return { kind, handlers: [handler] as unknown as JobHandler<unknown>[] };
}

describe('traces of the job layer', () => {
  it('RunsEachWakeUpInASpanOfItsOwn_AnnotatedWithItsJobIdKindAndAttempt_WhileTheBatchsRunsOverlap', async () => {
    const tracing = new RecordingTracing();
    const { kind, handlers } = tracedKind(tracing);
    const fx = await jobsFixture({ handlers, tracing });
    const ids = await Promise.all([30, 5, 15].map(async (pauseMs) => (await fx.jobs.client.enqueue(kind, { pauseMs })).id));
    const worker = fx.jobs.worker('ops', handlers);

    await worker(sqsEvent(ids.map((jobId) => ({ jobId, seq: 1 }))), {} as never);
    const firstRuns = tracing.named('job.run');
    expect(firstRuns.map((s) => s.annotations).sort((a, b) => String(a['jobId']).localeCompare(String(b['jobId'])))).toEqual(
      [...ids].sort().map((jobId) => ({ jobId, kind: 'test.traced', attempt: 1, seenBy: jobId })),
    );
    for (const span of firstRuns) {
      expect(span.closed).toBe(true);
      expect(span.metadata['result']).toEqual({ jobId: span.annotations['jobId'], result: 'retryable' });
    }

    // The second attempts, as the retry's wake-ups name them.
    fx.clock.set(fx.clock.now() + 3_600_000);
    await worker(sqsEvent(await Promise.all(ids.map(async (jobId) => ({ jobId, seq: (await fx.jobs.store.mustGet(jobId)).seq })))), {} as never);
    const secondRuns = tracing.named('job.run').slice(3);
    expect(secondRuns.map((s) => s.annotations['attempt'])).toEqual([2, 2, 2]);
    expect(secondRuns.map((s) => (s.metadata['result'] as { result: string }).result)).toEqual(['completed', 'completed', 'completed']);
  });

  it('AWakeUpThatFindsNothingToClaimIsASpanWithItsJobIdOnly', async () => {
    const tracing = new RecordingTracing();
    const { kind, handlers } = tracedKind(tracing);
    const fx = await jobsFixture({ handlers, tracing });
    const { id } = await fx.jobs.client.enqueue(kind, { pauseMs: 0 });
    const executor = fx.jobs.executor('ops', handlers);
    await executor.execute({ jobId: id, seq: 1 });
    // The same message again: its claim is refused.
    await executor.execute({ jobId: id, seq: 1 });
    const [, duplicate] = tracing.named('job.run');
    expect(duplicate!.annotations).toEqual({ jobId: id });
    expect(duplicate!.metadata['result']).toMatchObject({ jobId: id, result: 'dropped' });
  });

  it('SendsEachWakeUpInASpanThatNamesItsJobInMetadata_InsideTheRunThatSentIt', async () => {
    const tracing = new RecordingTracing();
    const { kind, handlers } = tracedKind(tracing);
    const fx = await jobsFixture({ handlers, tracing });
    const { id } = await fx.jobs.client.enqueue(kind, { pauseMs: 0 });
    const [enqueued] = tracing.named('job.wake');
    expect(enqueued!.parent).toBeUndefined();
    expect(enqueued!.annotations).toEqual({});
    expect(enqueued!.metadata['wakeUp']).toMatchObject({ jobId: id, seq: 1, queue: 'ops', via: 'sqs' });

    await fx.jobs.executor('ops', handlers).execute({ jobId: id, seq: 1 });
    const [run] = tracing.named('job.run');
    const retry = tracing.named('job.wake')[1]!;
    expect(retry.parent).toBe(run);
    expect(retry.metadata['wakeUp']).toMatchObject({ jobId: id, seq: 2, queue: 'ops' });
  });

  it('SendsAWakeUpLaterThanFifteenMinutesAsASchedule_AndSaysSo', async () => {
    const tracing = new RecordingTracing();
    const { kind, handlers } = tracedKind(tracing);
    const fx = await jobsFixture({ handlers, tracing });
    await fx.jobs.client.enqueue(kind, { pauseMs: 0 }, { at: fx.clock.now() + 3_600_000 });
    expect(tracing.named('job.wake')[0]!.metadata['wakeUp']).toMatchObject({ via: 'scheduler', at: new Date(fx.clock.now() + 3_600_000).toISOString() });
    expect(fx.recording.last().kind).toBe('schedule');
  });
});
