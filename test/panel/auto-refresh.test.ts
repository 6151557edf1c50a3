import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { html } from '../../functions/panel/html.ts';
import { page as panelPage } from '../../functions/panel/layout.ts';
import { launchBrowser } from '../support/browser.ts';

/**
 * A panel page reloads itself every few seconds, unless a form has focus or the page is already being left
 * (layout.ts: a reload that fires while a click's or a `goto`'s navigation waits for its response would
 * cancel that navigation, net::ERR_ABORTED). The page's timer runs on Playwright's installed clock.
 */
describe('a panel page that refreshes itself', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end(panelPage('List', [], html`<form><input aria-label="Filter"></form>`, { refreshSeconds: 3 }));
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
    // @sparticuz/chromium runs single-process, where closing a page's own context ends the browser.
    context = await browser.newContext();
    page = await context.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('ReloadsItselfWhenNothingElseIsGoingOn_ButNotWhileAFormHasFocus', async () => {
    await page.goto(`${base}/list`);
    await page.clock.install();
    const reloaded = page.waitForEvent('load');
    await page.clock.runFor(3_000);
    await reloaded;
    expect(requests).toEqual(['/list', '/list']);

    await page.clock.install();
    await page.getByLabel('Filter').focus();
    await page.clock.runFor(10_000);
    expect(await page.locator(':focus').getAttribute('aria-label')).toBe('Filter');
    expect(requests).toEqual(['/list', '/list']);
  });
});
