import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { deliveryJobId, subscribes, waitKey } from './endpoint.ts';
import { newEvent, webhookFanoutKind } from './events.ts';
import type { EventType, WebhookEvent } from './events.ts';
import { webhookDeliverKind, webhookRestartKind } from './kinds.ts';
import { keptEventItem } from './kept-events.ts';
import { leaseTaken } from './lease.ts';
import type { LeaseTerms } from './lease.ts';
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
  /** After the commit: the publication's jobs woken, and the second look at the endpoints found busy. Never throws. */
  afterCommit(): Promise<void>;
  /** The transaction did not commit: the leases taken for its deliveries are given back. Never throws. */
  abandon(): Promise<void>;
}

/**
 * Publishing an event, inside the transaction of the change it announces (the transactional outbox):
 *
 * ```
 *  the tenant has an endpoint at all ─► the event kept 30 days (kept-events.ts), for recovery
 *  subscribed, enabled endpoints of the tenant (read before, eventually consistent; never the secret)
 *    none ───────────► nothing more
 *    more than 5 ────► one webhook.fanout job, the event in its arguments (fanout.ts does the rest)
 *    each endpoint:
 *      lease free, and taken now for this delivery (a conditional write, before the commit)
 *                   ─► its webhook.deliver job, the event in its arguments, woken after the commit; not
 *                      committed after all: the lease goes back (and a webhook.restart runs the list)
 *      lease taken ──► a wait-list entry carrying the event, and no job: whoever holds the lease sends
 *                      it within its own run (delivery.ts); after the commit, one consistent look at the
 *                      lease: let go meanwhile → a webhook.restart job starts the list
 * ```
 *
 * The second look closes the race with a holder that let go between the first read and the commit: the
 * holder reads the list once more after it lets go, and this look sees the lease let go, so one of the
 * two always sees the other (docs/webhooks.md, "Races"). A delivery carries its event (in its job or
 * entry); the kept copy is read only by a recovery.
 */
export class Publisher {
  private readonly store: WebhookStore;
  private readonly jobs: JobClient;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly lease: LeaseTerms;

  constructor(deps: { store: WebhookStore; jobs: JobClient; clock: Clock; logger: Logger; lease: LeaseTerms }) {
    this.lease = deps.lease;
    this.store = deps.store;
    this.jobs = deps.jobs;
    this.clock = deps.clock;
    this.logger = deps.logger;
  }

  /**
   * The writes that publish an event, for the caller's TransactWriteItems; after the commit, call
   * `afterCommit()` (it sends the wake-ups of the jobs among the items); if the transaction does not
   * commit, `abandon()` (it gives back the leases taken for them).
   *
   * @example
   * const published = await publisher.prepare({ tenantId, type: EventType.callCompleted, data }, clock.now());
   * const outcome = await transact(db, [...domainItems, ...published.items]);
   * await (outcome.committed ? published.afterCommit() : published.abandon());
   */
  async prepare(input: { tenantId: string; type: EventType; data: Record<string, unknown>; id?: string }, now: number, options: { exclude?: readonly string[] } = {}): Promise<Publication> {
    const event = newEvent(input, now);
    const endpoints = await this.store.routing(event.tenantId);
    // Kept for a recovery (recover.ts) when the tenant has any endpoint, subscribed or not, enabled or not;
    // a tenant with none has nothing to recover to.
    const kept = endpoints.length > 0 ? [keptEventItem(this.store.tableName, event)] : [];
    // `exclude`: endpoints not to tell (an endpoint's own notice goes to the tenant's others: notices.ts).
    const exclude = options.exclude ?? [];
    const targets = endpoints.filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type) && !exclude.includes(endpoint.endpointId));
    const nothing = () => Promise.resolve();
    if (targets.length === 0) return { event, items: kept, afterCommit: nothing, abandon: nothing };
    if (targets.length > DIRECT_MAX_ENDPOINTS) {
      const fanout = this.jobs.prepare(webhookFanoutKind, { eventId: event.id, event, ...(exclude.length > 0 ? { exclude: [...exclude] } : {}) }, { id: `webhook.fanout:${event.id}` });
      return { event, items: [fanout.item, ...kept], afterCommit: () => this.jobs.afterCommit([fanout]), abandon: nothing };
    }
    const routed = await Promise.all(
      targets.map(async (endpoint) => {
        const id = deliveryJobId(event.id, endpoint.endpointId);
        const free = !leaseTaken(endpoint, now) && (await this.take(endpoint.endpointId, id));
        return free
          ? { endpointId: endpoint.endpointId, job: this.jobs.prepare(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId, event }, { id }) }
          : { endpointId: endpoint.endpointId, entry: this.store.pendingItem(waitKey(endpoint.endpointId, event.timestamp, id), id, event, now) };
      }),
    );
    const taken = routed.flatMap((r) => (r.job ? [{ endpointId: r.endpointId, job: r.job }] : []));
    const busy = routed.flatMap((r) => (r.entry ? [r.endpointId] : []));
    return {
      event,
      items: [...routed.map((r) => r.job?.item ?? r.entry!), ...kept],
      afterCommit: () => Promise.all([this.jobs.afterCommit(taken.map((t) => t.job)), this.secondLook(busy, event.id)]).then(() => undefined),
      abandon: () => this.release(taken, event.id),
    };
  }

  /**
   * Takes a free endpoint's lease for the delivery about to be committed to it, before the commit, so that of
   * the events published to it at once, one is its job and the others wait in its list behind it. False
   * if it is not free (or the request failed): the delivery waits in the list.
   */
  private async take(endpointId: string, jobId: string): Promise<boolean> {
    const now = this.clock.now();
    try {
      return await this.store.takeLeaseFor(endpointId, jobId, now, now + this.lease.leaseMs);
    } catch (error) {
      this.logger.warn('lease not taken for a delivery about to be published; it waits in the list', { endpointId, jobId, error: String(error) });
      return false;
    }
  }

  /**
   * The transaction did not commit: the leases taken for its deliveries go back, and a `webhook.restart`
   * starts what others put behind them meanwhile (they saw the lease taken). A lease that cannot be given
   * back expires (its `busyUntil`) and the sweep restarts the list.
   */
  private async release(taken: readonly { endpointId: string; job: PreparedJob }[], eventId: string): Promise<void> {
    await Promise.all(
      taken.map(async ({ endpointId, job }) => {
        try {
          if (await this.store.releaseTakenFor(endpointId, job.id)) await this.jobs.enqueue(webhookRestartKind, { endpointId }, { id: `webhook.restart:${endpointId}:${eventId}` });
        } catch (error) {
          this.logger.warn('lease of an unpublished delivery not given back; it expires and the sweep restarts the list', { endpointId, jobId: job.id, error: String(error) });
        }
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
