import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, handle } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { periodicPolicy } from '../../functions/jobs/policies.ts';
import { leaseMs } from '../../functions/jobs/queues.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds, testQueue } from './kinds.ts';

const RESCUE_AFTER = 3 * 60_000;

describe('rescuer: no job is lost, none ends twice', () => {
  it('AWorkerKilledAfterItsClaimIsRescuedWhenTheLeaseExpiresAndTheJobRunsAgainOnce', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const rescuer = fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER);
    // Ten jobs; a "worker" claims each and dies before running or recording anything.
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const prepared = fx.jobs.client.prepare(kinds.flakyKind, { failTimes: 0 });
      const { TransactWriteCommand } = await import('@aws-sdk/lib-dynamodb');
      await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [prepared.item] }));
      await fx.jobs.store.claim(prepared.id, 1, fx.clock.now(), leaseMs(testQueue));
      ids.push(prepared.id);
    }
    // Before the lease runs out the rescuer leaves them alone.
    fx.clock.advance(leaseMs(testQueue) - 1000);
    expect(await rescuer.run()).toMatchObject({ expired: 0 });
    fx.clock.advance(2000);
    expect(await rescuer.run()).toMatchObject({ expired: 10 });
    expect(await rescuer.run()).toMatchObject({ expired: 0 });
    await fx.settle();

    for (const id of ids) {
      const row = await fx.jobs.store.mustGet(id);
      expect(row.state).toBe('completed');
      expect(row.attempts.map((a) => a.outcome)).toEqual(['lost', 'completed']);
      expect(row.attempts[0]?.error).toMatch(/worker lost: lease expired/);
      expect(kinds.runsOf(id)).toHaveLength(1);
    }
  });

  it('ALostSendIsRescuedOnceTheJobHasBeenDueAndIdleLongEnough', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const rescuer = fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER);
    fx.recording.failNext = 1;
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    expect(fx.recording.sent).toHaveLength(0);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('available');

    fx.clock.advance(RESCUE_AFTER - 1000);
    expect(await rescuer.run()).toMatchObject({ rewoken: 0 });
    fx.clock.advance(2000);
    expect(await rescuer.run()).toMatchObject({ rewoken: 1 });
    expect(fx.recording.last()).toMatchObject({ kind: 'message', body: { jobId: id, seq: 1 }, delaySeconds: 0 });
    // The next pass does not send it again while that wake-up may still be on its way.
    expect(await rescuer.run()).toMatchObject({ rewoken: 0 });

    const result = await fx.jobs.executor('ops', kinds.handlers).execute(fx.recording.last().body);
    expect(result.result).toBe('completed');
    expect(kinds.runsOf(id)).toHaveLength(1);
  });

  it('ALostWakeUpAfterARetryIsRescuedToo', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const rescuer = fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER);
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 1 });
    fx.recording.failNext = 1; // the retry's wake-up is lost
    expect((await fx.jobs.executor('ops', kinds.handlers).execute({ jobId: id, seq: 1 })).result).toBe('retryable');
    fx.clock.advance(RESCUE_AFTER + 5_000);
    expect(await rescuer.run()).toMatchObject({ rewoken: 1 });
    expect(fx.recording.last().body).toEqual({ jobId: id, seq: 2 });
  });

  it('OverlappingRescuerPassesSendEachLostWakeUpOnce', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    
    fx.recording.failNext = 5;
    for (let i = 0; i < 5; i++) await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    fx.clock.advance(RESCUE_AFTER + 1000);
    const reports = await Promise.all([1, 2, 3].map(() => fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER).run()));
    expect(reports.reduce((sum, r) => sum + r.rewoken, 0)).toBe(5);
    expect(fx.recording.sent).toHaveLength(5);
  });

  it('AJobWhoseLastAttemptWasLostIsDiscardedAsExhaustedCountedAndAlerted', async () => {
    const kinds = testKinds({ maxAttempts: 1 });
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    await fx.jobs.store.claim(id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    await fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER).run();
    const row = await fx.jobs.store.mustGet(id);
    expect(row.state).toBe('discarded');
    expect(row.discardReason).toBe('exhausted');
    // The failures that most need the alarm (a crash, a timeout, out of memory on the last attempt) fire it.
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.flaky', reason: 'exhausted' })).toBe(1);
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(1);
  });

  it('ALostLastAttemptUnderAQuietPolicyIsCountedWithoutAlert', async () => {
    const kinds = testKinds({ maxAttempts: 1, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    await fx.jobs.store.claim(id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    await fx.jobs.rescuer(kinds.handlers, RESCUE_AFTER).run();
    expect((await fx.jobs.store.mustGet(id)).discardReason).toBe('exhausted');
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.flaky', reason: 'exhausted' })).toBe(1);
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(0);
  });

  it('AJobOfAKindNobodyRunsIsDiscardedAlikeByTheExecutorAndTheRescuer', async () => {
    const kinds = testKinds();
    // Jobs of test.flaky, but a runtime that knows only test.picky (the kind was removed, or is a newer deploy's).
    const known = kinds.handlers.filter((h) => h.kind.kind === 'test.picky');
    const fx = await jobsFixture({ handlers: known });
    const run = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    const lost = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });

    expect((await fx.jobs.executor('ops', known).execute({ jobId: run.id, seq: 1 })).result).toBe('discarded');
    await fx.jobs.store.claim(lost.id, 1, fx.clock.now(), leaseMs(testQueue));
    fx.clock.advance(leaseMs(testQueue) + 1);
    expect(await fx.jobs.rescuer(known, RESCUE_AFTER).run()).toMatchObject({ expired: 1 });

    for (const id of [run.id, lost.id]) {
      const row = await fx.jobs.store.mustGet(id);
      expect(row, id).toMatchObject({ state: 'discarded', discardReason: 'unknown_kind', attempt: 1 });
    }
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.flaky', reason: 'unknown_kind' })).toBe(2);
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(2);
  });
});

describe('periodic jobs', () => {
  function periodicKind() {
    let fail = true;
    const runs: string[] = [];
    const kind = defineKind({ kind: 'test.tick', queue: 'ops', policy: periodicPolicy, periodic: { everySeconds: 60 }, args: z.object({}), description: 'tick' });
    const handler = handle(kind, async (_args, ctx) => {
      runs.push(ctx.id);
      if (fail) throw new Error('tick failed');
    });
    return { handler: handler as unknown as JobHandler<never>, runs, succeed: () => (fail = false) };
  }

  it('OneJobPerPeriodNoRetryAndTheLastFailureIsKept', async () => {
    const p = periodicKind();
    const fx = await jobsFixture({ handlers: [p.handler], transport: 'local' });
    const rescuer = fx.jobs.rescuer([p.handler], RESCUE_AFTER);
    fx.clock.set(Date.parse('2026-01-05T10:00:10.000Z'));
    expect(await rescuer.run()).toMatchObject({ periodic: 1 });
    expect(await rescuer.run()).toMatchObject({ periodic: 0 }); // same period
    await fx.settle(30_000);

    expect(p.runs).toEqual(['test.tick@2026-01-05T10:00:00.000Z']);
    const failed = await fx.jobs.store.mustGet(p.runs[0]!);
    expect(failed.state).toBe('discarded');
    expect(failed.attempt).toBe(1);
    const status = await fx.jobs.store.getPeriodic('test.tick');
    expect(status).toMatchObject({ lastOutcome: 'failed', lastError: 'tick failed', lastJobId: p.runs[0] });

    // The next period runs a new job; a success keeps the last failure on record.
    p.succeed();
    fx.clock.set(Date.parse('2026-01-05T10:01:05.000Z'));
    expect(await rescuer.run()).toMatchObject({ periodic: 1 });
    await fx.settle(30_000);
    expect(p.runs).toHaveLength(2);
    expect(await fx.jobs.store.getPeriodic('test.tick')).toMatchObject({
      lastOutcome: 'completed',
      lastJobId: 'test.tick@2026-01-05T10:01:00.000Z',
      lastFailureAt: status?.lastFailureAt,
      lastError: 'tick failed',
    });
  });
});
