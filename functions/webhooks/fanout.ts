import { discard } from '../jobs/index.ts';
import type { JobContext } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { deliveryJobId, subscribes, waitKey } from './endpoint.ts';
import type { EndpointRow } from './endpoint.ts';
import { webhookDeliverKind } from './kinds.ts';
import { leaseOf, leaseStateOf, PARK_MS } from './lease.ts';
import type { WaitList } from './waitlist.ts';

/**
 * The webhook.fanout handler: one webhook.deliver per enabled endpoint of the event's tenant that
 * subscribes to its type. Delivery job ids are `webhook.deliver:<event>:<endpoint>`, so a fanout that runs
 * again (a retry, a duplicate wake-up) creates nothing new.
 *
 * A delivery to an endpoint whose lease another delivery holds is **parked at creation**: enqueued
 * dormant (no wake-up, due only as PARK_MS's backstop) and put in the endpoint's wait list, so it never
 * runs just to find the endpoint busy; the holder hands it the lease and starts it. Then, as a parker
 * does (docs/webhooks.md, "Races"), the fanout looks at those endpoints once more: a lease let go in
 * between is given to the oldest waiting delivery, which is woken. Deliveries to a free endpoint are
 * enqueued to run at once.
 */
export async function fanout(deps: WebhookDeps, waitList: WaitList, args: { eventId: string }, ctx: JobContext): Promise<{ created: number; existing: number; parked: number }> {
  const { store, jobs } = deps;
  const event = await store.getEvent(args.eventId);
  if (!event) throw discard('not_found', `event ${args.eventId} not found (pruned after its retention, or never committed)`);
  const endpoints = await store.tenantEndpoints(event.tenantId);
  const targets = endpoints.filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type));
  const now = ctx.now();
  const busy = (endpoint: EndpointRow) => leaseOf(leaseStateOf(endpoint), '', now) === 'taken';
  const results = await Promise.all(
    targets.map(async (endpoint) => {
      const id = deliveryJobId(event.id, endpoint.endpointId);
      const args = { eventId: event.id, endpointId: endpoint.endpointId };
      if (!busy(endpoint)) return { ...(await jobs.enqueue(webhookDeliverKind, args, { id })), parked: undefined };
      // The job first, then its entry: a holder that finds the entry always finds the job.
      const enqueued = await jobs.enqueue(webhookDeliverKind, args, { id, at: now + PARK_MS, dormant: true });
      const createdAt = enqueued.created ? enqueued.createdAt : await stillWaiting(deps, id);
      if (createdAt === undefined) return { ...enqueued, parked: undefined };
      await store.park(waitKey(endpoint.endpointId, createdAt, id), id, now, undefined, event.id);
      return { ...enqueued, parked: endpoint.endpointId };
    }),
  );
  const parked = results.flatMap((r) => (r.parked ? [r.parked] : []));
  if (parked.length > 0) {
    // The second look: a holder that let go after the first read may not have seen the entry.
    const again = await Promise.all(parked.map((endpointId) => store.getEndpoint(endpointId)));
    for (const endpoint of again) {
      if (endpoint && !busy(endpoint)) await waitList.restart(endpoint.endpointId, now);
    }
  }
  const created = results.filter((r) => r.created).length;
  ctx.logger.debug('fanout', { eventId: event.id, endpoints: endpoints.length, targets: targets.length, created, parked: parked.length });
  return { created, existing: results.length - created, parked: parked.length };
}

/** The createdAt of a delivery a fanout created before (it runs again), if that delivery still waits. */
async function stillWaiting(deps: WebhookDeps, id: string): Promise<string | undefined> {
  const row = await deps.jobs.get(id);
  return row && ['scheduled', 'snoozed', 'retryable'].includes(row.state) ? row.createdAt : undefined;
}


