import { describe, expect, it } from 'vitest';
import { crashedHandler, seedExpiredLeases } from '../../bench/rescue.ts';
import { jobsFixture } from '../support/jobs.ts';

describe('rescuer: a backlog larger than one pass', () => {
  it('TwoThousandExpiredLeasesAreAllRescued_OncePerJob_AcrossPassesThatEachGoOnFromTheLastOnesWatermark', async () => {
    const fx = await jobsFixture({ handlers: [crashedHandler] });
    const { ids, leaseUntil } = await seedExpiredLeases(fx.clients.dynamo, fx.jobs.store, 2_000, fx.clock.now());
    fx.clock.set(leaseUntil + 1);

    // A stopwatch that moves one "ms" per look at it: a pass of 40 gets through some 40 pages of 20
    // entries, so 2,000 take several passes whatever the machine's speed. (10,000 and more, timed, are
    // `npm run bench -- jobs`'s; here the point is passes that go on from each other's watermarks.)
    let ticks = 0;
    const rescuer = fx.jobs.rescuer([crashedHandler], 180_000, { budgetMs: 40, pageSize: 20, elapsed: () => ticks++ });
    const reports = [];
    for (let pass = 0; pass < 50; pass++) {
      const report = await rescuer.run();
      reports.push(report);
      if (report.caughtUp) break;
    }
    expect(reports.length).toBeGreaterThanOrEqual(3);
    expect(reports.at(-1)?.caughtUp).toBe(true);
    expect(reports.slice(0, -1).every((r) => !r.caughtUp && r.expired > 0)).toBe(true);
    expect(reports.reduce((sum, r) => sum + r.expired, 0)).toBe(2_000);

    const rows = (await fx.jobs.client.list({ state: 'retryable', kind: 'bench.crashed', limit: 200 })).jobs;
    expect(rows.length).toBeGreaterThan(0);
    const sample = await Promise.all(ids.filter((_, i) => i % 10 === 0).map((id) => fx.jobs.store.mustGet(id)));
    for (const row of sample) {
      expect(row, row.id).toMatchObject({ state: 'retryable', seq: 2, attempt: 1 });
      expect(row.attempts.map((a) => a.outcome), row.id).toEqual(['lost']);
    }
    // Every one was woken once: one wake-up per job, none twice.
    const woken = fx.recording.sent.map((s) => s.body.jobId);
    expect(woken).toHaveLength(2_000);
    expect(new Set(woken).size).toBe(2_000);
    // Nothing is left: the next pass at the same time finds every entry behind its watermarks.
    expect(await rescuer.run()).toMatchObject({ expired: 0, rewoken: 0, caughtUp: true });
  }, 240_000);
});
