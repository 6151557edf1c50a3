import type { RescueReport } from '../jobs/index.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';

/** Jobs the rescuer acted on, by `action`: expired (a lost worker's lease), rewoken (a lost wake-up), periodic. */
export const RESCUED_METRIC = 'RescuedJobs';

/** The message of the log line that carries each rescuer pass's report (the dashboard queries it). */
export const RESCUER_REPORT_MESSAGE = 'rescuer pass';

/** Counted on a pass that ran out of its time budget (or met a write it could not make) before it caught up: the next goes on from there. */
export const RESCUER_BEHIND_METRIC = 'RescuerBehind';

/** The rescuer's actions, as `RescuedJobs` counts them. */
const ACTIONS = ['expired', 'rewoken', 'periodic'] as const;

/**
 * Makes one rescuer pass visible: its report logged (every pass, so "it ran and found nothing" is on record
 * too), what it did counted per action, and a pass that did not catch up counted. Zero counts are not
 * published, so an idle stack publishes no custom metric.
 */
export function reportRescue(report: RescueReport, logger: Logger, metrics: MetricsSink): RescueReport {
  logger.info(RESCUER_REPORT_MESSAGE, { ...report });
  for (const action of ACTIONS) {
    if (report[action] > 0) metrics.count(RESCUED_METRIC, { action }, report[action]);
  }
  if (!report.caughtUp) metrics.count(RESCUER_BEHIND_METRIC);
  return report;
}
