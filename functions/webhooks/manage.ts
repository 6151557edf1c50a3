import * as z from 'zod';
import { iso } from '../platform/clock.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import { AddressRefusedError, HostResolutionError } from '../platform/vetted-http.ts';
import { discard, JobNotFoundError, snooze, terminalStates, TransitionRefusedError } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { endpointView, waitListPartitions } from './endpoint.ts';
import type { EndpointRow, EndpointView } from './endpoint.ts';
import { EndpointNotFoundError, EndpointRotatedMeanwhileError, UrlRefusedError } from './errors.ts';
import { eventTypes } from './events.ts';
import type { EventType } from './events.ts';
import { DeliveryDiscardReason, webhookDeliverKind, webhookPurgeKind, webhookRestartKind } from './kinds.ts';

export { webhookPurgeKind };
import { rotationOf } from './rotation.ts';
import { newSecret } from './signing.ts';
import { checkUrlShape } from './ssrf.ts';
import { isPending } from './store.ts';
import type { WaitEntry } from './store.ts';

/** How long a deleted endpoint's item (and so its deliveries' and attempts' endpoint) stays readable. */
export const DELETED_RETENTION_SECONDS = 30 * 86400;

/** The metric counted per waiting delivery discarded because its endpoint was deleted. */
export const PURGED_METRIC = 'WebhookEndpointPurged';

/** Entries the purge handles per run before it hands the rest to its next run (a snooze: no attempt spent). */
export const PURGE_PER_RUN = 500;


/** The body of `PATCH /v1/endpoints/{id}`: at least one field; unknown fields refused. */
export const updateEndpointSchema = z
  .strictObject({
    url: z.string().min(1).max(2048).optional(),
    eventTypes: z.array(z.enum(eventTypes)).min(1).max(20).nullable().optional().describe('the event types to subscribe to; null: every type'),
    description: z.string().max(500).nullable().optional().describe('null removes it'),
  })
  .refine((body) => body.url !== undefined || body.eventTypes !== undefined || body.description !== undefined, { message: 'nothing to change: give url, eventTypes or description' });

/**
 * The owner's management of an endpoint beyond registering it: change it (`PATCH`), delete it, rotate its
 * secret (docs/webhooks.md, "Managing an endpoint"). Each takes the request's {@link TenantScope}: another
 * tenant's endpoint, and a deleted one, is not found.
 */
export class EndpointManagement {
  private readonly deps: WebhookDeps;

  constructor(deps: WebhookDeps) {
    this.deps = deps;
  }

  /** The scope's live endpoint, or {@link EndpointNotFoundError} (a deleted one too). */
  async own(scope: TenantScope, id: string): Promise<EndpointRow> {
    const row = await this.deps.store.getEndpointIn(scope, id);
    if (!row || row.deletedAt !== undefined) throw new EndpointNotFoundError(id);
    return row;
  }

  /**
   * Changes an endpoint's URL, event types or description. A new URL passes the SSRF guard as at
   * registration ({@link UrlRefusedError}, nothing written); once committed, every request started after
   * uses it (a drain reads the endpoint before each send: delivery.ts), its failingSince is cleared and the
   * deliveries held back for the old URL are released ({@link release}). New event types apply to events
   * published from then on: deliveries written before are delivered.
   */
  async update(scope: TenantScope, id: string, patch: { url?: string | undefined; eventTypes?: EventType[] | null | undefined; description?: string | null | undefined }): Promise<EndpointView> {
    const row = await this.own(scope, id);
    let url: string | undefined;
    if (patch.url !== undefined) url = await this.vetUrl(patch.url);
    const eventTypes = patch.eventTypes === undefined || patch.eventTypes === null ? patch.eventTypes : [...new Set(patch.eventTypes)];
    const updated = await this.deps.store.updateEndpoint(row.endpointId, {
      ...(url !== undefined ? { url } : {}),
      ...(eventTypes !== undefined ? { eventTypes } : {}),
      ...(patch.description !== undefined ? { description: patch.description } : {}),
    });
    if (!updated) throw new EndpointNotFoundError(id);
    if (url !== undefined && url !== row.url && !updated.disabled) await this.release(updated);
    return endpointView(updated);
  }

  /**
   * Deletes an endpoint: in one transaction it becomes a tombstone (no delivery sends to it from then on:
   * every lease condition refuses it, and a delivery or drain reads it before each send), leaves its
   * tenant's listing and publishing, and a webhook.purge job is enqueued that discards what waits for it.
   * A second delete, and every tenant route, answers 404. The tombstone is kept 30 days (`expiresAt`).
   */
  async remove(scope: TenantScope, id: string): Promise<{ endpointId: string; deletedAt: string; purgeJobId: string }> {
    const row = await this.own(scope, id);
    const now = this.deps.clock.now();
    const purge = this.deps.jobs.prepare(webhookPurgeKind, { endpointId: row.endpointId }, { id: `webhook.purge:${row.endpointId}` });
    const deleted = await this.deps.store.deleteEndpoint(row, now, Math.floor(now / 1000) + DELETED_RETENTION_SECONDS, [purge.item]);
    if (!deleted) throw new EndpointNotFoundError(id);
    await this.deps.jobs.afterCommit([purge]);
    this.deps.logger.info('endpoint deleted', { endpointId: row.endpointId });
    return { endpointId: row.endpointId, deletedAt: iso(now), purgeJobId: purge.id };
  }

  /**
   * Rotates an endpoint's signing secret: the new one is returned once (and sealed), and signs every
   * delivery from now on; the one it replaces signs too for 24 h (rotation.ts), unless `expireOldNow`.
   * Two rotations at once: the second is refused ({@link EndpointRotatedMeanwhileError}, 409), never lost.
   */
  async rotate(scope: TenantScope, id: string, expireOldNow: boolean): Promise<{ secret: string; previousSecretUntil: string | null }> {
    const row = await this.own(scope, id);
    const now = this.deps.clock.now();
    const secret = newSecret();
    const next = await rotationOf(this.deps.secrets, row, secret, now, expireOldNow);
    const rotated = await this.deps.store.rotateSecret(row.endpointId, { ...(row.secretCiphertext !== undefined ? { secretCiphertext: row.secretCiphertext } : {}), ...(row.secret !== undefined ? { secret: row.secret } : {}) }, next, now);
    if (!rotated) {
      const now = await this.deps.store.getEndpointIn(scope, id);
      if (now && now.deletedAt === undefined) throw new EndpointRotatedMeanwhileError(row.endpointId);
      throw new EndpointNotFoundError(id);
    }
    this.deps.logger.info('endpoint secret rotated', { endpointId: row.endpointId, expireOldNow });
    return { secret, previousSecretUntil: next.previous ? iso(next.previous.until) : null };
  }

  /** The URL through the SSRF guard, as at registration; its normalised form. */
  private async vetUrl(raw: string): Promise<string> {
    const shape = checkUrlShape(raw, this.deps.guard);
    if (!shape.ok) throw new UrlRefusedError(shape.reason);
    try {
      await this.deps.http.vet(shape.url.hostname);
    } catch (error) {
      if (error instanceof AddressRefusedError) throw new UrlRefusedError(`${error.hostname} resolves to a blocked address (${error.reason})`);
      if (error instanceof HostResolutionError) throw new UrlRefusedError(`${error.hostname} does not resolve`);
      throw error;
    }
    return shape.url.href;
  }

  /**
   * Releases the deliveries held back for the old URL: the lease holder (a probe resting until its next
   * try, or a delivery retrying on its backoff) is woken now; with no live holder and deliveries waiting, a
   * webhook.restart gives the lease to the oldest. A refused wake (it is running, or finished) leaves it to
   * the holder's own hand-off. Never throws: the sweep and the holders' schedules are the backstop.
   */
  private async release(row: EndpointRow): Promise<void> {
    const { jobs, logger, store } = this.deps;
    const now = this.deps.clock.now();
    try {
      if (row.holder && row.busyUntil && Date.parse(row.busyUntil) >= now) {
        await jobs.wake(row.holder).catch((error: unknown) => {
          if (!(error instanceof TransitionRefusedError || error instanceof JobNotFoundError)) throw error;
        });
        return;
      }
      if ((await store.waitListHead(row.endpointId, 1)).length > 0) {
        await jobs.enqueue(webhookRestartKind, { endpointId: row.endpointId }, { id: `webhook.restart:${row.endpointId}:url:${now}` });
      }
    } catch (error) {
      logger.warn('held deliveries not released after a URL change; they run on their own schedule', { endpointId: row.endpointId, error: String(error) });
    }
  }
}

/**
 * The webhook.purge handler (see {@link webhookPurgeKind}). Returns how many deliveries it discarded in
 * this run; snoozes (no attempt spent) when more entries remain than one run handles.
 */
export async function purgeDeleted(deps: WebhookDeps, endpointId: string): Promise<number> {
  const { store, metrics, logger } = deps;
  const row = await store.getEndpoint(endpointId);
  if (!row) throw discard('not_found', `endpoint ${endpointId} not found`);
  if (row.deletedAt === undefined) return 0;
  let discarded = 0;
  let handled = 0;
  if (row.holder) await wakeToDiscard(deps, row.holder);
  for (const partition of waitListPartitions(endpointId)) {
    let cursor: string | undefined;
    do {
      const page = await store.waitListPage(partition, cursor, 100);
      for (const entry of page.entries) {
        if (await discardEntry(deps, endpointId, entry)) discarded++;
        handled++;
      }
      cursor = page.cursor;
      if (handled >= PURGE_PER_RUN && cursor) {
        await store.addPurged(endpointId, discarded);
        metrics.count(PURGED_METRIC, {}, discarded);
        throw snooze({ delayMs: 1_000 }, `purged ${handled} entries of ${endpointId}; more remain`);
      }
    } while (cursor);
  }
  await store.addPurged(endpointId, discarded);
  if (discarded > 0) metrics.count(PURGED_METRIC, {}, discarded);
  logger.info('deleted endpoint purged', { endpointId, discarded, handled });
  return discarded;
}

/**
 * One waiting entry of a deleted endpoint: a delivery with no job becomes a discarded one
 * (`endpoint_deleted`), counted when this made it; a parked job is woken to discard itself (it finds the
 * endpoint deleted: delivery.ts), counted there. The entry leaves the list.
 */
async function discardEntry(deps: WebhookDeps, endpointId: string, entry: WaitEntry): Promise<boolean> {
  const { jobs, store } = deps;
  if (isPending(entry)) {
    const made = await jobs.enqueueAttempted(
      webhookDeliverKind,
      { eventId: entry.event.id, endpointId, event: entry.event },
      { id: entry.jobId, outcome: { type: 'discarded', reason: DeliveryDiscardReason.endpoint_deleted, error: 'endpoint deleted' } },
    );
    await store.unpark(entry);
    return made !== undefined;
  }
  await wakeToDiscard(deps, entry.jobId);
  return false;
}

/** Wakes a waiting delivery so that it runs, finds its endpoint deleted and discards itself; a finished or running one is left as it is. */
async function wakeToDiscard(deps: WebhookDeps, jobId: string): Promise<void> {
  try {
    await deps.jobs.wake(jobId);
  } catch (error) {
    if (error instanceof JobNotFoundError) return;
    if (!(error instanceof TransitionRefusedError)) throw error;
    const current = error.current;
    if (current === undefined || (terminalStates as readonly string[]).includes(current.state)) return;
    // Running: it reads the endpoint before it sends, and discards itself; due already: the same, from its queue.
  }
}
