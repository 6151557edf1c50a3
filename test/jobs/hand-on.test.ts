import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defaultPolicy, defineKind, handle, snooze, TransitionRefusedError } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { checkKey, keyTime } from '../../functions/jobs/row.ts';
import { jobsFixture } from '../support/jobs.ts';

/**
 * Handing work on within one worker (`ctx.runNext`), dormant snoozes and dormant enqueues: what lets a
 * domain hand its turn to a waiting job without a queue message, a timer or a schedule.
 */
function chainKinds() {
  const runs: { id: string; attempt: number; next: string | undefined; answer?: string }[] = [];
  const chainKind = defineKind({
    kind: 'test.chain',
    queue: 'ops',
    policy: defaultPolicy,
    timeoutSeconds: 20,
    args: z.object({ next: z.string().optional(), park: z.boolean().optional() }),
    description: 'runs, then hands on to args.next',
  });
  const chain = handle(chainKind, async (args, ctx) => {
    const run: (typeof runs)[number] = { id: ctx.id, attempt: ctx.attempt, next: args.next };
    runs.push(run);
    if (args.park && ctx.attempt === 1 && runs.filter((r) => r.id === ctx.id).length === 1) throw snooze({ delayMs: 3_600_000 }, 'waiting for its turn', { dormant: true });
    if (args.next) {
      try {
        run.answer = await ctx.runNext(args.next);
      } catch (error) {
        run.answer = error instanceof TransitionRefusedError ? `refused: ${error.current?.state ?? 'missing'}` : String(error);
      }
    }
  });
  // As long as the ops queue's timeout: no invocation ever has room for a second run of it.
  const longKind = defineKind({ kind: 'test.long', queue: 'ops', policy: defaultPolicy, timeoutSeconds: 60, args: z.object({ next: z.string() }), description: 'hands on, but is too long' });
  const long = handle(longKind, async (args, ctx) => {
    runs.push({ id: ctx.id, attempt: ctx.attempt, next: args.next, answer: await ctx.runNext(args.next) });
  });
  return { chainKind, longKind, runs, handlers: [chain, long] as JobHandler<unknown>[] };
}

describe('job layer: handing work on within a worker', () => {
  it('AJobHandsOnToAWaitingOne_WhichRunsNextInTheSameExecution_AsItsOwnAttempt_WithNoMessageSent', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    // The successor waits dormant: due in an hour, with no wake-up sent for it.
    const waiting = await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:b', at: fx.clock.now() + 3_600_000, dormant: true });
    expect(waiting.created).toBe(true);
    expect(fx.recording.sent).toEqual([]);
    const first = await fx.jobs.client.enqueue(kinds.chainKind, { next: 'test.chain:b' }, { id: 'test.chain:a' });
    const sentBefore = fx.recording.sent.length;
    const row = await fx.jobs.store.mustGet(first.id);
    const result = await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: row.id, seq: row.seq });
    expect(result).toEqual({ jobId: 'test.chain:a', result: 'completed' });
    expect(kinds.runs.map((r) => [r.id, r.attempt, r.answer])).toEqual([
      ['test.chain:a', 1, 'claimed'],
      ['test.chain:b', 1, undefined],
    ]);
    const successor = await fx.jobs.store.mustGet('test.chain:b');
    expect(successor).toMatchObject({ state: 'completed', attempt: 1, attempts: [{ attempt: 1, outcome: 'completed' }] });
    expect(fx.recording.sent.length).toBe(sentBefore);
    // Its seq moved on: a wake-up sent for it earlier finds nothing to claim.
    expect((await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: 'test.chain:b', seq: 1 })).result).toBe('dropped');
  });

  it('RefusesARunningOrFinishedSuccessor_AsWakeDoes_AndDeclinesOneWhoseDomainAskedToStopIt', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const executor = fx.jobs.executor('ops', kinds.handlers);
    const run = async (id: string) => {
      const row = await fx.jobs.store.mustGet(id);
      return executor.execute({ jobId: id, seq: row.seq });
    };
    await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:done' });
    await run('test.chain:done');
    await fx.jobs.client.enqueue(kinds.chainKind, { next: 'test.chain:done' }, { id: 'test.chain:x' });
    await run('test.chain:x');
    await fx.jobs.client.enqueue(kinds.chainKind, { next: 'test.chain:nobody' }, { id: 'test.chain:y' });
    await run('test.chain:y');
    await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:stop', at: fx.clock.now() + 60_000 });
    await fx.clients.dynamo.send(
      new (await import('@aws-sdk/lib-dynamodb')).TransactWriteCommand({ TransactItems: [fx.jobs.client.requestCancelItem('test.chain:stop')] }),
    );
    await fx.jobs.client.enqueue(kinds.chainKind, { next: 'test.chain:stop' }, { id: 'test.chain:z' });
    await run('test.chain:z');
    expect(kinds.runs.filter((r) => r.next).map((r) => [r.id, r.answer])).toEqual([
      ['test.chain:x', 'refused: completed'],
      ['test.chain:y', 'refused: missing'],
      ['test.chain:z', 'declined'],
    ]);
    expect((await fx.jobs.store.mustGet('test.chain:stop')).state).toBe('scheduled');
  });

  it('DeclinesWhenTheInvocationHasNoTimeLeftForAnotherRunOfTheKind', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:later', at: fx.clock.now() + 60_000 });
    const { id } = await fx.jobs.client.enqueue(kinds.longKind, { next: 'test.chain:later' }, { id: 'test.long:a' });
    const row = await fx.jobs.store.mustGet(id);
    expect((await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: row.seq })).result).toBe('completed');
    expect(kinds.runs.map((r) => [r.id, r.answer])).toEqual([['test.long:a', 'declined']]);
    expect((await fx.jobs.store.mustGet('test.chain:later')).state).toBe('scheduled');
  });

  it('ADormantSnoozeSendsNoWakeUp_TheJobWaitsToBeWoken_AndTheRescuerWakesItOnceItIsDue', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.chainKind, { park: true }, { id: 'test.chain:parked' });
    const sent = fx.recording.sent.length;
    const row = await fx.jobs.store.mustGet(id);
    expect((await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: row.seq })).result).toBe('snoozed');
    expect(await fx.jobs.store.mustGet(id)).toMatchObject({ state: 'snoozed', attempt: 0, lastSnooze: { reason: 'waiting for its turn' } });
    expect(fx.recording.sent.length).toBe(sent);
    // Nobody woke it: once it is due (and past the rescuer's grace), the rescuer sends its wake-up.
    const rescuer = fx.jobs.rescuer(kinds.handlers, 60_000);
    expect((await rescuer.run()).rewoken).toBe(0);
    fx.clock.advance(3_600_000 + 60_001);
    expect((await rescuer.run()).rewoken).toBe(1);
    expect(fx.recording.last()).toMatchObject({ kind: 'message', queue: 'ops', body: { jobId: id } });
  });
  it('AHandOnToADormantJobWritesNoIndexEntry_AndTheRescuerStillFindsItsLeaseOnceItsWorkerDies', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const leaseMs = 65_000; // the ops queue's: its 60 s timeout and the margin
    await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:b', at: fx.clock.now() + 6 * 3_600_000, dormant: true });
    const parked = await fx.jobs.store.mustGet('test.chain:b');
    // Its entry is where a job due at its creation would have it, not six hours on.
    expect(parked.checkAt).toBe(checkKey(Date.parse(parked.createdAt) + leaseMs, parked.id));
    fx.clock.advance(10_000);
    // A holder hands on to it, then its worker dies (nothing records the run).
    const claimed = await fx.jobs.store.claimNext('test.chain:b', 'ops', fx.clock.now(), leaseMs);
    expect(claimed.checkAt).toBe(parked.checkAt);
    expect(keyTime(claimed.checkAt)).toBeLessThanOrEqual(Date.parse(claimed.leaseUntil));
    const rescuer = fx.jobs.rescuer(kinds.handlers, 60_000);
    // Under its live lease the rescuer moves the entry to the lease's end; once it has ended, the job is rescued.
    fx.clock.advance(leaseMs - 5_000);
    expect(await rescuer.run()).toMatchObject({ expired: 0, rechecked: 1 });
    expect((await fx.jobs.store.mustGet('test.chain:b')).checkAt).toBe(checkKey(Date.parse(claimed.leaseUntil) + 1, claimed.id));
    fx.clock.advance(10_000);
    expect(await rescuer.run()).toMatchObject({ expired: 1 });
    expect(await fx.jobs.store.mustGet('test.chain:b')).toMatchObject({ state: 'retryable', attempts: [{ attempt: 1, outcome: 'lost' }] });
  });

  it('AHandOnToAJobWhoseEntryIsLaterThanTheLeaseMovesItToTheLeasesEnd', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const leaseMs = 65_000;
    // Not dormant: due in an hour, its entry an hour and a lease on.
    await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:later', at: fx.clock.now() + 3_600_000 });
    expect(keyTime((await fx.jobs.store.mustGet('test.chain:later')).checkAt)).toBe(fx.clock.now() + 3_600_000 + leaseMs);
    const claimed = await fx.jobs.store.claimNext('test.chain:later', 'ops', fx.clock.now(), leaseMs);
    expect(claimed).toMatchObject({ state: 'running', attempt: 1, checkAt: checkKey(Date.parse(claimed.leaseUntil), claimed.id) });
    // Its worker dies: the rescuer finds it as soon as the lease has ended.
    fx.clock.advance(leaseMs + 1);
    expect(await fx.jobs.rescuer(kinds.handlers, 60_000).run()).toMatchObject({ expired: 1 });
  });

  it('ADormantJobStillWaitingWhenItsCheckComesIsMovedToItsBackstop_AndWokenOnceDue', async () => {
    const kinds = chainKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.chainKind, {}, { id: 'test.chain:parked', at: fx.clock.now() + 3_600_000, dormant: true });
    const rescuer = fx.jobs.rescuer(kinds.handlers, 60_000);
    fx.clock.advance(70_000);
    expect(await rescuer.run()).toMatchObject({ rechecked: 1, rewoken: 0 });
    expect(keyTime((await fx.jobs.store.mustGet(id)).checkAt)).toBe(fx.clock.now() - 70_000 + 3_600_000 + 65_000);
    fx.clock.advance(3_600_000);
    expect(await rescuer.run()).toMatchObject({ rewoken: 1 });
    expect(fx.recording.last()).toMatchObject({ kind: 'message', queue: 'ops', body: { jobId: id } });
  });
});
