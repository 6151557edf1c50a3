import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { emailConfirmationKind } from '../../functions/mail/kinds.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { html } from '../../functions/panel/html.ts';
import { escapeHtml } from '../../functions/platform/html.ts';
import { launchBrowser } from '../support/browser.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

describe('panel html', () => {
  it('escapes every interpolated value, and nests templates without double escaping', () => {
    const evil = `<img src=x onerror="alert('x')">&`;
    expect(html`<td>${evil}</td>`.value).toBe(`<td>${escapeHtml(evil)}</td>`);
    expect(html`<tr>${html`<td>${'a<b'}</td>`}</tr>`.value).toBe('<tr><td>a&lt;b</td></tr>');
    expect(html`${['<', 1, null, undefined, false]}`.value).toBe('&lt;1');
  });
});

describe('the ops panel on the local runtime', () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startTestRuntime({ port: 0, timeScale: 0.0005 });
  });
  afterAll(async () => {
    await runtime.stop();
  });

  /** The hidden token the panel's forms carry ('' when a page has none). */
  const formToken = (page: string): string => /name="form_token" value="([^"]+)"/.exec(page)?.[1] ?? '';

  async function settled(id: string, state: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while ((await runtime.jobs.store.get(id))?.state !== state && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await runtime.jobs.store.get(id))?.state).toBe(state);
  }

  it('ShowsADiscardedJobWithItsReasonAndHistoryAndRetriesItFromAButton', async () => {
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10, note: '<script>alert(1)</script>' });
    await settled(id, 'discarded');

    const listing = await fetch(`${runtime.url}/panel/jobs?state=discarded`);
    expect(listing.headers.get('content-type')).toContain('text/html');
    const list = await listing.text();
    expect(list).toContain(id);
    expect(list).toContain('exhausted');
    expect(list).toContain(`action="/panel/jobs/${id}/retry"`);

    const detail = await (await fetch(`${runtime.url}/panel/jobs/${id}`)).text();
    expect(detail).toContain('probe failure 10 of 10');
    expect(detail).not.toContain('<script>alert(1)</script>');
    expect(detail).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect((detail.match(/<tr><td class="num">\d+<\/td>/g) ?? []).length).toBe(10);

    // The button's form, as the page gives it: its action and its hidden per-process token.
    const retried = await fetch(`${runtime.url}/panel/jobs/${id}/retry`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ form_token: formToken(detail) }).toString(),
    });
    expect(retried.status).toBe(303);
    expect(retried.headers.get('location')).toBe(`/panel/jobs/${id}`);
    await settled(id, 'completed');
    expect((await runtime.jobs.store.get(id))?.attempt).toBe(11);
  });

  it('ServesTheOverviewPoliciesAndPeriodicPages', async () => {
    const overview = await (await fetch(`${runtime.url}/panel`)).text();
    expect(overview).toMatch(/<h1>Overview<\/h1>/);
    const policies = await (await fetch(`${runtime.url}/panel/policies`)).text();
    expect(policies).toContain('webhook.deliver');
    expect(policies).toContain('5.32 d');
    expect(policies).toContain('6.07 h');
    expect((await fetch(`${runtime.url}/panel/periodic`)).status).toBe(200);
    expect((await fetch(`${runtime.url}/panel/jobs/nope`)).status).toBe(404);
  });

  it('NeverShowsAMailLinksTokenInAJobsArguments', async () => {
    const tenant = await fetch(`${runtime.url}/v1/tenants/panel-owner`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ concurrencyLimit: 1, ownerEmail: 'owner@example.com' }),
    });
    expect(tenant.status).toBe(200);
    // Today's confirmation job names the change, not its token (the owner row keeps that until the mail is sent).
    const { jobs } = await runtime.jobs.client.list({ kind: 'owner.email_confirmation' });
    const job = jobs.find((j) => (j.args as { tenantId?: string }).tenantId === 'panel-owner')!;
    expect(Object.keys(job.args as object).sort()).toEqual(['confirmationId', 'tenantId']);

    // A job enqueued before that carries its raw token: the panel shows it redacted, as the ops API does.
    const token = 'T'.repeat(43);
    const legacy = await runtime.jobs.client.enqueue(emailConfirmationKind, { tenantId: 'panel-legacy', confirmationId: `conf_${'1'.repeat(32)}`, token }, { delayMs: 3_600_000 });
    const page = await (await fetch(`${runtime.url}/panel/jobs/${encodeURIComponent(legacy.id)}`)).text();
    expect(page).toContain('panel-legacy');
    expect(page).not.toContain(token);
    expect(page).toContain('[redacted]');
  });

  it('AnswersItsButtonsFor404WhenTheJobOrEndpointDoesNotExist', async () => {
    // A discarded job's page, for a form token.
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10 });
    await settled(id, 'discarded');
    const token = formToken(await (await fetch(`${runtime.url}/panel/jobs/${id}`)).text());
    expect(token).not.toBe('');
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams({ form_token: token }).toString();
    const unknownEndpoint = `ep_panel.${'0'.repeat(32)}`;
    for (const path of ['/panel/jobs/nope/retry', `/panel/endpoints/${unknownEndpoint}/enable`, `/panel/endpoints/${unknownEndpoint}/redeliver`]) {
      expect((await fetch(`${runtime.url}${path}`, { method: 'POST', redirect: 'manual', headers: form, body })).status, path).toBe(404);
    }
  });
});

describe('the local runtime refuses cross-site requests', () => {
  let runtime: LocalRuntime;
  beforeAll(async () => {
    runtime = await startTestRuntime({ port: 0, timeScale: 0.0005 });
  });
  afterAll(async () => {
    await runtime.stop();
  });

  const port = () => new URL(runtime.url).port;
  const endpointsOf = (tenantId: string) => runtime.system.webhooks.deps.store.tenantEndpoints(tenantId);

  /** A request exactly as given (node:http sends the Host and Origin it is told to). */
  function raw(method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: port(), method, path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('TheProbesCurlIsRefusedAndSoIsAJsonBodyOfAnyOtherTypeAForeignOriginOrAForeignHost', async () => {
    // Locally the operator routes need no credentials (the machine's user is the operator): the operator copy
    // of POST /v1/endpoints is what a page the developer opens would try to drive.
    const path = '/v1/ops/tenants/victim/endpoints';
    const body = JSON.stringify({ url: 'http://127.0.0.1:9/steal' });
    const own = `127.0.0.1:${port()}`;
    // curl -X POST 127.0.0.1:3000/v1/ops/tenants/victim/endpoints -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' -d '…'
    expect((await raw('POST', path, { host: own, 'content-type': 'text/plain', origin: 'http://evil.example' }, body)).status).toBe(403);
    expect((await raw('POST', path, { host: own, 'content-type': 'application/json', origin: 'http://evil.example' }, body)).status).toBe(403);
    expect((await raw('POST', path, { host: own, 'content-type': 'application/json', origin: 'null' }, body)).status).toBe(403);
    // A page on a rebound name reaches 127.0.0.1 with its own name as Host.
    expect((await raw('POST', path, { host: `evil.example:${port()}`, 'content-type': 'application/json' }, body)).status).toBe(403);
    expect((await raw('GET', '/v1/ops/jobs', { host: `evil.example:${port()}` })).status).toBe(403);
    // From the runtime's own address, a JSON route still takes JSON only.
    const plain = await raw('POST', path, { host: own, 'content-type': 'text/plain' }, body);
    expect(plain.status).toBe(415);
    expect(JSON.parse(plain.body).error).toBe('unsupported_media_type');
    expect((await raw('POST', path, { host: own }, body)).status).toBe(415);
    // The tenant route itself takes nothing without one of the tenant's keys, which a page cannot send cross-site.
    expect((await raw('POST', '/v1/endpoints', { host: own, 'content-type': 'application/json' }, JSON.stringify({ tenantId: 'victim', url: 'http://127.0.0.1:9/steal' }))).status).toBe(401);
    expect(await endpointsOf('victim')).toEqual([]);
    // The same request, as the runtime's own clients send it, is served.
    expect((await raw('POST', path, { host: `localhost:${port()}`, 'content-type': 'application/json; charset=utf-8', origin: `http://localhost:${port()}` }, body)).status).toBe(201);
  });

  it('APanelFormWithoutItsTokenIsRefusedEvenFromThePanelsOwnOrigin', async () => {
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10 });
    const deadline = Date.now() + 20_000;
    while ((await runtime.jobs.store.get(id))?.state !== 'discarded' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const own = { host: `127.0.0.1:${port()}`, origin: runtime.url, 'content-type': 'application/x-www-form-urlencoded' };
    expect((await raw('POST', `/panel/jobs/${id}/retry`, own, '')).status).toBe(403);
    expect((await raw('POST', `/panel/jobs/${id}/retry`, own, 'form_token=guess')).status).toBe(403);
    expect((await runtime.jobs.store.mustGet(id)).state).toBe('discarded');
  });

  it('ThePanelsOwnRetryButtonWorks_InARealBrowser', { timeout: 60_000 }, async () => {
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10 });
    const deadline = Date.now() + 20_000;
    while ((await runtime.jobs.store.get(id))?.state !== 'discarded' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const before = await runtime.jobs.store.mustGet(id);
    expect(before.state).toBe('discarded');
    const browser = await launchBrowser({ webSecurity: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${runtime.url}/panel/jobs/${encodeURIComponent(id)}`);
      const pressed = page.waitForResponse((r) => r.url().includes('/retry'));
      await page.getByRole('button', { name: /retry/i }).first().click();
      // The page's own form post carries its own Origin (not `null`), so the same-origin guard lets it through.
      expect((await pressed).status()).toBe(303);
    } finally {
      await browser.close();
    }
    // Retried: it runs again (and, still failing, is discarded again with one more attempt in its history).
    await expect.poll(async () => (await runtime.jobs.store.mustGet(id)).attempts.length, { timeout: 20_000 }).toBeGreaterThan(before.attempts.length);
  });

  it('APageOnAnotherOriginCanNeitherRegisterAnEndpointNorPressAPanelButton_InARealBrowser', { timeout: 60_000 }, async () => {
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 10 });
    const deadline = Date.now() + 20_000;
    while ((await runtime.jobs.store.get(id))?.state !== 'discarded' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await runtime.jobs.store.mustGet(id)).state).toBe('discarded');

    // The hostile page: what any site the developer opens could serve.
    const target = runtime.url;
    const evilHtml = `<!doctype html><title>evil</title>
<form id="press" method="post" action="${target}/panel/jobs/${encodeURIComponent(id)}/retry"><input type="hidden" name="form_token" value="guess"></form>
<script>
fetch('${target}/v1/ops/tenants/browser-victim/endpoints', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ url: 'http://127.0.0.1:9/steal' }) })
  .finally(() => document.getElementById('press').submit());
</script>`;
    const evil = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(evilHtml));
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    // The same-origin policy on, as in the developer's own browser.
    const browser = await launchBrowser({ webSecurity: true });
    try {
      const page = await browser.newPage();
      const statuses: Record<string, number> = {};
      page.on('response', (response) => {
        if (response.url().startsWith(target)) statuses[new URL(response.url()).pathname] = response.status();
      });
      const pressed = page.waitForResponse((r) => r.url().includes('/retry'));
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      await pressed;
      await expect.poll(() => statuses['/v1/ops/tenants/browser-victim/endpoints']).toBe(403);
      expect(statuses[`/panel/jobs/${encodeURIComponent(id)}/retry`]).toBe(403);
    } finally {
      await browser.close();
      await new Promise<void>((r) => evil.close(() => r()));
    }
    expect(await endpointsOf('browser-victim')).toEqual([]);
    expect((await runtime.jobs.store.mustGet(id)).state).toBe('discarded');
  });
});
