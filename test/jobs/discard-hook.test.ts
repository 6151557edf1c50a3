import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, discard, handle, policy, schedule } from '../../functions/jobs/index.ts';
import type { DiscardedJob, JobHandler } from '../../functions/jobs/index.ts';
import { DISCARD_HOOK_FAILED_METRIC, DISCARD_METRIC } from '../../functions/jobs/discards.ts';
import type { JobState } from '../../functions/jobs/states.ts';
import { leaseMs } from '../../functions/jobs/queues.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testQueue } from './kinds.ts';

/**
 * A kind with an onDiscard hook that records, for each call, what it was told and the job's state as
 * stored at that moment. `failHook` makes the next calls throw.
 */
function hookedKind(maxAttempts: number) {
  const calls: { job: DiscardedJob; storedState: JobState | undefined }[] = [];
  let failHook = 0;
  let readState: (id: string) => Promise<JobState | undefined> = () => Promise.resolve(undefined);
  const kind = defineKind({
    kind: 'test.hooked',
    queue: 'ops',
    policy: policy({ maxAttempts, backoff: schedule([1]) }),
    args: z.object({ mode: z.enum(['discard', 'fail', 'ok']) }),
    discardReasons: ['refused'],
    description: 'discards, fails or succeeds as told; records its discard hook',
  });
  const handler = handle(
    kind,
    async (args) => {
      if (args.mode === 'discard') throw discard('refused', 'told to discard');
      if (args.mode === 'fail') throw new Error('told to fail');
    },
    {
      onDiscard: async (_args, job) => {
        calls.push({ job, storedState: await readState(job.id) });
        if (failHook > 0) {
          failHook--;
          throw new Error('hook failed (injected)');
        }
      },
    },
  ) as unknown as JobHandler<unknown>;
  return {
    kind,
    handler,
    calls,
    failNextHooks: (n: number) => (failHook = n),
    readStateWith: (read: (id: string) => Promise<JobState | undefined>) => (readState = read),
  };
}

async function setup(maxAttempts: number) {
  const hooked = hookedKind(maxAttempts);
  const fx = await jobsFixture({ handlers: [hooked.handler] });
  hooked.readStateWith(async (id) => (await fx.jobs.store.get(id))?.state);
  const executor = fx.jobs.executor('ops', [hooked.handler]);
  const run = async (id: string) => executor.execute({ jobId: id, seq: (await fx.jobs.store.mustGet(id)).seq });
  return { ...hooked, fx, run };
}

describe('onDiscard: a kind\'s discard hook runs before its discard is written, whoever decides it', () => {
  it('RunsForTheHandlersOwnDiscard_WhileTheJobIsStillRunning_ThenTheDiscardIsWritten', async () => {
    const { fx, run, calls, kind } = await setup(5);
    const { id } = await fx.jobs.client.enqueue(kind, { mode: 'discard' });
    expect((await run(id)).result).toBe('discarded');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ job: { id, kind: 'test.hooked', reason: 'refused', error: 'JobDiscard: told to discard', at: fx.clock.now() }, storedState: 'running' });
    const row = await fx.jobs.store.mustGet(id);
    expect(row).toMatchObject({ state: 'discarded', discardReason: 'refused', finalizedAt: new Date(calls[0]!.job.at).toISOString() });
  });

  it('RunsWhenAttemptsRunOut_AndWhenTheRescuerDiscardsALostLastAttempt', async () => {
    const { fx, run, calls, kind } = await setup(1);
    const failed = await fx.jobs.client.enqueue(kind, { mode: 'fail' });
    expect((await run(failed.id)).result).toBe('discarded');
    expect(calls.map((c) => [c.job.id, c.job.reason, c.storedState])).toEqual([[failed.id, 'exhausted', 'running']]);

    // A worker claims the other job and is lost: the rescuer discards it (its only attempt), hook first.
    const lost = await fx.jobs.client.enqueue(kind, { mode: 'ok' });
    await fx.jobs.store.claim(lost.id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    expect(await fx.jobs.rescuer(fx.handlers, 60_000).run()).toMatchObject({ expired: 1 });
    expect(calls.map((c) => [c.job.id, c.job.reason, c.storedState])).toEqual([
      [failed.id, 'exhausted', 'running'],
      [lost.id, 'exhausted', 'running'],
    ]);
    expect(await fx.jobs.store.mustGet(lost.id)).toMatchObject({ state: 'discarded', discardReason: 'exhausted' });
  });

  it('DoesNotRunForArgumentsThatNoLongerParse', async () => {
    const { fx, run, calls, kind } = await setup(5);
    const prepared = fx.jobs.client.prepare(kind, { mode: 'ok' });
    (prepared.item.Put!.Item as { args: unknown }).args = { mode: 'unheard-of' };
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [prepared.item] }));
    expect((await run(prepared.id)).result).toBe('discarded');
    expect((await fx.jobs.store.mustGet(prepared.id)).discardReason).toBe('invalid_args');
    expect(calls).toEqual([]);
  });

  it('AHookThatThrowsLeavesTheJobRunningAndUndiscarded_TheRescuerDecidesAgain_AndTheDiscardIsWrittenWithItsHook', async () => {
    const { fx, run, calls, kind, failNextHooks } = await setup(5);
    const { id } = await fx.jobs.client.enqueue(kind, { mode: 'discard' });
    failNextHooks(1);
    // The outcome could not be recorded: an infrastructure failure, thrown to the worker (SQS redelivers).
    await expect(run(id)).rejects.toThrow(/hook failed/);
    expect(await fx.jobs.store.mustGet(id)).toMatchObject({ state: 'running', attempt: 1 });
    expect(fx.metrics.total(DISCARD_HOOK_FAILED_METRIC, { kind: 'test.hooked' })).toBe(1);
    expect(fx.metrics.total(DISCARD_METRIC)).toBe(0);

    // Its lease runs out; the rescuer counts the attempt lost and reschedules it; it runs and discards again.
    fx.clock.advance(leaseMs(testQueue) + 1);
    expect(await fx.jobs.rescuer(fx.handlers, 60_000).run()).toMatchObject({ expired: 1 });
    fx.clock.advance(2_000);
    expect((await run(id)).result).toBe('discarded');
    expect(calls).toHaveLength(2);
    expect(await fx.jobs.store.mustGet(id)).toMatchObject({ state: 'discarded', discardReason: 'refused', attempt: 2 });
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.hooked', reason: 'refused' })).toBe(1);
  });
});
