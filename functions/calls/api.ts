export { callsHttpError } from './intake-api.ts';
import { DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H } from './compliance/cap.ts';
import type { DeferReason } from './compliance/deferral.ts';
import type { PositionMark } from './compliance/dial-items.ts';
import { recipientZones } from './compliance/recipient.ts';
import type { RecipientZones } from './compliance/recipient.ts';
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import { refusedCodes } from '../platform/dynamo.ts';
import { HttpError, notFound, queryInt, route, tenantRoute, unavailable, withErrors } from '../platform/http.ts';
import { InvalidCursorError } from '../platform/dynamo.ts';
import type { ApiResponse, ApiRoute } from '../platform/http.ts';
import { listPagesFor, newBatchRow } from './batch-create.ts';
import { CallsStore } from './store.ts';
import type { CallsDeps } from './deps.ts';
import type { AppointmentCalendars } from './ports.ts';
import { batchIdForKey, requestHash } from './idempotency.ts';
import { idempotencyKeyReused } from '../platform/idempotency.ts';
import { BatchStatus, batchIds, ContactStatus } from './model.ts';
import type { AttemptRow, BatchRow, ContactDataRow, ContactRow, TenantRow } from './model.ts';
import { externalIdSchema } from './contacts/fields.ts';
import { normaliseNumber } from './contacts/numbers.ts';
import { contactState } from './status.ts';
import type { ContactState } from './status.ts';
import {
  batchBody,
  batchHeaders,
  batchListResponse,
  batchParams,
  attemptsResponse,
  batchResponse,
  contactParams,
  contactsResponse,
  roundsResponse,
  tenantBody,
  tenantParams,
  tenantResponse,
} from './schemas.ts';
import { callsHttpError, intakeRoute } from './intake-api.ts';
import { roundOutcomes } from './rounds.ts';
import { offsetCursor } from './offset-cursor.ts';
import { exportRoute } from './export-api.ts';
import { liveJobs } from './control/service.ts';
import { checkNewBatchControl, firstJob } from './control/create.ts';
import { DEFAULT_RETRY_ON } from './control/batch-control.ts';


const tenantView = (row: TenantRow) => ({ tenantId: row.tenantId, concurrencyLimit: row.concurrencyLimit, ownerEmail: row.ownerEmail ?? null, activeCalls: row.active, maxCallsPerNumberPer24h: row.maxCallsPerNumberPer24h ?? DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H });

/** A batch's `appointments` naming a calendar its tenant does not have: 400, nothing written. */
const noSuchCalendar = (calendarId: string) =>
  new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path: 'body.appointments.calendarId', message: `no calendar ${calendarId} of yours (PUT /v1/calendars/${calendarId} first)` }] });

/** GET /v1/batches/{id}'s body (docs/openapi.json). */
export function batchView(row: BatchRow) {
  return {
    batchId: row.batchId,
    tenantId: row.tenantId,
    status: row.status,
    pausedFrom: row.pausedFrom ?? null,
    pausedAt: row.pausedAt ?? null,
    startAt: row.startAt ?? null,
    maxConcurrentCalls: row.maxConcurrentCalls ?? null,
    retryOn: row.retryOn ?? [...DEFAULT_RETRY_ON],
    parentBatchId: row.parentBatchId ?? null,
    round: row.round,
    maxAttempts: row.maxAttempts,
    contactCount: row.contactCount,
    counts: {
      byStatus: {
        Queued: row.nQueued,
        Calling: row.nCalling,
        Completed: row.nCompleted,
        RetryEligible: row.nRetryEligible,
        Suppressed: row.nSuppressed ?? 0,
      },
      deferred: row.nDeferred ?? 0,
      byCode: Object.fromEntries(Object.entries(row.byCode).filter(([, n]) => n !== 0)),
    },
    createdAt: row.createdAt,
    finalisedAt: row.finalisedAt ?? null,
    variableNames: row.variableNames ?? [],
    invalidNumbers: row.invalidNumbers ?? 0,
    duplicatesDropped: row.duplicatesDropped ?? 0,
    appointments: row.appointments ?? null,
  };
}

/** One contact as the listing shows it: its state, its data, and its latest call's artefacts. */
const contactView = (number: string, state: ContactState, row: ContactRow | undefined, data: ContactDataRow | undefined, compliance: ContactCompliance) => ({
  contactNumber: number,
  status: state.status,
  code: state.code,
  attempts: state.attempts,
  callingZones: compliance.zones(number, data),
  deferred: compliance.deferred(number, state),
  externalId: data?.externalId ?? null,
  ...(data?.variables ? { variables: data.variables } : {}),
  timezone: data?.timezone ?? null,
  numberValid: data?.numberValid !== false,
  // A contact without a data item has a valid number; its region is read from the number again.
  region: data ? (data.region ?? null) : regionOfStored(number),
  // The latest completed call (its attempt item has every field, `data` included).
  lastCall: row?.completedAt
    ? {
        round: row.round,
        completedAt: row.completedAt,
        ...(row.recordingUrl !== undefined ? { recordingUrl: row.recordingUrl } : {}),
        ...(row.transcriptUrl !== undefined ? { transcriptUrl: row.transcriptUrl } : {}),
        ...(row.summary !== undefined ? { summary: row.summary } : {}),
        ...(row.endedReason !== undefined ? { endedReason: row.endedReason } : {}),
      }
    : null,
});

/** What the listing shows of the compliance rules for a contact: the zones its window is evaluated in, and its deferral. */
interface ContactCompliance {
  zones(number: string, data: ContactDataRow | undefined): RecipientZones | null;
  deferred(number: string, state: ContactState): { until: string; reason: DeferReason } | null;
}

/** The listing's view of a batch's calling window and its round's deferrals (read once a page). */
function contactCompliance(batch: BatchRow, waiting: ReadonlyMap<string, PositionMark>, nowMs: number): ContactCompliance {
  const window = batch.callingWindow;
  return {
    zones: (number, data) =>
      window
        ? recipientZones({ number, ...(data?.timezone ? { timezone: data.timezone } : {}), ...(data?.region ? { region: data.region } : {}) }, { timezone: window.timezone, perContact: window.perContact === true }, nowMs)
        : null,
    deferred: (number, state) => {
      const mark = waiting.get(number);
      return mark && (state.status === ContactStatus.Queued || state.status === ContactStatus.RetryEligible) ? { until: new Date(mark.until).toISOString(), reason: mark.reason } : null;
    },
  };
}

/** The region of a stored (E.164) number, if it names one. */
function regionOfStored(number: string): string | null {
  const verdict = normaliseNumber(number);
  return verdict.ok ? (verdict.region ?? null) : null;
}

/** An attempt as `GET …/contacts/{number}/attempts` shows it. */
const attemptView = (a: AttemptRow) => ({
  round: a.round,
  callId: a.callId,
  reportedCode: a.reportedCode ?? null,
  code: a.code,
  retryable: a.retryable,
  source: a.source,
  durationSeconds: a.durationSeconds ?? null,
  placedAt: a.placedAt ?? null,
  completedAt: a.completedAt,
  recordingUrl: a.recordingUrl ?? null,
  transcriptUrl: a.transcriptUrl ?? null,
  summary: a.summary ?? null,
  data: a.data ?? null,
  endedReason: a.endedReason ?? null,
});

/** The most contacts one page of `GET /v1/batches/{id}/contacts` holds (also its default). */
export const MAX_CONTACTS_PAGE = 1000;

/**
 * The contacts cursor: the batch and the position of the next contact in upload order, opaque to clients.
 * It names its batch (and so its tenant): a cursor of another batch is refused (400), not read as an offset.
 */
const contactsCursor = offsetCursor('contacts', 6, 'not a cursor from this listing');

const contactsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_CONTACTS_PAGE).optional().describe(`contacts per page, 1–${MAX_CONTACTS_PAGE} (default ${MAX_CONTACTS_PAGE})`),
  status: z.enum(['Queued', 'Calling', 'Completed', 'RetryEligible']).optional().describe('only contacts in this status (a filtered page may be short, even empty, and still have a cursor)'),
  code: z.string().regex(/^[A-Z0-9_]{1,64}$/, 'expected a normalised code such as ANSWERED').optional().describe('only contacts whose latest normalised code is this one'),
  externalId: externalIdSchema.optional().describe('only the contact with this externalId (at most one)'),
  cursor: contactsCursor.schema
    .describe('the `cursor` of the previous page'),
});


/**
 * The answer to a keyed `POST /v1/batches` whose batch already exists: the same request again is a replay
 * (200 with its batch id; the first request's transaction wrote everything, this one nothing); anything
 * else under the same key is refused.
 */
export function keyedRetry(existing: BatchRow | undefined, tenantId: string, hash: string): ApiResponse {
  // DynamoDB returns the row with every failed condition it was asked to (ALL_OLD); without it, nothing is known.
  if (!existing) throw unavailable();
  if (existing.tenantId === tenantId && existing.requestHash === hash) return { status: 200, body: { batchId: existing.batchId } };
  throw idempotencyKeyReused('batch');
}

/** `GET /v1/batches` and `GET /v1/ops/batches`: a page of batches. */
const batchListQuery = z.object({
  limit: queryInt(1, 100).optional().describe('batches per page, 1–100 (default 25)'),
  cursor: z.string().max(2000).optional().describe('the `cursor` of the previous page'),
});

/**
 * The calls routes (docs/openapi.json, docs/calls.md): tenants, batches and the call-result intake. The
 * batch routes and `GET /v1/tenants/{tenantId}` are tenant routes (an API key; the tenant is the key's, and
 * operators have copies of them under `/v1/ops/tenants/{tenantId}`); creating or changing a tenant and the
 * operators' listing of every tenant's batches are IAM routes; the intake's Standard Webhooks signature is
 * its authentication.
 */
export function callsRoutes(calls: () => CallsDeps): ApiRoute[] {
  const putTenant = route({
    method: 'PUT',
    path: '/v1/tenants/{tenantId}',
    auth: 'iam',
    summary: 'Create or update a tenant: its concurrency limit across all its batches, and its owner’s email',
    params: tenantParams,
    body: tenantBody,
    responses: { 200: { description: 'the tenant', schema: tenantResponse } },
    handler: async ({ params, body }) => {
      const { store, jobs, clock, ports } = calls();
      const now = clock.now();
      const input = { tenantId: params.tenantId, concurrencyLimit: body.concurrencyLimit, ownerEmail: body.ownerEmail, maxCallsPerNumberPer24h: body.maxCallsPerNumberPer24h, now };
      // The owner's mail (a new address is asked to confirm itself) commits in this same transaction.
      const mail = body.ownerEmail ? await ports.ownerMail.ownerEmailChanged({ tenantId: params.tenantId, ownerEmail: body.ownerEmail, now }) : { items: [], jobs: [] };
      const result = await store.transact([...store.upsertTenantItems(input), ...mail.items]);
      if (!result.committed) {
        if (result.contention) throw unavailable();
        throw new HttpError(409, 'conflict', 'the tenant could not be written; nothing was written', { refused: refusedCodes(result) });
      }
      await jobs.afterCommit(mail.jobs);
      const tenant = await store.getTenant(params.tenantId);
      if (!tenant) throw unavailable();
      return { status: 200, body: tenantView(tenant) };
    },
  });

  const getTenant = tenantRoute({
    method: 'GET',
    path: '/v1/tenants/{tenantId}',
    opsPath: '/v1/ops/tenants/{tenantId}',
    summary: 'Your tenant, with its calls in progress (another tenant’s id is a 404, as an unknown one)',
    params: tenantParams,
    responses: { 200: { description: 'the tenant', schema: tenantResponse }, 404: { description: 'no such tenant (or not yours)' } },
    handler: async ({ params, scope }) => {
      const tenant = params.tenantId === scope.tenantId ? await calls().store.getTenantIn(scope) : undefined;
      if (!tenant) throw notFound(`tenant ${params.tenantId}`);
      return { status: 200, body: tenantView(tenant) };
    },
  });

  const createBatch = tenantRoute({
    method: 'POST',
    path: '/v1/batches',
    summary: 'Create a batch of contacts to call; its first round starts at once (or when its calling window opens)',
    body: batchBody,
    headers: batchHeaders,
    // 10 000 contacts with their data, under Lambda's 6 MB request limit (larger: a CSV import).
    maxBodyBytes: 5 * 1024 * 1024,
    responses: {
      201: { description: 'created', schema: batchResponse.pick({ batchId: true }) },
      200: { description: 'a retry with the same Idempotency-Key and body: the batch it created; nothing written', schema: batchResponse.pick({ batchId: true }) },
      400: { description: 'invalid body or Idempotency-Key, or `appointments.calendarId` not one of your calendars; nothing written' },
      404: { description: 'no such tenant (the operator copy only: a key’s tenant exists); nothing written' },
      422: { description: 'the Idempotency-Key was used before with a different body: `{error: "idempotency_key_reused", message}`; nothing written' },
    },
    handler: async ({ body: request, headers, scope }) => {
      const { store, jobs, clock, logger } = calls();
      const now = clock.now();
      // The tenant is the scope's (a tenantId in the body, if any, is the same: http.ts refused it otherwise).
      const body = { ...request, tenantId: scope.tenantId };
      const key = headers['idempotency-key'];
      const hash = key === undefined ? undefined : requestHash(body);
      const batchId = key === undefined ? batchIds.make(scope.tenantId, randomUUID().replaceAll('-', '')) : batchIdForKey(scope.tenantId, key);
      await checkNewBatchControl(calls(), scope.tenantId, body, now, 'body');
      // The calendar its agent books into must be one of the tenant's: checked before anything is written,
      // and again by the batch's transaction (the calendar records the batch, so it is not deleted under it).
      let calendar: Awaited<ReturnType<AppointmentCalendars['useForBatch']>>;
      if (body.appointments) {
        const calendars = calls().ports.calendars;
        if (!calendars) throw unavailable('this function cannot check calendars; nothing was written');
        calendar = await calendars.useForBatch({ tenantId: scope.tenantId, calendarId: body.appointments.calendarId, batchId });
        if (!calendar) throw noSuchCalendar(body.appointments.calendarId);
      }
      const numbers = body.contacts.map((c) => c.number);
      const pages = listPagesFor(batchId, numbers, now);
      // A contact's data (externalId, variables, zone, an invalid number's flag) lives in items of its own,
      // too many for the batch's transaction: they are written first, each derived from the body (a retry
      // writes the same), and are reachable only once the batch commits. If it never does, they expire.
      const data = CallsStore.contactDataItems(batchId, body.contacts, now);
      if (data.length > 0) {
        const written = await store.putItems(data as unknown as Record<string, unknown>[]);
        if (written.unprocessed > 0) throw unavailable(`DynamoDB left ${written.unprocessed} of the contacts' data items unwritten; no batch was created, try again (with an Idempotency-Key, the same batch)`);
      }
      const batch = newBatchRow({
        batchId,
        tenantId: body.tenantId,
        status: BatchStatus.Pending,
        settings: body,
        contacts: {
          count: numbers.length,
          variableNames: body.variableNames,
          hasContactData: data.length > 0,
          invalidNumbers: body.contacts.filter((c) => !c.numberValid).length,
          duplicatesDropped: body.duplicatesDropped,
        },
        listPages: pages.length,
        now,
        idempotency: key === undefined || hash === undefined ? undefined : { key, requestHash: hash },
      });
      // The round-1 dialer is enqueued with the batch (it checks the window itself), or its start job when it starts later.
      const dial = firstJob(calls(), batch);
      const result = await store.transact([...store.createBatchItems(batch, pages), ...(calendar?.items ?? []), dial.item]);
      if (!result.committed) {
        // A batch with this id exists: with a key, that is this key's batch (ids without one are random),
        // and the cancellation carries its row (ALL_OLD), so deciding costs no read.
        if (hash !== undefined && result.refused.batch?.code === 'ConditionalCheckFailed') {
          return keyedRetry(result.refused.batch.item as BatchRow | undefined, body.tenantId, hash);
        }
        // The calendar was deleted between the check and the commit.
        if (body.appointments && result.refused['calendar']?.code === 'ConditionalCheckFailed') throw noSuchCalendar(body.appointments.calendarId);
        if (result.contention) throw unavailable();
        // Only an operator's copy can name a tenant that does not exist (a key's tenant does).
        if (result.refused.tenant?.code === 'ConditionalCheckFailed') throw notFound(`tenant ${scope.tenantId}`);
        logger.error('batch creation cancelled', { refused: refusedCodes(result) });
        throw unavailable();
      }
      await jobs.afterCommit([dial]);
      return { status: 201, body: { batchId } };
    },
  });

  const getBatch = tenantRoute({
    method: 'GET',
    path: '/v1/batches/{id}',
    summary: 'A batch: status, round, and its contacts counted by status and by normalised code',
    params: batchParams,
    responses: { 200: { description: 'the batch', schema: batchResponse }, 404: { description: 'no such batch' } },
    handler: async ({ params, scope }) => {
      const batch = await calls().store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      return { status: 200, body: batchView(batch) };
    },
  });

  const listBatches = tenantRoute({
    method: 'GET',
    path: '/v1/batches',
    summary: 'Your batches, newest first, a page at a time (a Query of your own batch index, never a Scan)',
    query: batchListQuery,
    responses: {
      200: { description: 'up to `limit` batches; `cursor`, when present, asks for the next page', schema: batchListResponse },
      400: { description: 'a bad limit, or a cursor this listing did not give out (to this tenant)' },
      503: { description: 'DynamoDB left part of the page unread; ask again' },
    },
    handler: async ({ query, scope }) => {
      const page = await calls().store.listBatches(scope, query.limit ?? 25, query.cursor);
      return { status: 200, body: { batches: page.batches.map(batchView), ...(page.cursor ? { cursor: page.cursor } : {}) } };
    },
  });

  const listAllBatches = route({
    method: 'GET',
    path: '/v1/ops/batches',
    auth: 'iam',
    summary: 'Every tenant’s batches, newest first, a page at a time (operators: the operators’ batch index)',
    query: batchListQuery,
    responses: {
      200: { description: 'up to `limit` batches; `cursor`, when present, asks for the next page', schema: batchListResponse },
      400: { description: 'a bad limit, or a cursor this listing did not give out' },
      503: { description: 'DynamoDB left part of the page unread; ask again' },
    },
    handler: async ({ query }) => {
      const page = await calls().store.listAllBatches(query.limit ?? 25, query.cursor);
      return { status: 200, body: { batches: page.batches.map(batchView), ...(page.cursor ? { cursor: page.cursor } : {}) } };
    },
  });

  const listRounds = tenantRoute({
    method: 'GET',
    path: '/v1/batches/{id}/rounds',
    summary: 'What each round of a batch came to: its size, its completed calls by normalised code, and what is still pending',
    params: batchParams,
    responses: { 200: { description: 'the rounds, first to current', schema: roundsResponse }, 404: { description: 'no such batch' } },
    handler: async ({ params, scope }) => {
      const { store } = calls();
      const batch = await store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      return { status: 200, body: { batchId: batch.batchId, rounds: roundOutcomes(batch, await store.getRounds(batch.batchId)) } };
    },
  });

  const listContacts = tenantRoute({
    method: 'GET',
    path: '/v1/batches/{id}/contacts',
    summary: 'The contacts of a batch, in upload order, with status, latest normalised code and dials so far; a page at a time',
    params: batchParams,
    query: contactsQuery,
    responses: {
      200: { description: 'up to `limit` contacts; `cursor`, when present, asks for the next page', schema: contactsResponse },
      400: { description: 'a bad limit, or a cursor this listing did not give out for this batch' },
      404: { description: 'no such batch' },
      503: { description: 'DynamoDB left part of the page unread; ask again' },
    },
    handler: async ({ params, query, scope }) => {
      const { store } = calls();
      const batch = await store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      if (query.cursor && query.cursor.batchId !== batch.batchId) throw new InvalidCursorError();
      // Calling is derived from the dial cursor (status.ts): round 1's list is the upload order, a later
      // round's is read up to the cursor.
      const dialled = await store.dialledInCurrentRound(batch);
      const compliance = contactCompliance(batch, await store.waitingInRound(batch), calls().clock.now());
      const matches = (state: ContactState) => (query.status === undefined || state.status === query.status) && (query.code === undefined || state.code === query.code);
      if (query.externalId !== undefined) {
        // One contact at most: its entry names its number and upload position.
        const found = await store.contactOfExternalId(batch.batchId, query.externalId);
        if (!found) return { status: 200, body: { contacts: [] } };
        const state = contactState(batch, found.state, dialled(found.number, found.position));
        const data = (await store.getContactData(batch.batchId, [found.number])).get(found.number);
        return { status: 200, body: { contacts: matches(state) ? [contactView(found.number, state, found.state, data, compliance)] : [] } };
      }
      const offset = query.cursor?.offset ?? 0;
      const limit = query.limit ?? MAX_CONTACTS_PAGE;
      // A filtered page reads `limit` contacts and returns those that match: it may be short (even empty)
      // with a cursor, so that one request never reads the whole batch.
      const contacts = offset < batch.contactCount ? await store.contactsPage(params.id, offset, limit) : [];
      const data = batch.hasContactData && contacts.length > 0 ? await store.getContactData(batch.batchId, contacts.map((c) => c.number)) : undefined;
      const next = offset + contacts.length;
      const views = contacts.flatMap((c, i) => {
        const state = contactState(batch, c.state, dialled(c.number, offset + i));
        return matches(state) ? [contactView(c.number, state, c.state, data?.get(c.number), compliance)] : [];
      });
      return {
        status: 200,
        body: {
          contacts: views,
          ...(next < batch.contactCount ? { cursor: contactsCursor.encode(batch.batchId, next) } : {}),
        },
      };
    },
  });

  const listAttempts = tenantRoute({
    method: 'GET',
    path: '/v1/batches/{id}/contacts/{number}/attempts',
    summary: 'The calls of one contact of a batch, first round first: codes, timings and artefacts (the call handler’s `data` included)',
    params: contactParams,
    responses: { 200: { description: 'the contact’s calls (empty before its first completes)', schema: attemptsResponse }, 404: { description: 'no such batch' } },
    handler: async ({ params, scope }) => {
      const { store } = calls();
      const batch = await store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      const attempts = await store.getAttempts(batch.batchId, params.number);
      return { status: 200, body: { batchId: batch.batchId, contactNumber: params.number, attempts: attempts.map(attemptView) } };
    },
  });

  const deleteBatch = tenantRoute({
    method: 'DELETE',
    path: '/v1/batches/{id}',
    summary: 'Delete a batch: it dials no more, later results are ignored, and its calls’ slots go back to the tenant',
    params: batchParams,
    responses: { 200: { description: 'the batch, Deleted', schema: batchResponse }, 404: { description: 'no such batch' } },
    handler: async ({ params, scope }) => {
      const { store, jobs, clock } = calls();
      const batch = await store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      if (batch.status === BatchStatus.Deleted) return { status: 200, body: batchView(batch) };
      const now = clock.now();
      // The batch's jobs still waiting (its import, its start, its round's dialers) stop at their next
      // wake-up; a running one finds the batch Deleted. Each is asked only if it exists (a cancel asked of a
      // job that does not exist refuses the transaction).
      const live = await liveJobs(calls(), batch);
      const result = await store.transact([...store.deleteBatchItems(batch, now), ...live.map((job) => jobs.requestCancelItem(job.id))]);
      if (!result.committed) {
        // A dial or a result landed between the read and the write: nothing was written; the caller tries again.
        throw unavailable('the batch changed while it was being deleted; nothing was written, try again');
      }
      return { status: 200, body: batchView({ ...batch, status: BatchStatus.Deleted, deletedAt: new Date(now).toISOString() }) };
    },
  });

  return [...withErrors(callsHttpError, [putTenant, getTenant, createBatch, listBatches, listAllBatches, getBatch, listRounds, listContacts, listAttempts, exportRoute(calls), deleteBatch]), intakeRoute(calls)];
}
