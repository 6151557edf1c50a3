import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPORT_PAGE_CONTACTS, encodeExportCursor } from '../../functions/calls/export-api.ts';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchKey, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers, runByHand } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';
import { completed, exportAll, exportPage, write } from '../support/export.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

async function fixture() {
  // No worker: the tests write the completions they need, or run the dialer by hand.
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  return fx;
}

describe('GET /v1/batches/{id}/export: results out, a page at a time', () => {
  it('ExportsEachContactInUploadOrderWithItsDataItsFinalStateAndItsLastCallsArtefacts_FormulasGuardedButNotTheNumberNorPlainNumbers', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 2 });
    const contacts = [
      { number: '+442079460000', externalId: 'crm-1', variables: { first_name: 'Ada', balance: -12.5, note: '=HYPERLINK("http://evil.example")' } },
      { number: '+14155550123', externalId: '@risk', variables: { first_name: 'Smith, "Bob"', vip: true } },
      { number: '+33140000000' },
    ];
    const created = await fx.api('POST', '/v1/batches', { contacts, maxAttempts: 1 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const batchId = created.body.batchId as string;
    await write(fx, [
      ...completed(batchId, '+442079460000', { code: 'COMPLETED', recordingUrl: 'https://rec.example/1.mp3', transcriptUrl: 'https://rec.example/1.txt', summary: 'Agreed to pay.\nCall back Friday', endedReason: 'customer-ended-call' }),
      ...completed(batchId, '+14155550123', { code: 'NO_ANSWER', summary: '-1 day late', endedReason: '+bad' }),
    ]);

    const [csv] = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=csv`);
    expect(csv!.contentType).toBe('text/csv; charset=utf-8');
    expect(parse(csv!.text)).toEqual([
      ['number', 'external_id', 'first_name', 'balance', 'note', 'vip', 'status', 'code', 'attempts', 'recording_url', 'transcript_url', 'summary', 'ended_reason'],
      ['+442079460000', 'crm-1', 'Ada', '-12.5', `'=HYPERLINK("http://evil.example")`, '', 'Completed', 'COMPLETED', '1', 'https://rec.example/1.mp3', 'https://rec.example/1.txt', 'Agreed to pay.\nCall back Friday', 'customer-ended-call'],
      ['+14155550123', "'@risk", 'Smith, "Bob"', '', '', 'true', 'Completed', 'NO_ANSWER', '1', '', '', "'-1 day late", "'+bad"],
      ['+33140000000', '', '', '', '', '', 'Queued', '', '0', '', '', '', ''],
    ]);
    // RFC 4180's line ends.
    expect(csv!.text.split('\r\n')).toHaveLength(5);

    const [jsonl] = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=jsonl`);
    expect(jsonl!.contentType).toBe('application/x-ndjson');
    const lines = jsonl!.text.trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toEqual([
      { number: '+442079460000', externalId: 'crm-1', variables: { first_name: 'Ada', balance: -12.5, note: '=HYPERLINK("http://evil.example")' }, status: 'Completed', code: 'COMPLETED', attempts: 1, recordingUrl: 'https://rec.example/1.mp3', transcriptUrl: 'https://rec.example/1.txt', summary: 'Agreed to pay.\nCall back Friday', endedReason: 'customer-ended-call' },
      { number: '+14155550123', externalId: '@risk', variables: { first_name: 'Smith, "Bob"', vip: true }, status: 'Completed', code: 'NO_ANSWER', attempts: 1, recordingUrl: null, transcriptUrl: null, summary: '-1 day late', endedReason: '+bad' },
      { number: '+33140000000', externalId: null, variables: {}, status: 'Queued', code: null, attempts: 0, recordingUrl: null, transcriptUrl: null, summary: null, endedReason: null },
    ]);
    // The operator copy answers the same.
    const ops = await fetch(`${fx.url}/v1/ops/tenants/acme/batches/${batchId}/export?format=jsonl`);
    expect(await ops.text()).toBe(jsonl!.text);
  });

  it('ABatchInProgressExportsWhatItHasSoFar_ItsDialledContactsCalling', async () => {
    const fx = await fixture();
    const all = numbers(4, '+1202');
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 2, concurrencyLimit: 2 });
    // The round's dialer, once: two slots, two contacts dialled; their results have not come back.
    await runByHand(fx, jobIds.dial(batchId, 1));
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.status).toBe('InProgress');
    const [page] = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export`);
    const rows = parse<Record<string, string>>(page!.text, { columns: true });
    expect(rows.map((r) => [r['number'], r['status'], r['attempts']])).toEqual([
      [all[0], 'Calling', '1'],
      [all[1], 'Calling', '1'],
      [all[2], 'Queued', '0'],
      [all[3], 'Queued', '0'],
    ]);
    // The same states as the contact listing's.
    const listed = await fx.contactViews(batchId);
    expect(rows.map((r) => listed.get(r['number']!)?.status)).toEqual(rows.map((r) => r['status']));
  });

  it('APageThatFindsNoContactEndsTheExport_EvenShortOfContactCount', async () => {
    const fx = await fixture();
    const all = numbers(3, '+1808');
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 1 });
    // As while an import still writes its list pages: the batch counts more contacts than its list holds.
    await fx.clients.dynamo.send(new UpdateCommand({ TableName: fx.tableNames.calls, Key: batchKey(batchId), UpdateExpression: 'SET contactCount = :n', ExpressionAttributeValues: { ':n': 600 } }));
    const pages = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=jsonl`);
    expect(pages.map((p) => p.text.split('\n').length - 1)).toEqual([3, 0]);
  });

  it('ACursorOfAnotherBatchIs400_AnotherTenantsBatchIs404_ABadFormatOrLimitIs400', async () => {
    const fx = await fixture();
    const mine = await fx.createBatch({ tenantId: 'acme', numbers: numbers(300, '+1505'), maxAttempts: 1 });
    const other = await fx.createBatch({ tenantId: 'acme', numbers: numbers(300, '+1606'), maxAttempts: 1 });
    const theirs = await fx.createBatch({ tenantId: 'globex', numbers: numbers(3, '+1707'), maxAttempts: 1 });
    const first = await exportPage(fx, 'acme', `/v1/batches/${other}/export`);
    expect(first.next).toBeDefined();
    const foreignCursor = new URL(first.next!).searchParams.get('cursor')!;
    const refused = await exportPage(fx, 'acme', `/v1/batches/${mine}/export?cursor=${foreignCursor}`);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).issues).toEqual([{ path: 'query.cursor', message: 'not a cursor from this listing' }]);
    // A listing's cursor is not an export's.
    const listing = await fx.api('GET', `/v1/batches/${mine}/contacts?limit=10`);
    expect((await exportPage(fx, 'acme', `/v1/batches/${mine}/export?cursor=${listing.body.cursor}`)).status).toBe(400);
    expect((await exportPage(fx, 'acme', `/v1/batches/${mine}/export?cursor=${encodeExportCursor(mine, 250)}`)).status).toBe(200);
    // Another tenant's batch, with acme's key: not found, as an unknown one.
    expect((await exportPage(fx, 'acme', `/v1/batches/${theirs}/export`)).status).toBe(404);
    expect((await exportPage(fx, 'globex', `/v1/batches/${theirs}/export`)).status).toBe(200);
    for (const query of ['format=xlsx', 'limit=0', `limit=${EXPORT_PAGE_CONTACTS + 1}`]) {
      const bad = await exportPage(fx, 'acme', `/v1/batches/${mine}/export?${query}`);
      expect(bad.status, query).toBe(400);
    }
    // No key: 401, nothing exported.
    expect((await fetch(`${fx.url}/v1/batches/${mine}/export`)).status).toBe(401);
  });
});
