import { STATUS_CODES } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import * as z from 'zod';
import type { AwsCredentials, CredentialProvider } from '../platform/credentials.ts';
import { sendOnce } from '../platform/outbound.ts';
import type { OutboundRequest, OutboundResponse } from '../platform/outbound.ts';
import { jobDetailSchema, jobSummarySchema, periodicListSchema } from '../ops/views.ts';
import type { JobDetail } from '../ops/views.ts';
import { batchListResponse, batchResponse, contactsResponse, roundsResponse } from '../calls/schemas.ts';
import { batchIds } from '../calls/model.ts';
import { apiKeyViewSchema } from '../calls/keys.ts';
import type { ApiKeyView } from '../calls/keys.ts';
import { endpointDetailSchema, endpointIds, endpointViewSchema } from '../webhooks/endpoint.ts';
import { attemptViewSchema } from '../webhooks/attempts.ts';
import { deletedSchema, rotatedSchema } from '../webhooks/manage-api.ts';
import type { AttemptView } from '../webhooks/attempts.ts';
import { recoveryViewSchema } from '../webhooks/recover.ts';
import type { RecoveryView } from '../webhooks/recover.ts';
import type { OwnedIds } from '../platform/tenancy.ts';

/**
 * A typed client of the API (docs/openapi.json), for the CLI and the panel: the operator routes, and a
 * tenant's batches and endpoints — through the tenant routes with one of its API keys, or, as an operator,
 * through their operator copies (`/v1/ops/tenants/{tenantId}/…`). Every request goes out once through
 * {@link sendOnce}: a failure is reported to the caller, who decides; nothing here tries again.
 */

/** Base of every error the ops client raises. */
export class OpsClientError extends Error {
  override readonly name: string = 'OpsClientError';
}

/** The API's JSON error body (`{error, message, ...details}`), or what API Gateway answers instead (`{message}`). */
export interface ApiErrorBody {
  error?: string;
  message?: string;
  issues?: { path: string; message: string }[];
  [key: string]: unknown;
}

/** The API answered 4xx or 5xx. Carries the status and the JSON error body. */
export class OpsApiError extends OpsClientError {
  override readonly name = 'OpsApiError';
  readonly status: number;
  readonly body: ApiErrorBody;
  constructor(status: number, body: ApiErrorBody) {
    super(describeApiError(status, body));
    this.status = status;
    this.body = body;
  }
}

/** No answer: nothing listens at the URL, the host is unknown, or the request timed out. */
export class OpsApiUnreachableError extends OpsClientError {
  override readonly name = 'OpsApiUnreachableError';
  readonly url: string;
  readonly reason: 'refused' | 'timeout' | 'network';
  constructor(url: string, reason: 'refused' | 'timeout' | 'network', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.url = url;
    this.reason = reason;
  }
}

/** The request could not be signed (no AWS credentials found, or they could not be loaded). */
export class OpsSigningError extends OpsClientError {
  override readonly name = 'OpsSigningError';
}

/** An export that failed after its first page: `cursor` is the page it stopped at (`--cursor` resumes there). */
export class OpsExportStoppedError extends OpsClientError {
  override readonly name = 'OpsExportStoppedError';
  readonly cursor: string;
  constructor(cursor: string, cause: OpsClientError) {
    super(`${cause.message}; the export stopped before the page at cursor ${cursor}`, { cause });
    this.cursor = cursor;
  }
}

/** What an export request accepts, by format. */
const EXPORT_ACCEPT = { csv: 'text/csv', jsonl: 'application/x-ndjson' } as const;

/**
 * The cursor in a `Link: <…>; rel="next"` (RFC 8288) of an answer from `requestUrl`, when there is one. Only
 * the cursor is taken from it: the client asks its own path again with it (a stage or a custom domain's
 * mapping may show the API another path than the client's), and sends its key or signature nowhere else.
 */
export function nextCursor(link: string | undefined, requestUrl: string): string | undefined {
  if (link === undefined) return undefined;
  const target = /^\s*<([^>]*)>\s*;\s*rel="?next"?\s*$/i.exec(link)?.[1];
  const cursor = target === undefined ? null : new URL(target, requestUrl).searchParams.get('cursor');
  if (!cursor) throw new OpsApiResponseError(`unexpected Link header from ${requestUrl}: ${link.slice(0, 200)}`);
  return cursor;
}

/** A 2xx answer whose body is not what the route promises (a wrong URL, or a proxy in the way). */
export class OpsApiResponseError extends OpsClientError {
  override readonly name = 'OpsApiResponseError';
}

/** `409 conflict: cannot retry job X in state completed`, plus field paths for a 400. */
function describeApiError(status: number, body: ApiErrorBody): string {
  const code = body.error ?? (STATUS_CODES[status] ?? 'error').toLowerCase();
  const message = body.message ?? '(no message)';
  const issues = Array.isArray(body.issues) ? body.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') : '';
  return `${status} ${code}: ${message}${issues ? ` (${issues})` : ''}`;
}

/** One page of `GET /v1/ops/jobs`. */
export const jobPageSchema = z.object({ jobs: z.array(jobSummarySchema), cursor: z.string().optional() });
export type JobPage = z.infer<typeof jobPageSchema>;

/** `GET /v1/ops/policies`: every kind's policy with its un-jittered schedule. */
export const policyTableSchema = z.object({
  policies: z.array(
    z.object({
      kind: z.string(),
      maxAttempts: z.number().int(),
      onExhausted: z.string(),
      jitter: z.number(),
      schedule: z.array(z.object({ afterAttempt: z.number(), delayMs: z.number(), minMs: z.number(), maxMs: z.number(), cumulativeMs: z.number() })),
    }),
  ),
});
export type PolicyTable = z.infer<typeof policyTableSchema>;

const probeResponseSchema = z.object({ jobId: z.string() });

/** `GET /v1/ops/policies` as served: the policy table plus each kind's queue, timeout and period. */
export const servedPolicyTableSchema = policyTableSchema.extend({
  kinds: z.array(
    z.object({
      kind: z.string(),
      queue: z.string(),
      timeoutSeconds: z.number(),
      periodic: z.object({ everySeconds: z.number() }).nullable(),
      description: z.string().optional(),
    }),
  ),
});
export type ServedPolicyTable = z.infer<typeof servedPolicyTableSchema>;

/** `GET /v1/ops/job-counts`: jobs per state. */
export const jobCountsSchema = z.object({
  kind: z.string().nullable(),
  counts: z.record(z.string(), z.number().int()),
  /** Per kind, jobs per state. */
  byKind: z.record(z.string(), z.record(z.string(), z.number().int())),
  /** The dead letters kept: discarded jobs by kind and reason, jobs ops cancelled by kind. */
  deadLetters: z.array(z.object({ state: z.enum(['discarded', 'cancelled']), kind: z.string(), reason: z.string().nullable(), count: z.number().int() })),
});

export type PeriodicList = z.infer<typeof periodicListSchema>;

export type BatchView = z.infer<typeof batchResponse>;
export type BatchPage = z.infer<typeof batchListResponse>;
export type BatchRounds = z.infer<typeof roundsResponse>;
export type ContactsPage = z.infer<typeof contactsResponse>;
export type EndpointView = z.infer<typeof endpointViewSchema>;

/** One line of a batch's export as JSON Lines (functions/calls/contacts/export.ts `exportJsonLines`). */
export const exportLineSchema = z.object({
  number: z.string(),
  externalId: z.string().nullable(),
  variables: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  status: z.string(),
  code: z.string().nullable(),
  attempts: z.number().int(),
  recordingUrl: z.string().nullable(),
  transcriptUrl: z.string().nullable(),
  summary: z.string().nullable(),
  endedReason: z.string().nullable(),
});
export type ExportLine = z.infer<typeof exportLineSchema>;

/** `GET /v1/batches/{id}/contacts/{number}/attempts`: one item per call (functions/calls/model.ts `AttemptRow`); absent fields may come as null. */
export const contactAttemptsSchema = z.object({
  attempts: z.array(
    z.object({
      round: z.number().int(),
      callId: z.string(),
      reportedCode: z.string().nullish(),
      code: z.string(),
      retryable: z.boolean(),
      source: z.string(),
      durationSeconds: z.number().nullish(),
      placedAt: z.string().nullish(),
      completedAt: z.string(),
      recordingUrl: z.string().nullish(),
      transcriptUrl: z.string().nullish(),
      summary: z.string().nullish(),
      data: z.record(z.string(), z.unknown()).nullish(),
      endedReason: z.string().nullish(),
    }),
  ),
});
export type ContactAttempts = z.infer<typeof contactAttemptsSchema>;

/** `GET /v1/endpoints`. */
export const endpointPageSchema = z.object({ endpoints: z.array(endpointViewSchema), cursor: z.string().optional() });
export type EndpointPage = z.infer<typeof endpointPageSchema>;

/** `GET /v1/endpoints/{id}/deliveries`. */
export const endpointDeliveriesSchema = z.object({
  endpointId: z.string(),
  perState: z.number().int(),
  deliveries: z.array(
    z.object({
      jobId: z.string(),
      eventId: z.string(),
      state: z.string(),
      attempt: z.number().int(),
      maxAttempts: z.number().int(),
      discardReason: z.string().nullable(),
      createdAt: z.string(),
      updatedAt: z.string(),
      attempts: z.array(z.object({ attempt: z.number().int(), at: z.string(), durationMs: z.number(), outcome: z.string(), error: z.string().optional() })),
    }),
  ),
});
export type EndpointDeliveries = z.infer<typeof endpointDeliveriesSchema>;

/** `GET /v1/ops/mail` (the local runtime's SMTP sink; a deployed stack has no such route). */
export const mailListSchema = z.object({
  smtp: z.string(),
  total: z.number().int(),
  messages: z.array(
    z.object({
      id: z.string(),
      receivedAt: z.string(),
      envelope: z.object({ from: z.string().nullable().optional(), to: z.array(z.string()) }),
      messageId: z.string().nullable().optional(),
      subject: z.string().nullable().optional(),
      kind: z.string().nullable(),
    }),
  ),
});
export type MailList = z.infer<typeof mailListSchema>;

/** `GET /healthz`: the API's own clock (job time: a local runtime with TIME_SCALE runs ahead of the wall). */
const healthSchema = z.object({ status: z.string(), time: z.string() });

/** The filters of `GET /v1/ops/jobs`: they combine; `since` and `until` are on when the job reached its state. */
export interface JobListQuery {
  state?: string;
  kind?: string;
  reason?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

/** The body of `POST /v1/ops/jobs/retry` and `/cancel`: a state, the same filters, a dry run, how many at most in this call. */
export interface BulkJobRequest {
  state: string;
  kind?: string;
  reason?: string;
  since?: string;
  until?: string;
  dryRun?: boolean;
  limit?: number;
}

/** Jobs of one state by kind, and by discard reason when the API counts them so. */
export interface JobBreakdown {
  byKind: Record<string, number>;
  byReason?: Record<string, number>;
}

const bulkRetrySchema = z.object({ matched: z.number().int(), retried: z.number().int(), until: z.string() });
const bulkCancelSchema = z.object({ matched: z.number().int(), cancelled: z.number().int(), until: z.string() });

/** Turns a request into a signed one (headers added); used for API Gateway's IAM auth. */
export type RequestSigner = (request: OutboundRequest) => Promise<OutboundRequest>;

/** Sends one request; {@link sendOnce} unless a test stands in for the network. */
export type Send = (request: OutboundRequest) => Promise<OutboundResponse>;

/** How to reach the API. */
export interface OpsApiClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:3000` or `https://abc123.execute-api.eu-west-1.amazonaws.com`. */
  baseUrl: string;
  /** Signs each request (SigV4 against a deployed stack); none locally. Not with `apiKey`. */
  signer?: RequestSigner;
  /**
   * A tenant's API key: batches and endpoints are read and changed through the tenant routes, as that
   * tenant (`Authorization: Bearer`). Without one, through their operator copies.
   */
  apiKey?: string;
  /** @default sendOnce */
  send?: Send;
  /** @default 10 000 */
  timeoutMs?: number;
}

/**
 * A typed client of the ops routes. Each method sends one request, once; 4xx and 5xx become an
 * {@link OpsApiError}, no answer an {@link OpsApiUnreachableError}.
 *
 * @example
 * const api = new OpsApiClient({ baseUrl: 'http://127.0.0.1:3000' });
 * const { jobId } = await api.enqueueProbe({ failTimes: 2 });
 * const job = await api.getJob(jobId);
 */
const suppressionSchema = z.object({
  number: z.string(),
  reason: z.string().nullable(),
  source: z.string(),
  createdAt: z.string(),
  callId: z.string().nullable(),
  batchId: z.string().nullable(),
});
export type SuppressionView = z.infer<typeof suppressionSchema>;
const suppressionPageSchema = z.object({ suppressions: z.array(suppressionSchema), cursor: z.string().optional() });
export type SuppressionPage = z.infer<typeof suppressionPageSchema>;
const suppressionImportSchema = z.object({
  importId: z.string(),
  status: z.string(),
  total: z.number(),
  written: z.number(),
  rows: z.number(),
  duplicatesDropped: z.number(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
export type SuppressionImportView = z.infer<typeof suppressionImportSchema>;
const calendarSchema = z.object({
  calendarId: z.string(),
  provider: z.string(),
  providerCalendarId: z.string(),
  timezone: z.string(),
  bookableHours: z.record(z.string(), z.array(z.tuple([z.string(), z.string()]))),
  credentialsStored: z.boolean(),
  updatedAt: z.string(),
});
export type CalendarView = z.infer<typeof calendarSchema>;
const calendarPageSchema = z.object({ calendars: z.array(calendarSchema), cursor: z.string().optional() });
export type CalendarPage = z.infer<typeof calendarPageSchema>;

export class OpsApiClient {
  readonly baseUrl: string;
  /** Whether every request is signed (SigV4 for API Gateway's IAM auth). */
  readonly signed: boolean;
  /** Whether it acts as a tenant (an API key) rather than as an operator. */
  readonly asTenant: boolean;
  private readonly signer: RequestSigner | undefined;
  private readonly apiKey: string | undefined;
  private readonly send: Send;
  private readonly timeoutMs: number;

  constructor(options: OpsApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    if (options.signer && options.apiKey) throw new OpsClientError('a client either signs as an operator or presents a tenant’s API key, not both');
    this.signer = options.signer;
    this.signed = options.signer !== undefined;
    this.apiKey = options.apiKey;
    this.asTenant = options.apiKey !== undefined;
    this.send = options.send ?? sendOnce;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** `GET /v1/ops/jobs`: jobs by state, kind, reason and time, newest first; pass `cursor` on for the next page. */
  listJobs(query: JobListQuery = {}): Promise<JobPage> {
    return this.request('GET', '/v1/ops/jobs', jobPageSchema, { query: { ...query, limit: query.limit?.toString() } });
  }

  /** `GET /v1/ops/job-counts`: jobs per state, optionally of one kind. */
  async jobCounts(kind?: string): Promise<Record<string, number>> {
    return (await this.request('GET', '/v1/ops/job-counts', jobCountsSchema, { query: { kind } })).counts;
  }

  /**
   * Jobs of one state counted by kind, and discarded jobs by reason too (of one kind, if given), from one
   * `GET /v1/ops/job-counts`: its per-kind counts, and its dead letters by kind and reason.
   */
  async jobBreakdown(state: string, kind?: string): Promise<JobBreakdown> {
    const read = await this.request('GET', '/v1/ops/job-counts', jobCountsSchema);
    const byKind = Object.fromEntries(
      Object.entries(read.byKind)
        .map(([k, states]) => [k, states[state] ?? 0] as const)
        .filter(([, n]) => n > 0),
    );
    if (state !== 'discarded') return { byKind };
    const byReason: Record<string, number> = {};
    for (const d of read.deadLetters) {
      if (d.state !== 'discarded' || (kind !== undefined && d.kind !== kind) || d.count <= 0) continue;
      const reason = d.reason ?? 'unknown';
      byReason[reason] = (byReason[reason] ?? 0) + d.count;
    }
    return { byKind, byReason };
  }

  /** `GET /v1/ops/periodic`: every periodic kind's last run and last failure. */
  periodic(): Promise<PeriodicList> {
    return this.request('GET', '/v1/ops/periodic', periodicListSchema);
  }

  /** `GET /v1/ops/policies`, as served (with each kind's queue and period). */
  servedPolicies(): Promise<ServedPolicyTable> {
    return this.request('GET', '/v1/ops/policies', servedPolicyTableSchema);
  }

  /** `GET /healthz`: the API's clock, epoch ms. */
  async now(): Promise<number> {
    return Date.parse((await this.request('GET', '/healthz', healthSchema)).time);
  }

  /**
   * Where a tenant resource lives for this client: the tenant route (`/v1/…`) with an API key, else its
   * operator copy for the tenant the id names (`/v1/ops/tenants/{tenantId}/…`).
   */
  private tenantPath(ids: OwnedIds, id: string, rest: string): string {
    if (this.apiKey) return `/v1${rest}`;
    const owner = ids.parse(id);
    if (!owner) throw new OpsClientError(`not an id redial issued: ${id}`);
    return `/v1/ops/tenants/${encodePathSegment(owner.tenantId)}${rest}`;
  }

  /** A listing: the key's tenant's (the tenant route), one tenant's (its operator copy), or every tenant's (the operators' listing). */
  private listingPath(what: 'batches' | 'endpoints', tenantId: string | undefined): string {
    if (this.apiKey) return `/v1/${what}`;
    return tenantId === undefined ? `/v1/ops/${what}` : `/v1/ops/tenants/${encodePathSegment(tenantId)}/${what}`;
  }

  /** The newest batches first: the key's tenant's; as an operator, one tenant's (`tenantId`) or every tenant's. */
  listBatches(query: { limit?: number; cursor?: string; tenantId?: string } = {}): Promise<BatchPage> {
    return this.request('GET', this.listingPath('batches', query.tenantId), batchListResponse, { query: { limit: query.limit?.toString(), cursor: query.cursor } });
  }

  /** One batch. */
  getBatch(id: string): Promise<BatchView> {
    return this.request('GET', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}`), batchResponse);
  }

  /** `POST /v1/batches/{id}/pause`: the batch, Paused (a repeat changes nothing). */
  pauseBatch(id: string): Promise<BatchView> {
    return this.request('POST', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/pause`), batchResponse);
  }

  /** `POST /v1/batches/{id}/resume`: the batch, back to the status it had before its pause (a repeat changes nothing). */
  resumeBatch(id: string): Promise<BatchView> {
    return this.request('POST', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/resume`), batchResponse);
  }

  /** `POST /v1/batches/{id}/rerun`: a new batch of the contacts whose final code is in `codes` (default: the retryable ones). */
  rerunBatch(id: string, body: { codes?: string[] } = {}, idempotencyKey?: string): Promise<{ batchId: string }> {
    return this.request('POST', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/rerun`), z.object({ batchId: z.string() }), {
      body,
      ...(idempotencyKey !== undefined ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
    });
  }

  /** What each round of a batch came to. */
  batchRounds(id: string): Promise<BatchRounds> {
    return this.request('GET', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/rounds`), roundsResponse);
  }

  /**
   * One page of a batch's results (`GET /v1/batches/{id}/export`): its text (CSV, the header on the first
   * page only, or JSON Lines), and the cursor of the next page, from its `Link: <…>; rel="next"`, when there
   * is one. Pass `cursor` on for the next page: the URL the link names is this route's with it.
   */
  async exportPage(id: string, query: { format: 'csv' | 'jsonl'; limit?: number; cursor?: string }): Promise<{ text: string; cursor?: string }> {
    const path = this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/export`);
    const { response, url } = await this.exchange('GET', path, { query: { format: query.format, limit: query.limit?.toString(), cursor: query.cursor }, accept: EXPORT_ACCEPT[query.format] });
    const cursor = nextCursor(response.headers['link'], url);
    return { text: response.text, ...(cursor ? { cursor } : {}) };
  }

  /**
   * Every page of a batch's results in order, from `cursor` (default: the first page), as each arrives: the
   * pages' texts joined are the whole export. Each page is one request, sent once; a failure part-way is
   * an {@link OpsExportStoppedError} naming the cursor to resume from.
   */
  async *exportPages(id: string, query: { format: 'csv' | 'jsonl'; limit?: number; cursor?: string }): AsyncGenerator<string> {
    let cursor = query.cursor;
    do {
      let page: { text: string; cursor?: string };
      try {
        page = await this.exportPage(id, { ...query, ...(cursor ? { cursor } : {}) });
      } catch (error) {
        if (cursor === undefined || !(error instanceof OpsClientError)) throw error;
        throw new OpsExportStoppedError(cursor, error);
      }
      yield page.text;
      cursor = page.cursor;
    } while (cursor);
  }

  /**
   * One page of a batch's results as rows (the export's JSON Lines, each line checked against
   * {@link exportLineSchema}), and the next page's cursor: what the panel's contact table shows.
   */
  async exportRows(id: string, query: { limit?: number; cursor?: string } = {}): Promise<{ rows: ExportLine[]; cursor?: string }> {
    const page = await this.exportPage(id, { format: 'jsonl', ...query });
    const rows = page.text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const row = exportLineSchema.safeParse(parseJson(line));
        if (!row.success) throw new OpsApiResponseError(`unexpected line in the export of ${id}: ${row.error.issues[0]?.path.join('.') ?? ''} ${row.error.issues[0]?.message ?? ''}`);
        return row.data;
      });
    return { rows, ...(page.cursor ? { cursor: page.cursor } : {}) };
  }

  /** `GET /v1/batches/{id}/contacts/{number}/attempts`: a contact's calls, first round first, each with its artefacts. */
  contactAttempts(id: string, contactNumber: string): Promise<ContactAttempts> {
    return this.request('GET', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/contacts/${encodePathSegment(contactNumber)}/attempts`), contactAttemptsSchema);
  }

  /** A page of a batch's contacts in upload order. */
  batchContacts(id: string, query: { limit?: number; cursor?: string } = {}): Promise<ContactsPage> {
    return this.request('GET', this.tenantPath(batchIds, id, `/batches/${encodePathSegment(id)}/contacts`), contactsResponse, { query: { limit: query.limit?.toString(), cursor: query.cursor } });
  }

  /** The newest endpoints first: the key's tenant's; as an operator, one tenant's (`tenantId`) or every tenant's. */
  listEndpoints(query: { limit?: number; cursor?: string; tenantId?: string } = {}): Promise<EndpointPage> {
    return this.request('GET', this.listingPath('endpoints', query.tenantId), endpointPageSchema, { query: { limit: query.limit?.toString(), cursor: query.cursor } });
  }

  /** One endpoint, with what waits in its list. */
  getEndpoint(id: string): Promise<EndpointView & { waiting: number }> {
    return this.request('GET', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}`), endpointDetailSchema);
  }

  /** An endpoint's deliveries. */
  endpointDeliveries(id: string): Promise<EndpointDeliveries> {
    return this.request('GET', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/deliveries`), endpointDeliveriesSchema);
  }

  /** Enables an endpoint again. */
  enableEndpoint(id: string): Promise<EndpointView> {
    return this.request('POST', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/enable`), endpointViewSchema);
  }

  /** Requeues every discarded delivery of an endpoint (409 while it is disabled). */
  redeliverEndpoint(id: string): Promise<{ requeued: number }> {
    return this.request('POST', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/redeliver`), z.object({ requeued: z.number().int() }));
  }

  /** Changes an endpoint's URL, event types (null: every type) or description (null removes it). */
  updateEndpoint(id: string, body: { url?: string; eventTypes?: string[] | null; description?: string | null }): Promise<EndpointView> {
    return this.request('PATCH', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}`), endpointViewSchema, { body });
  }

  /** Deletes an endpoint: nothing more is sent to it, and a purge job discards what waited for it. */
  deleteEndpoint(id: string): Promise<z.infer<typeof deletedSchema>> {
    return this.request('DELETE', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}`), deletedSchema);
  }

  /** A new signing secret, shown once; the previous one also signs for 24 h unless `expireOldNow`. */
  rotateEndpointSecret(id: string, body: { expireOldNow?: boolean } = {}): Promise<z.infer<typeof rotatedSchema>> {
    return this.request('POST', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/rotate-secret`), rotatedSchema, { body });
  }

  /** One page of an endpoint's attempt log, newest first (`status`: a result or an HTTP status). */
  endpointAttempts(
    id: string,
    query: { since?: string; until?: string; status?: string; eventType?: string; limit?: number; cursor?: string } = {},
  ): Promise<{ endpointId: string; attempts: AttemptView[]; cursor?: string | undefined }> {
    return this.request('GET', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/attempts`), z.object({ endpointId: z.string(), attempts: z.array(attemptViewSchema), cursor: z.string().optional() }), {
      query: { since: query.since, until: query.until, status: query.status, eventType: query.eventType, limit: query.limit?.toString(), cursor: query.cursor },
    });
  }

  /** Starts a recovery of what an endpoint did not receive in a window (409 while it is disabled). */
  recoverEndpoint(id: string, body: { since: string; until?: string; dryRun?: boolean }): Promise<{ recoveryId: string }> {
    return this.request('POST', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/recover`), z.object({ recoveryId: z.string() }), { body });
  }

  /** One recovery of an endpoint. */
  endpointRecovery(id: string, recoveryId: string): Promise<RecoveryView> {
    return this.request('GET', this.tenantPath(endpointIds, id, `/endpoints/${encodePathSegment(id)}/recoveries/${encodePathSegment(recoveryId)}`), recoveryViewSchema);
  }

  /** `POST /v1/tenants/{tenantId}/keys` (operators): a new API key for a tenant, shown in this answer only. */
  createKey(tenantId: string): Promise<{ keyId: string; key: string }> {
    return this.request('POST', `/v1/tenants/${encodePathSegment(tenantId)}/keys`, z.object({ keyId: z.string(), key: z.string() }));
  }

  /** `GET /v1/tenants/{tenantId}/keys` (operators): a tenant's keys, never a key itself. */
  async listKeys(tenantId: string): Promise<ApiKeyView[]> {
    return (await this.request('GET', `/v1/tenants/${encodePathSegment(tenantId)}/keys`, z.object({ keys: z.array(apiKeyViewSchema) }))).keys;
  }

  /** `DELETE /v1/tenants/{tenantId}/keys/{keyId}` (operators): revokes a key. */
  revokeKey(tenantId: string, keyId: string): Promise<ApiKeyView> {
    return this.request('DELETE', `/v1/tenants/${encodePathSegment(tenantId)}/keys/${encodePathSegment(keyId)}`, apiKeyViewSchema);
  }

  /** `GET /v1/ops/mail`: what the local runtime's SMTP sink caught; undefined where the API keeps no mail (404: a deployed stack). */
  async listMail(limit = 100): Promise<MailList | undefined> {
    try {
      return await this.request('GET', '/v1/ops/mail', mailListSchema, { query: { limit: String(limit) } });
    } catch (error) {
      if (error instanceof OpsApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** `GET /v1/ops/mail/{id}/raw`: one message as the sink received it. */
  async rawMail(id: string): Promise<string> {
    return (await this.exchange('GET', `/v1/ops/mail/${encodePathSegment(id)}/raw`, {})).text;
  }

  /** `GET /v1/ops/jobs/{id}`: one job with its attempt history. */
  getJob(id: string): Promise<JobDetail> {
    return this.request('GET', `/v1/ops/jobs/${encodePathSegment(id)}`, jobDetailSchema);
  }

  /** `POST /v1/ops/jobs/{id}/retry`: runs a discarded, cancelled or waiting job now. */
  retryJob(id: string): Promise<JobDetail> {
    return this.request('POST', `/v1/ops/jobs/${encodePathSegment(id)}/retry`, jobDetailSchema);
  }

  /** `POST /v1/ops/jobs/{id}/cancel`: cancels a pending or running job. */
  cancelJob(id: string): Promise<JobDetail> {
    return this.request('POST', `/v1/ops/jobs/${encodePathSegment(id)}/cancel`, jobDetailSchema);
  }

  /** `POST /v1/ops/jobs/retry`: retries the jobs matching the filter (at most `limit` this call), or counts them (`dryRun`). */
  retryJobs(request: BulkJobRequest): Promise<{ matched: number; retried: number; until: string }> {
    return this.request('POST', '/v1/ops/jobs/retry', bulkRetrySchema, { body: request });
  }

  /** `POST /v1/ops/jobs/cancel`: cancels the jobs matching the filter (at most `limit` this call), or counts them (`dryRun`). */
  cancelJobs(request: BulkJobRequest): Promise<{ matched: number; cancelled: number; until: string }> {
    return this.request('POST', '/v1/ops/jobs/cancel', bulkCancelSchema, { body: request });
  }

  /** `POST /v1/ops/probes`: enqueues an ops.probe job that fails `failTimes` times, then completes. */
  enqueueProbe(args: { failTimes: number; note?: string }): Promise<{ jobId: string }> {
    return this.request('POST', '/v1/ops/probes', probeResponseSchema, { body: args });
  }

  /** A tenant's suppression routes: the key's tenant's, or as an operator the copy for `tenantId` (which an operator must name). */
  private suppressionsPath(tenantId: string | undefined, rest = ''): string {
    if (this.apiKey) return `/v1/suppressions${rest}`;
    if (tenantId === undefined) throw new OpsClientError('as an operator, name the tenant (--tenant)');
    return `/v1/ops/tenants/${encodePathSegment(tenantId)}/suppressions${rest}`;
  }

  /** `PUT /v1/suppressions/{number}`: the number on the tenant's suppression list. */
  putSuppression(tenantId: string | undefined, number: string, reason?: string): Promise<SuppressionView> {
    return this.request('PUT', this.suppressionsPath(tenantId, `/${encodePathSegment(number)}`), suppressionSchema, { body: reason === undefined ? {} : { reason } });
  }

  /** `DELETE /v1/suppressions/{number}`: the number off the list (its audit records stay). */
  deleteSuppression(tenantId: string | undefined, number: string): Promise<SuppressionView> {
    return this.request('DELETE', this.suppressionsPath(tenantId, `/${encodePathSegment(number)}`), suppressionSchema);
  }

  /** `GET /v1/suppressions`: a page of the list. */
  listSuppressions(tenantId: string | undefined, query: { limit?: number; cursor?: string } = {}): Promise<SuppressionPage> {
    return this.request('GET', this.suppressionsPath(tenantId), suppressionPageSchema, { query: { limit: query.limit?.toString(), cursor: query.cursor } });
  }

  /** `POST /v1/suppressions/csv`: a CSV (≤ 3 MB) checked and handed to its import job. */
  importSuppressions(tenantId: string | undefined, csv: string): Promise<SuppressionImportView> {
    return this.request('POST', this.suppressionsPath(tenantId, '/csv'), suppressionImportSchema, { raw: { text: csv, contentType: 'text/csv' } });
  }

  /** `GET /v1/suppressions/imports/{id}`: an import's progress. */
  suppressionImport(tenantId: string | undefined, importId: string): Promise<SuppressionImportView> {
    return this.request('GET', this.suppressionsPath(tenantId, `/imports/${encodePathSegment(importId)}`), suppressionImportSchema);
  }

  /** A tenant's calendar routes: the key's tenant's, or as an operator the copy for `tenantId` (which an operator must name). */
  private calendarsPath(tenantId: string | undefined, rest = ''): string {
    if (this.apiKey) return `/v1/calendars${rest}`;
    if (tenantId === undefined) throw new OpsClientError('as an operator, name the tenant (--tenant)');
    return `/v1/ops/tenants/${encodePathSegment(tenantId)}/calendars${rest}`;
  }

  /** `PUT /v1/calendars/{calendarId}`: creates or updates a calendar (`body` as the route takes it; credentials optional on an update). */
  putCalendar(tenantId: string | undefined, calendarId: string, body: unknown): Promise<CalendarView> {
    return this.request('PUT', this.calendarsPath(tenantId, `/${encodePathSegment(calendarId)}`), calendarSchema, { body });
  }

  /** `GET /v1/calendars/{calendarId}`: a calendar (never its credentials). */
  calendar(tenantId: string | undefined, calendarId: string): Promise<CalendarView> {
    return this.request('GET', this.calendarsPath(tenantId, `/${encodePathSegment(calendarId)}`), calendarSchema);
  }

  /** `GET /v1/calendars`: a page of the tenant's calendars. */
  listCalendars(tenantId: string | undefined, query: { limit?: number; cursor?: string } = {}): Promise<CalendarPage> {
    return this.request('GET', this.calendarsPath(tenantId), calendarPageSchema, { query: { limit: query.limit?.toString(), cursor: query.cursor } });
  }

  /** `DELETE /v1/calendars/{calendarId}`: deletes a calendar no live batch books into. */
  deleteCalendar(tenantId: string | undefined, calendarId: string): Promise<CalendarView> {
    return this.request('DELETE', this.calendarsPath(tenantId, `/${encodePathSegment(calendarId)}`), calendarSchema);
  }

  /** `GET /v1/ops/policies`: the deployed policy table. */
  policies(): Promise<PolicyTable> {
    return this.request('GET', '/v1/ops/policies', policyTableSchema);
  }

  private async request<T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    schema: z.ZodType<T>,
    options: { query?: Record<string, string | undefined>; body?: unknown; headers?: Record<string, string>; raw?: { text: string; contentType: string } } = {},
  ): Promise<T> {
    const { response, url } = await this.exchange(method, path, options);
    const result = schema.safeParse(parseJson(response.text));
    if (!result.success) {
      const first = result.error.issues[0];
      throw new OpsApiResponseError(
        `unexpected answer from ${method} ${url} (status ${response.status}): ${first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'not JSON'}`,
      );
    }
    return result.data;
  }

  /** Signs (when a signer is set) and sends one request, once; 4xx and 5xx become an {@link OpsApiError}. */
  private async exchange(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    options: { query?: Record<string, string | undefined>; body?: unknown; accept?: string; headers?: Record<string, string>; raw?: { text: string; contentType: string } },
  ): Promise<{ response: OutboundResponse; url: string; text: string }> {
    const url = `${this.baseUrl}${path}${queryString(options.query ?? {})}`;
    let request: OutboundRequest = {
      url,
      method,
      headers: {
        accept: options.accept ?? 'application/json',
        ...(options.raw ? { 'content-type': options.raw.contentType } : options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
        ...options.headers,
      },
      ...(options.raw ? { body: options.raw.text } : options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      timeoutMs: this.timeoutMs,
    };
    if (this.signer) {
      try {
        request = await this.signer(request);
      } catch (error) {
        throw new OpsSigningError(`cannot sign the request for ${this.baseUrl}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    }
    let response: OutboundResponse;
    try {
      response = await this.send(request);
    } catch (error) {
      throw unreachable(this.baseUrl, error, this.timeoutMs);
    }
    if (response.status >= 400) {
      const parsedBody = parseJson(response.text);
      const body: ApiErrorBody =
        parsedBody && typeof parsedBody === 'object' && !Array.isArray(parsedBody)
          ? (parsedBody as ApiErrorBody)
          : { message: response.text.trim().slice(0, 200) || (STATUS_CODES[response.status] ?? 'error') };
      throw new OpsApiError(response.status, body);
    }
    return { response, url, text: response.text };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** RFC 3986 encoding, the one SigV4 canonicalises with (encodeURIComponent leaves !'()* alone). */
const strictEncode = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const encodePathSegment = strictEncode;

function queryString(query: Record<string, string | undefined>): string {
  const pairs = Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '');
  return pairs.length ? `?${pairs.map(([k, v]) => `${strictEncode(k)}=${strictEncode(v)}`).join('&')}` : '';
}

/** The network error codes found anywhere in an error's cause chain (fetch wraps them; happy eyeballs aggregates them). */
function errorCodes(error: unknown, seen = new Set<unknown>()): string[] {
  if (!error || typeof error !== 'object' || seen.has(error)) return [];
  seen.add(error);
  const e = error as { code?: unknown; cause?: unknown; errors?: unknown };
  return [
    ...(typeof e.code === 'string' ? [e.code] : []),
    ...errorCodes(e.cause, seen),
    ...(Array.isArray(e.errors) ? e.errors.flatMap((inner) => errorCodes(inner, seen)) : []),
  ];
}

function unreachable(baseUrl: string, error: unknown, timeoutMs: number): OpsApiUnreachableError {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return new OpsApiUnreachableError(baseUrl, 'timeout', `no answer from ${baseUrl} within ${timeoutMs / 1000} s`, { cause: error });
  }
  const codes = errorCodes(error);
  if (codes.includes('ECONNREFUSED')) {
    return new OpsApiUnreachableError(baseUrl, 'refused', `no redial API at ${baseUrl} (is \`npm start\` running?)`, { cause: error });
  }
  const detail = codes[0] ?? (error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error));
  return new OpsApiUnreachableError(baseUrl, 'network', `cannot reach ${baseUrl}: ${detail}`, { cause: error });
}

/** What a SigV4 signer for API Gateway needs. */
export interface SigV4Options {
  region: string;
  credentials: AwsCredentials | CredentialProvider;
  /** The signing time (injected so tests are exact). */
  now: () => Date;
  /** @default 'execute-api' */
  service?: string;
}

/**
 * Signs requests with AWS Signature Version 4 for API Gateway's IAM auth: host, method, path, query and
 * body (its SHA-256 also goes out as x-amz-content-sha256, which execute-api ignores).
 *
 * @example
 * const signer = sigV4Signer({ region: 'eu-west-1', credentials: defaultCredentialChain(), now: () => new Date() });
 */
export function sigV4Signer(options: SigV4Options): RequestSigner {
  const signer = new SignatureV4({ service: options.service ?? 'execute-api', region: options.region, credentials: options.credentials, sha256: Sha256 });
  return async (request) => {
    const url = new URL(request.url);
    const query: Record<string, string> = {};
    for (const [key, value] of url.searchParams) query[key] = value;
    const signed = await signer.sign(
      {
        method: request.method ?? 'GET',
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query,
        headers: { ...request.headers, host: url.host },
        ...(request.body !== undefined ? { body: request.body } : {}),
      },
      { signingDate: options.now() },
    );
    // fetch sets Host itself, from the same URL; it may not be passed in as a header.
    const headers = Object.fromEntries(Object.entries(signed.headers).filter(([name]) => name.toLowerCase() !== 'host'));
    return { ...request, headers };
  };
}

/** Whether requests to `url` are signed: forced by `--iam`, or automatic for AWS hosts (`*.amazonaws.com`). */
export function needsSigning(url: URL, force: boolean): boolean {
  return force || url.hostname.toLowerCase().endsWith('.amazonaws.com');
}

/** The region in an API Gateway host (`abc123.execute-api.eu-west-1.amazonaws.com` → `eu-west-1`). */
export function regionFromHost(hostname: string): string | undefined {
  return /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com$/i.exec(hostname)?.[1]?.toLowerCase();
}
