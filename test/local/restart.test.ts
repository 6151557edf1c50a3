import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalRuntime } from '../../functions/local/runtime.ts';
import { probeKind } from '../../functions/ops/probe.ts';

describe('the local runtime across a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'redial-restart-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  // Two DynamoDB Local starts (JVMs) and 7.2 s of scaled waiting: ~20 s alone, more on a loaded 2-core machine.
  it('KeepsItsJobsAndScaledTimeAndWakesWhatWasPendingWhenItStarts', { timeout: 120_000 }, async () => {
    const first = await startLocalRuntime({ port: 0, dataDir, timeScale: 0.001 });
    const { id } = await first.jobs.client.enqueue(probeKind, { failTimes: 0 }, { delayMs: 2 * 3600_000 }); // 7.2 s of real time
    const stoppedAt = first.clock.now();
    await first.stop();

    const second = await startLocalRuntime({ port: 0, dataDir, timeScale: 0.001 });
    try {
      expect(second.clock.now()).toBeGreaterThanOrEqual(stoppedAt);
      // Kept across the restart. Usually still waiting; on a loaded machine the two JVM starts can take longer
      // than the 7.2 s, and the second runtime may have run it already: either way it was not lost or run early.
      expect(['scheduled', 'running', 'completed']).toContain((await second.jobs.store.get(id))?.state);
      const deadline = Date.now() + 20_000;
      while ((await second.jobs.store.get(id))?.state !== 'completed' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const row = await second.jobs.store.get(id);
      expect(row?.state).toBe('completed');
      // It ran at its time in job time, not hours late and not early.
      expect(Date.parse(row!.attemptedAt!)).toBeGreaterThanOrEqual(Date.parse(row!.scheduledAt));
    } finally {
      await second.stop();
    }
  });
});
