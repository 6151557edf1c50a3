import { randomUUID } from 'node:crypto';
import { refusedCodes } from '../../platform/dynamo.ts';
import { HttpError, notFound, unavailable } from '../../platform/http.ts';
import type { ApiResponse } from '../../platform/http.ts';
import { keyedRetry } from '../api.ts';
import { listPagesFor, newBatchRow } from '../batch-create.ts';
import type { BatchSettings } from '../batch-create.ts';
import type { Contact } from '../contacts/contact.ts';
import { readContactsCsv } from '../contacts/csv-import.ts';
import type { ByteSource, CsvImportOptions, CsvImportReport } from '../contacts/csv-import.ts';
import { CsvImportError } from '../contacts/errors.ts';
import type { CallsDeps } from '../deps.ts';
import { batchIdForKey } from '../idempotency.ts';
import { BatchStatus, batchIds, LIST_PAGE_SIZE } from '../model.ts';
import { CallsStore } from '../store.ts';
import type { TransactItem } from '../../platform/dynamo.ts';
import type { PreparedJob } from '../../jobs/index.ts';
import { importJobId, importKind } from './kind.ts';
import type { ImportingBatchRow } from './job.ts';
import { Stager } from './staging.ts';
import { firstJob } from '../control/create.ts';

/**
 * Creating a batch from a CSV: the whole file read and validated first (contacts/csv-import.ts, the same
 * rules for both routes), then either
 *   - {@link createBatchNow} (`POST /v1/batches/csv`, up to 10,000 contacts): as a JSON batch is created —
 *     data items first, then one transaction of the batch, its list, its index entries and round 1's
 *     dialer — Pending at once; or
 *   - {@link startImport} (`POST /v1/batches/imports`, up to 100,000): the contacts staged in chunks while
 *     they are read (staging.ts), then one transaction of the batch, Importing with no contacts yet, its
 *     index entries and its import job (job.ts), which writes the list page by page.
 */

/** What a CSV came to: its contacts (as pages were given to `onPage`), and what the batch row records of them. */
export interface CsvRead {
  report: CsvImportReport;
  /** The variable columns some accepted contact uses, in column order. */
  variableNames: string[];
  hasContactData: boolean;
  invalidNumbers: number;
}

/** The 400 of a CSV the import refuses: why, the first issues, and how many rows in all. */
function refused(message: string, details: Record<string, unknown>): HttpError {
  return new HttpError(400, 'invalid_csv', message, details);
}

/**
 * Reads a CSV to its end, giving each page of valid contacts to `onPage` as it comes. Refused (400
 * `invalid_csv`, nothing kept) when the file cannot be read, when a row is invalid and `skipInvalid` is
 * off (the first {@link MAX_LISTED_ISSUES} issues listed, every refused row counted), or when no contact
 * is left.
 */
export async function readCsv(source: ByteSource, options: CsvImportOptions, onPage: (contacts: Contact[]) => Promise<void> | void): Promise<CsvRead> {
  let columns: string[] = [];
  const used = new Set<string>();
  let hasContactData = false;
  let invalidNumbers = 0;
  let report: CsvImportReport | undefined;
  try {
    for await (const event of readContactsCsv(source, options)) {
      if (event.type === 'columns') columns = event.columns.variables;
      else if (event.type === 'end') report = event.report;
      else {
        for (const c of event.contacts) {
          if (c.variables) for (const name in c.variables) used.add(name);
          if (!c.numberValid) invalidNumbers++;
          if (!c.numberValid || c.externalId !== undefined || c.variables !== undefined || c.timezone !== undefined) hasContactData = true;
        }
        await onPage(event.contacts);
      }
    }
  } catch (error) {
    if (error instanceof CsvImportError) throw refused(error.message, { refusal: error.refusal, issues: error.issues, refusedRows: 0, issuesOmitted: 0 });
    throw error;
  }
  if (!report) throw new Error('the CSV reader ended without its report');
  if (!report.ok) {
    throw refused(`${report.refusedRows} of ${report.rows} rows are invalid; nothing was imported (skipInvalid=true imports the valid ones)`, {
      refusal: 'rows',
      issues: report.issues,
      refusedRows: report.refusedRows,
      issuesOmitted: report.issuesOmitted,
    });
  }
  if (report.accepted === 0) throw refused('the file has no valid contact', { refusal: 'empty', issues: report.issues, refusedRows: report.refusedRows, issuesOmitted: report.issuesOmitted });
  return { report, variableNames: columns.filter((name) => used.has(name)), hasContactData, invalidNumbers };
}

/** The answer's account of the file: contacts taken, duplicates dropped, and with skipInvalid the rows left out. */
export function csvOutcome(read: CsvRead) {
  const { report } = read;
  return {
    accepted: report.accepted,
    duplicatesDropped: report.duplicatesDropped,
    ...(report.refusedRows > 0 ? { refused: { rows: report.refusedRows, issues: report.issues, issuesOmitted: report.issuesOmitted } } : {}),
  };
}

/** The batch id of a request: the key's, or a random one. */
export const batchIdFor = (tenantId: string, key: string | undefined): string => (key === undefined ? batchIds.make(tenantId, randomUUID().replaceAll('-', '')) : batchIdForKey(tenantId, key));

/** Commits a new batch's transaction; a refusal answered as `POST /v1/batches` answers it (a keyed replay, 404 tenant, 503). */
async function commitBatch(deps: CallsDeps, items: TransactItem[], job: PreparedJob, tenantId: string, hash: string | undefined): Promise<ApiResponse | undefined> {
  const result = await deps.store.transact(items);
  if (!result.committed) {
    if (hash !== undefined && result.refused['batch']?.code === 'ConditionalCheckFailed') return keyedRetry(result.refused['batch'].item as ImportingBatchRow | undefined, tenantId, hash);
    if (result.contention) throw unavailable();
    if (result.refused['tenant']?.code === 'ConditionalCheckFailed') throw notFound(`tenant ${tenantId}`);
    deps.logger.error('batch creation cancelled', { refused: refusedCodes(result) });
    throw unavailable();
  }
  await deps.jobs.afterCommit([job]);
  return undefined;
}

/**
 * A Pending batch of these contacts (all of them at hand, ≤ 10,000), as a JSON batch is created
 * (api.ts `createBatch`): the contacts' data items first (derived, so a retry writes the same), then one
 * transaction. A keyed retry's transaction meets the first one's batch: 200 with its id.
 */
export async function createBatchNow(
  deps: CallsDeps,
  input: { batchId: string; tenantId: string; settings: BatchSettings; contacts: readonly Contact[]; read: CsvRead; idempotency: { key: string; requestHash: string } | undefined },
): Promise<ApiResponse | undefined> {
  const { store, clock } = deps;
  const now = clock.now();
  const { batchId, contacts, read } = input;
  const numbers = contacts.map((c) => c.number);
  const pages = listPagesFor(batchId, numbers, now);
  const data = CallsStore.contactDataItems(batchId, contacts, now) as unknown as Record<string, unknown>[];
  if (data.length > 0) {
    const written = await store.putItems(data);
    if (written.unprocessed > 0) throw unavailable(`DynamoDB left ${written.unprocessed} of the contacts' data items unwritten; no batch was created, try again (with an Idempotency-Key, the same batch)`);
  }
  const batch = newBatchRow({
    batchId,
    tenantId: input.tenantId,
    status: BatchStatus.Pending,
    settings: input.settings,
    contacts: { count: numbers.length, variableNames: read.variableNames, hasContactData: read.hasContactData, invalidNumbers: read.invalidNumbers, duplicatesDropped: read.report.duplicatesDropped },
    listPages: pages.length,
    now,
    idempotency: input.idempotency,
  });
  // Round 1's dialer, or (a startAt ahead) the batch's start job.
  const dial = firstJob(deps, batch);
  return commitBatch(deps, [...store.createBatchItems(batch, pages), dial.item], dial, input.tenantId, input.idempotency?.requestHash);
}

/**
 * An Importing batch: the staged contacts' chunks (written while the file was read) named in its import
 * job's arguments, and one transaction of the batch row (no contacts yet, its import cursor at page 0),
 * its index entries and the import job.
 */
export async function startImport(
  deps: CallsDeps,
  input: {
    batchId: string;
    tenantId: string;
    settings: BatchSettings;
    stager: Stager;
    read: CsvRead;
    pacing: { pagesPerRun?: number | undefined; pageDelayMs?: number | undefined };
    idempotency: { key: string; requestHash: string } | undefined;
  },
): Promise<ApiResponse | undefined> {
  const { store, jobs, clock } = deps;
  const { batchId, read } = input;
  const chunks = await input.stager.finish();
  const total = read.report.accepted;
  const row = newBatchRow({
    batchId,
    tenantId: input.tenantId,
    status: BatchStatus.Importing,
    settings: input.settings,
    contacts: { count: 0, variableNames: read.variableNames, hasContactData: read.hasContactData, invalidNumbers: read.invalidNumbers, duplicatesDropped: read.report.duplicatesDropped },
    listPages: 0,
    now: clock.now(),
    idempotency: input.idempotency,
  });
  const batch: ImportingBatchRow = { ...row, importPage: 0, importPages: Math.ceil(total / LIST_PAGE_SIZE) };
  const job = jobs.prepare(
    importKind,
    { batchId, total, chunks, ...(input.pacing.pagesPerRun !== undefined ? { pagesPerRun: input.pacing.pagesPerRun } : {}), ...(input.pacing.pageDelayMs !== undefined ? { pageDelayMs: input.pacing.pageDelayMs } : {}) },
    { id: importJobId(batchId) },
  );
  return commitBatch(deps, [...store.createBatchItems(batch, []), job.item], job, input.tenantId, input.idempotency?.requestHash);
}
