import { afterEach, describe, expect, it } from 'vitest';
import { dialKind } from '../../../functions/calls/kinds.ts';
import { BatchStatus, jobIds } from '../../../functions/calls/model.ts';
import type { BatchRow } from '../../../functions/calls/model.ts';
import { callsFixture, numbers } from '../../support/calls.ts';
import type { CallsFixture } from '../../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A fixture with tenant acme (its key issued), no workers: these tests look at what the route writes. */
async function fixture() {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  const tenant = await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 10 });
  expect(tenant.status).toBe(200);
  return fx;
}

/** POSTs a CSV body as tenant acme, with the query's settings. */
async function postCsv(fx: CallsFixture, csv: string | Uint8Array, query: Record<string, string> = {}, headers: Record<string, string> = {}) {
  const key = await fx.keyOf('acme');
  const search = new URLSearchParams({ maxAttempts: '2', ...query });
  const response = await fetch(`${fx.url}/v1/batches/csv?${search.toString()}`, {
    method: 'POST',
    headers: { 'content-type': 'text/csv; charset=utf-8', authorization: `Bearer ${key}`, ...headers },
    body: csv,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const lines = (...rows: string[]) => rows.join('\r\n') + '\r\n';

describe('POST /v1/batches/csv: a batch from a CSV body', () => {
  it('CreatesAPendingBatchLikeTheJsonRouteWithItsDataItemsListAndDialer', async () => {
    const fx = await fixture();
    const csv = lines(
      'number,external_id,first_name,note',
      '+14155551000,crm-1,Ada,"line one\nline two"',
      '+14155551001,,"O""Brien","a, b; c"',
      '+14155551002,crm-3,=HYPERLINK("x"),',
    );
    const created = await postCsv(fx, csv, { minConversationDurationSeconds: '5', callingWindow: JSON.stringify({ timezone: 'Europe/London', start: '09:00', end: '17:00' }) });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ batchId: expect.any(String), accepted: 3, duplicatesDropped: 0 });
    const batchId = created.body.batchId as string;
    const batch = (await fx.store.getBatch(batchId))!;
    expect(batch).toMatchObject({ status: BatchStatus.Pending, contactCount: 3, roundSize: 3, nQueued: 3, listPages: 1, maxAttempts: 2, minConversationDurationSeconds: 5, variableNames: ['first_name', 'note'], hasContactData: true });
    expect(batch.callingWindow).toEqual({ timezone: 'Europe/London', start: '09:00', end: '17:00', weekdays: [1, 2, 3, 4, 5, 6, 7], perContact: true });
    expect((await fx.store.getListPage(batchId, 1, 0))!.numbers).toEqual(['+14155551000', '+14155551001', '+14155551002']);
    const data = await fx.store.getContactData(batchId, ['+14155551000', '+14155551001', '+14155551002']);
    // Quotes, a newline inside quotes, delimiters inside quotes, and a formula cell: stored as written.
    expect(data.get('+14155551000')).toMatchObject({ externalId: 'crm-1', variables: { first_name: 'Ada', note: 'line one\nline two' } });
    expect(data.get('+14155551001')?.variables).toEqual({ first_name: 'O"Brien', note: 'a, b; c' });
    expect(data.get('+14155551002')).toMatchObject({ externalId: 'crm-3', variables: { first_name: '=HYPERLINK("x")' } });
    expect(await fx.store.contactOfExternalId(batchId, 'crm-3')).toMatchObject({ number: '+14155551002', position: 2 });
    const dial = await fx.jobs.store.mustGet(jobIds.dial(batchId, 1));
    expect(dial).toMatchObject({ kind: dialKind.kind, args: { batchId, round: 1 } });
    // The same batch as the API shows any other.
    const shown = await fx.api('GET', `/v1/batches/${batchId}`);
    expect(shown.body).toMatchObject({ status: 'Pending', contactCount: 3 });
  });

  it('ReadsABomAndSemicolonsAndNationalNumbersWithDefaultCountry', async () => {
    const fx = await fixture();
    const csv = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines('Number;Vorname', '020 7946 0000;Jörg', '+44 20 7946 0001;"Zoë; x"'), 'utf8')]);
    const created = await postCsv(fx, csv, { defaultCountry: 'GB' });
    expect(created.status).toBe(201);
    const batchId = created.body.batchId as string;
    expect((await fx.store.getListPage(batchId, 1, 0))!.numbers).toEqual(['+442079460000', '+442079460001']);
    const data = await fx.store.getContactData(batchId, ['+442079460000', '+442079460001']);
    expect(data.get('+442079460000')?.variables).toEqual({ Vorname: 'Jörg' });
    expect(data.get('+442079460001')?.variables).toEqual({ Vorname: 'Zoë; x' });
  });

  it('InvalidRowsFirstAndLastRefuseTheFileWith400ListingThemAndWriteNothing', async () => {
    const fx = await fixture();
    const before = await fx.callsItems();
    const good = numbers(5).map((n) => `${n},x`);
    const refused = await postCsv(fx, lines('number,name', 'not a number,a', ...good, '+1415,b'));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_csv', refusal: 'rows', refusedRows: 2, issuesOmitted: 0 });
    expect(refused.body.issues).toEqual([
      { row: 2, column: 'number', message: expect.any(String) },
      { row: 8, column: 'number', message: expect.any(String) },
    ]);
    expect(await fx.callsItems()).toEqual(before);
    expect((await fx.allJobs()).filter((j) => j.kind === dialKind.kind)).toEqual([]);
  });

  it('ListsAtMost100IssuesButCountsEveryRefusedRow', async () => {
    const fx = await fixture();
    const bad = Array.from({ length: 150 }, (_, i) => `bad-${i}`);
    const refused = await postCsv(fx, lines('number', ...bad));
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toHaveLength(100);
    expect(refused.body).toMatchObject({ refusedRows: 150, issuesOmitted: 50 });
  });

  it('SkipInvalidImportsTheValidRowsAndReportsTheRefusedOnesWithTheirCount', async () => {
    const fx = await fixture();
    const good = numbers(3);
    const bad = Array.from({ length: 1005 }, (_, i) => `nope-${i}`);
    const created = await postCsv(fx, lines('number', 'x', ...good, ...bad), { skipInvalid: 'true' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ accepted: 3, refused: { rows: 1006, issuesOmitted: 6 } });
    expect(created.body.refused.issues).toHaveLength(1000);
    expect(created.body.refused.issues[0]).toMatchObject({ row: 2, column: 'number' });
    const batch = (await fx.store.getBatch(created.body.batchId))!;
    expect(batch.contactCount).toBe(3);
    expect((await fx.store.getListPage(batch.batchId, 1, 0))!.numbers).toEqual(good);
  });

  it('DuplicatesAreRefusedUnlessDedupeDropsAndCountsThem', async () => {
    const fx = await fixture();
    const [a, b] = numbers(2) as [string, string];
    const csv = lines('number', a, b, a.replace('+1', '+1 '));
    const refused = await postCsv(fx, csv);
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toEqual([{ row: 4, column: 'number', message: expect.stringContaining('duplicate of row 2') }]);
    const created = await postCsv(fx, csv, { dedupe: 'true' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ accepted: 2, duplicatesDropped: 1 });
    expect((await fx.store.getBatch(created.body.batchId))!).toMatchObject({ contactCount: 2, duplicatesDropped: 1 });
  });

  it('RefusesAFileItCannotReadAndWhatIsNotCsv', async () => {
    const fx = await fixture();
    const noNumber = await postCsv(fx, lines('phone,name', '+14155551000,a'));
    expect(noNumber.status).toBe(400);
    expect(noNumber.body).toMatchObject({ error: 'invalid_csv', refusal: 'header' });
    const unclosed = await postCsv(fx, lines('number,name', '+14155551000,"never closed'));
    expect(unclosed.body).toMatchObject({ error: 'invalid_csv', refusal: 'malformed' });
    const empty = await postCsv(fx, lines('number'));
    expect(empty.body).toMatchObject({ error: 'invalid_csv', refusal: 'empty' });
    const tooMany = await postCsv(fx, lines('number', ...numbers(10_001, '+141555')));
    expect(tooMany.body).toMatchObject({ error: 'invalid_csv', refusal: 'too_many_rows' });
    const key = await fx.keyOf('acme');
    const json = await fetch(`${fx.url}/v1/batches/csv?maxAttempts=1`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: '{}' });
    expect(json.status).toBe(415);
    const badQuery = await postCsv(fx, lines('number', '+14155551000'), { maxAttempts: '0', callingWindow: '{nope' });
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.issues.map((i: { path: string }) => i.path).sort()).toEqual(['query.callingWindow', 'query.maxAttempts']);
  });

  it('AnIdempotencyKeyReplaysTheSameFileAndRefusesAnotherUnderTheSameKey', async () => {
    const fx = await fixture();
    const csv = lines('number,name', ...numbers(3).map((n, i) => `${n},n${i}`));
    const first = await postCsv(fx, csv, {}, { 'idempotency-key': 'upload-1' });
    expect(first.status).toBe(201);
    const after = await fx.callsItems();
    const again = await postCsv(fx, csv, {}, { 'idempotency-key': 'upload-1' });
    expect(again).toEqual({ status: 200, body: { batchId: first.body.batchId } });
    expect(await fx.callsItems()).toEqual(after);
    const otherFile = await postCsv(fx, csv.replace('n0', 'n9'), {}, { 'idempotency-key': 'upload-1' });
    expect(otherFile.status).toBe(422);
    const otherSettings = await postCsv(fx, csv, { maxAttempts: '3' }, { 'idempotency-key': 'upload-1' });
    expect(otherSettings.status).toBe(422);
    const batches = (await fx.callsItems()).filter((i) => i['sk'] === 'BATCH') as unknown as BatchRow[];
    expect(batches).toHaveLength(1);
  });

  it('10000RowsMakeOneBatchOf20ListPages', async () => {
    const fx = await fixture();
    const all = numbers(10_000, '+141555');
    const created = await postCsv(fx, lines('number', ...all));
    expect(created.status).toBe(201);
    const batch = (await fx.store.getBatch(created.body.batchId))!;
    expect(batch).toMatchObject({ contactCount: 10_000, listPages: 20 });
    expect((await fx.store.getListPage(batch.batchId, 1, 19))!.numbers).toEqual(all.slice(9_500));
  });
});
