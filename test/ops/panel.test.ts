import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRuntime } from '../../functions/ops/local.ts';
import type { LocalRuntime } from '../../functions/ops/local.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { escapeHtml, html } from '../../functions/ops/panel/html.ts';

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
    runtime = await startLocalRuntime({ port: 0, dataDir: undefined, timeScale: 0.0005 });
  });
  afterAll(async () => {
    await runtime.stop();
  });

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

    const retried = await fetch(`${runtime.url}/panel/jobs/${id}/retry`, { method: 'POST', redirect: 'manual' });
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
});
