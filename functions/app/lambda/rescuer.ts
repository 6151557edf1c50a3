// The rescuer, run every minute by EventBridge Scheduler. A failed pass is not retried: the next minute's is.
import middy from '@middy/core';
import type { RescueReport } from '../../jobs/index.ts';
import { callsConfigFromEnv } from '../../calls/config.ts';
import { reportRescue } from '../../ops/rescuer-report.ts';
import { lambdaHost } from '../aws.ts';
import { withMailLinks } from '../mail-parts.ts';
import { System } from '../system.ts';

// The mail context without a transport: the rescuer runs no job, only discard hooks (webhook.deliver's and
// webhook.recover's write markers), so it sends no mail, has no SES grant (lib/access.ts) and carries no SES client.
const { host, config, tracing } = lambdaHost('redial-rescuer', () => ({ calls: callsConfigFromEnv() }), withMailLinks);
const system = new System(() => host);
// Every context's handlers: their policies price a lost attempt, and their discard hooks run before its discards.
const rescuer = host.jobs.rescuer(system.allHandlers(), config.RESCUE_AFTER_SECONDS * 1000);

export const handler = middy<unknown, RescueReport>()
  .use(tracing.handlerMiddleware())
  .handler(async () => reportRescue(await rescuer.run(), host.logger, host.metrics));
