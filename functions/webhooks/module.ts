import { defineModule } from '../jobs/index.ts';
import { webhooksQueues } from './queues.ts';
import { webhookRoutes } from './api.ts';
import { webhookKinds } from './kinds.ts';
import type { WebhooksContext } from './context.ts';
import { webhooksTable } from './events.ts';

export type { WebhookHost, WebhookOptions, WebhooksContext } from './context.ts';

/**
 * The webhooks context: endpoints, events, fanout, signed delivery with one delivery per endpoint in flight
 * and one probe while it fails, the 5-day rule, redeliver, and the SSRF guard. Its dependencies are the
 * assembled context (functions/webhooks/context.ts `createWebhooksContext`).
 */
export const webhooksModule = defineModule({
  name: 'webhooks',
  tables: { webhooks: webhooksTable },
  queues: webhooksQueues,
  kinds: webhookKinds,
  handlers: (context: WebhooksContext) => context.handlers,
  routes: (context: () => WebhooksContext) => webhookRoutes(context),
});
