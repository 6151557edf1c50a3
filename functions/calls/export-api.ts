import * as z from 'zod';
import { InvalidCursorError } from '../platform/dynamo.ts';
import { notFound, queryInt, tenantRoute } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { exportColumns, exportCsv, exportJsonLines } from './contacts/export.ts';
import type { ExportColumn, ExportRow } from './contacts/export.ts';
import type { CallsDeps } from './deps.ts';
import type { BatchRow, ContactDataRow, ContactRow } from './model.ts';
import { batchParams } from './schemas.ts';
import { offsetCursor } from './offset-cursor.ts';
import { contactState } from './status.ts';
import type { ContactState } from './status.ts';
import type { CallsStore } from './store.ts';

/**
 * `GET /v1/batches/{id}/export`: a batch's results out (docs/calls.md, "Exporting results"), one row per
 * contact in upload order, as CSV or JSON Lines (contacts/export.ts writes the rows), a page a response.
 *
 * A page is at most {@link EXPORT_PAGE_CONTACTS} contacts. The worst-case row holds 4 KB of variables
 * (`MAX_VARIABLES_BYTES`), a 4 KB summary (`MAX_SUMMARY_BYTES`), two 2 KB artefact URLs
 * (`MAX_ARTEFACT_URL_BYTES`) and about 0.5 KB more (a 128-character externalId, the ended reason, number,
 * status, code): ≈ 12.5 KB, so 250 of them ≈ 3.1 MB, half of Lambda's 6 MB response limit. Escaping can
 * inflate text past that (CSV doubles a quote; JSON writes a control character as `\u00XX`; and Lambda's
 * response is itself JSON, which escapes the body again), so a page is also cut short before its body,
 * measured as Lambda sends it, passes {@link EXPORT_PAGE_BYTES}: the next page starts at the first row
 * left out. A typical row (a few variables, two URLs, a short summary) is well under 1 KB: ~250 KB a page.
 * 250 is also half a list page, so every page reads one list page.
 *
 * The next page is announced by `Link: <…>; rel="next"` (RFC 8288), whose URL carries an opaque cursor bound
 * to the batch; the last page has none. The CSV header is on the first page only, so the pages joined in
 * order are one CSV file. Allowed in every status: a batch in progress exports what it has so far.
 */
export const EXPORT_PAGE_CONTACTS = 250;
/** A page's body, as Lambda's JSON response carries it, stays under this (Lambda refuses over 6 MB). */
export const EXPORT_PAGE_BYTES = 5 * 1024 * 1024;

/** The export's media types, by `format`. */
export const EXPORT_MEDIA_TYPES = { csv: 'text/csv; charset=utf-8', jsonl: 'application/x-ndjson' } as const;
export type ExportFormat = keyof typeof EXPORT_MEDIA_TYPES;

/** The cursor: the batch and the next contact's position in upload order, opaque to clients. */
const exportCursor = offsetCursor('export', 7, 'not a cursor from this export');
export const encodeExportCursor = exportCursor.encode;

const exportQuery = z.object({
  format: z.enum(['csv', 'jsonl']).optional().describe('`csv` (default; RFC 4180, a header line on the first page) or `jsonl` (JSON Lines, one object a contact)'),
  limit: queryInt(1, EXPORT_PAGE_CONTACTS).optional().describe(`contacts per page, 1–${EXPORT_PAGE_CONTACTS} (default ${EXPORT_PAGE_CONTACTS}); a page may hold fewer, never more`),
  cursor: exportCursor.schema
    .describe('the cursor in the previous page’s `Link: <…>; rel="next"` (follow that URL as it is)'),
});

/**
 * The API's state of each contact of a page in upload order from `offset`, as `GET /v1/batches/{id}/contacts`
 * derives it (status.ts): Calling from the dial cursor — round 1's list is the upload order, a later
 * round's is read up to the cursor.
 */
async function pageStates(store: CallsStore, batch: BatchRow, offset: number, contacts: readonly { number: string; state: ContactRow | undefined }[]): Promise<ContactState[]> {
  const dialled = await store.dialledInCurrentRound(batch);
  return contacts.map((c, i) => contactState(batch, c.state, dialled(c.number, offset + i)));
}

/** One contact's export row: its data, its derived state, and its latest completed call's artefacts. */
export function exportRow(number: string, state: ContactState, item: ContactRow | undefined, data: ContactDataRow | undefined): ExportRow {
  return {
    number,
    externalId: data?.externalId,
    variables: data?.variables,
    status: state.status,
    code: state.code,
    attempts: state.attempts,
    recordingUrl: item?.recordingUrl,
    transcriptUrl: item?.transcriptUrl,
    summary: item?.summary,
    endedReason: item?.endedReason,
  };
}

/** Rows as the format writes them, each on its own (the page is cut between rows). */
const rowText = (format: ExportFormat, columns: readonly ExportColumn[], row: ExportRow): string =>
  format === 'csv' ? exportCsv(columns, [row], { header: false }) : exportJsonLines(columns, [row]);

/** Bytes a body takes inside Lambda's JSON response (its escapes included). */
const sentBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text));

/**
 * The rows that fit a page: in order, until the next would take the body past `budget` bytes as sent
 * (at least one row, which alone is far below it). Returns the text and how many rows it holds.
 */
export function fitPage(head: string, rows: readonly string[], budget: number): { text: string; rows: number } {
  let text = head;
  let bytes = sentBytes(head);
  let n = 0;
  for (const row of rows) {
    // Two quotes of the JSON string are counted in `bytes` already; a row adds its escaped content.
    const more = sentBytes(row) - 2;
    if (n > 0 && bytes + more > budget) break;
    text += row;
    bytes += more;
    n++;
  }
  return { text, rows: n };
}

/** The export route (a tenant route, with its operator copy); api.ts lists it with the other batch routes. */
export function exportRoute(calls: () => CallsDeps): ApiRoute {
  return tenantRoute({
    method: 'GET',
    path: '/v1/batches/{id}/export',
    summary: 'A batch’s results: one row per contact in upload order (number, externalId, variables, final status and code, attempts, the last call’s artefacts), as CSV or JSON Lines, a page at a time; in any status',
    params: batchParams,
    query: exportQuery,
    responses: {
      200: {
        description:
          `up to \`limit\` contacts (fewer when their text would pass ${EXPORT_PAGE_BYTES / 1024 / 1024} MB); a \`Link: <…>; rel="next"\` header, when present, is the next page’s URL. ` +
          'CSV: columns `number`, `external_id`, one per variable in import order, `status`, `code`, `attempts`, `recording_url`, `transcript_url`, `summary`, `ended_reason`; the header line on the first page only; a cell that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) starts with `\'`, but the number and plain numbers never. ' +
          'JSON Lines: `{number, externalId, variables, status, code, attempts, recordingUrl, transcriptUrl, summary, endedReason}`, absent values `null`',
        text: [EXPORT_MEDIA_TYPES.csv, EXPORT_MEDIA_TYPES.jsonl],
        headers: { Link: 'the next page: `<url>; rel="next"` (absent on the last page)' },
      },
      400: { description: 'a bad format or limit, or a cursor this export did not give out for this batch' },
      404: { description: 'no such batch' },
      503: { description: 'DynamoDB left part of the page unread; ask again' },
    },
    handler: async ({ params, query, scope, event }) => {
      const { store } = calls();
      const batch = await store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      if (query.cursor && query.cursor.batchId !== batch.batchId) throw new InvalidCursorError();
      const format: ExportFormat = query.format ?? 'csv';
      const offset = query.cursor?.offset ?? 0;
      const limit = query.limit ?? EXPORT_PAGE_CONTACTS;
      const contacts = offset < batch.contactCount ? await store.contactsPage(batch.batchId, offset, Math.min(limit, batch.contactCount - offset)) : [];
      const [states, data] = await Promise.all([
        pageStates(store, batch, offset, contacts),
        batch.hasContactData && contacts.length > 0 ? store.getContactData(batch.batchId, contacts.map((c) => c.number)) : new Map<string, ContactDataRow>(),
      ]);
      const columns = exportColumns(batch.variableNames ?? []);
      const rows = contacts.map((c, i) => rowText(format, columns, exportRow(c.number, states[i]!, c.state, data.get(c.number))));
      const head = format === 'csv' && query.cursor === undefined ? exportCsv(columns, [], { header: true }) : '';
      const page = fitPage(head, rows, EXPORT_PAGE_BYTES);
      const next = offset + page.rows;
      // The next page's URL: this request's path (the tenant route or its operator copy), its format and
      // limit, and the cursor; relative, resolved against the request's URL (RFC 8288 §3.2).
      const search = new URLSearchParams({ format, ...(query.limit ? { limit: String(query.limit) } : {}), cursor: encodeExportCursor(batch.batchId, next) });
      // A page that found no contact ends the export, even short of contactCount (an import still writing
      // its list pages): a link back to the same position would never end.
      const link: Record<string, string> = page.rows > 0 && next < batch.contactCount ? { link: `<${event.rawPath}?${search.toString()}>; rel="next"` } : {};
      return {
        status: 200,
        text: page.text,
        headers: {
          'content-type': EXPORT_MEDIA_TYPES[format],
          'content-disposition': `attachment; filename="${batch.batchId}${offset > 0 ? `-from-${offset}` : ''}.${format}"`,
          'cache-control': 'no-store',
          ...link,
        },
      };
    },
  });
}
