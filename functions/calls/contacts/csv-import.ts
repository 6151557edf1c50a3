import { pipeline, Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import * as z from 'zod';
import { BatchUniqueness, contactNumber } from './contact.ts';
import type { Contact, ContactSettings } from './contact.ts';
import { CsvImportError } from './errors.ts';
import type { CsvIssue } from './errors.ts';
import { externalIdProblem, MAX_VARIABLES, MAX_VARIABLES_BYTES, variableNameProblem } from './fields.ts';
import { timezoneProblem } from './timezone.ts';
import { countryCodeSchema } from './numbers.ts';

/**
 * A contacts CSV, read as a stream: bytes in, pages of validated contacts out, in bounded memory.
 *
 *   bytes ─▶ UTF-8 (fatal on a bad byte, BOM dropped) ─▶ header line: `,` or `;` ─▶ csv-parse ─▶ rows
 *   rows ─▶ contact rules (contact.ts) ─▶ uniqueness ─▶ pages of `pageSize` ─▶ the consumer
 *
 * The consumer pulls: nothing is read ahead of the page it asks for (csv-parse's and the source's own
 * buffers aside), so a 50 MB file needs the memory of one page, the uniqueness maps and the parser's
 * buffers — `npm run bench -- import-parse` measures it.
 *
 * Rows: row 1 is the header; every record after it is a row, a blank line included (the row numbers a
 * spreadsheet shows). A record whose cells are all empty is skipped, not refused (spreadsheets export
 * trailing `;;;` lines).
 */

/** What `pageSize` is unless set: a DynamoDB list page's worth of contacts. */
export const DEFAULT_PAGE_SIZE = 500;
/** The most data rows one import takes. */
export const MAX_IMPORT_ROWS = 100_000;
/** Issues listed when the upload is refused (no `skipInvalid`). */
export const MAX_LISTED_ISSUES = 100;
/** Issues listed with `skipInvalid`, beside the count of every refused row. */
export const MAX_LISTED_ISSUES_SKIPPING = 1_000;
/** The longest row read, in characters: far over any valid row (a number, an id, a zone and 4 KB of variables); past it a quote was surely never closed. */
export const MAX_ROW_CHARACTERS = 64 * 1024;
/** How far the header line may run before the import gives up looking for its end. */
const MAX_HEADER_CHARACTERS = 64 * 1024;

/** The settings of a CSV import: the batch's contact settings, and what to do with invalid rows. */
export interface CsvImportOptions extends ContactSettings {
  /** Import the valid rows and report the refused ones, instead of refusing the upload. */
  skipInvalid?: boolean | undefined;
  /** Contacts per page (default {@link DEFAULT_PAGE_SIZE}). */
  pageSize?: number | undefined;
  /** The most data rows taken (default {@link MAX_IMPORT_ROWS}); one more is a `too_many_rows` refusal. */
  maxRows?: number | undefined;
}

const queryBoolean = z.stringbool({ truthy: ['true'], falsy: ['false'] });
/** A CSV import's settings as query parameters (`POST /v1/batches?defaultCountry=GB&skipInvalid=true`). */
export const csvImportQuery = z.strictObject({
  defaultCountry: countryCodeSchema.optional(),
  strictNumbers: queryBoolean.optional(),
  skipInvalid: queryBoolean.optional(),
  dedupe: queryBoolean.optional(),
});

/** The header, read: which delimiter, the columns as written, and the variables in column order (the export's order). */
export interface CsvColumns {
  delimiter: ',' | ';';
  /** Every header cell, trimmed, as written. */
  header: string[];
  /** The variable columns' names, left to right. */
  variables: string[];
}

/** A contact from a CSV row: its cells are strings, so its variables are too. */
export interface ImportedContact extends Contact {
  row: number;
  variables?: Record<string, string>;
}

/** What an import came to, once every row was read. */
export interface CsvImportReport {
  /** True when the import stands: every row valid, or `skipInvalid`. False: the upload is refused, and the pages already given out are to be dropped. */
  ok: boolean;
  /** Data rows read (blank ones included). */
  rows: number;
  /** Contacts accepted (given out in pages when `ok`). */
  accepted: number;
  /** Rows refused; each has at least one issue. */
  refusedRows: number;
  /** The first issues, up to {@link MAX_LISTED_ISSUES} ({@link MAX_LISTED_ISSUES_SKIPPING} with `skipInvalid`). */
  issues: CsvIssue[];
  /** Issues past the listed ones. */
  issuesOmitted: number;
  /** Later rows whose number an earlier row had, dropped under `dedupe`. */
  duplicatesDropped: number;
  /** Rows whose every cell is empty, skipped. */
  blankRows: number;
}

/** What {@link readContactsCsv} gives out, in this order: the columns once, pages, then the report once. */
export type CsvImportEvent = { type: 'columns'; columns: CsvColumns } | { type: 'page'; contacts: ImportedContact[] } | { type: 'end'; report: CsvImportReport };

/** Bytes as a Node Readable, a web ReadableStream or any async iterable gives them; or the whole body at once. */
export type ByteSource = AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string> | Uint8Array | string;

interface Layout {
  number: number;
  externalId: number | undefined;
  timezone: number | undefined;
  variables: { index: number; name: string }[];
  header: string[];
}

/**
 * Reads a contacts CSV. Header names are matched without regard to case: `number` is required,
 * `external_id` and `timezone` are optional, and every other column is a variable (at most
 * {@link MAX_VARIABLES}; a name given twice, or one reserved, refuses the file). Cells are strings as
 * written ("00123" stays "00123"); an empty variable cell means the variable is absent. Numbers, ids and
 * zones are trimmed; variable values are not.
 *
 * Invalid rows: without `skipInvalid` the first one stops the pages (the report's `ok` is false) but the
 * reading goes on, so the report counts every refused row and lists the first {@link MAX_LISTED_ISSUES}
 * issues; with it, valid rows go on in pages and the first {@link MAX_LISTED_ISSUES_SKIPPING} issues are
 * listed. Pages given out before the first invalid row are part of an upload that is refused: a consumer
 * stages them and keeps them only when the report says `ok`.
 *
 * Throws {@link CsvImportError} for what no row-skipping can get past: bytes that are not UTF-8, no header
 * line, a header at fault, a quote never closed (or a row past {@link MAX_ROW_CHARACTERS}), more than
 * `maxRows` data rows.
 *
 * @example
 * for await (const event of readContactsCsv(request.body, { defaultCountry: 'GB', skipInvalid: true })) {
 *   if (event.type === 'columns') variableOrder = event.columns.variables;
 *   else if (event.type === 'page') await stage(event.contacts);
 *   else report = event.report;
 * }
 */
export async function* readContactsCsv(source: ByteSource, options: CsvImportOptions = {}): AsyncGenerator<CsvImportEvent, void, undefined> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const maxRows = options.maxRows ?? MAX_IMPORT_ROWS;
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new RangeError(`pageSize must be a positive integer, not ${pageSize}`);
  const listLimit = options.skipInvalid ? MAX_LISTED_ISSUES_SKIPPING : MAX_LISTED_ISSUES;

  const text = utf8Text(source);
  const { head, headerEnd, rest } = await headerLine(text);
  const delimiter = detectDelimiter(head.slice(0, headerEnd));
  const parser = parse({ delimiter, relax_quotes: true, relax_column_count: true, max_record_size: MAX_ROW_CHARACTERS, info: true, skip_empty_lines: false });
  // Errors reach the loop below through the parser; the callback has nothing left to do.
  pipeline(Readable.from(concat(head, rest)), parser, () => undefined);

  const report: CsvImportReport = { ok: true, rows: 0, accepted: 0, refusedRows: 0, issues: [], issuesOmitted: 0, duplicatesDropped: 0, blankRows: 0 };
  const unique = new BatchUniqueness();
  let layout: Layout | undefined;
  let page: ImportedContact[] = [];
  const refuse = (issues: CsvIssue[]) => {
    report.refusedRows++;
    for (const issue of issues) {
      if (report.issues.length < listLimit) report.issues.push(issue);
      else report.issuesOmitted++;
    }
    if (!options.skipInvalid) {
      report.ok = false;
      page = [];
    }
  };

  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { records: number } }>) {
      const row = info.records;
      if (!layout) {
        layout = readHeader(record);
        yield { type: 'columns', columns: { delimiter, header: layout.header, variables: layout.variables.map((v) => v.name) } };
        continue;
      }
      report.rows++;
      if (report.rows > maxRows) throw new CsvImportError('too_many_rows', [{ row, message: `at most ${maxRows} contacts in one import` }]);
      if (record.every((cell) => cell.trim() === '')) {
        report.blankRows++;
        continue;
      }
      const read = readRow(record, row, layout, options);
      if ('issues' in read) {
        refuse(read.issues);
        continue;
      }
      const claim = unique.claim(read.contact, row);
      if (claim.outcome === 'duplicateNumber') {
        if (options.dedupe) report.duplicatesDropped++;
        else refuse([{ row, column: layout.header[layout.number]!, message: `duplicate of row ${claim.first} (${read.contact.number})` }]);
        continue;
      }
      if (claim.outcome === 'duplicateExternalId') {
        refuse([{ row, column: layout.header[layout.externalId!]!, message: `duplicate of row ${claim.first}` }]);
        continue;
      }
      report.accepted++;
      if (!report.ok) continue;
      page.push(read.contact);
      if (page.length === pageSize) {
        const full = page;
        page = [];
        yield { type: 'page', contacts: full };
      }
    }
  } catch (error) {
    throw asImportError(error);
  } finally {
    // The consumer stopped early, or the reading failed: stop the source too.
    parser.destroy();
  }
  if (!layout) throw new CsvImportError('no_header', [{ row: 1, message: 'the file is empty: expected a header line naming a number column' }]);
  if (report.ok && page.length > 0) yield { type: 'page', contacts: page };
  yield { type: 'end', report };
}

/** The delimiter of a header line: `;` when it has more semicolons than commas outside quotes, else `,`. */
export function detectDelimiter(headerLine: string): ',' | ';' {
  let commas = 0;
  let semicolons = 0;
  let quoted = false;
  for (const c of headerLine) {
    if (c === '"') quoted = !quoted;
    else if (!quoted && c === ',') commas++;
    else if (!quoted && c === ';') semicolons++;
  }
  return semicolons > commas ? ';' : ',';
}

function readHeader(cells: string[]): Layout {
  const header = cells.map((c) => c.trim());
  const issues: CsvIssue[] = [];
  const seen = new Map<string, number>();
  const known: Record<string, number | undefined> = {};
  const variables: { index: number; name: string }[] = [];
  header.forEach((name, index) => {
    const key = name.toLowerCase();
    if (name === '') return void issues.push({ row: 1, message: `column ${index + 1} has no name` });
    const first = seen.get(key);
    if (first !== undefined) return void issues.push({ row: 1, column: name, message: `the same column name as column ${first + 1} (names are compared without regard to case)` });
    seen.set(key, index);
    if (key === 'number' || key === 'external_id' || key === 'timezone') known[key] = index;
    else {
      const problem = variableNameProblem(name);
      if (problem) issues.push({ row: 1, column: name, message: problem });
      else variables.push({ index, name });
    }
  });
  if (known['number'] === undefined) issues.push({ row: 1, message: `no number column (the header is: ${header.join(', ')})` });
  if (variables.length > MAX_VARIABLES) issues.push({ row: 1, message: `at most ${MAX_VARIABLES} variable columns (${variables.length} given)` });
  if (issues.length > 0) throw new CsvImportError('header', issues);
  return { number: known['number']!, externalId: known['external_id'], timezone: known['timezone'], variables, header };
}

function readRow(cells: string[], row: number, layout: Layout, settings: ContactSettings): { contact: ImportedContact } | { issues: CsvIssue[] } {
  if (cells.length !== layout.header.length) return { issues: [{ row, message: `${cells.length} ${cells.length === 1 ? 'cell' : 'cells'}; the header has ${layout.header.length}` }] };
  const issues: CsvIssue[] = [];
  const column = (index: number) => layout.header[index]!;

  const number = contactNumber(cells[layout.number]!, settings);
  if (!number.ok) issues.push({ row, column: column(layout.number), message: number.message });

  const optional = (index: number | undefined, problemOf: (value: string) => string | undefined): string | undefined => {
    if (index === undefined) return undefined;
    const value = cells[index]!.trim();
    if (value === '') return undefined;
    const problem = problemOf(value);
    if (problem) issues.push({ row, column: column(index), message: problem });
    return value;
  };
  const externalId = optional(layout.externalId, externalIdProblem);
  const timezone = optional(layout.timezone, timezoneProblem);

  // The serialised size, counted as JSON.stringify would write it, so the message can name the column
  // that takes the row past the limit.
  let variables: Record<string, string> | undefined;
  let bytes = 2; // {}
  for (const { index, name } of layout.variables) {
    const value = cells[index]!;
    if (value === '') continue;
    bytes += (variables ? 1 : 0) + Buffer.byteLength(JSON.stringify(name), 'utf8') + 1 + Buffer.byteLength(JSON.stringify(value), 'utf8');
    variables ??= {};
    variables[name] = value;
    if (bytes > MAX_VARIABLES_BYTES) {
      issues.push({ row, column: name, message: `the row's variables pass ${MAX_VARIABLES_BYTES} bytes serialised (JSON, UTF-8) at this column` });
      break;
    }
  }

  if (!number.ok || issues.length > 0) return { issues };
  const contact: ImportedContact = { row, ...number.fields };
  if (externalId !== undefined) contact.externalId = externalId;
  if (timezone !== undefined) contact.timezone = timezone;
  if (variables) contact.variables = variables;
  return { contact };
}

/** The source's bytes as UTF-8 text: a byte sequence that is not UTF-8 refuses the file (no silent U+FFFD); a leading BOM is dropped. */
async function* utf8Text(source: ByteSource): AsyncGenerator<string> {
  // fatal: a bad sequence throws; ignoreBOM false (the default): a leading BOM is consumed, not returned.
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const chunks = typeof source === 'string' || source instanceof Uint8Array ? [source] : source;
  let read = 0;
  let size = 0;
  try {
    for await (const chunk of chunks) {
      const view = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      size = view.byteLength;
      const text = decoder.decode(view, { stream: true });
      read += size;
      if (text !== '') yield text;
    }
    size = 0;
    const tail = decoder.decode();
    if (tail !== '') yield tail;
  } catch (error) {
    if (error instanceof TypeError && (error as { code?: string }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA') {
      const where = size > 0 ? `in bytes ${Math.max(1, read - 3)}–${read + size}` : 'at its end';
      throw new CsvImportError('not_utf8', [{ message: `the file is not UTF-8 text (a byte sequence ${where} is not UTF-8): save it as "CSV UTF-8"` }], { cause: error });
    }
    throw error;
  }
}

/**
 * The text read until the header line ended (a line end outside quotes), where it ended, and the iterator
 * over the rest. `head` may run on past the header: it is the chunks read so far.
 */
async function headerLine(text: AsyncGenerator<string>): Promise<{ head: string; headerEnd: number; rest: AsyncGenerator<string> }> {
  let head = '';
  let quoted = false;
  let scanned = 0;
  for (;;) {
    const next = await text.next();
    if (next.done) return { head, headerEnd: head.length, rest: text };
    head += next.value;
    for (; scanned < head.length; scanned++) {
      const c = head[scanned];
      if (c === '"') quoted = !quoted;
      else if (!quoted && (c === '\n' || c === '\r')) return { head, headerEnd: scanned, rest: text };
    }
    if (head.length > MAX_HEADER_CHARACTERS) throw new CsvImportError('no_header', [{ row: 1, message: `no line end in the first ${MAX_HEADER_CHARACTERS} characters: expected a header line` }]);
  }
}

async function* concat(head: string, rest: AsyncGenerator<string>): AsyncGenerator<string> {
  if (head !== '') yield head;
  yield* rest;
}

function asImportError(error: unknown): unknown {
  if (!(error instanceof CsvError)) return error;
  const row = typeof error['records'] === 'number' ? error['records'] + 1 : 0;
  const message =
    error.code === 'CSV_QUOTE_NOT_CLOSED' ? 'a quote opened in this row is never closed'
    : error.code === 'CSV_MAX_RECORD_SIZE' ? `the row runs past ${MAX_ROW_CHARACTERS} characters (a quote never closed?)`
    : error.message;
  return new CsvImportError('malformed', [{ row, message }], { cause: error });
}
