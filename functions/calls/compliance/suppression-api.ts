import * as z from 'zod';
import { HttpError, notFound, tenantRoute, unavailable } from '../../platform/http.ts';
import type { ApiRoute } from '../../platform/http.ts';
import { normaliseNumber } from '../contacts/numbers.ts';
import type { CallsDeps } from '../deps.ts';
import { uploadIds, uploadKey, MAX_UPLOAD_BYTES } from '../imports/uploads.ts';
import { MAX_CSV_BODY_BYTES } from '../imports/routes.ts';
import { getSuppressionImport, importView, MAX_SUPPRESSION_ROWS, readSuppressionCsv, startSuppressionImport } from './suppression-import.ts';
import { suppressionImportIds } from './suppression-import-kind.ts';
import { MAX_SUPPRESSION_REASON, MAX_SUPPRESSIONS_PAGE } from './suppression-store.ts';
import { SuppressionSource } from './suppression.ts';
import type { SuppressionRow } from './suppression.ts';

/**
 * The suppression list's routes (docs/calls.md, "Suppression list"), tenant routes: the tenant is the API
 * key's, and every key is built from it (suppression.ts), so another tenant's entries are not found.
 */

/** A number in the path, as the project reads any number (contacts/numbers.ts): international form, E.164 once read. */
const numberParam = z.string().transform((text, ctx) => {
  const verdict = normaliseNumber(text);
  if (!verdict.ok) {
    ctx.addIssue({ code: 'custom', message: `${verdict.message}: expected a number in international form such as +14155550123` });
    return z.NEVER;
  }
  return verdict.number;
});

const numberParams = z.object({ number: numberParam.describe('the number, in international form (+ and the country code); URL-encode the +') });

const putBody = z.strictObject({ reason: z.string().trim().min(1).max(MAX_SUPPRESSION_REASON).optional().describe('why (kept with the entry; a later PUT with a reason replaces it)') }).optional();

const entryView = (row: SuppressionRow) => ({
  number: row.number,
  reason: row.reason ?? null,
  source: row.source,
  createdAt: row.createdAt,
  callId: row.callId ?? null,
  batchId: row.batchId ?? null,
});

const entryResponse = z.object({
  number: z.string(),
  reason: z.string().nullable(),
  source: z.enum([SuppressionSource.api, SuppressionSource.import, SuppressionSource.optOut]),
  createdAt: z.string(),
  callId: z.string().nullable(),
  batchId: z.string().nullable(),
});

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_SUPPRESSIONS_PAGE).optional().describe(`entries per page, 1–${MAX_SUPPRESSIONS_PAGE} (default 100)`),
  cursor: z.string().max(500).optional().describe('the `cursor` of the previous page'),
});

const importResponse = z.object({
  importId: z.string(),
  status: z.enum(['Importing', 'Done']),
  total: z.number().int().describe('numbers to write (rows less duplicates)'),
  written: z.number().int().describe('numbers written so far'),
  rows: z.number().int(),
  duplicatesDropped: z.number().int(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});

const isCsv = (contentType: string | undefined): boolean => contentType?.split(';')[0]?.trim().toLowerCase() === 'text/csv';

const invalidCsv =
  'the file is refused, nothing written: `{error: "invalid_csv", message, issues: [{row, column?, message}] (the first 100; the header is row 1), refusedRows, issuesOmitted}`';

export function suppressionRoutes(calls: () => CallsDeps): ApiRoute[] {
  const put = tenantRoute({
    method: 'PUT',
    path: '/v1/suppressions/{number}',
    summary: 'Put a number on your suppression list (body `{}` or `{reason}`): it is never dialled again (checked in each dial’s commit) until removed',
    params: numberParams,
    body: putBody,
    responses: {
      200: { description: 'the entry (a number already on the list keeps its createdAt and source; a reason given replaces the old one)', schema: entryResponse },
      400: { description: 'not a number (`path.number`), or a bad reason' },
      503: { description: 'another write held the entry; nothing was written, try again' },
    },
    handler: async ({ params, body, scope }) => {
      const { store, clock } = calls();
      const suppressions = store.suppressions();
      const now = clock.now();
      const result = await suppressions.put(scope, { number: params.number, reason: body?.reason, source: SuppressionSource.api, now });
      if (!result.committed) throw unavailable();
      // The entry as it stands; a DELETE that committed right after this PUT leaves only what was written to show.
      const entry = await suppressions.get(scope, params.number);
      const written: SuppressionRow = { pk: '', sk: '', tenantId: scope.tenantId, number: params.number, source: SuppressionSource.api, createdAt: new Date(now).toISOString(), ...(body?.reason !== undefined ? { reason: body.reason } : {}) };
      return { status: 200, body: entryView(entry ?? written) };
    },
  });

  const remove = tenantRoute({
    method: 'DELETE',
    path: '/v1/suppressions/{number}',
    summary: 'Take a number off your suppression list (its audit records are kept)',
    params: numberParams,
    responses: {
      200: { description: 'the entry as it was', schema: entryResponse },
      400: { description: 'not a number (`path.number`)' },
      404: { description: 'the number is not on your list' },
      503: { description: 'another write held the entry; nothing was written, try again' },
    },
    handler: async ({ params, scope }) => {
      const { store, clock } = calls();
      const result = await store.suppressions().remove(scope, params.number, clock.now());
      if (result.removed) return { status: 200, body: entryView(result.removed) };
      if (result.outcome) throw unavailable();
      throw notFound(`suppression of ${params.number}`);
    },
  });

  const list = tenantRoute({
    method: 'GET',
    path: '/v1/suppressions',
    summary: 'Your suppression list, a page at a time (its four shards in turn; a page may be short and still have a cursor)',
    query: listQuery,
    responses: {
      200: { description: 'up to `limit` entries; `cursor`, when present, asks for the next page', schema: z.object({ suppressions: z.array(entryResponse), cursor: z.string().optional() }) },
      400: { description: 'a bad limit, or a cursor this listing did not give out (to you)' },
    },
    handler: async ({ query, scope }) => {
      const page = await calls().store.suppressions().list(scope, query.limit ?? 100, query.cursor);
      return { status: 200, body: { suppressions: page.entries.map(entryView), ...(page.cursor ? { cursor: page.cursor } : {}) } };
    },
  });

  const importCsv = tenantRoute({
    method: 'POST',
    path: '/v1/suppressions/csv',
    summary: `Import numbers onto your suppression list from a CSV body (Content-Type: text/csv, up to 3 MB): a \`number\` column, optionally \`reason\`; written by an import job`,
    maxBodyBytes: MAX_CSV_BODY_BYTES,
    responses: {
      202: { description: 'accepted: every row checked; the import job writes the numbers (`GET /v1/suppressions/imports/{id}` for its progress)', schema: importResponse },
      400: { description: invalidCsv },
      413: { description: 'the body is over 3 MB: upload the file (`POST /v1/uploads`) and import it with POST /v1/suppressions/imports' },
      415: { description: 'the body is not text/csv' },
    },
    handler: async ({ headers, event, scope }) => {
      if (!isCsv((headers as Record<string, string | undefined>)['content-type'])) throw new HttpError(415, 'unsupported_media_type', 'send the file as the body with Content-Type: text/csv');
      const bytes = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64') : Buffer.from(event.body ?? '', 'utf8');
      const csv = await readSuppressionCsv(bytes);
      return { status: 202, body: importView(await startSuppressionImport(calls(), scope, csv)) };
    },
  });

  const importUpload = tenantRoute({
    method: 'POST',
    path: '/v1/suppressions/imports',
    summary: `Import numbers onto your suppression list from an uploaded CSV (\`POST /v1/uploads\`; up to ${MAX_SUPPRESSION_ROWS.toLocaleString('en')} rows): checked now, written by an import job`,
    body: z.strictObject({ uploadId: uploadIds.schema.describe('the `uploadId` of `POST /v1/uploads`, once its file was PUT') }),
    responses: {
      202: { description: 'accepted: every row checked; the import job writes the numbers', schema: importResponse },
      400: { description: `${invalidCsv}; or an invalid body` },
      404: { description: 'no such upload (not yours, or its file was never PUT, or it expired)' },
      413: { description: 'the uploaded file is over 50 MB' },
    },
    handler: async ({ body, scope }) => {
      const deps = calls();
      if (!deps.uploads) throw unavailable('uploads are not configured here');
      if (!uploadIds.inScope(scope, body.uploadId)) throw notFound(`upload ${body.uploadId}`);
      const file = await deps.uploads.open(uploadKey(body.uploadId));
      if (!file) throw notFound(`upload ${body.uploadId} (PUT the file to its URL first; uploads are kept for 2 days)`);
      const stop = () => (file.body as { destroy?: () => void }).destroy?.();
      try {
        if (file.size > MAX_UPLOAD_BYTES) throw new HttpError(413, 'payload_too_large', `the uploaded file is ${file.size} bytes; the limit is ${MAX_UPLOAD_BYTES}`);
        const csv = await readSuppressionCsv(file.body);
        return { status: 202, body: importView(await startSuppressionImport(deps, scope, csv)) };
      } finally {
        stop();
      }
    },
  });

  const getImport = tenantRoute({
    method: 'GET',
    path: '/v1/suppressions/imports/{id}',
    summary: 'A suppression import’s progress',
    params: z.object({ id: suppressionImportIds.schema }),
    responses: { 200: { description: 'the import', schema: importResponse }, 404: { description: 'no such import (or not yours)' } },
    handler: async ({ params, scope }) => {
      const row = await getSuppressionImport(calls().store, scope, params.id);
      if (!row) throw notFound(`suppression import ${params.id}`);
      return { status: 200, body: importView(row) };
    },
  });

  return [put, remove, list, importCsv, importUpload, getImport];
}
