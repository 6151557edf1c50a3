import { createHash } from 'node:crypto';
import { HttpError, notFound, tenantRoute, unavailable } from '../../platform/http.ts';
import type { ApiRoute } from '../../platform/http.ts';
import { requestHashOf } from '../../platform/idempotency.ts';
import type { BatchSettings } from '../batch-create.ts';
import type { Contact } from '../contacts/contact.ts';
import type { CallsDeps } from '../deps.ts';
import { keyedRetry } from '../api.ts';
import { batchHeaders, MAX_CONTACTS_PER_BATCH } from '../schemas.ts';
import { batchIdFor, createBatchNow, csvOutcome, readCsv, startImport } from './create.ts';
import { csvBatchQuery, csvBatchResponse, importBody, importResponse, uploadResponse } from './settings.ts';
import { Stager } from './staging.ts';
import { checkNewBatchControl } from '../control/create.ts';
import { MAX_UPLOAD_BYTES, UPLOAD_URL_SECONDS, uploadIds, uploadKey } from './uploads.ts';

/** The largest CSV body `POST /v1/batches/csv` takes: 10,000 rows with a few variables; larger files go through an upload. */
export const MAX_CSV_BODY_BYTES = 3 * 1024 * 1024;

/** Whether a Content-Type is CSV: `text/csv`, with any parameters. */
const isCsv = (contentType: string | undefined): boolean => contentType?.split(';')[0]?.trim().toLowerCase() === 'text/csv';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The settings a batch row keeps, from a validated query or body. */
const settingsOf = (s: BatchSettings): BatchSettings => ({
  maxAttempts: s.maxAttempts,
  callingWindow: s.callingWindow,
  retry: s.retry,
  minConversationDurationSeconds: s.minConversationDurationSeconds,
  defaultCountry: s.defaultCountry,
  strictNumbers: s.strictNumbers,
  startAt: s.startAt,
  maxConcurrentCalls: s.maxConcurrentCalls,
  retryOn: s.retryOn,
});

const invalidCsvDescription =
  'the file is refused, nothing written: `{error: "invalid_csv", message, refusal, issues: [{row, column?, message}] (the first 100), refusedRows, issuesOmitted}`; ' +
  '`refusal` is `not_utf8`, `no_header`, `header`, `malformed`, `too_many_rows`, `rows` (invalid rows without skipInvalid) or `empty` (no valid contact)';

/**
 * The routes that create a batch from a CSV file (docs/calls.md, "Importing contacts"): the file as the
 * body (≤ 10,000 rows), or a large file (≤ 50 MB, 100,000 rows) uploaded first and then imported by a job.
 */
export function importRoutes(calls: () => CallsDeps): ApiRoute[] {
  const csvBatch = tenantRoute({
    method: 'POST',
    path: '/v1/batches/csv',
    summary: 'Create a batch from a CSV body (Content-Type: text/csv, up to 10,000 rows and 3 MB); the batch’s settings are query parameters',
    query: csvBatchQuery,
    headers: batchHeaders,
    maxBodyBytes: MAX_CSV_BODY_BYTES,
    rawBody: {
      mediaType: 'text/csv',
      description:
        'UTF-8 (a BOM is dropped), `,` or `;` as the header line has it, quoted fields may hold delimiters and newlines, CRLF or LF. Header names are case-insensitive: `number` (required), `external_id` and `timezone` (optional); every other column is a variable (at most 50). Cells are strings; an empty cell leaves the variable out.',
    },
    responses: {
      201: { description: 'created, Pending: its first round starts at once (or when its calling window opens)', schema: csvBatchResponse },
      200: { description: 'a retry with the same Idempotency-Key, file and settings: the batch it created; nothing written', schema: csvBatchResponse.pick({ batchId: true }) },
      400: { description: `${invalidCsvDescription}; or an invalid query` },
      413: { description: 'the body is over 3 MB: upload the file (`POST /v1/uploads`) and import it' },
      415: { description: 'the body is not text/csv' },
      422: { description: 'the Idempotency-Key was used before with another file or settings; nothing written' },
    },
    handler: async ({ query, headers, event, scope }) => {
      if (!isCsv(headers['content-type'])) throw new HttpError(415, 'unsupported_media_type', 'send the file as the body with Content-Type: text/csv');
      const deps = calls();
      const bytes = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64') : Buffer.from(event.body ?? '', 'utf8');
      const tenantId = scope.tenantId;
      const key = headers['idempotency-key'];
      // The request is the file and its settings: a retry must send the same bytes and the same query.
      const requestHash = key === undefined ? undefined : requestHashOf({ tenantId, query, csv: sha256(bytes) });
      const batchId = batchIdFor(tenantId, key);
      await checkNewBatchControl(deps, tenantId, query, deps.clock.now(), 'query');
      const contacts: Contact[] = [];
      const read = await readCsv(bytes, { defaultCountry: query.defaultCountry, strictNumbers: query.strictNumbers, skipInvalid: query.skipInvalid, dedupe: query.dedupe, maxRows: MAX_CONTACTS_PER_BATCH }, (page) => {
        contacts.push(...page);
      });
      const replay = await createBatchNow(deps, {
        batchId,
        tenantId,
        settings: settingsOf(query),
        contacts,
        read,
        idempotency: key === undefined || requestHash === undefined ? undefined : { key, requestHash },
      });
      return replay ?? { status: 201, body: { batchId, ...csvOutcome(read) } };
    },
  });

  const createUpload = tenantRoute({
    method: 'POST',
    path: '/v1/uploads',
    summary: 'An upload URL for a large contacts CSV (up to 50 MB, 100,000 rows): PUT the file there, then import it with POST /v1/batches/imports',
    responses: {
      201: { description: 'the upload: PUT the file’s bytes to `url` before `expiresAt`', schema: uploadResponse },
      503: { description: 'uploads are not configured on this deployment' },
    },
    handler: async ({ scope }) => {
      const { uploads, clock, secureRandom } = calls();
      if (!uploads) throw unavailable('uploads are not configured here');
      const uploadId = uploadIds.make(scope.tenantId, secureRandom(16).toString('hex'));
      const expiresAt = clock.now() + UPLOAD_URL_SECONDS * 1000;
      const url = await uploads.uploadUrl(uploadKey(uploadId), expiresAt);
      return { status: 201, body: { uploadId, url, method: 'PUT', expiresAt: new Date(expiresAt).toISOString(), maxBytes: MAX_UPLOAD_BYTES } };
    },
  });

  const importBatch = tenantRoute({
    method: 'POST',
    path: '/v1/batches/imports',
    summary: 'Create a batch from an uploaded CSV: the file is read and validated now, its contacts are written by an import job (status Importing, then Pending)',
    body: importBody,
    headers: batchHeaders,
    responses: {
      202: { description: 'accepted: the batch exists, Importing; it becomes Pending (and dials) once every page is written', schema: importResponse },
      200: { description: 'a retry with the same Idempotency-Key and body: the batch it created; nothing written', schema: csvBatchResponse.pick({ batchId: true }) },
      400: { description: `${invalidCsvDescription}; or an invalid body` },
      404: { description: 'no such upload (not yours, or its file was never PUT, or it expired)' },
      413: { description: 'the uploaded file is over 50 MB' },
      422: { description: 'the Idempotency-Key was used before with another body; nothing written' },
    },
    handler: async ({ body, headers, scope }) => {
      const deps = calls();
      const { uploads, store, clock } = deps;
      if (!uploads) throw unavailable('uploads are not configured here');
      const tenantId = scope.tenantId;
      if (!uploadIds.inScope(scope, body.uploadId)) throw notFound(`upload ${body.uploadId}`);
      await checkNewBatchControl(deps, tenantId, body, clock.now(), 'body');
      const key = headers['idempotency-key'];
      const requestHash = key === undefined ? undefined : requestHashOf({ ...body, tenantId });
      const batchId = batchIdFor(tenantId, key);
      // A retry of an import that was created: answered before the file is read again (up to 50 MB).
      if (key !== undefined && requestHash !== undefined) {
        const existing = await store.getBatch(batchId);
        if (existing) return keyedRetry(existing, tenantId, requestHash);
      }
      const file = await uploads.open(uploadKey(body.uploadId));
      if (!file) throw notFound(`upload ${body.uploadId} (PUT the file to its URL first; uploads are kept for 2 days)`);
      const stop = () => (file.body as { destroy?: () => void }).destroy?.();
      if (file.size > MAX_UPLOAD_BYTES) {
        stop();
        throw new HttpError(413, 'payload_too_large', `the uploaded file is ${file.size} bytes; the limit is ${MAX_UPLOAD_BYTES}`);
      }
      const stager = new Stager(store, batchId, clock.now());
      try {
        const read = await readCsv(file.body, { defaultCountry: body.defaultCountry, strictNumbers: body.strictNumbers, skipInvalid: body.skipInvalid, dedupe: body.dedupe }, (page) => stager.add(page));
        const replay = await startImport(deps, {
          batchId,
          tenantId,
          settings: settingsOf(body),
          stager,
          read,
          pacing: { pagesPerRun: body.pagesPerRun, pageDelayMs: body.pageDelayMs },
          idempotency: key === undefined || requestHash === undefined ? undefined : { key, requestHash },
        });
        return replay ?? { status: 202, body: { batchId, status: 'Importing', ...csvOutcome(read) } };
      } finally {
        stop();
      }
    },
  });

  return [csvBatch, createUpload, importBatch];
}
