import { iso } from '../../platform/clock.ts';
import { Expression, describeRefusals, putItem, updateItem } from '../../platform/dynamo.ts';
import { handle, snooze } from '../../jobs/index.ts';
import type { JobHandler } from '../../jobs/index.ts';
import { listPagesFor } from '../batch-create.ts';
import type { Contact } from '../contacts/contact.ts';
import type { CallsDeps } from '../deps.ts';
import { dialKind } from '../kinds.ts';
import { BatchStatus, batchKey, jobIds, LIST_PAGE_SIZE } from '../model.ts';
import type { BatchRow } from '../model.ts';
import { CallsStore } from '../store.ts';
import { importKind } from './kind.ts';
import type { ImportArgs } from './kind.ts';
import { chunkOf, readChunk } from './staging.ts';
import { applyUnderlying } from '../control/batch-control.ts';
import { controlStateOf, prepareStart } from '../control/service.ts';

/**
 * calls.import: turns an Importing batch's staged contacts (staging.ts) into its round-1 list, page by
 * page, then hands the batch to the dialer (docs/calls.md, "Importing contacts").
 *
 * A page p (contacts 500·p … 500·p + 499 in upload order) is two writes:
 *   1. its contacts' data items (store.putItems: BatchWriteItem, each request sent once); if DynamoDB
 *      leaves any unprocessed, the run ends there (snoozed, no attempt spent) and the next run writes the
 *      page again — the items are derived from the contacts, so writing them twice writes the same;
 *   2. one transaction: list page p, and the batch row moved on — `importPage` p → p + 1, `listPages`,
 *      `roundSize`, `nQueued` and `contactCount` up by the page's contacts — only if the row is still
 *      Importing at page p. The last page's transaction also sets the batch Pending and enqueues round 1's
 *      dialer (the same job a JSON batch is created with).
 * The cursor on the batch row is the truth: a run that dies between any two writes is run again from it,
 * a page's contacts are counted by the one transaction that moved the cursor past them, so none is lost
 * or counted twice. A batch deleted while it imports is no longer Importing: the next transaction is
 * refused, the run reads the row again and stops.
 *
 * Pacing: a run writes at most `pagesPerRun` pages (and stops after {@link IMPORT_RUN_BUDGET_MS}), then
 * snoozes `pageDelayMs` (0: continue at once) — an import of 100,000 contacts is 200 pages.
 */

export const DEFAULT_PAGES_PER_RUN = 20;
/** A run stops starting pages after this much real time, well inside its job timeout. */
export const IMPORT_RUN_BUDGET_MS = 30_000;
/** How long the job waits after DynamoDB left writes unprocessed, or another transaction held the row. */
export const IMPORT_BACKOFF_MS = 1_000;

/** The batch row of an import: its cursor and size beside the batch's own fields. */
export type ImportingBatchRow = BatchRow & {
  /** The next page to import (pages before it are in the round-1 list). */
  importPage: number;
  /** Pages the import writes in all. */
  importPages: number;
};

/** Where a test stops a run, as a crash would: after page `page`'s data items, or after its transaction. */
export interface ImportFaults {
  afterDataItems?: (page: number) => Promise<void> | void;
  afterPage?: (page: number) => Promise<void> | void;
}

/** The contacts of page `page`, from their chunks (one or two chunk reads; the last chunk read is kept for the next page). */
class PageReader {
  private cached: { chunk: number; first: number; contacts: Contact[] } | undefined;
  private readonly store: CallsStore;
  private readonly args: ImportArgs;
  constructor(store: CallsStore, args: ImportArgs) {
    this.store = store;
    this.args = args;
  }

  async page(page: number): Promise<Contact[]> {
    const from = page * LIST_PAGE_SIZE;
    const to = Math.min(from + LIST_PAGE_SIZE, this.args.total);
    const out: Contact[] = [];
    for (let i = from; i < to; ) {
      const chunk = await this.chunk(chunkOf(this.args.chunks, i));
      const end = Math.min(to, chunk.first + chunk.contacts.length);
      if (end <= i) throw new Error(`staged chunk ${chunk.chunk} of ${this.args.batchId} does not hold contact ${i}`);
      out.push(...chunk.contacts.slice(i - chunk.first, end - chunk.first));
      i = end;
    }
    return out;
  }

  private async chunk(chunk: number): Promise<{ chunk: number; first: number; contacts: Contact[] }> {
    if (this.cached?.chunk === chunk) return this.cached;
    const read = await readChunk(this.store, this.args.batchId, chunk);
    // Staged chunks outlive any import that runs; one gone means the import outlived them (or a bug).
    if (!read) throw new Error(`staged chunk ${chunk} of ${this.args.batchId} is missing`);
    this.cached = { chunk, ...read };
    return this.cached;
  }
}

/** A page's data items being written: its contacts, and what the writes came to (an error kept, not thrown, until the page is taken up). */
interface PageWrite {
  page: number;
  contacts: Contact[];
  written: Promise<{ unprocessed: number } | { error: unknown }>;
}

export function importHandler(deps: CallsDeps, faults: ImportFaults = {}): JobHandler<ImportArgs> {
  return handle(importKind, async (args, ctx) => {
    const { store, jobs, logger } = deps;
    let batch = (await store.getBatch(args.batchId)) as ImportingBatchRow | undefined;
    if (!batch || !isImporting(batch)) return;
    const batchId = batch.batchId;
    const reader = new PageReader(store, args);
    const started = performance.now();
    const pagesPerRun = args.pagesPerRun ?? DEFAULT_PAGES_PER_RUN;
    // A page's data items are written while the page before commits (they are reachable only once their
    // list page is, so writing them early changes nothing anyone reads): the writes and the transactions
    // overlap instead of taking turns.
    const write = async (page: number): Promise<PageWrite> => {
      const contacts = await reader.page(page);
      // Positions in upload order: the externalId entries say where their contact is (the listing's filter).
      const data = CallsStore.contactDataItems(batchId, contacts, ctx.now(), page * LIST_PAGE_SIZE) as unknown as Record<string, unknown>[];
      const written = data.length === 0 ? Promise.resolve({ unprocessed: 0 }) : store.putItems(data).then((r) => ({ unprocessed: r.unprocessed }), (error: unknown) => ({ error }));
      return { page, contacts, written };
    };
    let ahead: PageWrite | undefined;
    try {
      for (let done = 0; ; done++) {
        if (batch.importPage >= batch.importPages) throw new Error(`batch ${batchId} is Importing past its last page`);
        if (done >= pagesPerRun || performance.now() - started > IMPORT_RUN_BUDGET_MS) throw snooze({ delayMs: args.pageDelayMs ?? 0 }, `imported ${done} pages this run; continuing`);
        const page: number = batch.importPage;
        const current = ahead?.page === page ? ahead : await write(page);
        ahead = undefined;
        const written = await current.written;
        if ('error' in written) throw written.error;
        if (written.unprocessed > 0) throw snooze({ delayMs: IMPORT_BACKOFF_MS }, `DynamoDB left ${written.unprocessed} data items of page ${page} unprocessed; the page is written again`);
        await faults.afterDataItems?.(page);

        const { contacts } = current;
        const now = ctx.now();
        const last = page + 1 === batch.importPages;
        if (!last && done + 1 < pagesPerRun) ahead = await write(page + 1);
        const [list] = listPagesFor(batchId, contacts.map((c) => c.number), now, page);
        const e = new Expression();
        // Importing, or paused while importing (an import goes on under a pause: control/batch-control.ts).
        e.when(e.eq('status', batch.status))
          .when(e.eq('importPage', page))
          .set('importPage', page + 1)
          .increment('listPages', 1)
          .increment('roundSize', contacts.length)
          .increment('nQueued', contacts.length)
          .increment('contactCount', contacts.length)
          .set('updatedAt', iso(now));
        if (batch.status === BatchStatus.Paused) e.when(e.eq('pausedFrom', BatchStatus.Importing));
        // The last page: Pending with round 1's dialer, or Scheduled (its startAt ahead) with its start job;
        // a paused batch keeps its status and moves what resume returns it to (a Pending one is woken then).
        const finished = last ? applyUnderlying(controlStateOf(batch), 'importDone', now) : null;
        const underlying = finished === null ? undefined : finished.status === BatchStatus.Paused ? finished.pausedFrom : finished.status;
        if (finished) {
          if (finished.status === BatchStatus.Paused) e.set('pausedFrom', finished.pausedFrom);
          else e.set('status', finished.status);
          if (underlying === BatchStatus.Scheduled) e.set('starts', 1);
        }
        const dial = !finished
          ? undefined
          : underlying === BatchStatus.Scheduled
            ? prepareStart(deps, batchId, 1, batch.startAt!)
            : finished.status === BatchStatus.Pending
              ? jobs.prepare(dialKind, { batchId, round: 1 }, { id: jobIds.dial(batchId, 1) })
              : undefined;
        const result = await store.transact([putItem(`list page ${page}`, store.tableName, list!), updateItem('batch', store.tableName, batchKey(batchId), e, { returnStored: true }), ...(dial ? [dial.item] : [])]);
        if (!result.committed) {
          if (result.contention) throw snooze({ delayMs: IMPORT_BACKOFF_MS }, 'another transaction held the batch');
          const stored = result.refused['batch']?.item as ImportingBatchRow | undefined;
          if (!stored) throw new Error(`page ${page} of ${batchId} was refused: ${describeRefusals(result)}`);
          // Deleted (or otherwise no longer importing): stop. Another run moved the cursor: go on from it.
          if (!isImporting(stored)) return void logger.info('import stopped: the batch is no longer Importing', { batchId, status: stored.status });
          batch = stored;
          continue;
        }
        await faults.afterPage?.(page);
        if (last) {
          if (dial) await jobs.afterCommit([dial]);
          return;
        }
        batch = {
          ...batch,
          importPage: page + 1,
          listPages: batch.listPages + 1,
          roundSize: batch.roundSize + contacts.length,
          nQueued: batch.nQueued + contacts.length,
          contactCount: batch.contactCount + contacts.length,
        };
      }
    } finally {
      // A run never leaves writes of its own in flight behind it.
      if (ahead) await ahead.written;
    }
  });
}


/** Importing, or paused while importing: the import job writes its pages either way. */
const isImporting = (batch: BatchRow): boolean => batch.status === BatchStatus.Importing || (batch.status === BatchStatus.Paused && batch.pausedFrom === BatchStatus.Importing);
