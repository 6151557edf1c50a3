import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { artefactLink } from '../../functions/panel/links.ts';
import { launchBrowser } from '../support/browser.ts';
import { completed } from '../support/export.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

/**
 * A batch's page in a real Chromium: its contacts with their externalId and their last call's artefacts
 * (https links only), the Export CSV button's download, and a contact's calls one by one.
 */

describe('artefactLink', () => {
  it('LinksHttpsOnly_InANewTabWithoutOpenerOrReferrer_AndShowsAnythingElseAsEscapedText', () => {
    expect(artefactLink('https://rec.example/a b?x=1&y="2"', 'recording').value).toBe('<a href="https://rec.example/a%20b?x=1&amp;y=%222%22" rel="noopener noreferrer" target="_blank">recording</a>');
    for (const url of ['javascript:alert(1)', 'http://rec.example/1', 'data:text/html,<b>x</b>', 'not a url', '//rec.example/1']) {
      const shown = artefactLink(url, 'recording').value;
      expect(shown, url).not.toContain('<a ');
      expect(shown, url).not.toContain('<b>');
      expect(shown).toMatch(/^<span class="mono" title="not an https URL: not linked">/);
    }
    expect(artefactLink(undefined, 'recording').value).toBe('');
    expect(artefactLink(null, 'recording').value).toBe('');
  });
});

describe('the batch page of the ops panel, in a real browser', () => {
  let runtime: LocalRuntime;
  let browser: Browser;
  let page: Page;
  let batchId = '';
  const numbers = ['+14155552001', '+14155552002', '+14155552003'];

  beforeAll(async () => {
    // Real time, and a calling window that is closed now: nothing is dialled, the rows written below stay.
    runtime = await startTestRuntime({ port: 0, timeScale: 1 });
    const tenant = '/v1/ops/tenants/panel-export';
    const put = await fetch(`${runtime.url}/v1/tenants/panel-export`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 1 }) });
    expect(put.status).toBe(200);
    const closed = new Date().getUTCHours() < 12 ? { start: '23:00', end: '23:30' } : { start: '01:00', end: '01:30' };
    const created = await fetch(`${runtime.url}${tenant}/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        contacts: [
          { number: numbers[0], externalId: 'crm-<b>1</b>', variables: { name: '=HYPERLINK("http://evil.example")' } },
          { number: numbers[1], externalId: 'crm-2' },
          { number: numbers[2] },
        ],
        maxAttempts: 2,
        callingWindow: { timezone: 'UTC', ...closed },
      }),
    });
    expect(created.status).toBe(201);
    batchId = ((await created.json()) as { batchId: string }).batchId;
    const written = await runtime.system.calls.store.putItems([
      ...completed(batchId, numbers[0]!, { code: 'COMPLETED', recordingUrl: 'https://rec.example/1.mp3', transcriptUrl: 'javascript:alert(1)', summary: '<script>alert(1)</script> agreed', endedReason: 'customer-ended-call', data: { outcome: 'paid' }, durationSeconds: 42 }),
      ...completed(batchId, numbers[1]!, { code: 'NO_ANSWER', transcriptUrl: 'https://rec.example/2.txt' }),
    ] as unknown as Record<string, unknown>[]);
    expect(written.unprocessed).toBe(0);
    browser = await launchBrowser();
    page = await browser.newPage();
    // Panel pages reload themselves; the page's clock stands still so a test's locators keep their page.
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1_000);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
  });

  it('ShowsEachContactsExternalIdAndItsLastCallsArtefacts_HttpsOnlyAsLinks', { timeout: 60_000 }, async () => {
    await page.goto(`${runtime.url}/panel/batches/${batchId}`);
    const rows = page.getByRole('table', { name: 'contacts' }).locator('tbody tr');
    expect(await rows.count()).toBe(3);
    const cells = async (i: number) => rows.nth(i).locator('td').allTextContents();
    expect(await cells(0)).toEqual([numbers[0], 'crm-<b>1</b>', 'Completed', 'COMPLETED', '1', 'recording', 'javascript:alert(1)']);
    expect(await cells(1)).toEqual([numbers[1], 'crm-2', 'Completed', 'NO_ANSWER', '1', '', 'transcript']);
    expect(await cells(2)).toEqual([numbers[2], '', 'Queued', '', '0', '', '']);
    const recording = rows.nth(0).getByRole('link', { name: 'recording' });
    expect(await recording.getAttribute('href')).toBe('https://rec.example/1.mp3');
    expect(await recording.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await recording.getAttribute('target')).toBe('_blank');
    // The javascript: URL is text, not a link.
    expect(await rows.nth(0).locator('td').nth(6).locator('a').count()).toBe(0);
    expect(await rows.nth(1).getByRole('link', { name: 'transcript' }).getAttribute('href')).toBe('https://rec.example/2.txt');
    await page.screenshot({ path: 'test-artifacts/panel-batch-export.png', fullPage: true });
  });

  it('TheExportButtonDownloadsTheBatchsResultsAsOneCsvFile_TheSameAsTheApisPagesJoined', { timeout: 60_000 }, async () => {
    await page.goto(`${runtime.url}/panel/batches/${batchId}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toBe(`${batchId}.csv`);
    const text = await readFile(await download.path(), 'utf8');
    const api = await (await fetch(`${runtime.url}/v1/ops/tenants/panel-export/batches/${batchId}/export?format=csv`)).text();
    expect(text).toBe(api);
    expect(parse(text)).toEqual([
      ['number', 'external_id', 'name', 'status', 'code', 'attempts', 'recording_url', 'transcript_url', 'summary', 'ended_reason'],
      [numbers[0], 'crm-<b>1</b>', `'=HYPERLINK("http://evil.example")`, 'Completed', 'COMPLETED', '1', 'https://rec.example/1.mp3', 'javascript:alert(1)', '<script>alert(1)</script> agreed', 'customer-ended-call'],
      [numbers[1], 'crm-2', '', 'Completed', 'NO_ANSWER', '1', '', 'https://rec.example/2.txt', '', ''],
      [numbers[2], '', '', 'Queued', '', '0', '', '', '', ''],
    ]);
  });

  it('PauseAndResumeButtonsActOnTheBatch_TheScheduledStartIsShown', { timeout: 60_000 }, async () => {
    const startAt = new Date(Date.now() + 20 * 86_400_000).toISOString();
    const created = await fetch(`${runtime.url}/v1/ops/tenants/panel-export/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contacts: [{ number: '+14155552009' }], maxAttempts: 1, startAt }),
    });
    expect(created.status).toBe(201);
    const scheduled = ((await created.json()) as { batchId: string }).batchId;
    await page.goto(`${runtime.url}/panel/batches/${scheduled}`);
    expect(await page.locator('main p strong').first().textContent()).toBe('Scheduled');
    expect(await page.locator(`time[datetime="${startAt}"]`).textContent()).toBe(startAt);
    expect(await page.getByRole('button', { name: 'Resume' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL(`${runtime.url}/panel/batches/${scheduled}`);
    expect(await page.locator('main p strong').first().textContent()).toBe('Paused');
    expect(await page.getByRole('status').textContent()).toContain('resume returns it to Scheduled');
    const stored = await (await fetch(`${runtime.url}/v1/ops/tenants/panel-export/batches/${scheduled}`)).json();
    expect(stored).toMatchObject({ status: 'Paused', pausedFrom: 'Scheduled' });

    await page.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL(`${runtime.url}/panel/batches/${scheduled}`);
    expect(await page.locator('main p strong').first().textContent()).toBe('Scheduled');
    expect(await page.getByRole('button', { name: 'Pause' }).count()).toBe(1);
    await page.screenshot({ path: 'test-artifacts/panel-batch-control.png', fullPage: true });
  });

  it('AContactsPageListsItsCallsWithTheirArtefacts_TheSummaryEscaped', { timeout: 60_000 }, async () => {
    await page.goto(`${runtime.url}/panel/batches/${batchId}`);
    await page.getByRole('link', { name: numbers[0] }).click();
    expect(new URL(page.url()).pathname).toBe(`/panel/batches/${batchId}/contacts/${encodeURIComponent(numbers[0]!)}`);
    const calls = page.getByRole('table', { name: 'calls' }).locator('tbody tr');
    expect(await calls.count()).toBe(1);
    const cells = await calls.first().locator('td').allTextContents();
    expect(cells.slice(0, 11)).toEqual(['1', 'call_x.r1.p0.0', '', 'COMPLETED', 'no', 'webhook', '42', '', '2026-01-05T09:05:00.000Z', 'recording', 'javascript:alert(1)']);
    expect(cells[11]).toBe('customer-ended-call');
    expect(cells[12]).toContain('<script>alert(1)</script> agreed');
    expect(await calls.first().getByRole('link', { name: 'recording' }).getAttribute('rel')).toBe('noopener noreferrer');
    expect(await calls.first().locator('td').nth(10).locator('a').count()).toBe(0);
    await calls.first().getByText('data').click();
    expect(JSON.parse((await calls.first().locator('pre').textContent()) ?? '')).toEqual({ outcome: 'paid' });
    // A contact without calls says so.
    await page.goto(`${runtime.url}/panel/batches/${batchId}/contacts/${encodeURIComponent(numbers[2]!)}`);
    expect(await page.getByText('No completed call yet.').isVisible()).toBe(true);
  });
});
