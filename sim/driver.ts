import type { SimHost } from './host.ts';
import { SIM_START } from './host.ts';
import { SIM_BOOKABLE_HOURS, SIM_CALENDAR_ZONE } from './calendar-plan.ts';
import type { Campaign, EndpointAction, EndpointPlan } from './plan.ts';
import type { ReceivedMail } from './world/smtp.ts';
import type { Rotation } from './world/endpoints.ts';
import { importFile } from './world/import-file.ts';
import type { BatchPlan } from './plan.ts';

/**
 * The campaign's customer: it drives redial through its public API on the simulation clock, as a
 * well-behaved client would (an Idempotency-Key on every create, the same request sent again after a
 * 5xx or a dropped connection). As the operator it creates the tenants and issues each an API key; as
 * each tenant, with its key, it registers the endpoints, creates each batch at its time and deletes the
 * batches the plan deletes; it follows the owner's confirmation link when that mail arrives, and then
 * makes the tenant's access requests.
 */

/** One API request the driver made, and what it finally got. */
export interface DriverCall {
  what: string;
  method: string;
  path: string;
  /** Every status it got, in order (0: no answer). */
  statuses: number[];
  /** Answers expected besides 2xx and 404 (api.expected-answers): a recovery of an endpoint disabled meanwhile is a 409. */
  allowed?: number[];
}

/** A recovery the driver started: its id (from the 202) and what it asked. */
export interface StartedRecovery {
  endpoint: string;
  endpointId: string;
  recoveryId: string;
  dryRun: boolean;
  at: number;
}

const RESEND_DELAYS_MS = [2_000, 10_000, 60_000, 300_000, 900_000];

/** An import the driver started (issue 26): what its answer said, and when the tenant saw it end. */
export interface StartedImport {
  key: string;
  tenantId: string;
  /** The import's answer: 202 with the file's account, or 200 (a re-sent request after a lost answer: the batch id only). */
  status: number;
  accepted?: number;
  duplicatesDropped?: number;
  refusedRows?: number;
  /** When a poll of the batch first showed it no longer Importing. */
  endSeenAt?: number;
}

/** How often the tenant looks at an importing batch's status, and for how long at most. */
const IMPORT_POLL_MS = 30_000;
const IMPORT_POLLS = 120;

export class Driver {
  readonly calls: DriverCall[] = [];
  /** Batch ids by the batch's plan key. */
  readonly batches = new Map<string, { batchId: string; tenantId: string }>();
  /** Recoveries started (answered 202). */
  readonly recoveries: StartedRecovery[] = [];
  /** Imports started (answered with a batch id), by batch id. */
  readonly imports = new Map<string, StartedImport>();
  /** Tenants whose owner followed the confirmation link. */
  readonly confirmed = new Set<string>();
  /** Each tenant's API key (issued once its tenant exists), presented on every tenant route. */
  private readonly keys = new Map<string, string>();
  private readonly host: SimHost;
  private readonly campaign: Campaign;
  private readonly clicked = new Set<string>();
  /** Actions scheduled or requests unanswered. */
  private open = 0;

  /** A tenant's concurrency limit, as the campaign sets it. */
  limitOf(tenantId: string): number | undefined {
    return this.campaign.tenants.find((t) => t.id === tenantId)?.concurrencyLimit;
  }

  /** The plan of the batch created as `batchId` (its contacts' own zones, its window as asked). */
  batchPlanOf(batchId: string): Campaign['tenants'][number]['batches'][number] | undefined {
    const key = [...this.batches].find(([, b]) => b.batchId === batchId)?.[0];
    return key === undefined ? undefined : this.campaign.tenants.flatMap((t) => t.batches).find((b) => b.key === key);
  }

  /** The campaign's imported batches, with their tenants. */
  importPlans(): { tenantId: string; batch: BatchPlan }[] {
    return this.campaign.tenants.flatMap((t) => t.batches.filter((b) => b.import).map((batch) => ({ tenantId: t.id, batch })));
  }

  /** Whether the driver has nothing left to do (no action scheduled, no request waiting for an answer). */
  get idle(): boolean {
    return this.open === 0;
  }

  /** Schedules `action` on the clock, counted until it has run. */
  private at(time: number, action: () => Promise<unknown>): void {
    this.open++;
    this.host.clock.setTimer(time, () => void action().finally(() => this.open--), 'driver');
  }

  constructor(host: SimHost, campaign: Campaign) {
    this.host = host;
    this.campaign = campaign;
    host.onMail((mail) => this.onMail(mail));
  }

  /**
   * Starts the campaign: each tenant and its endpoints are set up at once (in the background: a re-sent
   * request waits for the clock), and its batches and deletions are scheduled on the clock.
   */
  start(): void {
    for (const tenant of this.campaign.tenants) {
      this.open++;
      const ready = this.setUp(tenant).finally(() => this.open--);
      for (const batch of tenant.batches) {
        this.at(SIM_START + batch.createAtMs, () => ready.then(() => (batch.import ? this.importBatch(tenant.id, batch) : this.createBatch(tenant.id, batch.key, batch))));
        if (batch.deleteAtMs !== undefined) this.at(SIM_START + batch.deleteAtMs, () => ready.then(() => this.deleteBatch(batch.key)));
        if (batch.pause) {
          this.at(SIM_START + batch.pause.atMs, () => ready.then(() => this.control(batch.key, 'pause')));
          this.at(SIM_START + batch.pause.resumeAtMs, () => ready.then(() => this.control(batch.key, 'resume')));
        }
      }
      for (const s of tenant.suppressions ?? []) {
        this.at(SIM_START + s.atMs, () => ready.then(() => this.request(`suppress ${s.number}`, 'PUT', `/v1/suppressions/${encodeURIComponent(s.number)}`, { reason: 'asked not to be called' }, this.as(tenant.id))));
      }
      for (const endpoint of tenant.endpoints) {
        for (const action of endpoint.actions ?? []) this.at(SIM_START + action.atMs, () => ready.then(() => this.manage(tenant.id, endpoint, action)));
      }
    }
  }

  private async setUp(tenant: Campaign['tenants'][number]): Promise<void> {
    await this.request(`tenant ${tenant.id}`, 'PUT', `/v1/tenants/${tenant.id}`, {
      concurrencyLimit: tenant.concurrencyLimit,
      ...(tenant.ownerEmail ? { ownerEmail: tenant.ownerEmail } : {}),
      ...(tenant.maxCallsPerNumberPer24h !== undefined ? { maxCallsPerNumberPer24h: tenant.maxCallsPerNumberPer24h } : {}),
    });
    const issued = await this.request(`key ${tenant.id}`, 'POST', `/v1/tenants/${tenant.id}/keys`);
    const key = (issued.body as { key?: string } | undefined)?.key;
    if (key) this.keys.set(tenant.id, key);
    // Its calendars in the built-in calendar (sim/calendar-plan.ts), before any batch names one.
    for (const calendarId of tenant.calendars ?? []) {
      await this.request(
        `calendar ${calendarId}`,
        'PUT',
        `/v1/calendars/${calendarId}`,
        { provider: 'google', credentials: { clientId: `sim-${tenant.id}`, clientSecret: 'sim-secret', refreshToken: `sim-refresh-${tenant.id}` }, timezone: SIM_CALENDAR_ZONE, bookableHours: SIM_BOOKABLE_HOURS },
        this.as(tenant.id),
      );
    }
    for (const endpoint of tenant.endpoints) {
      const response = await this.request(
        `endpoint ${endpoint.name}`,
        'POST',
        '/v1/endpoints',
        { url: this.host.receivers.url(endpoint.name), ...(endpoint.eventTypes ? { eventTypes: endpoint.eventTypes } : {}) },
        { 'idempotency-key': `endpoint-${endpoint.name}`, ...this.as(tenant.id) },
      );
      const registered = response.body as { endpointId?: string; secret?: string } | undefined;
      if (registered?.endpointId && registered.secret) this.host.receivers.register(endpoint.name, registered.endpointId, registered.secret);
    }
  }

  private async createBatch(tenantId: string, key: string, batch: Campaign['tenants'][number]['batches'][number]): Promise<void> {
    const response = await this.request(
      `batch ${key}`,
      'POST',
      '/v1/batches',
      {
        contacts: batch.contacts.map((number) => ({ number, ...(batch.timezones?.[number] ? { timezone: batch.timezones[number] } : {}) })),
        maxAttempts: batch.maxAttempts,
        retry: batch.retry,
        ...(batch.callingWindow ? { callingWindow: batch.callingWindow } : {}),
        ...(batch.startAtMs !== undefined ? { startAt: new Date(SIM_START + batch.startAtMs).toISOString() } : {}),
        ...(batch.appointments ? { appointments: batch.appointments } : {}),
      },
      { 'idempotency-key': key, ...this.as(tenantId) },
    );
    const batchId = (response.body as { batchId?: string } | undefined)?.batchId;
    if (batchId) this.batches.set(key, { batchId, tenantId });
  }

  // ─── Imports (issue 26) ─────────────────────────────────────────────────────────────────────────

  /**
   * A batch from a CSV file, as a tenant with a large file does it: an upload URL (`POST /v1/uploads`), the
   * file PUT there, then `POST /v1/batches/imports` with an Idempotency-Key (re-sent after a 5xx or no
   * answer, as every create). Then it looks at the batch every 30 s until it is no longer Importing, and
   * deletes it when the plan says (a while after that, or a while after the import was accepted).
   */
  private async importBatch(tenantId: string, batch: BatchPlan): Promise<void> {
    const plan = batch.import!;
    const file = importFile(plan);
    const upload = await this.request(`upload ${batch.key}`, 'POST', '/v1/uploads', undefined, this.as(tenantId));
    const target = upload.body as { uploadId?: string; url?: string } | undefined;
    if (upload.status !== 201 || !target?.uploadId || !target.url) return;
    const put = await this.exchange(`upload file ${batch.key}`, 'PUT', target.url, file.csv, { 'content-type': 'text/csv' });
    if (put.status !== 200) return;
    const response = await this.request(
      `import ${batch.key}`,
      'POST',
      '/v1/batches/imports',
      {
        uploadId: target.uploadId,
        maxAttempts: batch.maxAttempts,
        retry: batch.retry,
        skipInvalid: true,
        dedupe: true,
        ...(plan.pagesPerRun !== undefined ? { pagesPerRun: plan.pagesPerRun } : {}),
        ...(plan.pageDelayMs !== undefined ? { pageDelayMs: plan.pageDelayMs } : {}),
      },
      { 'idempotency-key': batch.key, ...this.as(tenantId) },
    );
    const answer = response.body as { batchId?: string; accepted?: number; duplicatesDropped?: number; refused?: { rows?: number } } | undefined;
    if (!answer?.batchId) return;
    const batchId = answer.batchId;
    this.batches.set(batch.key, { batchId, tenantId });
    this.imports.set(batchId, {
      key: batch.key,
      tenantId,
      status: response.status,
      ...(answer.accepted !== undefined ? { accepted: answer.accepted, duplicatesDropped: answer.duplicatesDropped ?? 0, refusedRows: answer.refused?.rows ?? 0 } : {}),
    });
    if (plan.deleteAfterStartMs !== undefined) this.at(this.host.clock.now() + plan.deleteAfterStartMs, () => this.deleteBatch(batch.key));
    this.at(this.host.clock.now() + IMPORT_POLL_MS, () => this.pollImport(batchId, batch, 1));
  }

  private async pollImport(batchId: string, batch: BatchPlan, polls: number): Promise<void> {
    const record = this.imports.get(batchId)!;
    const response = await this.request(`status ${batch.key}`, 'GET', `/v1/batches/${batchId}`, undefined, this.as(record.tenantId));
    const status = (response.body as { status?: string } | undefined)?.status;
    if (status === 'Importing' || status === undefined) {
      if (polls < IMPORT_POLLS) this.at(this.host.clock.now() + IMPORT_POLL_MS, () => this.pollImport(batchId, batch, polls + 1));
      return;
    }
    record.endSeenAt = this.host.clock.now();
    if (status !== 'Deleted' && batch.import?.deleteAfterEndMs !== undefined) this.at(this.host.clock.now() + batch.import.deleteAfterEndMs, () => this.deleteBatch(batch.key));
  }

  private async deleteBatch(key: string): Promise<void> {
    const batch = this.batches.get(key);
    if (!batch) return;
    await this.request(`delete ${key}`, 'DELETE', `/v1/batches/${batch.batchId}`, undefined, this.as(batch.tenantId));
  }

  /**
   * A pause or a resume of a batch, as its tenant would send it. A batch that finished meanwhile answers 409
   * (a paused batch whose contacts all ended finalises; a deleted one is gone): expected, not a fault.
   */
  private async control(key: string, action: 'pause' | 'resume'): Promise<void> {
    const batch = this.batches.get(key);
    if (!batch) return;
    const call = this.request(`${action} ${key}`, 'POST', `/v1/batches/${batch.batchId}/${action}`, undefined, this.as(batch.tenantId));
    const record = this.calls.at(-1);
    if (record) record.allowed = [409];
    await call;
  }

  /**
   * One of the owner's endpoint actions, with the tenant's key. What it changed, and when (sent, answered),
   * is recorded on the endpoint's receiver, which the invariants hold the deliveries to.
   */
  private async manage(tenantId: string, endpoint: EndpointPlan, action: EndpointAction): Promise<void> {
    const receiver = this.host.receivers.of(endpoint.name);
    const id = receiver.endpointId;
    if (!id) return;
    const path = `/v1/endpoints/${id}`;
    const startedAt = this.host.clock.now();
    const what = `${action.kind} ${endpoint.name}`;
    switch (action.kind) {
      case 'rotate': {
        // Only the first rotation is followed (the plan draws one): a second would need a history of secrets.
        if (receiver.rotation) return;
        const rotation: Rotation = { startedAt, expireOldNow: action.expireOldNow };
        receiver.rotation = rotation;
        const call = this.request(what, 'POST', `${path}/rotate-secret`, action.expireOldNow ? { expireOldNow: true } : {}, this.as(tenantId));
        const record = this.calls.at(-1);
        const response = await call;
        const body = response.body as { secret?: string; previousSecretUntil?: string | null } | undefined;
        if (response.status === 200 && body?.secret) {
          rotation.answeredAt = this.host.clock.now();
          rotation.tries = record?.statuses.length;
          rotation.secret = body.secret;
          rotation.previousSecretUntil = body.previousSecretUntil ? Date.parse(body.previousSecretUntil) : null;
        }
        return;
      }
      case 'update': {
        let patch: Record<string, unknown>;
        if (action.change === 'url') {
          if (receiver.move) return;
          receiver.move = { startedAt };
          patch = { url: this.host.receivers.movedUrl(endpoint.name) };
        } else if (action.change === 'eventTypes') {
          if (receiver.subscription) return;
          // Every type for an endpoint that had a few (a recovery then finds the events it was not sent), one for an endpoint that had every type.
          const after = endpoint.eventTypes ? undefined : ['batch.finalised'];
          receiver.subscription = { startedAt, before: endpoint.eventTypes, after };
          patch = { eventTypes: after ?? null };
        } else patch = { description: `changed at ${new Date(startedAt).toISOString()}` };
        const call = this.request(what, 'PATCH', path, patch, this.as(tenantId));
        const record = this.calls.at(-1);
        const response = await call;
        const change = action.change === 'url' ? receiver.move : action.change === 'eventTypes' ? receiver.subscription : undefined;
        if (change && response.status === 200) {
          change.answeredAt = this.host.clock.now();
          change.tries = record?.statuses.length;
        }
        return;
      }
      case 'delete':
        await this.request(what, 'DELETE', path, undefined, this.as(tenantId));
        return;
      case 'recover': {
        const body = {
          since: new Date(SIM_START + action.sinceMs).toISOString(),
          ...(action.untilMs !== undefined ? { until: new Date(SIM_START + action.untilMs).toISOString() } : {}),
          ...(action.dryRun ? { dryRun: true } : {}),
        };
        const call = this.request(what, 'POST', `${path}/recover`, body, this.as(tenantId));
        // An endpoint disabled meanwhile (410 Gone) is refused until it is enabled.
        const record = this.calls.at(-1);
        if (record) record.allowed = [409];
        const response = await call;
        const recoveryId = (response.body as { recoveryId?: string } | undefined)?.recoveryId;
        if (response.status !== 202 || !recoveryId) return;
        this.recoveries.push({ endpoint: endpoint.name, endpointId: id, recoveryId, dryRun: action.dryRun, at: startedAt });
        // The owner looks at it a few minutes later (the invariants read its row at the end).
        this.at(this.host.clock.now() + 300_000, () => this.request(`recovery ${endpoint.name}`, 'GET', `${path}/recoveries/${recoveryId}`, undefined, this.as(tenantId)));
        return;
      }
      default:
        return action satisfies never;
    }
  }

  /** The header that makes a request the tenant's: its API key. */
  private as(tenantId: string): Record<string, string> {
    const key = this.keys.get(tenantId);
    return key ? { authorization: `Bearer ${key}` } : {};
  }

  /** The owner reads the confirmation mail and follows its link half a minute later (once per link). */
  private onMail(mail: ReceivedMail): void {
    if (mail.kind !== 'owner.email_confirmation') return;
    const link = /https?:\/\/[^\s"<>]+\/v1\/tenants\/([^/\s]+)\/confirm-email\?token=[A-Za-z0-9_%.~-]+/.exec(mail.text);
    if (!link || this.clicked.has(link[0])) return;
    this.clicked.add(link[0]);
    const url = new URL(link[0]);
    const tenantId = decodeURIComponent(link[1]!);
    this.at(this.host.clock.now() + 30_000, () =>
      this.request(`confirm ${tenantId}`, 'POST', `${url.pathname}${url.search}`).then((response) => {
        if (response.status !== 200) return;
        this.confirmed.add(tenantId);
        this.scheduleAccessRequests(tenantId);
      }),
    );
  }

  private scheduleAccessRequests(tenantId: string): void {
    const tenant = this.campaign.tenants.find((t) => t.id === tenantId);
    if (!tenant) return;
    for (let i = 1; i <= tenant.accessRequests; i++) {
      this.at(this.host.clock.now() + i * 60_000, () => this.request(`access ${tenantId} ${i}`, 'POST', `/v1/tenants/${tenantId}/access-requests`, { email: `requester${i}@${tenantId}.req.sim.test` }));
    }
  }

  /** Sends a request to the API, and sends it again after a 5xx or no answer, on the simulation clock. */
  request(what: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
    return this.exchange(what, method, `${this.host.url}${path}`, body === undefined ? undefined : JSON.stringify(body), {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    });
  }

  /** Sends a request to `url` (the API, or an upload URL), and sends it again after a 5xx or no answer, on the simulation clock. */
  private exchange(what: string, method: string, url: string, body: string | undefined, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
    const call: DriverCall = { what, method, path: url.startsWith(this.host.url) ? url.slice(this.host.url.length) : new URL(url).pathname, statuses: [] };
    this.calls.push(call);
    this.open++;
    return new Promise<{ status: number; body: unknown }>((resolve) => {
      const attempt = (n: number) => {
        void this.host.activity.track(async () => {
          let status: number;
          let parsed: unknown;
          try {
            const response = await fetch(url, {
              method,
              headers,
              ...(body === undefined ? {} : { body }),
              signal: AbortSignal.timeout(30_000),
            });
            status = response.status;
            const text = await response.text();
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = text;
            }
          } catch {
            status = 0;
          }
          call.statuses.push(status);
          const delay = RESEND_DELAYS_MS[n];
          if ((status === 0 || status >= 500) && delay !== undefined) {
            this.host.clock.setTimer(this.host.clock.now() + delay, () => attempt(n + 1), 'driver');
            return;
          }
          resolve({ status, body: parsed });
        });
      };
      attempt(0);
    }).finally(() => this.open--);
  }
}
