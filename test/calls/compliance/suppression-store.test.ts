import { afterEach, describe, expect, it } from 'vitest';
import { suppressionImportJobId } from '../../../functions/calls/compliance/suppression-import-kind.ts';
import { suppressionCheckItem, suppressionItemName } from '../../../functions/calls/compliance/suppression-store.ts';
import { suppressionKey, suppressionShard, SUPPRESSION_SHARDS } from '../../../functions/calls/compliance/suppression.ts';
import { putItem, transact } from '../../../functions/platform/dynamo.ts';
import { operatorScope } from '../../../functions/platform/tenancy.ts';
import { callsFixture, numbers, runByHand } from '../../support/calls.ts';
import type { CallsFixture } from '../../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** Tenants acme and globex with keys, no workers: an import job is run by hand. */
async function fixture() {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  for (const tenant of ['acme', 'globex']) expect((await fx.api('PUT', `/v1/tenants/${tenant}`, { concurrencyLimit: 10 })).status).toBe(200);
  return fx;
}

/** A request as `tenant`, with its API key; `raw` sends a text body as is. */
async function as(fx: CallsFixture, tenant: string, method: string, path: string, body?: unknown, raw?: { text: string; contentType: string }) {
  const key = await fx.keyOf(tenant);
  const response = await fetch(`${fx.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(raw ? { 'content-type': raw.contentType } : body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(raw ? { body: raw.text } : body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const path = (number: string) => `/v1/suppressions/${encodeURIComponent(number)}`;

/** The calls table's suppression items: entries, audit records, import rows and chunks. */
async function suppressionItems(fx: CallsFixture) {
  return (await fx.callsItems()).filter((i) => /#SUPP(#|AUDIT|IMPORT)/.test(String(i['pk'])));
}

/** Runs a suppression import job by hand until it ends; the runs made. */
async function runImport(fx: CallsFixture, importId: string): Promise<number> {
  for (let runs = 1; runs <= 1000; runs++) {
    const job = await fx.jobs.store.mustGet(suppressionImportJobId(importId));
    if (['completed', 'cancelled', 'discarded'].includes(job.state)) return runs - 1;
    await runByHand(fx, suppressionImportJobId(importId));
  }
  throw new Error('the import never ended');
}

/** Every entry of a tenant's list through the API, page by page; the pages' sizes too. */
async function listAll(fx: CallsFixture, tenant: string, limit: number) {
  const entries: { number: string }[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const page = await as(fx, tenant, 'GET', `/v1/suppressions?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status).toBe(200);
    entries.push(...page.body.suppressions);
    sizes.push(page.body.suppressions.length);
    cursor = page.body.cursor;
    if (!cursor) return { entries, sizes };
  }
  throw new Error('the listing never ended');
}

describe('suppressions: PUT, DELETE and the audit records', () => {
  it('PutWritesTheEntryAndAnAuditRecordNormalisingTheNumber_ARepeatKeepsCreatedAtAndSourceAndReplacesTheReason', async () => {
    const fx = await fixture();
    const first = await as(fx, 'acme', 'PUT', path('+1 (415) 555-0101'), { reason: 'asked by email' });
    expect(first).toEqual({ status: 200, body: { number: '+14155550101', reason: 'asked by email', source: 'api', createdAt: new Date(fx.clock.now()).toISOString(), callId: null, batchId: null } });
    const createdAt = first.body.createdAt as string;
    fx.clock.advance(60_000);
    const again = await as(fx, 'acme', 'PUT', path('+14155550101'), { reason: 'complaint' });
    expect(again.body).toMatchObject({ number: '+14155550101', reason: 'complaint', source: 'api', createdAt });
    // No reason (`{}`): the entry stays, its reason too.
    fx.clock.advance(60_000);
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), {})).body).toMatchObject({ reason: 'complaint', createdAt });
    expect(await fx.store.suppressions().isSuppressed('acme', '+14155550101')).toBe(true);
    const audit = await fx.store.suppressions().audit(scopeOf(fx, 'acme'), '+14155550101');
    expect(audit.map((a) => [a.action, a.source, a.reason])).toEqual([
      ['added', 'api', 'asked by email'],
      ['added', 'api', 'complaint'],
      ['added', 'api', undefined],
    ]);
  });

  it('ABadNumberIs400OnThePathAndWritesNothing', async () => {
    const fx = await fixture();
    for (const bad of ['12', 'not-a-number', '+999123']) {
      const response = await as(fx, 'acme', 'PUT', path(bad), { reason: 'x' });
      expect(response.status).toBe(400);
      expect(response.body.issues[0].path).toBe('path.number');
    }
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), { reason: 'x'.repeat(201) })).status).toBe(400);
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), { reasons: 'typo' })).body.issues[0].path).toBe('body.reasons');
    expect(await suppressionItems(fx)).toEqual([]);
  });

  it('DeleteRemovesTheEntryKeepsEveryAuditRecordAndIs404WhenAbsent', async () => {
    const fx = await fixture();
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), { reason: 'r' })).status).toBe(200);
    fx.clock.advance(1_000);
    const removed = await as(fx, 'acme', 'DELETE', path('+14155550101'));
    expect(removed).toMatchObject({ status: 200, body: { number: '+14155550101', reason: 'r', source: 'api' } });
    expect(await fx.store.suppressions().isSuppressed('acme', '+14155550101')).toBe(false);
    expect((await as(fx, 'acme', 'DELETE', path('+14155550101'))).status).toBe(404);
    const audit = await fx.store.suppressions().audit(scopeOf(fx, 'acme'), '+14155550101');
    expect(audit.map((a) => a.action)).toEqual(['added', 'removed']);
    // The 404 wrote nothing: still two audit records, no entry.
    expect((await suppressionItems(fx)).map((i) => String(i['pk']))).toEqual(['TENANT#acme#SUPPAUDIT', 'TENANT#acme#SUPPAUDIT']);
  });

  it('ATenantNeitherSeesNorRemovesAnotherTenantsEntries_NorUsesItsCursor', async () => {
    const fx = await fixture();
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), { reason: 'acme’s' })).status).toBe(200);
    for (const n of numbers(30)) expect((await as(fx, 'acme', 'PUT', path(n), {})).status).toBe(200);
    expect((await as(fx, 'globex', 'GET', '/v1/suppressions')).body).toEqual({ suppressions: [] });
    expect((await as(fx, 'globex', 'DELETE', path('+14155550101'))).status).toBe(404);
    expect(await fx.store.suppressions().isSuppressed('acme', '+14155550101')).toBe(true);
    expect(await fx.store.suppressions().isSuppressed('globex', '+14155550101')).toBe(false);
    const acmePage = await as(fx, 'acme', 'GET', '/v1/suppressions?limit=5');
    expect(acmePage.body.cursor).toEqual(expect.any(String));
    const stolen = await as(fx, 'globex', 'GET', `/v1/suppressions?limit=5&cursor=${encodeURIComponent(acmePage.body.cursor)}`);
    expect(stolen.status).toBe(400);
    expect(stolen.body.issues[0].path).toBe('query.cursor');
    // The same number on globex's list is globex's own entry.
    expect((await as(fx, 'globex', 'PUT', path('+14155550101'), { reason: 'globex’s' })).body.reason).toBe('globex’s');
    expect((await fx.store.suppressions().get(scopeOf(fx, 'acme'), '+14155550101'))?.reason).toBe('acme’s');
  });
});

describe('suppressions: the listing pages across the four shards', () => {
  it('ListsEveryEntryOnceAcrossShardsInPagesOfAnySize', async () => {
    const fx = await fixture();
    const all = numbers(57);
    for (const n of all) expect((await as(fx, 'acme', 'PUT', path(n), {})).status).toBe(200);
    const shards = new Set(all.map(suppressionShard));
    expect(shards.size).toBe(SUPPRESSION_SHARDS);
    for (const limit of [1, 7, 500]) {
      const { entries, sizes } = await listAll(fx, 'acme', limit);
      expect(entries.map((e) => e.number).sort()).toEqual([...all].sort());
      expect(new Set(entries.map((e) => e.number)).size).toBe(all.length);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(limit);
    }
    // Shard by shard, each in number order.
    const { entries } = await listAll(fx, 'acme', 500);
    const order = entries.map((e) => [suppressionShard(e.number), e.number] as const);
    expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1])));
  });

  it('RefusesACursorItDidNotGiveOut', async () => {
    const fx = await fixture();
    for (const cursor of ['garbage', Buffer.from(JSON.stringify({ t: 'acme', s: 9 })).toString('base64url'), Buffer.from(JSON.stringify({ t: 'acme', s: 1, a: 'x' })).toString('base64url')]) {
      expect((await as(fx, 'acme', 'GET', `/v1/suppressions?cursor=${encodeURIComponent(cursor)}`)).status).toBe(400);
    }
  });
});

describe('suppressions: the dial’s ConditionCheck', () => {
  it('RefusesATransactionForASuppressedNumberByNameReturningTheEntry_AndLetsOneForAnotherNumberCommit', async () => {
    const fx = await fixture();
    expect((await as(fx, 'acme', 'PUT', path('+14155550101'), { reason: 'r' })).status).toBe(200);
    const marker = (n: number) => putItem('marker', fx.store.tableName, { pk: 'TENANT#acme#TEST', sk: String(n) });
    const refused = await transact(fx.clients.dynamo, [suppressionCheckItem(fx.store.tableName, 'acme', '+14155550101'), marker(1)]);
    expect(refused.committed).toBe(false);
    if (refused.committed) return;
    expect(refused.refused[suppressionItemName('+14155550101')]).toMatchObject({ code: 'ConditionalCheckFailed', item: { number: '+14155550101', reason: 'r' } });
    // Another tenant's list, and another number, do not stop a dial.
    expect((await transact(fx.clients.dynamo, [suppressionCheckItem(fx.store.tableName, 'globex', '+14155550101'), marker(2)])).committed).toBe(true);
    expect((await transact(fx.clients.dynamo, [suppressionCheckItem(fx.store.tableName, 'acme', '+14155550102'), marker(3)])).committed).toBe(true);
    // Removed: the same check passes.
    expect((await as(fx, 'acme', 'DELETE', path('+14155550101'))).status).toBe(200);
    expect((await transact(fx.clients.dynamo, [suppressionCheckItem(fx.store.tableName, 'acme', '+14155550101'), marker(4)])).committed).toBe(true);
  });
});

describe('suppressions: a PUT and a DELETE at once', () => {
  it('EndsInAStateOneOfTheOrdersExplains_AndTheAuditRecordsMatchWhatCommitted', async () => {
    const fx = await fixture();
    const number = '+14155550101';
    for (let round = 0; round < 10; round++) {
      fx.clock.advance(1_000);
      // Every other round starts with the number on the list, so the DELETE has something to remove.
      const before = round % 2 === 0;
      if (before) expect((await as(fx, 'acme', 'PUT', path(number), { reason: 'before' })).status).toBe(200);
      fx.clock.advance(1_000);
      const auditBefore = (await fx.store.suppressions().audit(scopeOf(fx, 'acme'), number)).length;
      const [put, del] = await Promise.all([as(fx, 'acme', 'PUT', path(number), { reason: `race ${round}` }), as(fx, 'acme', 'DELETE', path(number))]);
      expect([200, 503]).toContain(put.status);
      expect([200, 404, 503]).toContain(del.status);
      const entry = await fx.store.suppressions().get(scopeOf(fx, 'acme'), number);
      const audit = (await fx.store.suppressions().audit(scopeOf(fx, 'acme'), number)).slice(auditBefore);
      const added = put.status === 200;
      const removed = del.status === 200;
      // What the answers say committed is exactly what the audit records show; one record each (same ms: same key).
      expect(audit.map((a) => a.action).sort()).toEqual([...(added ? ['added'] : []), ...(removed ? ['removed'] : [])].sort());
      // The state follows from an order of the committed writes: both committed → either order; else the one that did.
      if (added && removed) expect(typeof entry === 'undefined' || entry.reason === `race ${round}`).toBe(true);
      else if (added) expect(entry?.reason).toBe(`race ${round}`);
      else if (removed) expect(entry).toBeUndefined();
      else expect(entry?.reason ?? undefined).toBe(before ? 'before' : undefined);
      if (!before && !added) expect(del.status === 404 || del.status === 503).toBe(true);
      // Clean slate for the next round.
      if (entry) expect((await as(fx, 'acme', 'DELETE', path(number))).status).toBe(200);
    }
  });
});

describe('suppressions: CSV import', () => {
  it('ImportsACsvBodyThroughItsJob_ProgressReadable_DuplicatesOnce_SourceImport', async () => {
    const fx = await fixture();
    expect((await as(fx, 'acme', 'PUT', path('+14155551000'), { reason: 'first' })).status).toBe(200);
    const createdAt = (await fx.store.suppressions().get(scopeOf(fx, 'acme'), '+14155551000'))!.createdAt;
    fx.clock.advance(60_000);
    const all = numbers(2_345);
    const csv = ['Number;Reason', ...all.map((n, i) => `${n};${i % 2 ? 'complaint' : ''}`), `${all[3]};dup`, ''].join('\n');
    const started = await as(fx, 'acme', 'POST', '/v1/suppressions/csv', undefined, { text: csv, contentType: 'text/csv' });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ importId: expect.stringMatching(/^si_acme\.[0-9a-f]{32}$/), status: 'Importing', total: 2_345, written: 0, rows: 2_346, duplicatesDropped: 1 });
    const importId = started.body.importId as string;
    expect(await fx.store.suppressions().isSuppressed('acme', all[5]!)).toBe(false);
    await runImport(fx, importId);
    expect((await as(fx, 'acme', 'GET', `/v1/suppressions/imports/${importId}`)).body).toMatchObject({ status: 'Done', total: 2_345, written: 2_345, finishedAt: expect.any(String) });
    expect((await as(fx, 'globex', 'GET', `/v1/suppressions/imports/${importId}`)).status).toBe(404);
    const { entries } = await listAll(fx, 'acme', 500);
    expect(entries.map((e) => e.number).sort()).toEqual([...all].sort());
    const one = await fx.store.suppressions().get(scopeOf(fx, 'acme'), all[1]!);
    expect(one).toMatchObject({ source: 'import', reason: 'complaint' });
    // A number already on the list keeps when and how it came; its audit shows the import.
    expect(await fx.store.suppressions().get(scopeOf(fx, 'acme'), '+14155551000')).toMatchObject({ source: 'api', createdAt });
    expect((await fx.store.suppressions().audit(scopeOf(fx, 'acme'), all[1]!)).map((a) => [a.action, a.source])).toEqual([['added', 'import']]);
  });

  it('ABadRowRefusesTheFileWithRowAndColumnAndWritesNothing', async () => {
    const fx = await fixture();
    const csv = ['number,reason', '+14155550101,ok', 'not a number,x', '+14155550103,' + 'y'.repeat(201), '+1415555', ''].join('\n');
    const response = await as(fx, 'acme', 'POST', '/v1/suppressions/csv', undefined, { text: csv, contentType: 'text/csv' });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: 'invalid_csv', refusedRows: 3, issuesOmitted: 0 });
    expect(response.body.issues).toEqual([
      { row: 3, column: 'number', message: expect.any(String) },
      { row: 4, column: 'reason', message: 'at most 200 characters' },
      { row: 5, column: 'number', message: expect.any(String) },
    ]);
    const noNumber = await as(fx, 'acme', 'POST', '/v1/suppressions/csv', undefined, { text: 'phone,reason\n+14155550101,x\n', contentType: 'text/csv' });
    expect(noNumber.status).toBe(400);
    expect(noNumber.body.issues[0]).toMatchObject({ row: 1 });
    expect((await as(fx, 'acme', 'POST', '/v1/suppressions/csv', undefined, { text: 'number\n', contentType: 'text/csv' })).status).toBe(400);
    expect((await as(fx, 'acme', 'POST', '/v1/suppressions/csv', undefined, { text: 'number\n+14155550101\n', contentType: 'application/json' })).status).toBe(415);
    expect(await suppressionItems(fx)).toEqual([]);
    expect((await fx.allJobs()).filter((j) => j.kind === 'calls.suppressions.import')).toEqual([]);
  });

  it('ImportsAnUploadedFile_AndAnotherTenantsUploadIsNotFound', async () => {
    const fx = await fixture();
    const created = await as(fx, 'acme', 'POST', '/v1/uploads');
    expect(created.status).toBe(201);
    expect((await fetch(created.body.url, { method: 'PUT', body: 'number\n+14155550101\n+14155550102\n' })).status).toBe(200);
    expect((await as(fx, 'globex', 'POST', '/v1/suppressions/imports', { uploadId: created.body.uploadId })).status).toBe(404);
    const started = await as(fx, 'acme', 'POST', '/v1/suppressions/imports', { uploadId: created.body.uploadId });
    expect(started).toMatchObject({ status: 202, body: { total: 2 } });
    await runImport(fx, started.body.importId);
    expect(await fx.store.suppressions().isSuppressed('acme', '+14155550102')).toBe(true);
    expect(await fx.store.suppressions().isSuppressed('globex', '+14155550102')).toBe(false);
  });
});

/** A tenant's scope, as an operator's request for it has it (the store's reads take one). */
const scopeOf = (_fx: CallsFixture, tenantId: string) => operatorScope(tenantId);

// The key helpers are what the dial and the store share: a sanity check that the test reads the same items.
it('SuppressionKeyIsWhereTheStoreWrites', async () => {
  const fx = await fixture();
  expect((await as(fx, 'acme', 'PUT', path('+14155550101'), {})).status).toBe(200);
  const keys = (await suppressionItems(fx)).filter((i) => String(i['sk']).startsWith('NUMBER#')).map((i) => ({ pk: i['pk'], sk: i['sk'] }));
  expect(keys).toEqual([suppressionKey('acme', '+14155550101')]);
});
