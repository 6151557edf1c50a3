import { afterEach, describe, expect, it } from 'vitest';
import { importHandler } from '../../../functions/calls/imports/job.ts';
import type { ImportFaults, ImportingBatchRow } from '../../../functions/calls/imports/job.ts';
import { importJobId } from '../../../functions/calls/imports/kind.ts';
import { MAX_CHUNK_BYTES, STAGE_PREFIX } from '../../../functions/calls/imports/staging.ts';
import { dialKind } from '../../../functions/calls/kinds.ts';
import { BatchStatus, DATA_PREFIX, jobIds, LIST_PAGE_SIZE } from '../../../functions/calls/model.ts';
import type { ListPage } from '../../../functions/calls/model.ts';
import { callsFixture, numbers, runByHand } from '../../support/calls.ts';
import type { CallsFixture } from '../../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A fixture with tenants acme and globex, no workers: the import job is run by hand, run by run. */
async function fixture() {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  for (const tenant of ['acme', 'globex']) expect((await fx.api('PUT', `/v1/tenants/${tenant}`, { concurrencyLimit: 10 })).status).toBe(200);
  return fx;
}

/** A request as `tenant`, with its API key. */
async function as(fx: CallsFixture, tenant: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const key = await fx.keyOf(tenant);
  const response = await fetch(`${fx.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** An upload URL asked for and the file PUT to it, as a client would: the upload's id. */
async function upload(fx: CallsFixture, csv: string, tenant = 'acme'): Promise<string> {
  const created = await as(fx, tenant, 'POST', '/v1/uploads');
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ uploadId: expect.stringMatching(new RegExp(`^u_${tenant}\\.[0-9a-f]{32}$`)), method: 'PUT', maxBytes: 50 * 1024 * 1024 });
  const put = await fetch(created.body.url, { method: 'PUT', body: csv });
  expect(put.status).toBe(200);
  return created.body.uploadId as string;
}

const lines = (...rows: string[]) => rows.join('\n') + '\n';

/** A CSV of `n` contacts with variables (some with an externalId, one with a formula, one with a newline). */
function contactsCsv(n: number): { csv: string; numbers: string[] } {
  const all = numbers(n, '+141555');
  const rows = all.map((number, i) => `${number},${i % 3 === 0 ? `crm-${i}` : ''},name ${i},"note, ${i}${i === 7 ? '\nsecond line' : ''}",${i === 5 ? '=1+1' : 'plain'}`);
  return { csv: lines('number,external_id,name,note,formula', ...rows), numbers: all };
}

/** Runs the import job by hand until it ends (each run writes up to pagesPerRun pages, then snoozes); the runs made. */
async function runImport(fx: CallsFixture, batchId: string, executor?: (id: string) => Promise<unknown>): Promise<number> {
  for (let runs = 1; runs <= 1000; runs++) {
    const before = await fx.jobs.store.mustGet(importJobId(batchId));
    if (['completed', 'cancelled', 'discarded'].includes(before.state)) return runs - 1;
    if (executor) await executor(importJobId(batchId));
    else await runByHand(fx, importJobId(batchId));
  }
  throw new Error('the import never ended');
}

/** Every number of the batch's round-1 list, page by page, and every data item's number. */
async function imported(fx: CallsFixture, batchId: string) {
  const items = await fx.callsItems();
  const pages = (items.filter((i) => String(i['sk']).startsWith('LIST#001#')) as unknown as ListPage[]).sort((a, b) => a.page - b.page);
  const data = items.filter((i) => i['batchId'] === batchId && String(i['sk']).startsWith(DATA_PREFIX)).map((i) => i['contactNumber'] as string);
  return { listed: pages.flatMap((p) => p.numbers), pages, data, staged: items.filter((i) => String(i['sk']).startsWith(STAGE_PREFIX)) };
}

describe('large files: an upload, then an import job', () => {
  it('UploadsThroughTheLocalHostImportsPageByPageThenIsPendingWithItsDialer', async () => {
    const fx = await fixture();
    const { csv, numbers: all } = contactsCsv(1_234);
    const uploadId = await upload(fx, csv);
    const started = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 2, pagesPerRun: 1 });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({ batchId: expect.any(String), status: 'Importing', accepted: 1_234, duplicatesDropped: 0 });
    const batchId = started.body.batchId as string;

    const importing = (await fx.store.getBatch(batchId)) as ImportingBatchRow;
    expect(importing).toMatchObject({ status: BatchStatus.Importing, contactCount: 0, listPages: 0, nQueued: 0, importPage: 0, importPages: 3, variableNames: ['name', 'note', 'formula'], hasContactData: true });
    expect((await as(fx, 'acme', 'GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Importing', contactCount: 0 });
    // Nothing to dial yet: the dialer is enqueued by the import's last page.
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind)).toEqual([]);
    const { staged } = await imported(fx, batchId);
    expect(staged.length).toBeGreaterThan(0);
    for (const chunk of staged) expect((chunk['contacts'] as Uint8Array).byteLength).toBeLessThanOrEqual(MAX_CHUNK_BYTES);

    // Three pages, one a run: three runs, the first two snoozing to go on.
    expect(await runImport(fx, batchId)).toBe(3);
    expect(await fx.jobs.store.mustGet(importJobId(batchId))).toMatchObject({ state: 'completed' });
    const batch = (await fx.store.getBatch(batchId)) as ImportingBatchRow;
    expect(batch).toMatchObject({ status: BatchStatus.Pending, contactCount: 1_234, roundSize: 1_234, nQueued: 1_234, listPages: 3, importPage: 3 });
    const { listed, pages, data } = await imported(fx, batchId);
    expect(listed).toEqual(all);
    expect(pages.map((p) => p.numbers.length)).toEqual([LIST_PAGE_SIZE, LIST_PAGE_SIZE, 234]);
    // Every contact has variables: one data item each.
    expect(data.sort()).toEqual([...all].sort());
    const some = await fx.store.getContactData(batchId, [all[5]!, all[7]!, all[9]!]);
    expect(some.get(all[5]!)?.variables).toEqual({ name: 'name 5', note: 'note, 5', formula: '=1+1' });
    expect(some.get(all[7]!)?.variables).toMatchObject({ note: 'note, 7\nsecond line' });
    expect(some.get(all[9]!)?.externalId).toBe('crm-9');
    // Page 2's entry names its contact's place in upload order, not its place in the page.
    expect(await fx.store.contactOfExternalId(batchId, 'crm-1011')).toMatchObject({ number: all[1011], position: 1011 });
    expect(await fx.jobs.store.mustGet(jobIds.dial(batchId, 1))).toMatchObject({ kind: dialKind.kind, args: { batchId, round: 1 } });
    const contacts = await as(fx, 'acme', 'GET', `/v1/batches/${batchId}/contacts?limit=3`);
    expect(contacts.body.contacts.map((c: { contactNumber: string }) => c.contactNumber)).toEqual(all.slice(0, 3));
  });

  for (const at of ['afterDataItems', 'afterPage'] as const) {
    it(`AnImportKilled${at === 'afterPage' ? 'AfterAPagesTransaction' : 'BetweenDataItemsAndTransaction'}EndsWithEveryContactOnce`, async () => {
      const fx = await fixture();
      const { csv, numbers: all } = contactsCsv(1_800);
      const uploadId = await upload(fx, csv);
      const started = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1 });
      const batchId = started.body.batchId as string;
      // Each run dies at page 1, then at page 2, as a crash would (an error, the job's attempt spent); the next run goes on from the cursor.
      let crashes = 0;
      const crashOn = new Set([1, 2]);
      const faults: ImportFaults = {
        [at]: (page: number) => {
          if (crashOn.delete(page)) {
            crashes++;
            throw new Error(`killed ${at} page ${page}`);
          }
        },
      };
      const executor = fx.jobs.executor('calls', [importHandler(fx.deps, faults)]);
      await runImport(fx, batchId, async (id) => {
        const job = await fx.jobs.store.mustGet(id);
        fx.clock.set(Math.max(fx.clock.now(), Date.parse(job.scheduledAt)));
        return executor.execute({ jobId: id, seq: job.seq });
      });
      expect(crashes).toBe(2);
      const job = await fx.jobs.store.mustGet(importJobId(batchId));
      expect(job.attempts.filter((a) => a.outcome === 'retryable')).toHaveLength(2);
      const { listed, data } = await imported(fx, batchId);
      expect(listed).toEqual(all);
      expect(data.sort()).toEqual([...all].sort());
      expect(await fx.store.getBatch(batchId)).toMatchObject({ status: BatchStatus.Pending, contactCount: 1_800, nQueued: 1_800, roundSize: 1_800, listPages: 4 });
    });
  }

  it('AnImportThatEndsBeforeItsStartAtIsScheduledWithItsStartJobNotItsDialer', async () => {
    const fx = await fixture();
    const { csv } = contactsCsv(600);
    const uploadId = await upload(fx, csv);
    const startAt = new Date(fx.clock.now() + 86_400_000).toISOString();
    const batchId = (await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1, pagesPerRun: 1, startAt })).body.batchId as string;
    expect(await runImport(fx, batchId)).toBe(2);
    expect(await fx.store.getBatch(batchId)).toMatchObject({ status: BatchStatus.Scheduled, startAt, starts: 1, contactCount: 600 });
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind)).toEqual([]);
    expect(await fx.jobs.store.mustGet(jobIds.start(batchId, 1))).toMatchObject({ args: { batchId, seq: 1, startAt }, scheduledAt: startAt });
  });

  it('AnImportPausedMidwayWritesItsPagesAndEndsPausedResumeThenWakesItsDialer', async () => {
    const fx = await fixture();
    const { csv } = contactsCsv(1_200);
    const uploadId = await upload(fx, csv);
    const batchId = (await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1, pagesPerRun: 1 })).body.batchId as string;
    await runByHand(fx, importJobId(batchId));
    expect((await as(fx, 'acme', 'POST', `/v1/batches/${batchId}/pause`)).body).toMatchObject({ status: 'Paused', pausedFrom: 'Importing' });
    await runImport(fx, batchId);
    expect(await fx.store.getBatch(batchId)).toMatchObject({ status: BatchStatus.Paused, pausedFrom: BatchStatus.Pending, importPage: 3, contactCount: 1_200 });
    // No dialer while paused: the resume wakes one.
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind)).toEqual([]);
    expect((await as(fx, 'acme', 'POST', `/v1/batches/${batchId}/resume`)).body).toMatchObject({ status: 'Pending' });
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind).map((j) => j.id)).toEqual([jobIds.dialWake(batchId, 1, 1)]);
  });

  it('DeletingAnImportingBatchStopsItsImport', async () => {
    const fx = await fixture();
    const { csv } = contactsCsv(1_600);
    const uploadId = await upload(fx, csv);
    const batchId = (await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1, pagesPerRun: 1 })).body.batchId as string;
    await runByHand(fx, importJobId(batchId));
    expect(await fx.store.getBatch(batchId)).toMatchObject({ importPage: 1, listPages: 1 });
    const deleted = await as(fx, 'acme', 'DELETE', `/v1/batches/${batchId}`);
    expect(deleted.body).toMatchObject({ status: 'Deleted' });
    await runImport(fx, batchId);
    // The deletion asked the import job to stop: it is cancelled at its next wake-up, having written nothing more.
    expect(await fx.jobs.store.mustGet(importJobId(batchId))).toMatchObject({ state: 'cancelled' });
    expect(await fx.store.getBatch(batchId)).toMatchObject({ status: BatchStatus.Deleted, importPage: 1, listPages: 1, contactCount: 500 });
    expect((await imported(fx, batchId)).pages).toHaveLength(1);
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind)).toEqual([]);
  });

  it('ABatchDeletedWhileAPageIsWrittenRefusesThatPagesTransactionAndTheRunStops', async () => {
    const fx = await fixture();
    const { csv } = contactsCsv(1_200);
    const uploadId = await upload(fx, csv);
    const batchId = (await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1 })).body.batchId as string;
    const executor = fx.jobs.executor('calls', [
      importHandler(fx.deps, {
        afterDataItems: async (page) => {
          if (page === 1) expect((await as(fx, 'acme', 'DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
        },
      }),
    ]);
    const job = await fx.jobs.store.mustGet(importJobId(batchId));
    await executor.execute({ jobId: job.id, seq: job.seq });
    expect(await fx.store.getBatch(batchId)).toMatchObject({ status: BatchStatus.Deleted, importPage: 1, listPages: 1, contactCount: 500 });
    expect((await imported(fx, batchId)).pages.map((p) => p.page)).toEqual([0]);
    expect((await fx.jobs.store.mustGet(importJobId(batchId))).state).not.toBe('discarded');
  });

  it('RefusesInvalidFilesAsTheCsvRouteDoesAndSkipInvalidImportsTheRest', async () => {
    const fx = await fixture();
    const good = numbers(3, '+141555');
    const uploadId = await upload(fx, lines('number,name', `${good[0]},a`, 'nope,b', `${good[1]},c`, `${good[2]},d`, `${good[0]},e`));
    const refused = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_csv', refusal: 'rows', refusedRows: 2 });
    expect(refused.body.issues.map((i: { row: number }) => i.row)).toEqual([3, 6]);
    expect((await fx.callsItems()).filter((i) => i['sk'] === 'BATCH')).toEqual([]);
    const skipping = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1, skipInvalid: true, dedupe: true });
    expect(skipping.status).toBe(202);
    expect(skipping.body).toMatchObject({ accepted: 3, duplicatesDropped: 1, refused: { rows: 1, issues: [{ row: 3, column: 'number' }], issuesOmitted: 0 } });
    await runImport(fx, skipping.body.batchId);
    expect((await imported(fx, skipping.body.batchId)).listed).toEqual(good);
  });

  it('UploadsAreTheirTenantsAndTheirUrlsExpire', async () => {
    const fx = await fixture();
    const uploadId = await upload(fx, lines('number', ...numbers(2)));
    // Another tenant's upload names nothing for globex, as an unknown one.
    const foreign = await as(fx, 'globex', 'POST', '/v1/batches/imports', { uploadId, maxAttempts: 1 });
    expect(foreign.status).toBe(404);
    const unknown = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId: uploadId.replace(/.{4}$/, '0000'), maxAttempts: 1 });
    expect(unknown.status).toBe(404);
    // An upload URL is good for 15 minutes of the host's clock, and only as signed.
    const created = await as(fx, 'acme', 'POST', '/v1/uploads');
    const forged = await fetch(created.body.url.replace(/signature=[^&]+/, 'signature=AAAA'), { method: 'PUT', body: 'number\n' });
    expect(forged.status).toBe(403);
    fx.clock.set(fx.clock.now() + 16 * 60_000);
    const late = await fetch(created.body.url, { method: 'PUT', body: 'number\n' });
    expect(late.status).toBe(403);
    const never = await as(fx, 'acme', 'POST', '/v1/batches/imports', { uploadId: created.body.uploadId, maxAttempts: 1 });
    expect(never.status).toBe(404);
  });

  it('AnIdempotencyKeyReplaysTheImportAndRefusesAnotherBodyUnderIt', async () => {
    const fx = await fixture();
    const uploadId = await upload(fx, lines('number', ...numbers(3, '+141555')));
    const body = { uploadId, maxAttempts: 2 };
    const first = await as(fx, 'acme', 'POST', '/v1/batches/imports', body, { 'idempotency-key': 'big-1' });
    expect(first.status).toBe(202);
    const after = await fx.callsItems();
    const again = await as(fx, 'acme', 'POST', '/v1/batches/imports', body, { 'idempotency-key': 'big-1' });
    expect(again).toEqual({ status: 200, body: { batchId: first.body.batchId } });
    expect(await fx.callsItems()).toEqual(after);
    const other = await as(fx, 'acme', 'POST', '/v1/batches/imports', { ...body, maxAttempts: 3 }, { 'idempotency-key': 'big-1' });
    expect(other.status).toBe(422);
  });
});
