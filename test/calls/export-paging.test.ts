import { parse } from 'csv-parse/sync';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPORT_PAGE_BYTES, EXPORT_PAGE_CONTACTS, fitPage } from '../../functions/calls/export-api.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';
import { completed, exportAll, write } from '../support/export.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

async function fixture() {
  // No worker: the tests write the completions they need.
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  return fx;
}

describe('GET /v1/batches/{id}/export across pages', () => {
  it('PagesJoinedInOrderAreExactlyTheBatch_TheCsvHeaderOnTheFirstPageOnly', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 2 });
    const all = numbers(2100, '+1303');
    const created = await fx.api('POST', '/v1/batches', { contacts: all.map((number, i) => ({ number, variables: { n: i }, ...(i % 7 === 0 ? { externalId: `x${i}` } : {}) })), maxAttempts: 1 });
    expect(created.status).toBe(201);
    const batchId = created.body.batchId as string;
    // Some completions, on several list pages.
    await write(fx, [700, 1499, 2099].flatMap((i) => completed(batchId, all[i]!, { code: 'COMPLETED', summary: `s${i}` })));

    const pages = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=csv`);
    expect(pages).toHaveLength(Math.ceil(2100 / EXPORT_PAGE_CONTACTS));
    const header = 'number,external_id,n,status,code,attempts,recording_url,transcript_url,summary,ended_reason\r\n';
    expect(pages[0]!.text.startsWith(header)).toBe(true);
    for (const page of pages.slice(1)) expect(page.text.startsWith('+1303')).toBe(true);
    const rows = parse<Record<string, string>>(pages.map((p) => p.text).join(''), { columns: true });
    expect(rows.map((r) => r['number'])).toEqual(all);
    expect(rows.map((r) => r['external_id'])).toEqual(all.map((_, i) => (i % 7 === 0 ? `x${i}` : '')));
    expect(rows.map((r) => r['n'])).toEqual(all.map((_, i) => String(i)));
    expect(rows.filter((r) => r['status'] === 'Completed').map((r) => [r['number'], r['summary']])).toEqual([700, 1499, 2099].map((i) => [all[i], `s${i}`]));

    // JSON Lines, 240 a page (pages across list pages' edges): the same contacts in the same order.
    const jsonPages = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=jsonl&limit=240`);
    expect(jsonPages).toHaveLength(Math.ceil(2100 / 240));
    const objects = jsonPages.flatMap((p) => p.text.trimEnd().split('\n').map((line) => JSON.parse(line) as { number: string; variables: { n: number } }));
    expect(objects.map((o) => o.number)).toEqual(all);
    expect(objects.map((o) => o.variables.n)).toEqual(all.map((_, i) => i));
  });

  it('APageWhoseTextWouldPassTheBudgetIsCutShort_TheNextPageStartsAtTheFirstRowLeftOut', async () => {
    const fx = await fixture();
    const all = numbers(EXPORT_PAGE_CONTACTS, '+1404');
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 1 });
    // The worst escaping: a 4 KB summary of control characters, each `\u0001` in JSON and `\\u0001` once
    // more inside Lambda's JSON response (7 bytes a byte); 250 of them would take ~7 MB.
    const summary = '\u0001'.repeat(4096);
    await write(fx, all.flatMap((number) => completed(batchId, number, { code: 'COMPLETED', summary })));
    const pages = await exportAll(fx, 'acme', `/v1/batches/${batchId}/export?format=jsonl`);
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) expect(page.sentBytes).toBeLessThanOrEqual(EXPORT_PAGE_BYTES);
    const objects = pages.flatMap((p) => p.text.trimEnd().split('\n').map((line) => JSON.parse(line) as { number: string; summary: string }));
    expect(objects.map((o) => o.number)).toEqual(all);
    expect(objects.every((o) => o.summary === summary)).toBe(true);
  });
});

describe('fitPage: rows up to a byte budget, as Lambda sends them', () => {
  it('TakesRowsInOrderUntilTheNextWouldPassTheBudget_AlwaysAtLeastOne', () => {
    // As sent: "h" + rows, each character 1 byte but a quote 2 (escaped) and the two enclosing quotes.
    expect(fitPage('h', ['aa', 'bb', 'cc'], 7)).toEqual({ text: 'haabb', rows: 2 });
    expect(fitPage('h', ['aa', 'bb', 'cc'], 6)).toEqual({ text: 'haa', rows: 1 });
    expect(fitPage('', ['"""', 'x'], 3)).toEqual({ text: '"""', rows: 1 });
    expect(fitPage('', ['a', '"'], 4)).toEqual({ text: 'a', rows: 1 });
    expect(fitPage('', ['a', '"'], 6)).toEqual({ text: 'a"', rows: 2 });
    expect(fitPage('h', [], 1)).toEqual({ text: 'h', rows: 0 });
  });
});
