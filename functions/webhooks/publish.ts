import type { JobClient, PreparedJob, TransactItem } from '../jobs/index.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { deliveryJobId, subscribes, waitKey } from './endpoint.ts';
import { newEvent, webhookFanoutKind } from './events.ts';
import type { EventType, WebhookEvent } from './events.ts';
import { webhookDeliverKind, webhookRestartKind } from './kinds.ts';
import { leaseTaken } from './lease.ts';
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
  /** The jobs among `items`: pass them to `JobClient.afterCommit` once committed. */
  jobs: PreparedJob[];
  /** After the commit and the wake-ups: the second look at the endpoints found busy. Never throws. */
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
 *      lease free ───► its webhook.deliver job, the event in its arguments, due now
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
   * The writes that publish an event, for the caller's TransactWriteItems; after the commit, pass `jobs` to
   * `JobClient.afterCommit` and call `afterCommit()`.
   *
   * @example
   * const published = await publisher.prepare({ tenantId, type: EventType.callCompleted, data }, clock.now());
   * const outcome = await transact(db, [...domainItems, ...published.items]);
   * if (outcome.committed) { await jobs.afterCommit(published.jobs); await published.afterCommit(); }
   */
  async prepare(input: { tenantId: string; type: EventType; data: Record<string, unknown>; id?: string }, now: number): Promise<Publication> {
    const event = newEvent(input, now);
    const targets = (await this.store.routing(event.tenantId)).filter((endpoint) => !endpoint.disabled && subscribes(endpoint, event.type));
    if (targets.length === 0) return { event, items: [], jobs: [], afterCommit: () => Promise.resolve() };
    if (targets.length > DIRECT_MAX_ENDPOINTS) {
      const fanout = this.jobs.prepare(webhookFanoutKind, { eventId: event.id, event }, { id: `webhook.fanout:${event.id}` });
      return { event, items: [fanout.item], jobs: [fanout], afterCommit: () => Promise.resolve() };
    }
    const items: TransactItem[] = [];
    const jobs: PreparedJob[] = [];
    const busy: string[] = [];
    for (const endpoint of targets) {
      const id = deliveryJobId(event.id, endpoint.endpointId);
      if (leaseTaken(endpoint, now)) {
        items.push(this.store.pendingItem(waitKey(endpoint.endpointId, event.timestamp, id), id, event, now));
        busy.push(endpoint.endpointId);
      } else {
        const job = this.jobs.prepare(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId, event }, { id });
        items.push(job.item);
        jobs.push(job);
      }
    }
    return { event, items, jobs, afterCommit: () => this.secondLook(busy, event.id) };
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
