import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { deliveryJobId, subscribes, waitKey } from './endpoint.ts';
import { newEvent, webhookFanoutKind } from './events.ts';
import type { EventType, WebhookEvent } from './events.ts';
import { webhookDeliverKind, webhookRestartKind } from './kinds.ts';
import { LEASE_MS, leaseTaken } from './lease.ts';
import type { WebhookStore } from './store.ts';

/**
 * At most this many endpoints get their deliveries in the publishing transaction itself; an event for more
 * goes through one webhook.fanout job instead. A delivery written there costs two write units (a
 * transaction's), one written by a fanout one, and the fanout job itself about five (its put in the
 * transaction, its check entry, its claim and completion): up to five endpoints, the transaction is cheaper.
 */
export const DIRECT_MAX_ENDPOINTS = 5;

/** What publishing an event adds to the publisher's transaction, and what to do once it has committed. */
export interface Publication {
  event: WebhookEvent;
  items: TransactItem[];
  /**
   * After the commit: the lease of each free endpoint taken for its new delivery, and that delivery woken
   * (or, if another took the lease meanwhile, parked behind it with no wake-up); the second look at the
   * endpoints found busy. It sends the publication's wake-ups itself, and never throws.
   */
  afterCommit(): Promise<void>;
}

/**
 * Publishing an event, inside the transaction of the change it announces (the transactional outbox):
 *
 * ```
 *  subscribed, enabled endpoints of the tenant (read before, eventually consistent; never the secret)
 *    none ───────────► nothing at all
 *    more than 5 ────► one webhook.fanout job, the event in its arguments (fanout.ts does the rest)
 *    each endpoint:
 *      lease free ───► its webhook.deliver job, the event in its arguments, due now; after the commit
 *                      the publisher takes the lease for it (so later events wait behind it)
 *      lease taken ──► a wait-list entry carrying the event, and no job: whoever holds the lease sends
 *                      it within its own run (delivery.ts); after the commit, one consistent look at the
 *                      lease: let go meanwhile → a webhook.restart job starts the list
 * ```
 *
 * The second look closes the race with a holder that let go between the first read and the commit: the
 * holder reads the list once more after it lets go, and this look sees the lease let go, so one of the
 * two always sees the other (docs/webhooks.md, "Races"). The event is not stored apart: it travels in each
 * delivery's job or entry.
 */
export class Publisher {
  private readonly store: WebhookStore;
  private readonly jobs: JobClient;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(deps: { store: WebhookStore; jobs: JobClient; clock: Clock; logger: Logger }) {
    this.store = deps.store;
    this.jobs = deps.jobs;
    this.clock = deps.clock;
    this.logger = deps.logger;
  }

  /**
   * The writes that publish an event, for the caller's TransactWriteItems; after the commit, call
   * `afterCommit()` (it sends the wake-ups of the jobs among the items).
   *
   * @example
   * const published = await publisher.prepare({ tenantId, type: EventType.callCompleted, data }, clock.now());
   * const outcome = await transact(db, [...domainItems, ...published.items]);
   * if (outcome.committed) await published.afterCommit();
   */
  async prepare(input: { tenantId: string; type: EventType; data: Record<string, unknown>; id?: string }, now: number): Promise<Publication> {
    const event = newEvent(input, now);
    const targets = (await this.store.routing(event.tenantId)).filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type));
    if (targets.length === 0) return { event, items: [], afterCommit: () => Promise.resolve() };
    if (targets.length > DIRECT_MAX_ENDPOINTS) {
      const fanout = this.jobs.prepare(webhookFanoutKind, { eventId: event.id, event }, { id: `webhook.fanout:${event.id}` });
      return { event, items: [fanout.item], afterCommit: () => this.jobs.afterCommit([fanout]) };
    }
    const items: TransactItem[] = [];
    const busy: string[] = [];
    const free: { endpointId: string; job: PreparedJob }[] = [];
    for (const endpoint of targets) {
      const id = deliveryJobId(event.id, endpoint.endpointId);
      if (leaseTaken(endpoint, now)) {
        items.push(this.store.pendingItem(waitKey(endpoint.endpointId, event.timestamp, id), id, event, now));
        busy.push(endpoint.endpointId);
      } else {
        const job = this.jobs.prepare(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId, event }, { id });
        items.push(job.item);
        free.push({ endpointId: endpoint.endpointId, job });
      }
    }
    return { event, items, afterCommit: () => Promise.all([this.takeLeases(free, event), this.secondLook(busy, event.id)]).then(() => undefined) };
  }

  /**
   * Takes the free lease of each endpoint for the delivery just committed to it, then wakes it: the events
   * published after it find the endpoint busy and wait in its list (one write each) instead of each being a
   * job that runs only to find the endpoint busy. If another publisher's delivery took the lease in between
   * (events published at once), this one waits behind it as a parked job, with no wake-up (the holder hands
   * it the lease; its rescuer check, a lease after it was due, is the backstop) — after one more try for the
   * lease, which closes the race with a holder that let go before the entry was written (the holder reads
   * the list once more after it lets go).
   */
  private async takeLeases(deliveries: readonly { endpointId: string; job: PreparedJob }[], event: WebhookEvent): Promise<void> {
    await Promise.all(
      deliveries.map(async ({ endpointId, job }) => {
        const take = () => {
          const now = this.clock.now();
          return this.store.takeLeaseFor(endpointId, job.id, now, now + LEASE_MS);
        };
        try {
          if (!(await take())) {
            await this.store.park(waitKey(endpointId, event.timestamp, job.id), job.id, this.clock.now(), undefined, event.id);
            if (!(await take())) return await this.jobs.afterCommit([job], { wake: false });
          }
        } catch (error) {
          // It takes the lease (or parks) itself when it runs.
          this.logger.warn('lease not taken for a published delivery; it takes it when it runs', { endpointId, jobId: job.id, error: String(error) });
        }
        await this.jobs.afterCommit([job]);
      }),
    );
  }

  /** The second look at endpoints an entry was put behind: a lease let go since is restarted by a job. */
  private async secondLook(endpointIds: readonly string[], eventId: string): Promise<void> {
    await Promise.all(
      endpointIds.map(async (endpointId) => {
        try {
          const row = await this.store.leaseOfEndpoint(endpointId);
          if (!row || leaseTaken(row, this.clock.now())) return;
          await this.jobs.enqueue(webhookRestartKind, { endpointId }, { id: `webhook.restart:${endpointId}:${eventId}` });
        } catch (error) {
          // The sweep restarts a list whose lease is free (docs/webhooks.md, "The sweep"): late, not lost.
          this.logger.warn('second look at a busy endpoint failed; the sweep will restart its list if it must', { endpointId, error: String(error) });
        }
      }),
    );
  }
}
