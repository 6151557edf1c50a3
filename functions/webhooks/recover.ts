import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { iso } from '../platform/clock.ts';
import { batchGet, Expression, putItem, updateItem } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import { pendingStates, snooze } from '../jobs/index.ts';
import type { DiscardedJob, JobContext, PreparedJob } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { deliveryJobId, discardMarkerKey, endpointPartition, subscribes, waitKey } from './endpoint.ts';
import type { EndpointRow } from './endpoint.ts';
import { EndpointDisabledError, EndpointNotFoundError } from './errors.ts';
import { EVENT_RETENTION_SECONDS } from './events.ts';
import type { WebhookEvent } from './events.ts';
import { KeptEvents } from './kept-events.ts';
import type { KeptPosition } from './kept-events.ts';
import { webhookDeliverKind, webhookRecoverKind } from './kinds.ts';

/**
 * Recovery (docs/webhooks.md, "Recovery"): `POST /v1/endpoints/{id}/recover {since, until?, dryRun?}` sends
 * an endpoint again every event of the window that it subscribes to and did not receive — published while it
 * was disabled, discarded, or never routed to it — as a webhook.deliver job with the event's own id (the
 * `webhook-id` the original carried). A webhook.recover job reads the tenant's kept events (kept-events.ts)
 * a page at a time and, per page, in ONE transaction: the deliveries it requeues, the discard markers of their
 * originals dropped (so redeliver does not send them a second time), and the recovery row advanced from the
 * position it read at (a condition on its step). A run that crashes or fails commits a page wholly or not at
 * all, and its retry starts from the row: no page is requeued twice. A run reads at most
 * {@link PAGES_PER_RUN} pages, then snoozes (no attempt spent) and goes on from the row's position, so a
 * window of any length fits.
 *
 * ```
 *  kept event in [since, until) ─► before the endpoint existed, or a type it does not subscribe to ─► skipped
 *     received (an attempt delivered it: the attempt log's byReceived index) ───────────────────────► skipped
 *     its original delivery still pending (a job not finished, or an entry in the wait list) ───────► in flight, skipped
 *     else ─► matched; requeued as webhook.deliver:<event>:<endpoint>:<recovery id> (dry run: counted only)
 * ```
 */

/** Events read per page (each requeued one is two items of the page's transaction, which holds at most 100). */
export const RECOVERY_PAGE = 40;
/** Pages with events a run commits before it snoozes and goes on in its next run. */
export const PAGES_PER_RUN = 25;
/**
 * Queries of kept events a run sends at most: an hour with no events is one empty Query per shard
 * (kept-events.ts `KEPT_SHARDS`), which commit nothing (a rerun reads them again), so a sparse 30-day window is a few runs, not hundreds.
 */
export const QUERIES_PER_RUN = 400;
/** How far back a recovery may reach: events are kept this long. */
export const RECOVERY_WINDOW_MS = EVENT_RETENTION_SECONDS * 1000;

export const recoveryStates = ['running', 'completed', 'failed'] as const;
export type RecoveryState = (typeof recoveryStates)[number];

/** A recovery as stored, in its endpoint's partition (`RECOVERY#<recovery id>`). */
export interface RecoveryRow {
  pk: string;
  sk: string;
  recoveryId: string;
  endpointId: string;
  tenantId: string;
  since: string;
  until: string;
  dryRun: boolean;
  status: RecoveryState;
  /** Events of the window the endpoint subscribed to, did not receive and that were not in flight. */
  matched: number;
  /** Of those, the deliveries requeued (0 on a dry run). */
  requeued: number;
  /** Events not received yet whose original delivery was still pending: left to it. */
  inFlight: number;
  /** Where the next page starts; absent once the window is read. */
  position?: KeptPosition;
  /** Pages committed: the condition each page's commit holds on. */
  step: number;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  error?: string;
  expiresAt: number;
}

export const recoveryKey = (endpointId: string, recoveryId: string) => ({ pk: endpointPartition(endpointId), sk: `RECOVERY#${recoveryId}` });

/** A recovery's id: `rcv_<24 hex>`. */
export const recoveryIdSchema = z.string().regex(/^rcv_[0-9a-f]{24}$/, 'expected a recovery id (rcv_ and 24 hex digits)');

/** The body of `POST /v1/endpoints/{id}/recover`. */
export const recoverSchema = z.strictObject({
  since: z.iso.datetime().describe('the window’s start (inclusive), ISO-8601 UTC, at most 30 days ago'),
  until: z.iso.datetime().optional().describe('the window’s end (exclusive); default: now, and never later than now'),
  dryRun: z.boolean().optional().describe('count what would be requeued, requeue nothing'),
});
export type RecoverRequest = z.infer<typeof recoverSchema>;

/** What `GET /v1/endpoints/{id}/recoveries/{recoveryId}` shows. */
export const recoveryViewSchema = z.object({
  recoveryId: z.string(),
  endpointId: z.string(),
  since: z.string(),
  until: z.string(),
  dryRun: z.boolean(),
  status: z.enum(recoveryStates),
  matched: z.number().int(),
  requeued: z.number().int(),
  inFlight: z.number().int(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  error: z.string().nullable(),
});
export type RecoveryView = z.infer<typeof recoveryViewSchema>;

const view = (row: RecoveryRow): RecoveryView => ({
  recoveryId: row.recoveryId,
  endpointId: row.endpointId,
  since: row.since,
  until: row.until,
  dryRun: row.dryRun,
  status: row.status,
  matched: row.matched,
  requeued: row.requeued,
  inFlight: row.inFlight,
  createdAt: row.createdAt,
  finishedAt: row.finishedAt ?? null,
  error: row.error ?? null,
});

/** A window a recovery refuses: the field and why (a 400 naming `body.<field>`; nothing written). */
export class RecoveryWindowError extends Error {
  override readonly name = 'RecoveryWindowError';
  readonly field: 'since' | 'until';
  constructor(field: 'since' | 'until', message: string) {
    super(message);
    this.field = field;
  }
}

/** No such recovery of that endpoint. */
export class RecoveryNotFoundError extends Error {
  override readonly name = 'RecoveryNotFoundError';
  readonly recoveryId: string;
  constructor(recoveryId: string) {
    super(`recovery ${recoveryId} not found`);
    this.recoveryId = recoveryId;
  }
}

/** The id of the delivery a recovery requeues for one event: the original's, and the recovery's. */
export const recoveredJobId = (eventId: string, endpointId: string, recoveryId: string): string => `${deliveryJobId(eventId, endpointId)}:${recoveryId}`;

const samePosition = (a: KeptPosition | undefined, b: KeptPosition | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.hour === b.hour && a.shard === b.shard && a.after === b.after);

/** An endpoint that was deleted (kept a while, so its attempt log stays readable): read tolerantly. */
const deleted = (row: EndpointRow): boolean => typeof (row as { deletedAt?: unknown }).deletedAt === 'string';

/** Starting, reading and running recoveries (the webhook.recover handler). */
export class Recoveries {
  private readonly deps: WebhookDeps;
  private readonly db: DynamoDBDocumentClient;

  constructor(deps: WebhookDeps, db: DynamoDBDocumentClient) {
    this.deps = deps;
    this.db = db;
  }

  /**
   * Starts a recovery of the scope's endpoint: its row and its webhook.recover job in one transaction.
   * A window that reaches past the kept events, ends before it starts, or an endpoint that is disabled
   * (enable it first) is refused, and nothing is written.
   */
  async start(scope: TenantScope, id: string, request: RecoverRequest): Promise<{ recoveryId: string }> {
    const { store, jobs, clock } = this.deps;
    const endpoint = await store.getEndpointIn(scope, id);
    if (!endpoint || deleted(endpoint)) throw new EndpointNotFoundError(id);
    const now = clock.now();
    const since = Date.parse(request.since);
    const until = Math.min(request.until === undefined ? now : Date.parse(request.until), now);
    if (since < now - RECOVERY_WINDOW_MS) throw new RecoveryWindowError('since', `events are kept 30 days: since must be at or after ${iso(now - RECOVERY_WINDOW_MS)}`);
    if (since >= until) throw new RecoveryWindowError(request.until === undefined || Date.parse(request.until) > now ? 'since' : 'until', 'the window is empty: since must be before until (and before now)');
    if (endpoint.disabled) throw new EndpointDisabledError(endpoint.endpointId);
    const recoveryId = `rcv_${randomBytes(12).toString('hex')}`;
    const row: RecoveryRow = {
      ...recoveryKey(endpoint.endpointId, recoveryId),
      recoveryId,
      endpointId: endpoint.endpointId,
      tenantId: scope.tenantId,
      since: iso(since),
      until: iso(until),
      dryRun: request.dryRun ?? false,
      status: 'running',
      matched: 0,
      requeued: 0,
      inFlight: 0,
      position: KeptEvents.start(since),
      step: 0,
      createdAt: iso(now),
      updatedAt: iso(now),
      expiresAt: Math.floor(now / 1000) + EVENT_RETENTION_SECONDS,
    };
    const job = jobs.prepare(webhookRecoverKind, { endpointId: endpoint.endpointId, recoveryId }, { id: `webhook.recover:${recoveryId}` });
    const absent = new Expression();
    const outcome = await store.transact([putItem('recovery', store.tableName, row, absent.when(absent.notExists('pk'))), job.item]);
    if (!outcome.committed) throw outcome.error;
    await jobs.afterCommit([job]);
    return { recoveryId };
  }

  /** A recovery of the scope's endpoint (a deleted endpoint's too, while it is kept). */
  async get(scope: TenantScope, id: string, recoveryId: string): Promise<RecoveryView> {
    const endpoint = await this.deps.store.getEndpointIn(scope, id);
    if (!endpoint) throw new EndpointNotFoundError(id);
    const row = await this.read(endpoint.endpointId, recoveryId);
    if (!row) throw new RecoveryNotFoundError(recoveryId);
    return view(row);
  }

  private async read(endpointId: string, recoveryId: string): Promise<RecoveryRow | undefined> {
    const { store } = this.deps;
    const result = await this.db.send(new GetCommand({ TableName: store.tableName, Key: recoveryKey(endpointId, recoveryId), ConsistentRead: true }));
    return result.Item as RecoveryRow | undefined;
  }

  /**
   * webhook.recover: reads up to {@link PAGES_PER_RUN} pages from the row's position, each committed with
   * what it requeues; snoozes to go on when the window is not read to its end. A recovery that is finished
   * (or gone) is left alone, so a duplicate run does nothing.
   */
  async run(args: { endpointId: string; recoveryId: string }, ctx: JobContext): Promise<void> {
    const { store } = this.deps;
    let row = await this.read(args.endpointId, args.recoveryId);
    if (!row || row.status !== 'running') return;
    const endpoint = await store.getEndpoint(args.endpointId);
    if (!endpoint || deleted(endpoint)) {
      await this.finish(row, 'failed', ctx.now(), 'the endpoint was deleted');
      return;
    }
    let position: KeptPosition | undefined = row.position;
    let committed = 0;
    for (let queries = 0; position && committed < PAGES_PER_RUN && queries < QUERIES_PER_RUN && !ctx.signal.aborted; queries++) {
      const page = await this.deps.keptEvents.page(row.tenantId, { since: row.since, until: row.until }, position, RECOVERY_PAGE);
      // An empty page commits nothing: only the position moves, recorded with the next page that has events (or below).
      if (page.events.length === 0 && page.next) {
        position = page.next;
        continue;
      }
      const next = await this.commit(row, endpoint, page.events, page.next, ctx);
      if (!next) return;
      row = next;
      position = row.position;
      committed++;
    }
    // Where the empty pages read since the last commit ended, recorded before the run ends.
    if (!samePosition(position, row.position)) {
      const next = await this.commit(row, endpoint, [], position, ctx);
      if (!next) return;
      row = next;
    }
    if (row.position) throw snooze({ delayMs: 0 }, `recovery ${row.recoveryId} goes on from its position (${row.step} pages committed)`);
  }

  /** webhook.recover's discard hook: the recovery failed (its job ran out of attempts, or was discarded). */
  async discarded(args: { endpointId: string; recoveryId: string }, job: DiscardedJob): Promise<void> {
    const row = await this.read(args.endpointId, args.recoveryId);
    if (row && row.status === 'running') await this.finish(row, 'failed', job.at, job.error.slice(0, 300));
  }

  /**
   * One page read: decide, and commit the requeued deliveries with the row's advance to `next` (the window
   * read to its end when undefined). Returns the row as it now is, or undefined when another run advanced
   * it first (this one stops).
   */
  private async commit(row: RecoveryRow, endpoint: EndpointRow, events: readonly WebhookEvent[], next: KeptPosition | undefined, ctx: JobContext): Promise<RecoveryRow | undefined> {
    const { store, jobs, attemptLog } = this.deps;
    const candidates = events.filter((event) => event.timestamp >= endpoint.createdAt && subscribes(endpoint, event.type));
    const received = candidates.length > 0 ? await attemptLog.received(endpoint.endpointId, candidates.map((e) => e.id)) : new Set<string>();
    const missing = candidates.filter((event) => !received.has(event.id));
    const pending = await this.inFlight(endpoint.endpointId, missing);
    const matched = missing.filter((event) => !pending.has(event.id));
    const now = ctx.now();
    const prepared: PreparedJob[] = row.dryRun
      ? []
      : matched.map((event) =>
          jobs.prepare(webhookDeliverKind, { eventId: event.id, endpointId: endpoint.endpointId, event }, { id: recoveredJobId(event.id, endpoint.endpointId, row.recoveryId) }),
        );
    const markers: TransactItem[] = row.dryRun
      ? []
      : matched.map((event) => ({ name: `marker ${event.id}`, Delete: { TableName: store.tableName, Key: discardMarkerKey(endpoint.endpointId, deliveryJobId(event.id, endpoint.endpointId)) } }));
    const e = new Expression();
    e.when(e.eq('step', row.step)).when(e.eq('status', 'running'));
    e.set('step', row.step + 1).set('updatedAt', iso(now));
    e.add('matched', matched.length).add('requeued', prepared.length).add('inFlight', pending.size);
    if (next) e.set('position', next);
    else e.remove('position').set('status', 'completed').set('finishedAt', iso(now));
    const outcome = await store.transact([updateItem('recovery', store.tableName, recoveryKey(row.endpointId, row.recoveryId), e), ...prepared.map((p) => p.item), ...markers]);
    if (!outcome.committed) {
      // Another run of this recovery committed this page first (a duplicate or a run thought lost): it goes on.
      if (!outcome.contention && outcome.refused['recovery']?.code === 'ConditionalCheckFailed') return undefined;
      throw outcome.error;
    }
    await jobs.afterCommit(prepared);
    ctx.logger.debug('recovery page', { recoveryId: row.recoveryId, read: events.length, matched: matched.length, inFlight: pending.size });
    const advanced: RecoveryRow = { ...row, step: row.step + 1, matched: row.matched + matched.length, requeued: row.requeued + prepared.length, inFlight: row.inFlight + pending.size, updatedAt: iso(now) };
    if (next) return { ...advanced, position: next };
    const { position: _done, ...rest } = advanced;
    return { ...rest, status: 'completed', finishedAt: iso(now) };
  }

  /**
   * Of events the endpoint did not receive, those whose original delivery is still on its way: its job
   * not finished, or its entry in the wait list (a delivery with no job yet).
   */
  private async inFlight(endpointId: string, events: readonly WebhookEvent[]): Promise<Set<string>> {
    if (events.length === 0) return new Set();
    const { jobs, store } = this.deps;
    const rows = await Promise.all(events.map((event) => jobs.get(deliveryJobId(event.id, endpointId))));
    const pendingJobs = new Set(events.filter((_, i) => rows[i] !== undefined && (pendingStates as readonly string[]).includes(rows[i].state)).map((e) => e.id));
    const noJob = events.filter((_, i) => rows[i] === undefined);
    const entries = noJob.length === 0 ? [] : await batchGet(this.db, store.tableName, noJob.map((event) => waitKey(endpointId, event.timestamp, deliveryJobId(event.id, endpointId))));
    const waiting = new Set(entries.map((entry) => (entry as { jobId: string }).jobId));
    for (const event of noJob) if (waiting.has(deliveryJobId(event.id, endpointId))) pendingJobs.add(event.id);
    return pendingJobs;
  }

  private async finish(row: RecoveryRow, status: RecoveryState, now: number, error?: string): Promise<void> {
    const { store } = this.deps;
    const e = new Expression();
    e.when(e.eq('status', 'running')).set('status', status).set('finishedAt', iso(now)).set('updatedAt', iso(now)).remove('position');
    if (error !== undefined) e.set('error', error);
    const outcome = await store.transact([updateItem('recovery', store.tableName, recoveryKey(row.endpointId, row.recoveryId), e)]);
    if (!outcome.committed && !(outcome.refused['recovery']?.code === 'ConditionalCheckFailed' && !outcome.contention)) throw outcome.error;
  }
}
