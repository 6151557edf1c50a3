// The rescuer, run every minute by EventBridge Scheduler. A failed pass is not retried: the next minute's is.
import middy from '@middy/core';
import type { RescueReport } from '../../jobs/index.ts';
import { reportRescue } from '../../ops/rescuer-report.ts';
import { lambdaHost } from '../aws.ts';
import { buildWebhooks } from '../contexts/webhooks.ts';
import { rescuerHandlers } from '../rescuer-handlers.ts';

// Every kind, and the discard hooks of the webhooks context (webhook.deliver's and webhook.recover's write
// markers): the rescuer runs no job, so it builds no other context, sends no mail, has no SES grant
// (lib/access.ts) and carries neither the SES client nor the other contexts' code.
const { host, config, tracing } = lambdaHost('redial-rescuer');
const rescuer = host.jobs.rescuer(rescuerHandlers(buildWebhooks(host).handlers), config.RESCUE_AFTER_SECONDS * 1000);

export const handler = middy<unknown, RescueReport>()
  .use(tracing.handlerMiddleware())
  .handler(async () => reportRescue(await rescuer.run(), host.logger, host.metrics));
