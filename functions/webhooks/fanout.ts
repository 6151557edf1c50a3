import { discard } from '../jobs/index.ts';
import type { JobContext } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { deliveryJobId, subscribes } from './endpoint.ts';
import { webhookDeliverKind } from './kinds.ts';

/**
 * The webhook.fanout handler: one webhook.deliver per enabled endpoint of the event's tenant that
 * subscribes to its type. Delivery job ids are `webhook.deliver:<event>:<endpoint>`, so a fanout that runs
 * again (a retry, a duplicate wake-up) creates nothing new. Deliveries to a failing or busy endpoint are
 * enqueued all the same: they park behind its lease and spend no attempt until it is their turn.
 */
export async function fanout(deps: WebhookDeps, args: { eventId: string }, ctx: JobContext): Promise<{ created: number; existing: number }> {
  const event = await deps.store.getEvent(args.eventId);
  if (!event) throw discard('not_found', `event ${args.eventId} not found (pruned after its retention, or never committed)`);
  const endpoints = await deps.store.tenantEndpoints(event.tenantId);
  const targets = endpoints.filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type));
  const results = await Promise.all(
    targets.map((endpoint) =>
      deps.jobs.enqueue(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId }, { id: deliveryJobId(event.id, endpoint.endpointId) }),
    ),
  );
  const created = results.filter((r) => r.created).length;
  ctx.logger.debug('fanout', { eventId: event.id, endpoints: endpoints.length, targets: targets.length, created });
  return { created, existing: results.length - created };
}
