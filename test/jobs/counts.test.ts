import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { COUNTS_LOST_METRIC, CountStore, dayOf, kindCounterId, scopeCounterId, Tally, workerScope } from '../../functions/jobs/counts.ts';
import type { JobRow } from '../../functions/jobs/index.ts';
import { allStates } from '../../functions/jobs/states.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds } from './kinds.ts';

const HOUR = 3600_000;
const DAY = 86400_000;

/** The counts the rows say: per kind, per state. */
function truth(rows: readonly JobRow[]): Record<string, Record<string, number>> {
  const byKind: Record<string, Record<string, number>> = {};
  for (const row of rows) {
    byKind[row.kind] ??= Object.fromEntries(allStates.map((s) => [s, 0]));
    byKind[row.kind]![row.state]! += 1;
  }
  return byKind;
}

describe('job counts: maintained counters, never a read of the jobs', () => {
  it('FollowWorkersRunningBatchesAtOnce_RetriesDiscardsCancelsAndABulkRetry_AndAreReadWithBatchGetsOnly', async () => {
    const kinds = testKinds({ maxAttempts: 2, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const ids: string[] = [];
    const enqueue = async (job: Promise<{ id: string }>) => ids.push((await job).id);
    await Promise.all([
      ...Array.from({ length: 30 }, () => enqueue(fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }))),
      ...Array.from({ length: 10 }, () => enqueue(fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 5 }))),
      ...Array.from({ length: 10 }, () => enqueue(fx.jobs.client.enqueue(kinds.pickyKind, { status: 410 }))),
      ...Array.from({ length: 5 }, () => enqueue(fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { delayMs: DAY }))),
    ]);
    await fx.settle(HOUR);
    const waiting = (await fx.jobs.client.list({ state: 'scheduled', limit: 10 })).jobs;
    expect(waiting).toHaveLength(5);
    await Promise.all(waiting.slice(0, 2).map((row) => fx.jobs.client.cancel(row.id)));

    const check = async () => {
      const rows = await Promise.all(ids.map((id) => fx.jobs.store.mustGet(id)));
      const before = fx.counter.toJSON();
      const counts = await fx.jobs.client.count(['test.flaky', 'test.picky']);
      const after = fx.counter.toJSON();
      // One BatchGetItem of counter items per 100 keys: no Query, no Scan.
      expect(Object.keys(after).filter((op) => after[op] !== before[op])).toEqual(['DynamoDB.BatchGetItem']);
      expect(counts.byKind).toEqual(truth(rows));
      return counts;
    };
    const first = await check();
    expect(first.deadLetters).toEqual([
      { state: 'discarded', kind: 'test.flaky', reason: 'exhausted', count: 10 },
      { state: 'discarded', kind: 'test.picky', reason: 'http_4xx', count: 10 },
      { state: 'cancelled', kind: 'test.flaky', reason: null, count: 2 },
    ]);

    // A bulk retry takes the dead letters out; test.picky discards them again (its attempts record it).
    expect(await fx.jobs.client.retryMatching({ state: 'discarded', kind: 'test.picky' })).toEqual({ matched: 10, changed: 10 });
    await fx.settle(HOUR);
    const second = await check();
    expect(second.deadLetters.find((d) => d.kind === 'test.picky')).toEqual({ state: 'discarded', kind: 'test.picky', reason: 'http_4xx', count: 10 });
    expect(second.byState).toMatchObject({ completed: 30, discarded: 20, cancelled: 2, scheduled: 3, running: 0, available: 0 });
  });

  it('FlushesRacingOnTheSameCounterItemsLoseNoDelta', async () => {
    const fx = await jobsFixture();
    const stores = Array.from({ length: 24 }, () => new CountStore({ db: fx.clients.dynamo, tableName: fx.tableNames.jobs, logger: fx.logger, metrics: fx.metrics }));
    const today = dayOf(fx.clock.now());
    // 24 flushes at once over 8 counter items per kind: at least three land on one item together.
    await Promise.all(
      stores.map((store) => {
        const tally = new Tally();
        tally.move('race.kind', undefined, 'available');
        tally.move('race.kind', 'available', 'running');
        tally.deadLetter(today, 'discarded|race.kind|http_4xx', 1);
        return store.flush(tally);
      }),
    );
    await Promise.all(
      stores.map((store) => {
        const tally = new Tally();
        tally.move('race.kind', 'running', 'discarded');
        return store.flush(tally);
      }),
    );
    const counts = await stores[0]!.read(['race.kind'], { now: fx.clock.now(), discardedRetentionDays: 30, cancelledRetentionDays: 30 });
    expect(counts.byKind['race.kind']).toMatchObject({ available: 0, running: 0, discarded: 24 });
    expect(counts.deadLetters).toEqual([{ state: 'discarded', kind: 'race.kind', reason: 'http_4xx', count: 24 }]);
    expect(fx.metrics.total(COUNTS_LOST_METRIC)).toBe(0);
  });

  it('CountOnlyTheDeadLettersRetentionStillKeeps', async () => {
    const fx = await jobsFixture();
    const store = new CountStore({ db: fx.clients.dynamo, tableName: fx.tableNames.jobs, logger: fx.logger, metrics: fx.metrics });
    const now = fx.clock.now();
    const tally = new Tally();
    tally.deadLetter(dayOf(now - 40 * DAY), 'discarded|old.kind|http_4xx', 5);
    tally.deadLetter(dayOf(now - 2 * DAY), 'discarded|old.kind|http_4xx', 3);
    await store.flush(tally);
    const read = (days: number) => store.read(['old.kind'], { now, discardedRetentionDays: days, cancelledRetentionDays: 30 });
    expect((await read(30)).byKind['old.kind']?.discarded).toBe(3);
    expect((await read(60)).byKind['old.kind']?.discarded).toBe(8);
  });

  it('AFlushTouchingSeveralKindsIsOneWrite_ToOneCounterItemOfItsScope', async () => {
    const fx = await jobsFixture();
    const store = new CountStore({ db: fx.clients.dynamo, tableName: fx.tableNames.jobs, logger: fx.logger, metrics: fx.metrics, queues: ['webhooks'] });
    const before = fx.counter.toJSON()['DynamoDB.UpdateItem'] ?? 0;
    // A fanout batch: two fanouts run, each creating deliveries (another queue's kind), one parked.
    await store.within(async () => {
      await store.record((tally) => {
        tally.move('a.fanout', 'available', 'completed');
        tally.move('a.fanout', 'available', 'completed');
        tally.move('a.deliver', undefined, 'available');
        tally.move('a.deliver', undefined, 'scheduled');
        tally.move('a.notify', undefined, 'available');
      });
    }, workerScope('webhooks'));
    expect((fx.counter.toJSON()['DynamoDB.UpdateItem'] ?? 0) - before).toBe(1);
    const counts = await store.read(['a.fanout', 'a.deliver', 'a.notify'], { now: fx.clock.now(), discardedRetentionDays: 30, cancelledRetentionDays: 30 });
    expect(counts.byKind['a.fanout']).toMatchObject({ available: -2, completed: 2 });
    expect(counts.byKind['a.deliver']).toMatchObject({ available: 1, scheduled: 1 });
    expect(counts.byState).toMatchObject({ available: 0, scheduled: 1, completed: 2 });
    // A scope no reader knows is refused before it runs anything: its counts would never be read.
    let ran = false;
    await expect(store.within(async () => void (ran = true), workerScope('nobody'))).rejects.toThrow(RangeError);
    expect(ran).toBe(false);
  });

  it('CountersAStackWroteOnePerKind_BeforeScopes_AreStillReadAndSummed', async () => {
    const fx = await jobsFixture();
    const store = new CountStore({ db: fx.clients.dynamo, tableName: fx.tableNames.jobs, logger: fx.logger, metrics: fx.metrics, queues: ['webhooks'] });
    // What an earlier deploy left: one item per kind and shard.
    await fx.clients.dynamo.send(new PutCommand({ TableName: fx.tableNames.jobs, Item: { id: kindCounterId('old.kind', 3), kind: 'old.kind', completed: 7, running: 1, available: 2 } }));
    const tally = new Tally();
    tally.move('old.kind', 'running', 'completed');
    tally.move('old.kind', 'available', 'running');
    await store.flush(tally, workerScope('webhooks'));
    const written = await fx.jobs.store.get(scopeCounterId(workerScope('webhooks'), 0));
    expect(written).toBeUndefined(); // a counter item is not a job
    const counts = await store.read(['old.kind'], { now: fx.clock.now(), discardedRetentionDays: 30, cancelledRetentionDays: 30 });
    expect(counts.byKind['old.kind']).toMatchObject({ completed: 8, running: 1, available: 1 });
  });

  it('AFlushThatFailsNeverFailsTheWorkItCounts_ItIsCountedAsLost', async () => {
    const metrics = new MemoryMetrics();
    const failing = { send: () => Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })) } as unknown as DynamoDBDocumentClient;
    const store = new CountStore({ db: failing, tableName: 'jobs', logger: createLogger('test'), metrics });
    const tally = new Tally();
    tally.move('k', undefined, 'available');
    await expect(store.flush(tally)).resolves.toBeUndefined();
    expect(metrics.total(COUNTS_LOST_METRIC)).toBe(1);
  });
});
