import type { RescueReport } from '../jobs/index.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';

/** Jobs the rescuer acted on, by `action`: expired (a lost worker's lease), rewoken (a lost wake-up), periodic. */
export const RESCUED_METRIC = 'RescuedJobs';

/** The message of the log line that carries each rescuer pass's report (the dashboard queries it). */
export const RESCUER_REPORT_MESSAGE = 'rescuer pass';

/**
 * Makes one rescuer pass visible: its report logged (every pass, so "it ran and found nothing" is on record
 * too), and what it did counted per action. Zero counts are not published, so an idle stack publishes no
 * custom metric.
 */
export function reportRescue(report: RescueReport, logger: Logger, metrics: MetricsSink): RescueReport {
  logger.info(RESCUER_REPORT_MESSAGE, { ...report });
  const counts: Record<string, number> = { ...report };
  for (const [action, count] of Object.entries(counts)) {
    if (count > 0) metrics.count(RESCUED_METRIC, { action }, count);
  }
  return report;
}
