import { describe, expect, it } from 'vitest';
import { crashedHandler, seedExpiredLeases } from '../../bench/rescue.ts';
import { Watermarks } from '../../functions/jobs/watermarks.ts';
import { CHECK_SHARDS, checkShard } from '../../functions/jobs/row.ts';
import { jobsFixture } from '../support/jobs.ts';

/** Jobs left running by the crash wave of the first test. */
const BACKLOG = 400;

describe('rescuer: a backlog larger than one pass', () => {
  it('FourHundredExpiredLeasesAreAllRescued_OncePerJob_AcrossPassesThatEachGoOnFromTheLastOnesWatermark', async () => {
    const fx = await jobsFixture({ handlers: [crashedHandler] });
    const { ids, leaseUntil } = await seedExpiredLeases(fx.clients.dynamo, fx.jobs.store, BACKLOG, fx.clock.now());
    fx.clock.set(leaseUntil + 1);

    // A stopwatch that moves one "ms" per look at it: a pass of 40 gets through some 40 pages of 5
    // entries (enough to look at all 32 partitions once the backlog is gone), and each partition holds
    // some 3 pages, so 400 take three passes that stop inside partitions, whatever the machine's speed.
    // (10,000, timed, are `npm run bench -- jobs`'s; here the point is passes that go on from each
    // other's watermarks, which 400 in pages of 5 prove as 2,000 in pages of 20 did, at a fifth of the cost.)
    let ticks = 0;
    const rescuer = fx.jobs.rescuer([crashedHandler], 180_000, { budgetMs: 40, pageSize: 5, elapsed: () => ticks++ });
    const reports = [];
    for (let pass = 0; pass < 50; pass++) {
      const report = await rescuer.run();
      reports.push(report);
      if (report.caughtUp) break;
    }
    expect(reports.length).toBeGreaterThanOrEqual(3);
    expect(reports.at(-1)?.caughtUp).toBe(true);
    expect(reports.slice(0, -1).every((r) => !r.caughtUp && r.expired > 0)).toBe(true);
    expect(reports.reduce((sum, r) => sum + r.expired, 0)).toBe(BACKLOG);

    const rows = (await fx.jobs.client.list({ state: 'retryable', kind: 'bench.crashed', limit: 200 })).jobs;
    expect(rows.length).toBeGreaterThan(0);
    const sample = await Promise.all(ids.filter((_, i) => i % 10 === 0).map((id) => fx.jobs.store.mustGet(id)));
    for (const row of sample) {
      expect(row, row.id).toMatchObject({ state: 'retryable', seq: 2, attempt: 1 });
      expect(row.attempts.map((a) => a.outcome), row.id).toEqual(['lost']);
    }
    // Every one was woken once: one wake-up per job, none twice.
    const woken = fx.recording.sent.map((s) => s.body.jobId);
    expect(woken).toHaveLength(BACKLOG);
    expect(new Set(woken).size).toBe(BACKLOG);
    // Nothing is left: the next pass at the same time finds every entry behind its watermarks.
    expect(await rescuer.run()).toMatchObject({ expired: 0, rewoken: 0, caughtUp: true });
  }, 240_000);

  it('PassesWhoseBudgetReachesFewerPartitionsThanThereAre_EachStartAfterTheLastOnesStop_SoEveryPartitionIsRescued', async () => {
    const fx = await jobsFixture({ handlers: [crashedHandler] });
    const { ids, leaseUntil } = await seedExpiredLeases(fx.clients.dynamo, fx.jobs.store, 320, fx.clock.now());
    fx.clock.set(leaseUntil + 1);
    expect(new Set(ids.map(checkShard)).size).toBe(CHECK_SHARDS);

    // One "ms" per look at the stopwatch: a pass of 8 reads the first page of 7 partitions, and each
    // holds one page (some 10 entries of 100). A pass that began at c00 every time would read c00…c06
    // in every pass and never reach the other 25; each pass goes on where the last one stopped instead.
    let ticks = 0;
    const elapsed = () => ticks++;
    const rescuer = fx.jobs.rescuer([crashedHandler], 180_000, { budgetMs: 8, elapsed });
    const reports = [];
    for (let pass = 0; pass < Math.ceil(CHECK_SHARDS / 7); pass++) reports.push(await rescuer.run());
    expect(reports.map((r) => r.expired > 0 && !r.caughtUp)).toEqual(reports.map(() => true));
    expect(reports.reduce((sum, r) => sum + r.expired, 0)).toBe(320);
    expect((await new Watermarks(fx.clients.dynamo, fx.jobs.store.tableName).read()).filter((mark) => mark === undefined)).toEqual([]);
    const woken = fx.recording.sent.map((s) => s.body.jobId);
    expect(woken).toHaveLength(320);
    expect(new Set(woken).size).toBe(320);

    // A pass with the budget to look at every partition finds nothing left behind.
    const whole = fx.jobs.rescuer([crashedHandler], 180_000, { elapsed });
    expect(await whole.run()).toMatchObject({ expired: 0, rewoken: 0, caughtUp: true });
  }, 120_000);
});
