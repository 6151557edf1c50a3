import { randomUUID } from 'node:crypto';
import { iso } from '../platform/clock.ts';
import { keyHash, requestHashOf } from '../platform/idempotency.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import { AddressRefusedError, HostResolutionError } from '../platform/vetted-http.ts';
import { TransitionRefusedError } from '../jobs/index.ts';
import type { JobRow } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { endpointIds, endpointKey, endpointView } from './endpoint.ts';
import type { EndpointDetail, EndpointRow, EndpointView } from './endpoint.ts';
import { EndpointDisabledError, EndpointExistsError, EndpointNotFoundError, IdempotencyKeyReusedError, UrlRefusedError } from './errors.ts';
import type { EventType } from './events.ts';
import { newSecret } from './signing.ts';
import { checkUrlShape } from './ssrf.ts';
import { webhookDeliverKind } from './kinds.ts';
import { enabledNoticeJob, webhookNoticeKind } from './notices.ts';
import type { DiscardMarker } from './store.ts';

/** How many discarded deliveries redeliver handles at once. */
const REDELIVER_CONCURRENCY = 8;

/**
 * Endpoint registration and the owner's actions on it: register (URL through the SSRF guard, a secret
 * shown once), show, enable, and redeliver every discarded delivery. Each takes the request's
 * {@link TenantScope}: an endpoint of another tenant is not found, as an unknown one is.
 */
export class Endpoints {
  private readonly deps: WebhookDeps;

  constructor(deps: WebhookDeps) {
    this.deps = deps;
  }

  /**
   * Registers an endpoint. The URL must pass the SSRF guard now: an http(s) URL whose host resolves only
   * to allowed addresses ({@link UrlRefusedError} otherwise; nothing is written).
   *
   * With an `idempotencyKey` the endpoint id follows from the tenant and the key: registering the same
   * body again with the same key answers the first registration (its id and secret, `replayed`) and
   * writes nothing; a different body under that key is an {@link IdempotencyKeyReusedError}.
   */
  async register(
    scope: TenantScope,
    request: { url: string; eventTypes?: EventType[] | undefined; description?: string | undefined },
    idempotencyKey?: string,
  ): Promise<{ endpointId: string; secret: string; replayed: boolean }> {
    const input = {
      tenantId: scope.tenantId,
      url: request.url,
      ...(request.eventTypes ? { eventTypes: request.eventTypes } : {}),
      ...(request.description !== undefined ? { description: request.description } : {}),
    };
    const { store, http, guard, clock, secrets } = this.deps;
    const shape = checkUrlShape(input.url, guard);
    if (!shape.ok) throw new UrlRefusedError(shape.reason);
    try {
      await http.vet(shape.url.hostname);
    } catch (error) {
      if (error instanceof AddressRefusedError) throw new UrlRefusedError(`${error.hostname} resolves to a blocked address (${error.reason})`);
      if (error instanceof HostResolutionError) throw new UrlRefusedError(`${error.hostname} does not resolve`);
      throw error;
    }
    const requestHash = idempotencyKey === undefined ? undefined : requestHashOf(input);
    const endpointId = endpointIds.make(scope.tenantId, idempotencyKey === undefined ? randomUUID().replaceAll('-', '') : keyHash(scope.tenantId, idempotencyKey));
    const secret = newSecret();
    const eventTypes = input.eventTypes && input.eventTypes.length > 0 ? [...new Set(input.eventTypes)] : undefined;
    const row: EndpointRow = {
      ...endpointKey(endpointId),
      endpointId,
      tenantId: input.tenantId,
      url: shape.url.href,
      ...(eventTypes ? { eventTypes } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      // Only its ciphertext is stored; the plaintext goes back in this answer, once.
      secretCiphertext: await secrets.seal({ endpointId, tenantId: input.tenantId }, secret),
      createdAt: iso(clock.now()),
      disabled: false,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey, requestHash }),
    };
    try {
      await store.createEndpoint(row);
    } catch (error) {
      if (!(error instanceof EndpointExistsError) || requestHash === undefined || !error.existing) throw error;
      const { existing } = error;
      if (existing.tenantId !== input.tenantId || existing.requestHash !== requestHash) {
        throw new IdempotencyKeyReusedError('this Idempotency-Key was already used with a different request body');
      }
      return { endpointId: existing.endpointId, secret: await secrets.open(existing), replayed: true };
    }
    return { endpointId, secret, replayed: false };
  }

  /** The scope's newest endpoints first, a page at a time (its own partition: store.ts `listEndpoints`). */
  async list(scope: TenantScope, limit: number, cursor?: string): Promise<{ endpoints: EndpointView[]; cursor?: string }> {
    const page = await this.deps.store.listEndpoints(scope, limit, cursor);
    return { endpoints: page.endpoints.map(endpointView), ...(page.cursor ? { cursor: page.cursor } : {}) };
  }

  /** Every tenant's newest endpoints first (the operators' listing: store.ts `listAllEndpoints`). */
  async listAll(limit: number, cursor?: string): Promise<{ endpoints: EndpointView[]; cursor?: string }> {
    const page = await this.deps.store.listAllEndpoints(limit, cursor);
    return { endpoints: page.endpoints.map(endpointView), ...(page.cursor ? { cursor: page.cursor } : {}) };
  }

  /** The scope's endpoint, or {@link EndpointNotFoundError} (a deleted one too: manage.ts). */
  private async own(scope: TenantScope, endpointId: string): Promise<EndpointRow> {
    const row = await this.deps.store.getEndpointIn(scope, endpointId);
    if (!row || row.deletedAt !== undefined) throw new EndpointNotFoundError(endpointId);
    return row;
  }

  /**
   * The deliveries of one endpoint among the newest `perState` discarded, `perState` cancelled and
   * `perState` latest webhook.deliver jobs, newest first. A bounded read of the jobs' listing, not the
   * endpoint's whole history: on a busy stack the window is the last few minutes of every endpoint's
   * deliveries.
   */
  async deliveries(scope: TenantScope, id: string, perState: number): Promise<DeliveryView[]> {
    const { endpointId } = await this.own(scope, id);
    const kind = webhookDeliverKind.kind;
    // Discarded and cancelled ones from the dead letters (a busy endpoint's completed deliveries cannot crowd
    // them out), and the latest of every state.
    const pages = await Promise.all([
      this.deps.jobs.list({ state: 'discarded', kind, limit: perState }),
      this.deps.jobs.list({ state: 'cancelled', kind, limit: perState }),
      this.deps.jobs.list({ kind, limit: perState }),
    ]);
    const byId = new Map(pages.flatMap((page) => page.jobs).map((job) => [job.id, job]));
    return [...byId.values()]
      .filter((job) => (job.args as { endpointId?: string }).endpointId === endpointId)
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
      .map(deliveryView);
  }

  /** The endpoint, and how many deliveries wait in its list now. */
  async get(scope: TenantScope, id: string): Promise<EndpointDetail> {
    const row = await this.own(scope, id);
    return { ...endpointView(row), waiting: await this.deps.store.countWaiting(row.endpointId) };
  }

  /**
   * Takes deliveries again, with a clean record: failingSince and the disable reason are cleared. Enabling a
   * disabled endpoint commits, with it, the notice that sends `endpoint.enabled` to the tenant's other
   * endpoints (notices.ts).
   */
  async enable(scope: TenantScope, id: string): Promise<EndpointView> {
    const row = await this.own(scope, id);
    const { store, jobs, clock } = this.deps;
    if (!row.disabled) return endpointView(await store.enable(row.endpointId));
    const notice = enabledNoticeJob(row.endpointId, iso(clock.now()));
    const job = jobs.prepare(webhookNoticeKind, notice.args, { id: notice.id });
    const result = await store.transact([store.enableItem(row.endpointId), job.item]);
    if (!result.committed) {
      if (!result.contention && result.refused['endpoint']?.code === 'ConditionalCheckFailed') throw new EndpointNotFoundError(id);
      throw result.error;
    }
    await jobs.afterCommit([job]);
    const enabled = await store.getEndpoint(row.endpointId);
    if (!enabled) throw new EndpointNotFoundError(id);
    return endpointView(enabled);
  }

  /**
   * Runs every discarded delivery of an endpoint again (`jobs.client.retry`, history kept). Deliveries
   * still pending keep their marker; finished ones lose it. Returns how many were requeued.
   */
  async redeliver(scope: TenantScope, id: string): Promise<{ requeued: number }> {
    const { store } = this.deps;
    const row = await this.own(scope, id);
    const endpointId = row.endpointId;
    if (row.disabled) throw new EndpointDisabledError(endpointId);
    let requeued = 0;
    let cursor: string | undefined;
    do {
      const page = await store.discardMarkers(endpointId, cursor, 100);
      for (let i = 0; i < page.markers.length; i += REDELIVER_CONCURRENCY) {
        const done = await Promise.all(page.markers.slice(i, i + REDELIVER_CONCURRENCY).map((marker) => this.requeue(marker)));
        requeued += done.filter(Boolean).length;
      }
      cursor = page.cursor;
    } while (cursor);
    return { requeued };
  }

  /** Requeues one marked delivery if it is discarded; drops the marker unless the job may still be discarded. */
  private async requeue(marker: DiscardMarker): Promise<boolean> {
    const { jobs, store } = this.deps;
    const job = await jobs.get(marker.jobId);
    if (job && job.state !== 'discarded' && job.state !== 'completed') return false;
    let requeued = false;
    if (job?.state === 'discarded') {
      try {
        await jobs.retry(marker.jobId);
        requeued = true;
      } catch (error) {
        // Someone else (ops, a second redeliver) got there first: it is requeued all the same.
        if (!(error instanceof TransitionRefusedError)) throw error;
      }
    }
    // Conditional on the marker's time: a delivery that ran and was discarded again meanwhile keeps its new one.
    await store.deleteMarker(marker);
    return requeued;
  }
}

/** One delivery of an endpoint as the ops API shows it: its job's state and every attempt. */
export interface DeliveryView {
  jobId: string;
  eventId: string;
  state: string;
  attempt: number;
  maxAttempts: number;
  discardReason: string | null;
  createdAt: string;
  updatedAt: string;
  attempts: { attempt: number; at: string; durationMs: number; outcome: string; error?: string }[];
}

const deliveryView = (job: JobRow): DeliveryView => ({
  jobId: job.id,
  eventId: (job.args as { eventId: string }).eventId,
  state: job.state,
  attempt: job.attempt,
  maxAttempts: job.maxAttempts,
  discardReason: job.discardReason ?? null,
  createdAt: job.createdAt,
  updatedAt: job.updatedAt,
  attempts: job.attempts.map((a) => ({ attempt: a.attempt, at: a.at, durationMs: a.durationMs, outcome: a.outcome, ...(a.error ? { error: a.error } : {}) })),
});
