import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startLocalRuntime } from '../../functions/local/runtime.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { launchBrowser } from '../support/browser.ts';

/** The suppression list page in a real Chromium: a tenant's numbers listed, one added, one removed, a bad number refused. */
describe('the suppression list page of the ops panel, in a real browser', () => {
  let runtime: LocalRuntime;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    runtime = await startLocalRuntime({ port: 0, dataDir: undefined, timeScale: 1 });
    for (const tenant of ['panel-supp', 'panel-other']) {
      const put = await fetch(`${runtime.url}/v1/tenants/${tenant}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 1 }) });
      expect(put.status).toBe(200);
    }
    const suppressed = await fetch(`${runtime.url}/v1/ops/tenants/panel-supp/suppressions/${encodeURIComponent('+14155553001')}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ reason: '<b>asked</b>' }),
    });
    expect(suppressed.status).toBe(200);
    browser = await launchBrowser();
    page = await browser.newPage();
    // Panel pages may reload themselves; the page's clock stands still so a test's locators keep their page.
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1_000);
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await runtime?.stop();
  });

  const numbersShown = async () => (await page.getByRole('table', { name: 'suppressed numbers' }).locator('tbody tr td:first-child').allTextContents()).sort();

  it('ListsATenantsNumbers_AddsOne_RemovesOne_AndShowsAnotherTenantsListApart', { timeout: 60_000 }, async () => {
    await page.goto(`${runtime.url}/panel`);
    await page.getByRole('link', { name: 'Suppressions' }).click();
    await page.getByLabel('Tenant', { exact: true }).fill('panel-supp');
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await numbersShown()).toEqual(['+14155553001']);
    // The reason is shown as text, never as markup.
    expect(await page.getByRole('table', { name: 'suppressed numbers' }).locator('tbody tr').first().locator('td').nth(3).textContent()).toBe('<b>asked</b>');

    await page.getByLabel('Number', { exact: true }).fill('+1 415 555 3002');
    await page.getByLabel('Reason', { exact: true }).fill('complaint');
    await page.getByRole('button', { name: 'Suppress' }).click();
    expect(await numbersShown()).toEqual(['+14155553001', '+14155553002']);

    await page.getByRole('button', { name: 'Remove +14155553001' }).click();
    expect(await numbersShown()).toEqual(['+14155553002']);
    // The API agrees: the store holds what the page shows.
    const listed = (await (await fetch(`${runtime.url}/v1/ops/tenants/panel-supp/suppressions`)).json()) as { suppressions: { number: string; reason: string | null }[] };
    expect(listed.suppressions).toMatchObject([{ number: '+14155553002', reason: 'complaint' }]);

    // Another tenant's list is its own.
    await page.goto(`${runtime.url}/panel/suppressions?tenant=panel-other`);
    await expect(page.getByText('No suppressed numbers.').isVisible()).resolves.toBe(true);
  });

  it('RefusesABadNumberWithTheApisMessage', { timeout: 60_000 }, async () => {
    await page.goto(`${runtime.url}/panel/suppressions?tenant=panel-supp`);
    await page.getByLabel('Number', { exact: true }).fill('12');
    const answer = page.waitForResponse((r) => r.url().endsWith('/panel/suppressions/add'));
    await page.getByRole('button', { name: 'Suppress' }).click();
    expect((await answer).status()).toBe(400);
    await expect(page.getByRole('alert').textContent()).resolves.toContain('invalid');
  });
});
