import { prepareEndpointDisabledNotice } from '../../mail/owner.ts';
import { createWebhooksContext } from '../../webhooks/context.ts';
import type { WebhooksContext } from '../../webhooks/module.ts';
import type { SystemHost } from '../host.ts';

/** The webhooks context over a host: endpoints, fanout, delivery, the sweep. */
export function buildWebhooks(host: SystemHost): WebhooksContext {
  return createWebhooksContext({
    jobs: host.jobs.client,
    db: host.db,
    table: host.tableNames.webhooks,
    clock: host.clock,
    ...(host.wallClock ? { wallClock: host.wallClock } : {}),
    logger: host.logger,
    metrics: host.metrics,
    ...(host.secretKey ? { secretKey: host.secretKey } : {}),
    ...(host.webhooks ? { webhooks: host.webhooks } : {}),
    ...(host.webhookStore ? { store: host.webhookStore } : {}),
    // An endpoint's disabling mails the tenant's owner: the mail context's owner.notify, committed with the notice.
    ownerMail: {
      endpointDisabled: (input) => {
        const job = prepareEndpointDisabledNotice(host.jobs.client, input);
        return { items: [job.item], jobs: [job] };
      },
    },
  });
}
