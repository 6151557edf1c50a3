import { TransactWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { TransitionRefusedError } from '../../functions/jobs/errors.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds } from './kinds.ts';

describe('manual retry and cancel', () => {
  it('ManualRetryRunsADiscardedJobAtOnceAndKeepsItsHistory', async () => {
    const kinds = testKinds({ maxAttempts: 2 });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 2 });
    await fx.settle();
    const discarded = await fx.jobs.store.mustGet(id);
    expect(discarded).toMatchObject({ state: 'discarded', discardReason: 'exhausted', attempt: 2 });

    const before = fx.clock.now();
    const retried = await fx.jobs.client.retry(id);
    expect(retried).toMatchObject({ state: 'available', maxAttempts: 3 });
    expect(retried.discardReason).toBeUndefined();
    await fx.idle(); // no clock movement: it runs at once
    const done = await fx.jobs.store.mustGet(id);
    expect(done.state).toBe('completed');
    expect(fx.clock.now()).toBe(before);
    expect(done.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retryable'],
      [2, 'discarded'],
      [3, 'completed'],
    ]);
  });

  it('CancelStopsAPendingJobAndItNeverRuns', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { delayMs: 60_000 });
    expect((await fx.jobs.client.cancel(id)).state).toBe('cancelled');
    await fx.settle();
    expect(kinds.runsOf(id)).toHaveLength(0);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('cancelled');
    // A cancelled job can be brought back by ops.
    await fx.jobs.client.retry(id);
    await fx.settle();
    expect((await fx.jobs.store.mustGet(id)).state).toBe('completed');
  });

  it('RetryOfACompletedJobAndCancelOfAFinishedOneAreRefused', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
    await fx.settle();
    await expect(fx.jobs.client.retry(id)).rejects.toBeInstanceOf(TransitionRefusedError);
    await expect(fx.jobs.client.cancel(id)).rejects.toBeInstanceOf(TransitionRefusedError);
    expect(kinds.runsOf(id)).toHaveLength(1);
  });

  it('ListsJobsByStateAndKindNewestFirst', async () => {
    const kinds = testKinds({ maxAttempts: 1, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    // Each finishes before the clock moves on, so their finish times (the listing's order) differ.
    await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 5 });
    await fx.settle();
    fx.clock.advance(1000);
    await fx.jobs.client.enqueue(kinds.pickyKind, { status: 410 });
    await fx.settle();
    fx.clock.advance(1000);
    await fx.jobs.client.enqueue(kinds.pickyKind, { status: 200 });
    await fx.settle();
    const discarded = await fx.jobs.client.list({ state: 'discarded' });
    expect(discarded.jobs.map((j) => j.kind)).toEqual(['test.picky', 'test.flaky']);
    expect((await fx.jobs.client.list({ state: 'discarded', kind: 'test.flaky' })).jobs).toHaveLength(1);
    expect((await fx.jobs.client.list({ kind: 'test.picky' })).jobs.map((j) => j.state).sort()).toEqual(['completed', 'discarded']);
    expect((await fx.jobs.client.count(['test.flaky', 'test.picky'])).byState).toMatchObject({ discarded: 2, completed: 1, available: 0, running: 0 });
    expect((await fx.jobs.client.count(['test.picky'])).byState).toMatchObject({ discarded: 1, completed: 1 });
    const page1 = await fx.jobs.client.list({ state: 'discarded', limit: 1 });
    expect(page1.jobs).toHaveLength(1);
    const page2 = await fx.jobs.client.list({ state: 'discarded', limit: 1, ...(page1.cursor ? { cursor: page1.cursor } : {}) });
    expect(page2.jobs[0]?.id).not.toBe(page1.jobs[0]?.id);
  });
});

describe('enqueue inside a domain transaction (the outbox)', () => {
  it('TheJobCommitsWithTheDomainChangeOrNotAtAll', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const domainTable = fx.tableNames.jobs; // any table serves as the "domain" row's home
    await fx.clients.dynamo.send(new PutCommand({ TableName: domainTable, Item: { id: 'contact#1', status: 'Calling' } }));
    const markCompleted = (expected: string) => ({
      Update: {
        TableName: domainTable,
        Key: { id: 'contact#1' },
        UpdateExpression: 'SET #s = :done',
        ConditionExpression: '#s = :expected',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':done': 'Completed', ':expected': expected },
      },
    });

    // The domain condition fails: no job row exists afterwards, and nothing is sent.
    const refused = fx.jobs.client.prepare(kinds.flakyKind, { failTimes: 0 }, { id: 'outbox-refused' });
    await expect(fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [markCompleted('Queued'), refused.item] }))).rejects.toThrow();
    expect(await fx.jobs.store.get('outbox-refused')).toBeUndefined();

    // The domain condition holds: both commit, and the wake-up is sent after the commit.
    const accepted = fx.jobs.client.prepare(kinds.flakyKind, { failTimes: 0 }, { id: 'outbox-accepted' });
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [markCompleted('Calling'), accepted.item] }));
    await fx.jobs.client.afterCommit([accepted]);
    await fx.settle();
    expect((await fx.jobs.store.mustGet('outbox-accepted')).state).toBe('completed');
  });

  it('ACancelRequestInADomainTransactionNeverFailsItAndStopsThePendingJobAtItsWakeUp', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const { id } = await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { delayMs: 120_000 });
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [fx.jobs.client.requestCancelItem(id)] }));
    await fx.settle();
    expect(kinds.runsOf(id)).toHaveLength(0);
    expect((await fx.jobs.store.mustGet(id)).state).toBe('cancelled');
  });
});
