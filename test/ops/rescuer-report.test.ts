import { describe, expect, it } from 'vitest';
import type { Logger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { RESCUED_METRIC, RESCUER_BEHIND_METRIC, RESCUER_REPORT_MESSAGE, reportRescue } from '../../functions/ops/rescuer-report.ts';

/** A logger that keeps its info lines. */
function listeningLogger() {
  const lines: [string, unknown][] = [];
  return { lines, logger: { info: (message: string, extra: unknown) => lines.push([message, extra]) } as unknown as Logger };
}

describe('rescuer report', () => {
  it('LogsEveryPassAndCountsWhatItRescuedByAction', () => {
    const { lines, logger } = listeningLogger();
    const metrics = new MemoryMetrics();
    const report = { expired: 2, rewoken: 0, periodic: 1, looked: 40, rechecked: 3, caughtUp: true };
    expect(reportRescue(report, logger, metrics)).toBe(report);
    expect(lines).toEqual([[RESCUER_REPORT_MESSAGE, { expired: 2, rewoken: 0, periodic: 1, looked: 40, rechecked: 3, caughtUp: true }]]);
    expect(metrics.list()).toEqual([
      { name: RESCUED_METRIC, dimensions: { action: 'expired' }, value: 2 },
      { name: RESCUED_METRIC, dimensions: { action: 'periodic' }, value: 1 },
    ]);
  });

  it('LogsAPassThatFoundNothingButPublishesNoMetricForIt', () => {
    const { lines, logger } = listeningLogger();
    const metrics = new MemoryMetrics();
    reportRescue({ expired: 0, rewoken: 0, periodic: 0, looked: 0, rechecked: 0, caughtUp: true }, logger, metrics);
    expect(lines).toHaveLength(1);
    expect(metrics.list()).toEqual([]);
  });

  it('CountsAPassThatRanOutOfTimeBeforeItCaughtUp', () => {
    const { logger } = listeningLogger();
    const metrics = new MemoryMetrics();
    reportRescue({ expired: 300, rewoken: 0, periodic: 0, looked: 3000, rechecked: 0, caughtUp: false }, logger, metrics);
    expect(metrics.list()).toEqual([
      { name: RESCUED_METRIC, dimensions: { action: 'expired' }, value: 300 },
      { name: RESCUER_BEHIND_METRIC, dimensions: {}, value: 1 },
    ]);
  });
});
