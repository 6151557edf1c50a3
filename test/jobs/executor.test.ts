import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, handle, periodicPolicy, policy, schedule } from '../../functions/jobs/index.ts';
import type { JobHandler, Policy } from '../../functions/jobs/index.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { baseDelayMs } from '../../functions/jobs/policies.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds } from './kinds.ts';

describe('executor: a handler only classifies, the policy decides', () => {
  it('FailsTwiceThenSucceeds: three attempts, two errors in the history, backoff per policy with jitter', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 2 });
    await fx.settle();

    const row = await fx.jobs.store.mustGet(id);
    expect(row.state).toBe('completed');
    expect(row.attempt).toBe(3);
    expect(row.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retryable'],
      [2, 'retryable'],
      [3, 'completed'],
    ]);
    expect(row.attempts[0]?.error).toBe('failure 1');
    // Attempt n+1 starts after attempt n's backoff (1 s, then 2 s) ±10 %.
    for (const n of [1, 2]) {
      const gap = Date.parse(row.attempts[n]!.at) - Date.parse(row.attempts[n - 1]!.at);
      const base = baseDelayMs(kinds.flakyKind.policy.backoff, n);
      expect(gap).toBeGreaterThanOrEqual(base * 0.9);
      expect(gap).toBeLessThanOrEqual(base * 1.1 + 1000); // SQS DelaySeconds are whole seconds, rounded up
    }
    expect(kinds.runsOf(id)).toHaveLength(3);
  });

  it('TellsTheHandlerItsKindsPolicyAndWhetherAFailureNowWouldBeItsLast', async () => {
    const seen: { kind: string; attempt: number; last: boolean; policy: Policy }[] = [];
    const failing = (kind: ReturnType<typeof defineKind<Record<string, never>>>) =>
      handle(kind, async (_args, ctx) => {
        seen.push({ kind: ctx.kind, attempt: ctx.attempt, last: ctx.isLastAttempt, policy: ctx.policy });
        throw new Error('fails every time');
      }) as unknown as JobHandler<unknown>;
    const three = defineKind({ kind: 'test.three', queue: 'ops', policy: policy({ maxAttempts: 3, backoff: schedule([1]) }), args: z.object({}), description: 'fails' });
    const once = defineKind({ kind: 'test.once', queue: 'ops', policy: periodicPolicy, args: z.object({}), description: 'fails, one attempt' });
    const fx = await jobsFixture({ handlers: [failing(three), failing(once)], transport: 'local' });
    await fx.jobs.client.enqueue(three, {});
    await fx.jobs.client.enqueue(once, {});
    await fx.settle();
    expect(seen.filter((s) => s.kind === 'test.three').map((s) => [s.attempt, s.last])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(seen.filter((s) => s.kind === 'test.once').map((s) => [s.attempt, s.last])).toEqual([[1, true]]);
    expect(seen.find((s) => s.kind === 'test.three')?.policy).toBe(three.policy);
  });

  it('SnoozedFiftyTimesWithMaxAttemptsThreeStillGetsExactlyThreeRealAttempts', async () => {
    const kinds = testKinds({ maxAttempts: 3 });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.snoozyKind, { snoozes: 50, thenFail: true });
    await fx.settle();

    const row = await fx.jobs.store.mustGet(id);
    expect(kinds.runsOf(id)).toHaveLength(53);
    expect(row.snoozes).toBe(50);
    expect(row.attempts).toHaveLength(3);
    expect(row.attempt).toBe(3);
    expect(row.state).toBe('discarded');
    expect(row.discardReason).toBe('exhausted');
    // Every snoozed run reported attempt 1: a snooze gives its attempt back.
    expect(kinds.runsOf(id).slice(0, 50).every((r) => r.attempt === 1)).toBe(true);
  });

  it('HandlerDiscardIsPermanentAndKeptApartFromExhaustion', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const picky = await fx.jobs.client.enqueue(kinds.pickyKind, { status: 404 });
    const flaky = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 99 });
    await fx.settle();

    const discarded = await fx.jobs.store.mustGet(picky.id);
    expect(discarded.state).toBe('discarded');
    expect(discarded.discardReason).toBe('http_4xx');
    expect(discarded.attempt).toBe(1);
    expect(discarded.attempts[0]?.error).toContain('receiver answered 404');

    const exhausted = await fx.jobs.store.mustGet(flaky.id);
    expect(exhausted.state).toBe('discarded');
    expect(exhausted.discardReason).toBe('exhausted');
    expect(exhausted.attempt).toBe(5);

    // A metric on every discard; the alerting one only when attempts ran out under an alerting policy.
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.picky', reason: 'http_4xx' })).toBe(1);
    expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.flaky', reason: 'exhausted' })).toBe(1);
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(1);
  });

  it('ExhaustionUnderAQuietPolicyCountsTheDiscardWithoutAlert', async () => {
    const kinds = testKinds({ maxAttempts: 2, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 9 });
    await fx.settle();
    expect(fx.metrics.total(DISCARD_METRIC, { reason: 'exhausted' })).toBe(1);
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(0);
  });

  it('ARunPastItsTimeoutIsARetryableFailure', async () => {
    const kinds = testKinds({ maxAttempts: 1, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.slowKind, {});
    await fx.settle();
    const row = await fx.jobs.store.mustGet(id);
    expect(row.state).toBe('discarded');
    expect(row.attempts[0]?.error).toContain('timed out after 0.2 s');
  });

  it('ArgumentsThatNoLongerParseAreDiscardedAsInvalid', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    // Written with valid args, then the row is altered behind the layer's back.
    const prepared = fx.jobs.client.prepare(kinds.flakyKind, { failTimes: 0 });
    (prepared.item.Put!.Item as { args: unknown }).args = { failTimes: 'many' };
    const { TransactWriteCommand } = await import('@aws-sdk/lib-dynamodb');
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [prepared.item] }));
    await fx.jobs.client.afterCommit([prepared]);
    await fx.settle();
    const row = await fx.jobs.store.mustGet(prepared.id);
    expect(row.state).toBe('discarded');
    expect(row.discardReason).toBe('invalid_args');
    expect(kinds.runsOf(prepared.id)).toHaveLength(0);
  });

  it('EnqueueWithBadArgumentsWritesNothing', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    await expect(fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 'x' } as never, { id: 'bad-args' })).rejects.toThrow(/failTimes/);
    expect(await fx.jobs.store.get('bad-args')).toBeUndefined();
  });

  it('EnqueueWithACallerChosenIdIsIdempotent', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const first = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { id: 'batch-1:round-1' });
    const second = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 5 }, { id: 'batch-1:round-1' });
    expect([first.created, second.created]).toEqual([true, false]);
    await fx.settle();
    expect(kinds.runsOf('batch-1:round-1')).toEqual([{ kind: 'test.flaky', id: 'batch-1:round-1', attempt: 1, args: { failTimes: 0 } }]);
  });
});
