import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../support/browser.ts';
import { alive } from '../support/local-process.ts';

/**
 * A newcomer's checkout with no `.data/` yet: a fresh folder whose entries link to this repository's
 * (its sources, package.json, node_modules), so `npm start` there makes its own `.data/` by default.
 */
function newcomerCheckout(): string {
  const root = resolve(import.meta.dirname, '../..');
  const dir = mkdtempSync(join(tmpdir(), 'redial-checkout-'));
  for (const entry of readdirSync(root)) {
    if (!['.data', '.git', 'cdk.out', 'test-artifacts'].includes(entry)) symlinkSync(join(root, entry), join(dir, entry));
  }
  return dir;
}

/** `npm start`, exactly as the README says, in `checkout` (a free port is the only setting, unless `settings` adds some). */
function npmStart(checkout: string, settings: Record<string, string> = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
  delete env['DATA_DIR'];
  delete env['TIME_SCALE'];
  Object.assign(env, settings);
  const child = spawn('npm', ['start'], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const waitFor = async (pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(output);
      if (match) return match;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${pattern} in the output:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { child, exited, output: () => output, waitFor };
}

/** The first start's TIME_SCALE: the demo's default is 0.025 (functions/demo/campaign.ts DEMO_TIME_SCALE). */
const TEST_TIME_SCALE = 0.005;

/** A GET of the API: as the operator (locally, unsigned), or as a tenant with its API key. */
async function api(url: string, key?: string): Promise<any> {
  const response = await fetch(url, { headers: { accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
  expect(response.status, url).toBe(200);
  return response.json();
}

/** DynamoDB Local's parent is the runtime; both must be gone after a stop. */
const runtimeOf = (dynamoPid: number) => Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(dynamoPid)], { encoding: 'utf8' }).trim());

async function stopped(npm: ReturnType<typeof npmStart>, pids: number[]): Promise<void> {
  npm.child.kill('SIGTERM');
  await npm.exited;
  const deadline = Date.now() + 20_000;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(pids.filter(alive)).toEqual([]);
}

describe('the newcomer path: npm start with its demo, and the panel', () => {
  const checkout = newcomerCheckout();
  const dataDir = join(checkout, '.data');
  afterAll(() => rmSync(checkout, { recursive: true, force: true }));

  it('RunsTheDemoShowsTheGoneEndpointsDiscardedDeliveryInThePanelRedeliversItAndItsSummaryAgreesWithTheApi', { timeout: 240_000 }, async () => {
    expect(existsSync(dataDir)).toBe(false);
    // The campaign's 40 minutes of job time pass 5 times faster than the demo's default (0.025: about a
    // minute, most of this test's time spent waiting); the second start below, with no setting, shows the
    // default. The scale only shortens the waits the job clock sets (retry delays, calls' durations).
    const npm = npmStart(checkout, { TIME_SCALE: String(TEST_TIME_SCALE) });
    const url = (await npm.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+)/, 60_000))[1]!;
    const dynamoPid = Number((await npm.waitFor(/DynamoDB Local\s+\S+\s+pid (\d+)/, 5_000))[1]);
    const pids = [dynamoPid, runtimeOf(dynamoPid)];
    expect(npm.output()).toContain(`${TEST_TIME_SCALE}: time is scaled, 1 s of job time passes in ${TEST_TIME_SCALE} s`);
    let key: string | undefined;
    try {
      // The demo issues its tenant's API key through the operator route, prints it once, and calls the tenant routes with it.
      key = (await npm.waitFor(/demo: {3}(rdl_demo\.k_[0-9a-f]{16}\.[A-Za-z0-9_-]{43})\n/, 60_000))[1]!;
      const goneId = (await npm.waitFor(/POST \/v1\/endpoints → (ep_demo\.[0-9a-f]{32}) \(gone/, 60_000))[1]!;

      // The panel, in a real browser, while the demo runs.
      const browser = await launchBrowser();
      try {
        const page = await browser.newPage();
        await page.goto(`${url}/panel/endpoints`);
        await page.getByRole('link', { name: goneId }).click();
        // The click only starts the navigation: a reload before it lands would reload the list instead.
        await page.waitForURL(`${url}/panel/endpoints/${goneId}`);
        // The delivery discarded as gone, in the deliveries table (the attempt log below it shows the 410's
        // attempt as "gone" too, and its row is written before the discard and the disable commit: polling
        // the whole page for a "gone" cell raced them, 2 runs in 5 under load), and the endpoint disabled.
        const deliveries = page.locator('table').filter({ has: page.getByRole('columnheader', { name: 'Delivery job (event, endpoint)' }) });
        const goneCell = deliveries.getByRole('cell', { name: 'gone', exact: true });
        await expect
          .poll(async () => (await page.reload(), (await goneCell.count()) > 0 && (await page.getByText(/yes: gone/).isVisible())), { timeout: 60_000, interval: 500 })
          .toBe(true);
        // (`has` is matched inside each row: a bare cell locator, not one chained from the table.)
        const row = deliveries.getByRole('row').filter({ has: page.getByRole('cell', { name: 'gone', exact: true }) }).first();
        const jobId = (await row.getByRole('link').first().textContent())!.trim();
        expect(jobId).toMatch(/^webhook\.deliver:evt_[0-9a-f]+:ep_/);
        expect((await api(`${url}/v1/ops/jobs/${encodeURIComponent(jobId)}`)).attempt).toBe(1);

        await page.getByRole('button', { name: /Enable and redeliver/ }).click();
        await page.goto(`${url}/panel/jobs/${encodeURIComponent(jobId)}`);
        // It ran again: a second attempt in its history. It is discarded again: the endpoint still answers 410
        // (gone), or another delivery got that 410 first and disabled it (endpoint_disabled).
        await expect.poll(async () => (await page.reload(), page.locator('h2:has-text("Attempt history") + table tbody tr').count()), { timeout: 60_000, interval: 500 }).toBe(2);
        expect(await page.getByText(/discard reason (gone|endpoint_disabled)/).isVisible()).toBe(true);
        mkdirSync('test-artifacts', { recursive: true });
        await page.screenshot({ path: 'test-artifacts/panel-redelivered.png', fullPage: true });
        expect((await api(`${url}/v1/ops/jobs/${encodeURIComponent(jobId)}`)).attempts.map((a: any) => a.outcome)).toEqual(['discarded', 'discarded']);
      } finally {
        await browser.close();
      }

      // The demo's final summary agrees with the API.
      const summary = JSON.parse((await npm.waitFor(/summary JSON: (\{.*\})\n/, 180_000))[1]!);
      const batch = await api(`${url}/v1/batches/${summary.batchId}`, key);
      expect(batch.status).toBe('Finalised');
      // The summary shows the export's first rows: the contacts' externalIds and variables came back out.
      const head = npm.output().split('its first rows:\n')[1]?.split('\n').slice(0, 4).map((line) => line.trim());
      expect(head?.[0]).toBe('number,external_id,first_name,plan,status,code,attempts,recording_url,transcript_url,summary,ended_reason');
      expect(head?.[1]).toMatch(/^\+15550100000,crm-1001,Ada,pro,Completed,[A-Z_]+,[123],/);
      // The tenant route takes no request without the key; the operator reads the batch through its copy.
      expect((await fetch(`${url}/v1/batches/${summary.batchId}`)).status).toBe(401);
      expect((await fetch(`${url}/v1/ops/tenants/demo/batches/${summary.batchId}`)).status).toBe(200);
      expect({ status: batch.status, rounds: batch.round, contactsByCode: batch.counts.byCode }).toEqual({
        status: summary.status,
        rounds: summary.rounds,
        contactsByCode: summary.contactsByCode,
      });
      // Every contact has a call outcome's code, but the one suppressed before its call (counted apart: byStatus.Suppressed).
      expect(Object.values(batch.counts.byCode as Record<string, number>).reduce((a, b) => a + b, 0) + batch.counts.byStatus.Suppressed).toBe(40);

      // The batch paused once and resumed (issue 27): no dial committed in between, by the contacts' dials.
      expect(npm.output()).toMatch(new RegExp(`POST /v1/batches/${summary.batchId}/pause → Paused at \\S+Z`));
      expect(npm.output()).toMatch(new RegExp(`POST /v1/batches/${summary.batchId}/resume → InProgress; dials while paused: 0`));
      expect(summary.control.dialsWhilePaused).toBe(0);
      // One number, not yet called, was suppressed mid-campaign: on the tenant's list, never dialled, ended Suppressed.
      const suppressed = summary.control.suppressed;
      expect(suppressed).toMatchObject({ dialsThen: 0, dialsAfter: 0, final: { status: 'Suppressed', code: 'SUPPRESSED', attempts: 0 } });
      const list = await api(`${url}/v1/suppressions`, key);
      expect(list.suppressions.map((e: any) => e.number)).toEqual([suppressed.number]);
      const contact = (await api(`${url}/v1/batches/${summary.batchId}/contacts?limit=100`, key)).contacts.find((c: any) => c.contactNumber === suppressed.number);
      expect(contact).toMatchObject({ status: 'Suppressed', code: 'SUPPRESSED', attempts: 0 });
      expect(batch.counts.byStatus.Suppressed).toBe(1);
      expect(npm.output()).toMatch(/suppression: \+1555\d+ \(crm-\d+\) suppressed at \S+ while Queued with 0 dials; ended Suppressed SUPPRESSED with 0 dials: no call after the suppression/);
      expect((await api(`${url}/v1/ops/job-counts?kind=webhook.deliver`)).counts).toEqual(summary.deliveries);
      expect(summary.deliveries.completed).toBeGreaterThan(0);
    } finally {
      await stopped(npm, pids);
    }
    expect(npm.output()).toContain('stopped; nothing left running');
    // Everything it kept is in the checkout's own .data/: DynamoDB Local's tables, the clock, the demo.
    expect(readdirSync(join(dataDir, 'dynamodb')).length).toBeGreaterThan(0);

    // A second start resumes from the data folder: same batch, nothing run twice.
    const saved = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8'));
    const again = npmStart(checkout);
    const againUrl = (await again.waitFor(/API\s+(http:\/\/127\.0\.0\.1:\d+)/, 60_000))[1]!;
    const againDynamo = Number((await again.waitFor(/DynamoDB Local\s+\S+\s+pid (\d+)/, 5_000))[1]);
    const againPids = [againDynamo, runtimeOf(againDynamo)];
    try {
      // Started as the README says, the demo runs at its own scale.
      expect(again.output()).toMatch(/time is scaled, 1 s of job time passes in 0\.025 s .*; TIME_SCALE=1 for real time/);
      await again.waitFor(new RegExp(`demo: ran before \\(batch ${saved.batchId}`), 60_000);
      await again.waitFor(/summary JSON:/, 30_000);
      expect(again.output()).not.toContain('POST /v1/batches');
      expect((await api(`${againUrl}/v1/batches/${saved.batchId}`, saved.apiKey)).status).toBe('Finalised');
      expect(saved.apiKey).toBe(key);
      expect((await api(`${againUrl}/v1/ops/job-counts?kind=calls.finalise`)).counts.completed).toBe(3);
    } finally {
      await stopped(again, againPids);
    }
  });
});
