import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { httpFunctionsByRoute, System } from '../../functions/app/system.ts';
import { sigV4Signer } from '../../functions/cli/api-client.ts';
import { runCli } from '../../functions/cli/cli.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { sendOnce } from '../../functions/platform/outbound.ts';
import { launchBrowser } from '../support/browser.ts';
import { sigV4Check } from '../support/sigv4-check.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

/**
 * `npm run ops -- panel --api …` against the local runtime's API behind a real SigV4 check (API Gateway's
 * IAM auth stood in by test/support/sigv4-check.ts): every page read and every button pressed in a real
 * Chromium goes through the API, signed with the operator's credentials, and the check verifies each
 * signature. Nothing here reads a table for the panel.
 */

const REGION = 'eu-west-1';
const credentials = { accessKeyId: 'AKIDPANELTEST', secretAccessKey: 'panel-test-secret-key/0123456789' };

/** The public routes, as API Gateway serves them (no IAM): read from the routes, listing builds nothing. */
const publicRoutes = Object.entries(httpFunctionsByRoute(new System(() => { throw new Error('listing the routes builds nothing'); })))
  .filter(([, fn]) => fn !== 'api')
  .map(([route]) => route);

const check = sigV4Check({ credentials, region: REGION, publicRoutes });
let runtime: LocalRuntime;
let panelUrl: string;
let stopPanel: () => void;
let panelExit: Promise<number>;
let panelOut = '';
let browser: Browser;
/** One page for every test: Chromium in @sparticuz/chromium's single-process mode ends with its last page. */
let page: Page;

/** A request to the runtime's API, signed as the CLI signs. */
async function signed(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<any> {
  const sign = sigV4Signer({ region: REGION, credentials, now: () => new Date() });
  const request = await sign({
    url: `${runtime.url}${path}`,
    method,
    headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const response = await sendOnce(request);
  expect(response.status, `${method} ${path}: ${response.text}`).toBeLessThan(300);
  return JSON.parse(response.text);
}

/** Runs `ops panel` in-process until `stop`; resolves with its URL once it serves. */
function startPanel(secretAccessKey: string, output: { text: string }): { exit: Promise<number>; stop: () => void } {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const exit = runCli(
    ['--api', runtime.url, '--iam', '--region', REGION, 'panel', '--port', '0'],
    { stdout: { write: (text: string) => (output.text += text) }, stderr: { write: (text: string) => (output.text += text) } },
    { env: {}, credentials: () => Promise.resolve({ ...credentials, secretAccessKey }), now: () => new Date(), untilStopped: () => stopped },
  );
  return { exit, stop };
}

async function settled(ids: readonly string[], state: string): Promise<void> {
  await expect.poll(async () => (await Promise.all(ids.map((id) => runtime.jobs.store.get(id)))).filter((j) => j?.state === state).length, { timeout: 30_000, interval: 100 }).toBe(ids.length);
}

beforeAll(async () => {
  runtime = await startTestRuntime({ port: 0, timeScale: 0.0005, apiMiddleware: check.wrap });
  const output = { text: '' };
  const panel = startPanel(credentials.secretAccessKey, output);
  stopPanel = panel.stop;
  panelExit = panel.exit;
  panelUrl = await vi.waitFor(
    () => {
      const served = /panel (http:\/\/127\.0\.0\.1:\d+)\/panel/.exec(output.text);
      if (!served) throw new Error(`the panel has not said where it serves yet: ${JSON.stringify(output.text)}`);
      return served[1]!;
    },
    { timeout: 20_000, interval: 50 },
  );
  panelOut = output.text;
  browser = await launchBrowser({ webSecurity: true });
  page = await browser.newPage();
  // Panel pages reload themselves every few seconds (layout.ts); these tests read a page and press its
  // buttons, and a reload in between destroys what they hold ("Execution context was destroyed"). The
  // page's clock stands still, so nothing reloads unless a test reloads it (test/panel/auto-refresh.test.ts
  // covers the refresh itself).
  await page.clock.install();
  await page.clock.pauseAt(Date.now() + 1_000);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  stopPanel?.();
  expect(await panelExit).toBe(0);
  await runtime?.stop();
});

describe('the ops panel in front of a signed API (npm run ops -- panel --api …)', () => {
  it('ServesOn127001AndSaysEveryRequestIsSigned', () => {
    expect(panelOut).toContain(`panel ${panelUrl}/panel → ${runtime.url} (every request signed with SigV4)`);
    expect(new URL(panelUrl).hostname).toBe('127.0.0.1');
  });

  it('TheSignatureCheckRefusesAWrongSecretAndSoDoesThePanelAtStart', async () => {
    const output = { text: '' };
    const wrong = startPanel('not-the-secret', output);
    expect(await wrong.exit).toBe(1);
    expect(output.text).toMatch(/403 .*Forbidden: the signature does not match.*check the AWS credentials/);
    expect(check.log.refused.at(-1)).toBe('GET /v1/ops/policies: the signature does not match');
    // An unsigned request to an IAM route is refused too; a public one is served.
    expect((await fetch(`${runtime.url}/v1/ops/job-counts`)).status).toBe(403);
    expect((await fetch(`${runtime.url}/healthz`)).status).toBe(200);
  });

  it('TheOverviewDrawsJobsByStateAndDiscardsByKind_InARealBrowser', { timeout: 60_000 }, async () => {
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10 });
    await settled([id], 'discarded');
    await page.goto(`${panelUrl}/panel`);
    const states = page.getByRole('img', { name: /^Jobs by state/ });
    const discards = page.getByRole('img', { name: /^Discards by kind, last 24 hours/ });
    for (const chart of [states, discards]) {
      expect(await chart.isVisible()).toBe(true);
      expect((await chart.boundingBox())!.width).toBeGreaterThan(200);
    }
    // Each bar names its number: the discarded bar counts at least the probe just discarded.
    expect(await states.locator('g.bar title', { hasText: /^discarded: \d+ jobs?$/ }).count()).toBe(1);
    expect(await discards.locator('rect title', { hasText: /: ops\.probe \d+$/ }).count()).toBeGreaterThan(0);
    expect(check.log.verified).toContain('GET /v1/ops/job-counts');
    expect(check.log.verified).toContain('GET /v1/ops/jobs');
  });

  it('FiltersDiscardedJobsByKindReasonAndTime_CountsThemByKindAndReason_AndRetriesThemAllAfterADryRunCount_InARealBrowser', { timeout: 90_000 }, async () => {
    const ids = await Promise.all(Array.from({ length: 3 }, async (_, i) => (await runtime.jobs.client.enqueue(probeKind, { failTimes: 10, note: `bulk ${i}` })).id));
    await settled(ids, 'discarded');
    await page.goto(`${panelUrl}/panel/jobs?state=discarded`);
    await page.getByLabel('Kind').selectOption('ops.probe');
    await page.getByLabel('Since').fill('1d');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/kind=ops\.probe/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Discarded jobs');
    const byKind = page.getByRole('table', { name: 'discarded jobs by kind' });
    const probes = Number(await byKind.getByRole('row', { name: /ops\.probe/ }).getByRole('cell').nth(1).textContent());
    expect(probes).toBeGreaterThanOrEqual(3);
    // Counted by reason too (of the kind filtered on): every probe here failed all its attempts.
    const byReason = page.getByRole('table', { name: 'discarded jobs by reason' });
    expect(await byReason.getByRole('row').allTextContents()).toEqual(['ReasonJobs', `exhausted${probes}`]);
    await byReason.getByRole('link', { name: 'exhausted' }).click();
    await page.waitForURL(/reason=exhausted/);
    expect(new URL(page.url()).searchParams.get('kind')).toBe('ops.probe');
    expect(await page.getByLabel('Reason').inputValue()).toBe('exhausted');
    const listed = await page.getByRole('table', { name: 'Jobs', exact: true }).locator('tbody tr').count();
    expect(listed).toBe(probes);

    // The dry run counts and changes nothing.
    await page.getByRole('button', { name: 'Retry all matching…' }).click();
    const status = page.getByRole('status');
    expect(await status.textContent()).toMatch(new RegExp(`^${probes} jobs? match state discarded, kind ops\\.probe, reason exhausted, since .+, until `));
    for (const id of ids) expect((await runtime.jobs.store.mustGet(id)).state).toBe('discarded');
    expect(check.log.verified).toContain('POST /v1/ops/jobs/retry');

    await page.getByRole('button', { name: `Retry ${probes} jobs` }).click();
    expect(await page.getByRole('status').textContent()).toMatch(new RegExp(`^${probes} jobs retried of the ${probes} confirmed`));
    // Each ran again, kept its history, and (still failing) is discarded again with one more attempt.
    await expect.poll(async () => (await Promise.all(ids.map((id) => runtime.jobs.store.mustGet(id)))).every((j) => j.attempts.length === 11), { timeout: 30_000 }).toBe(true);
  });

  it('CancelsEveryWaitingJobOfAFilterAfterConfirming_InARealBrowser', { timeout: 60_000 }, async () => {
    const ids = await Promise.all(Array.from({ length: 2 }, async () => (await runtime.jobs.client.enqueue(probeKind, { failTimes: 0 }, { delayMs: 30 * 86_400_000 })).id));
    await settled(ids, 'scheduled');
    await page.goto(`${panelUrl}/panel/jobs?state=scheduled&kind=ops.probe`);
    await page.getByRole('button', { name: 'Cancel all matching…' }).click();
    const matched = Number(/^(\d+) jobs? match/.exec((await page.getByRole('status').textContent()) ?? '')?.[1]);
    expect(matched).toBeGreaterThanOrEqual(2);
    for (const id of ids) expect((await runtime.jobs.store.mustGet(id)).state).toBe('scheduled');
    await page.getByRole('button', { name: new RegExp(`^Cancel ${matched} jobs?$`) }).click();
    expect(await page.getByRole('status').textContent()).toMatch(new RegExp(`^${matched} jobs? cancelled`));
    for (const id of ids) expect((await runtime.jobs.store.mustGet(id)).state).toBe('cancelled');
  });

  it('DrawsABatchsRoundsAndAGoneEndpointsDeliveriesWithItsDisableMarked_InARealBrowser', { timeout: 120_000 }, async () => {
    // A receiver that answers 410: the endpoint is disabled by its first delivery.
    const gone: Server = createServer((_req, res) => res.writeHead(410).end());
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', () => resolve()));
    try {
      await signed('PUT', '/v1/tenants/panel-remote', { concurrencyLimit: 4 });
      // The operator's copies of the tenant routes (IAM, signed), as the panel reaches a tenant's data.
      const tenant = '/v1/ops/tenants/panel-remote';
      const { endpointId } = await signed('POST', `${tenant}/endpoints`, { url: `http://127.0.0.1:${(gone.address() as AddressInfo).port}/hook` });
      const numbers = Array.from({ length: 12 }, (_, i) => `+1415555${String(2000 + i)}`);
      const { batchId } = await signed('POST', `${tenant}/batches`, { contacts: numbers.map((number) => ({ number })), maxAttempts: 2 });
      await expect.poll(async () => (await signed('GET', `${tenant}/batches/${batchId}`)).status, { timeout: 90_000, interval: 250 }).toBe('Finalised');
      await expect.poll(async () => (await signed('GET', `${tenant}/endpoints/${endpointId}`)).disabled, { timeout: 30_000, interval: 250 }).toBe(true);

      await page.goto(`${panelUrl}/panel/batches`);
      await page.getByRole('link', { name: batchId }).click();
      const rounds = page.getByRole('img', { name: /^Outcomes by code, per round/ });
      expect(await rounds.isVisible()).toBe(true);
      const { rounds: expected } = await signed('GET', `${tenant}/batches/${batchId}/rounds`);
      // One column per round, each titled with its contacts, as the API counts them.
      expect(await rounds.locator('g.column > title').allTextContents()).toEqual(
        expected.map((r: { round: number; byCode: Record<string, number>; pending: number }) => {
          const n = Object.values(r.byCode).reduce((a, b) => a + b, 0) + r.pending;
          return `Round ${r.round}: ${n} contact${n === 1 ? '' : 's'}`;
        }),
      );
      expect(expected[0].byCode).not.toEqual({});

      await page.goto(`${panelUrl}/panel/endpoints/${endpointId}`);
      const deliveries = page.getByRole('img', { name: /^Delivery attempts by outcome over time/ });
      expect(await deliveries.isVisible()).toBe(true);
      expect(await deliveries.locator('g.marker title').allTextContents()).toEqual(['failing since', 'disabled (gone)']);
      expect(await deliveries.locator('rect title', { hasText: /discarded \d+$/ }).count()).toBeGreaterThan(0);
      // The attempt log: each 410 the endpoint answered, newest first, and the disable's reason above it.
      expect(await page.getByRole('definition').filter({ hasText: /^yes: gone/ }).count()).toBe(1);
      const { attempts } = await signed('GET', `${tenant}/endpoints/${endpointId}/attempts?limit=50`);
      expect(attempts.length).toBeGreaterThan(0);
      const log = page.getByRole('table', { name: 'attempt log' });
      const rows = log.locator('tbody tr');
      expect(await rows.count()).toBe(Math.min(attempts.length, 50));
      expect(await rows.first().locator('td').nth(1).textContent()).toBe(attempts[0].eventId);
      expect(await rows.first().locator('td').nth(5).textContent()).toBe('410');
      await page.screenshot({ path: 'test-artifacts/panel-remote-endpoint.png', fullPage: true });
      } finally {
      await new Promise<void>((resolve) => gone.close(() => resolve()));
    }
    // Every request the panel sent was signed, and every signature held: the only refusals are the wrong
    // secret's and the unsigned request's above.
    expect(check.log.refused).toEqual(['GET /v1/ops/policies: the signature does not match', 'GET /v1/ops/job-counts: missing or malformed Authorization']);
    // The panel reads every tenant's batches from the operators' listing, and one through the operator copy.
    for (const route of ['GET /v1/ops/batches', 'GET /v1/ops/tenants/panel-remote/batches/b_panel-remote.']) expect(check.log.verified.some((r) => r.startsWith(route)), route).toBe(true);
  });
});
