import { describe, expect, it } from 'vitest';
import { ClaimRefusedError, LeaseLostError } from '../../functions/jobs/errors.ts';
import { leaseMs } from '../../functions/jobs/queues.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds, testQueue } from './kinds.ts';

describe('claims: the row is the truth, a message only wakes it', () => {
  it('FiftyConcurrentClaimsOfOneJobExactlyOneWins', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => fx.jobs.store.claim(id, 1, fx.clock.now(), 60_000)));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(49);
    expect(lost.every((r) => r.reason instanceof ClaimRefusedError && r.reason.refusal === 'running')).toBe(true);
    expect((await fx.jobs.store.mustGet(id)).attempt).toBe(1);
  });

  it('FiftyDuplicateMessagesThroughTheWorkerRunTheHandlerOnce', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    const executor = fx.jobs.executor('ops', kinds.handlers);
    const results = await Promise.all(Array.from({ length: 50 }, () => executor.execute({ jobId: id, seq: 1 })));
    expect(results.filter((r) => r.result === 'completed')).toHaveLength(1);
    expect(results.filter((r) => r.result === 'dropped')).toHaveLength(49);
    expect(kinds.runsOf(id)).toHaveLength(1);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('completed');
  });

  it('AStaleMessageFromAnEarlierScheduleRunsNothing', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 1 });
    const executor = fx.jobs.executor('ops', kinds.handlers);
    expect((await executor.execute({ jobId: id, seq: 1 })).result).toBe('retryable');
    fx.clock.advance(60_000);
    // The first message arrives again after the job was rescheduled (seq 2): it is stale.
    expect(await executor.execute({ jobId: id, seq: 1 })).toEqual({ jobId: id, result: 'dropped', refusal: 'stale' });
    expect(kinds.runsOf(id)).toHaveLength(1);
    expect((await executor.execute({ jobId: id, seq: 2 })).result).toBe('completed');
    // And once it is finished, any message is a duplicate.
    expect(await executor.execute({ jobId: id, seq: 2 })).toEqual({ jobId: id, result: 'dropped', refusal: 'finished' });
    expect(await executor.execute({ jobId: 'no-such-job', seq: 1 })).toEqual({ jobId: 'no-such-job', result: 'dropped', refusal: 'missing' });
    expect(kinds.runsOf(id)).toHaveLength(2);
  });

  it('AnEarlyMessageIsSentAgainForTheTimeThatRemains', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { delayMs: 30 * 60_000 });
    fx.clock.advance(29 * 60_000); // a Scheduler wake-up a minute early
    const result = await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: 1 });
    expect(result.result).toBe('redispatched');
    expect(fx.recording.last()).toMatchObject({ kind: 'message', delaySeconds: 60, body: { jobId: id, seq: 1 } });
    expect(kinds.runsOf(id)).toHaveLength(0);
  });

  it('AWorkerWhoseLeaseExpiredCannotRecordItsOutcome', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    const claimed = await fx.jobs.store.claim(id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    await fx.jobs.rescuer(kinds.handlers, 60_000).run();
    await expect(fx.jobs.store.complete(claimed, fx.clock.now(), 10)).rejects.toBeInstanceOf(LeaseLostError);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('retryable');
  });
});
