// The rescuer, run every minute by EventBridge Scheduler. A failed pass is not retried: the next minute's is.
import type { RescueReport } from '../../jobs/index.ts';
import { reportRescue } from '../../ops/rescuer-report.ts';
import { awsSystem } from '../aws.ts';

const { system, host, config } = awsSystem('redial-rescuer');
// Every context's handlers: their policies price a lost attempt, and their discard hooks run before its discards.
const rescuer = host.jobs.rescuer(system.allHandlers(), config.RESCUE_AFTER_SECONDS * 1000);

export const handler = async (): Promise<RescueReport> => reportRescue(await rescuer.run(), host.logger, host.metrics);
