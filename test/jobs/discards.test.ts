import { describe, expect, it } from 'vitest';
import { DISCARD_METRIC } from '../../functions/jobs/discards.ts';
import { leaseMs } from '../../functions/jobs/queues.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import type { InstrumentableClient, RequestInterceptor } from '../../functions/platform/aws.ts';
import { ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { jobsFixture } from '../support/jobs.ts';
import { queues } from '../../functions/app/system.ts';
import { testKinds, testQueue } from './kinds.ts';

const RESCUE_AFTER = 3 * 60_000;

/**
 * An interceptor for the write that discards a job (an UpdateItem on the jobs table setting `discarded`):
 * `lose` applies it and drops the answer (the caller sees a reset connection), `refuse` throttles it
 * before it is applied. DynamoDB Local never does either.
 */
function onDiscardWrite(mode: 'lose' | 'refuse'): RequestInterceptor & { hits: number } {
  const interceptor = {
    hits: 0,
    instrument(client: InstrumentableClient, service: string) {
      if (service !== 'DynamoDB') return;
      client.middlewareStack.add(
        (next, ctx) => async (args) => {
          const input = args.input as { ExpressionAttributeValues?: Record<string, { S?: string }> };
          const discards = ctx.commandName === 'UpdateItemCommand' && Object.values(input.ExpressionAttributeValues ?? {}).some((v) => v.S === 'discarded');
          if (!discards || interceptor.hits > 0) return next(args);
          interceptor.hits++;
          if (mode === 'refuse') throw new ProvisionedThroughputExceededException({ message: 'throttled', $metadata: {} });
          await next(args);
          throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        },
        { step: 'build', name: 'discardWriteFault' },
      );
    },
  };
  return interceptor;
}

/** A fixture whose job runtime sends through a client with `interceptor`. */
async function withInterceptor(interceptor: RequestInterceptor, policy: Parameters<typeof testKinds>[0] = {}) {
  const kinds = testKinds(policy);
  const fx = await jobsFixture({ handlers: kinds.handlers });
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials, interceptor });
  const jobs = createJobRuntime({ db: clients.dynamo, jobsTable: fx.tableNames.jobs, queues, transport: fx.recording, clock: fx.clock, rng: fx.rng, logger: fx.logger, metrics: fx.metrics });
  return { fx, kinds, jobs };
}

describe('discards: each one counted once, whatever its write answers', () => {
  it('ADiscardWhoseAnswerWasLostIsCountedOnceTheReadShowsItLanded', async () => {
    const interceptor = onDiscardWrite('lose');
    const { fx, kinds, jobs } = await withInterceptor(interceptor);
    const { id } = await jobs.client.enqueue(kinds.pickyKind, { status: 410 });
    const result = await jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: 1 });
    expect(interceptor.hits).toBe(1);
    expect(result).toEqual({ jobId: id, result: 'discarded' });
    expect((await fx.jobs.store.mustGet(id)).state).toBe('discarded');
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.picky', reason: 'http_4xx' })).toBe(1);
    // The message comes back (SQS cannot know better): it finds the job finished, and counts nothing.
    await jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: 1 });
    expect(fx.metrics.total(DISCARD_METRIC)).toBe(1);
  });

  it('ADiscardRefusedBeforeItWasAppliedIsNotCountedAndTheRescuerCountsItOnce', async () => {
    const interceptor = onDiscardWrite('refuse');
    const { fx, kinds, jobs } = await withInterceptor(interceptor, { maxAttempts: 1 });
    const { id } = await jobs.client.enqueue(kinds.pickyKind, { status: 410 });
    await expect(jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: 1 })).rejects.toThrow('throttled');
    expect((await fx.jobs.store.mustGet(id)).state).toBe('running');
    expect(fx.metrics.total(DISCARD_METRIC)).toBe(0);
    fx.clock.advance(leaseMs(testQueue) + 1);
    await jobs.rescuer(kinds.handlers, RESCUE_AFTER).run();
    expect((await fx.jobs.store.mustGet(id)).discardReason).toBe('exhausted');
    expect(fx.metrics.total(DISCARD_METRIC)).toBe(1);
  });

  it('ALostLastAttemptWhoseDiscardAnswerWasLostIsCountedOnce', async () => {
    const interceptor = onDiscardWrite('lose');
    const { fx, kinds, jobs } = await withInterceptor(interceptor, { maxAttempts: 1 });
    const { id } = await jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    await jobs.store.claim(id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    const rescuer = jobs.rescuer(kinds.handlers, RESCUE_AFTER);
    await rescuer.run();
    await rescuer.run();
    expect(interceptor.hits).toBe(1);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('discarded');
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.flaky', reason: 'exhausted' })).toBe(1);
  });
});
