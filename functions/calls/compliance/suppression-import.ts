import { Readable } from 'node:stream';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { CsvError, parse } from 'csv-parse';
import { iso } from '../../platform/clock.ts';
import { Expression, putItem, updateItem } from '../../platform/dynamo.ts';
import { HttpError, unavailable } from '../../platform/http.ts';
import type { TenantScope } from '../../platform/tenancy.ts';
import { handle, snooze } from '../../jobs/index.ts';
import type { JobHandler } from '../../jobs/index.ts';
import { normaliseNumber } from '../contacts/numbers.ts';
import type { CallsDeps } from '../deps.ts';
import type { CallsStore } from '../store.ts';
import { MAX_SUPPRESSION_REASON, suppressionPutItems } from './suppression-store.ts';
import { SuppressionSource } from './suppression.ts';
import { suppressionImportIds, suppressionImportJobId, suppressionImportKind } from './suppression-import-kind.ts';
import type { SuppressionImportArgs } from './suppression-import-kind.ts';

/**
 * A suppression list from a CSV (docs/calls.md, "Suppression list"): the file's header names a `number`
 * column and optionally a `reason` one (other columns are ignored); at most {@link MAX_SUPPRESSION_ROWS}
 * data rows. The whole file is read and checked in the request; any bad row refuses it (400, every issue
 * counted, the first {@link MAX_LISTED_ISSUES} listed with row and column, nothing written). A good file
 * is staged and written by a job, so 100,000 rows never hold a request open:
 *
 * ```
 *  request   read + check ─▶ chunks of 1,000 entries (deflated)   pk TENANT#<t>#SUPPIMPORT#<hex>  sk CHUNK#<k:5>
 *            ─▶ one transaction: the import's row (Importing, chunk 0) + its job
 *                                                                  pk TENANT#<t>#SUPPIMPORT       sk IMPORT#<hex>
 *  job       per chunk: its entries, 25 numbers (entry + audit) a transaction, 8 at a time;
 *            then the row's cursor moved on (chunk k → k + 1, written + n) only if still at k
 *            the last chunk: Done
 * ```
 *
 * Every write is idempotent (suppression-store.ts: the entry keeps its first createdAt; the audit
 * record's time is the import's), so a run that dies mid-chunk writes the chunk again. A number given
 * twice in one file is kept once (its first row), counted in `duplicatesDropped`.
 */

export const MAX_SUPPRESSION_ROWS = 100_000;
export const MAX_LISTED_ISSUES = 100;
/** Entries per staged chunk: 1,000 × (16-character number + 200-character reason) stays far under an item's 400 KB even before deflating. */
export const CHUNK_ENTRIES = 1000;
/** Numbers per transaction (two items each: entry and audit record). */
export const NUMBERS_PER_TRANSACTION = 25;
/** Transactions a job run keeps in flight. */
export const IMPORT_PARALLEL = 8;
/** A run stops starting chunks after this much real time, well inside its 50 s timeout. */
export const SUPPRESSION_IMPORT_BUDGET_MS = 30_000;
/** Staged chunks and the import's row are kept this long (an import runs in minutes). */
export const SUPPRESSION_IMPORT_RETENTION_SECONDS = 7 * 86400;

/** One row of the file, checked. */
export interface SuppressionEntry {
  number: string;
  reason?: string;
}

export interface SuppressionCsvIssue {
  row: number;
  column?: string;
  message: string;
}

/** What a file came to. */
export interface SuppressionCsv {
  entries: SuppressionEntry[];
  rows: number;
  duplicatesDropped: number;
  blankRows: number;
}

/** The 400 of a refused file. */
const refused = (message: string, issues: SuppressionCsvIssue[], refusedRows: number, issuesOmitted: number) =>
  new HttpError(400, 'invalid_csv', message, { issues, refusedRows, issuesOmitted });

/**
 * Reads and checks a whole suppression CSV (UTF-8, `,` or `;`, a header line first). Throws the 400 of
 * the file when any row is bad, naming every bad row's row number (the header is row 1) and column.
 */
export async function readSuppressionCsv(source: AsyncIterable<Uint8Array | string> | Uint8Array | string): Promise<SuppressionCsv> {
  const parser = parse({ delimiter: [',', ';'], bom: true, relax_column_count: true, skip_empty_lines: false, max_record_size: 4096, info: true });
  const input = typeof source === 'string' || source instanceof Uint8Array ? Readable.from([Buffer.from(source)]) : Readable.from(source);
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  const issues: SuppressionCsvIssue[] = [];
  let issuesOmitted = 0;
  let refusedRows = 0;
  const issue = (i: SuppressionCsvIssue) => {
    if (issues.length < MAX_LISTED_ISSUES) issues.push(i);
    else issuesOmitted++;
  };
  const seen = new Set<string>();
  const entries: SuppressionEntry[] = [];
  let header: { number: number; reason: number | undefined; names: string[] } | undefined;
  let rows = 0;
  let duplicatesDropped = 0;
  let blankRows = 0;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { records: number; lines: number } }>) {
      const row = info.records;
      if (!header) {
        const names = record.map((c) => c.trim());
        const number = names.findIndex((n) => n.toLowerCase() === 'number');
        const reason = names.findIndex((n) => n.toLowerCase() === 'reason');
        if (number < 0) throw refused('the header names no number column', [{ row: 1, message: `no number column (the header is: ${names.join(', ')})` }], 0, 0);
        header = { number, reason: reason < 0 ? undefined : reason, names };
        continue;
      }
      rows++;
      if (rows > MAX_SUPPRESSION_ROWS) throw refused(`at most ${MAX_SUPPRESSION_ROWS} rows in one import`, [{ row, message: `at most ${MAX_SUPPRESSION_ROWS} rows in one import` }], 0, 0);
      if (record.every((c) => c.trim() === '')) {
        blankRows++;
        continue;
      }
      const bad: SuppressionCsvIssue[] = [];
      const text = record[header.number] ?? '';
      const verdict = normaliseNumber(text);
      if (!verdict.ok) bad.push({ row, column: header.names[header.number]!, message: verdict.message });
      const reasonText = header.reason === undefined ? '' : (record[header.reason] ?? '').trim();
      if (reasonText.length > MAX_SUPPRESSION_REASON) bad.push({ row, column: header.names[header.reason!]!, message: `at most ${MAX_SUPPRESSION_REASON} characters` });
      if (bad.length > 0 || !verdict.ok) {
        refusedRows++;
        bad.forEach(issue);
        continue;
      }
      if (seen.has(verdict.number)) {
        duplicatesDropped++;
        continue;
      }
      seen.add(verdict.number);
      entries.push({ number: verdict.number, ...(reasonText !== '' ? { reason: reasonText } : {}) });
    }
  } catch (error) {
    if (error instanceof HttpError) throw error;
    if (error instanceof CsvError) throw refused(`the file is not CSV this import reads: ${error.message}`, [{ row: rows + 2, message: error.message }], 0, 0);
    throw error;
  } finally {
    parser.destroy();
  }
  if (!header) throw refused('the file is empty: expected a header line naming a number column', [{ row: 1, message: 'no header line' }], 0, 0);
  if (refusedRows > 0) throw refused(`${refusedRows} of ${rows} rows are invalid; nothing was written`, issues, refusedRows, issuesOmitted);
  if (entries.length === 0) throw refused('the file has no number', [], 0, 0);
  return { entries, rows, duplicatesDropped, blankRows };
}

/** The import's status row. */
export interface SuppressionImportRow {
  pk: string;
  sk: string;
  importId: string;
  tenantId: string;
  status: 'Importing' | 'Done';
  /** Entries to write (after duplicates dropped). */
  total: number;
  /** Entries written so far (whole chunks). */
  written: number;
  /** The next chunk to write, and how many there are. */
  chunk: number;
  chunks: number;
  rows: number;
  duplicatesDropped: number;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string;
  expiresAt: number;
}

export const importRowKey = (importId: string) => {
  const id = suppressionImportIds.parse(importId);
  if (!id) throw new RangeError(`not a suppression import id: ${importId}`);
  return { pk: `TENANT#${id.tenantId}#SUPPIMPORT`, sk: `IMPORT#${id.hex}` };
};

const chunkKey = (importId: string, chunk: number) => {
  const id = suppressionImportIds.parse(importId)!;
  return { pk: `TENANT#${id.tenantId}#SUPPIMPORT#${id.hex}`, sk: `CHUNK#${String(chunk).padStart(5, '0')}` };
};

/** What `GET /v1/suppressions/imports/{id}` shows. */
export const importView = (row: SuppressionImportRow) => ({
  importId: row.importId,
  status: row.status,
  total: row.total,
  written: row.written,
  rows: row.rows,
  duplicatesDropped: row.duplicatesDropped,
  createdAt: row.createdAt,
  finishedAt: row.finishedAt ?? null,
});

/**
 * Stages a checked file's entries and commits the import's row with its job (one transaction); the job is
 * woken after the commit. Returns the row as committed.
 */
export async function startSuppressionImport(deps: CallsDeps, scope: TenantScope, csv: SuppressionCsv): Promise<SuppressionImportRow> {
  const { store, jobs, clock, secureRandom } = deps;
  const now = clock.now();
  const importId = suppressionImportIds.make(scope.tenantId, secureRandom(16).toString('hex'));
  const expiresAt = Math.floor(now / 1000) + SUPPRESSION_IMPORT_RETENTION_SECONDS;
  const chunks: Record<string, unknown>[] = [];
  for (let i = 0; i < csv.entries.length; i += CHUNK_ENTRIES) {
    const entries = csv.entries.slice(i, i + CHUNK_ENTRIES);
    chunks.push({ ...chunkKey(importId, chunks.length), count: entries.length, entries: deflateRawSync(Buffer.from(JSON.stringify(entries), 'utf8')), expiresAt });
  }
  const written = await store.putItems(chunks);
  if (written.unprocessed > 0) throw unavailable(`DynamoDB left ${written.unprocessed} of the import’s staged chunks unwritten; nothing was imported, try again`);
  const row: SuppressionImportRow = {
    ...importRowKey(importId),
    importId,
    tenantId: scope.tenantId,
    status: 'Importing',
    total: csv.entries.length,
    written: 0,
    chunk: 0,
    chunks: chunks.length,
    rows: csv.rows,
    duplicatesDropped: csv.duplicatesDropped,
    createdAt: iso(now),
    updatedAt: iso(now),
    expiresAt,
  };
  const job = jobs.prepare(suppressionImportKind, { importId }, { id: suppressionImportJobId(importId) });
  const e = new Expression();
  const result = await store.transact([putItem('import', store.tableName, row, e.when(e.notExists('pk'))), job.item]);
  if (!result.committed) throw unavailable('the import could not be started; nothing was imported, try again');
  await jobs.afterCommit([job]);
  return row;
}

/** An import's row (undefined when the id is not the scope's, or unknown). */
export async function getSuppressionImport(store: CallsStore, scope: TenantScope, importId: string): Promise<SuppressionImportRow | undefined> {
  if (!suppressionImportIds.inScope(scope, importId)) return undefined;
  return readImportRow(store, importId);
}

async function readImportRow(store: CallsStore, importId: string): Promise<SuppressionImportRow | undefined> {
  const [item] = await store.queryBatch<SuppressionImportRow>('', importRowKey(importId).sk, importRowKey(importId).pk);
  return item?.sk === importRowKey(importId).sk ? item : undefined;
}

/** Where a test stops a run, as a crash would: after a chunk's entries, before the cursor moves. */
export interface SuppressionImportFaults {
  afterChunkEntries?: (chunk: number) => Promise<void> | void;
}

/** calls.suppressions.import (see the module comment). */
export function suppressionImportHandler(deps: CallsDeps, faults: SuppressionImportFaults = {}): JobHandler<SuppressionImportArgs> {
  return handle(suppressionImportKind, async (args) => {
    const { store, logger } = deps;
    let row = await readImportRow(store, args.importId);
    if (!row || row.status !== 'Importing') return;
    const started = performance.now();
    const at = Date.parse(row.createdAt);
    const suppressions = store.suppressions();
    while (row.chunk < row.chunks) {
      if (performance.now() - started > SUPPRESSION_IMPORT_BUDGET_MS) throw snooze({ delayMs: 0 }, `wrote up to chunk ${row.chunk} of ${row.chunks}; continuing`);
      const chunk: number = row.chunk;
      const entries = await readStagedChunk(store, args.importId, chunk);
      const groups: SuppressionEntry[][] = [];
      for (let i = 0; i < entries.length; i += NUMBERS_PER_TRANSACTION) groups.push(entries.slice(i, i + NUMBERS_PER_TRANSACTION));
      for (let i = 0; i < groups.length; i += IMPORT_PARALLEL) {
        const outcomes = await Promise.all(
          groups.slice(i, i + IMPORT_PARALLEL).map((group) =>
            suppressions.transact(group.flatMap((entry, n) => suppressionPutItems(store.tableName, { tenantId: row!.tenantId, number: entry.number, reason: entry.reason, source: SuppressionSource.import, now: at }, ` ${n}`))),
          ),
        );
        const failed = outcomes.find((o) => !o.committed);
        // A conflict with a concurrent PUT or DELETE of one of the numbers: the job layer runs the chunk again (every write is idempotent).
        if (failed && !failed.committed) throw new Error(`chunk ${chunk} of ${args.importId}: a transaction was cancelled (${failed.contention ? 'contention' : 'refused'}); the chunk is written again`);
      }
      await faults.afterChunkEntries?.(chunk);
      const last: boolean = chunk + 1 === row.chunks;
      const now = deps.clock.now();
      const e = new Expression();
      e.when(e.eq('chunk', chunk)).when(e.eq('status', 'Importing')).set('chunk', chunk + 1).increment('written', entries.length).set('updatedAt', iso(now));
      if (last) e.set('status', 'Done').set('finishedAt', iso(now));
      const result = await store.transact([updateItem('import', store.tableName, importRowKey(args.importId), e, { returnStored: true })]);
      if (!result.committed) {
        const stored = result.refused['import']?.item as SuppressionImportRow | undefined;
        if (!stored) throw new Error(`the cursor of ${args.importId} could not be moved: ${result.contention ? 'contention' : 'no row'}`);
        row = stored;
        continue;
      }
      row = { ...row, chunk: chunk + 1, written: row.written + entries.length, ...(last ? { status: 'Done' as const } : {}) };
    }
    logger.info('suppression import done', { importId: args.importId, total: row.total });
  });
}

async function readStagedChunk(store: CallsStore, importId: string, chunk: number): Promise<SuppressionEntry[]> {
  const key = chunkKey(importId, chunk);
  const [item] = await store.queryBatch<{ sk: string; entries: Uint8Array }>('', key.sk, key.pk);
  // Staged chunks outlive any import that runs; one gone means the import outlived them (or a bug).
  if (!item || item.sk !== key.sk) throw new Error(`staged chunk ${chunk} of ${importId} is missing`);
  return JSON.parse(inflateRawSync(item.entries).toString('utf8')) as SuppressionEntry[];
}
