// The rescuer, run every minute by EventBridge Scheduler. A failed pass is not retried: the next minute's is.
import type { RescueReport } from '../../jobs/rescuer.ts';
import { awsSystem } from '../aws.ts';
import { reportRescue } from '../rescuer-report.ts';
import { allKinds } from '../system.ts';

const { deps, config } = awsSystem('redial-rescuer');
const rescuer = deps.jobs.rescuer(allKinds, config.RESCUE_AFTER_SECONDS * 1000);

export const handler = async (): Promise<RescueReport> => reportRescue(await rescuer.run(), deps.logger, deps.metrics);
