import { discard } from '../jobs/index.ts';
import type { JobContext } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { deliveryJobId, subscribes, waitKey } from './endpoint.ts';
import type { WebhookEvent } from './events.ts';
import { webhookDeliverKind } from './kinds.ts';
import { leaseTaken } from './lease.ts';
import type { WaitList } from './waitlist.ts';

/**
 * The webhook.fanout handler, for an event whose tenant has more subscribed endpoints than the publishing
 * transaction takes (publish.ts, DIRECT_MAX_ENDPOINTS): per enabled, subscribed endpoint, what publishing
 * does in the transaction, here one write at a time — a webhook.deliver job due now where the lease is
 * free, a wait-list entry carrying the event where another delivery holds it (the holder sends it), then
 * the second look at those endpoints: a lease let go in between goes to the oldest waiting delivery.
 *
 * Delivery job ids are `webhook.deliver:<event>:<endpoint>` and an entry's key follows from the event and
 * that id, so a fanout that runs again creates no second job or entry; an entry it puts again after its
 * delivery was sent and removed is sent again (at least once, with the same webhook-id).
 */
export async function fanout(deps: WebhookDeps, waitList: WaitList, args: { eventId: string; event?: WebhookEvent | undefined; exclude?: string[] | undefined }, ctx: JobContext): Promise<{ created: number; parked: number }> {
  const { store, jobs } = deps;
  const event = args.event ?? (await store.getEvent(args.eventId));
  if (!event) throw discard('not_found', `event ${args.eventId} not found (pruned after its retention, or never committed)`);
  const endpoints = await store.tenantEndpoints(event.tenantId);
  const targets = endpoints.filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type) && !args.exclude?.includes(endpoint.endpointId));
  const now = ctx.now();
  const results = await Promise.all(
    targets.map(async (endpoint) => {
      const id = deliveryJobId(event.id, endpoint.endpointId);
      if (!leaseTaken(endpoint, now)) {
        const enqueued = await jobs.enqueue(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId, event }, { id });
        return { created: enqueued.created, parked: undefined };
      }
      await store.putPending(waitKey(endpoint.endpointId, event.timestamp, id), id, event, now);
      return { created: false, parked: endpoint.endpointId };
    }),
  );
  const parked = results.flatMap((r) => (r.parked ? [r.parked] : []));
  if (parked.length > 0) {
    // The second look: a holder that let go after the first read may not have seen the entry.
    const again = await Promise.all(parked.map((endpointId) => store.getEndpoint(endpointId)));
    for (const endpoint of again) {
      if (endpoint && !leaseTaken(endpoint, ctx.now())) await waitList.restart(endpoint.endpointId, ctx.now());
    }
  }
  const created = results.filter((r) => r.created).length;
  ctx.logger.debug('fanout', { eventId: event.id, endpoints: endpoints.length, targets: targets.length, created, parked: parked.length });
  return { created, parked: parked.length };
}
