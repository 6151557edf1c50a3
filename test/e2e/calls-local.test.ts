import { describe, expect, it } from 'vitest';
import { alive, startLocalProcess } from '../support/local-process.ts';

/** A JSON request, as the API's clients send it (a body is sent as application/json). */
async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const response = await fetch(url, init?.body === undefined ? init : { ...init, headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } });
  return { status: response.status, body: await response.json() };
}

describe('npm start: a batch through the built-in call-placer simulator', () => {
  it('CreatesATenantAndABatchOverHttpAndTheBatchFinalisesThroughTheSimulator', async () => {
    // 1 s of job time in 2 ms: a 10-minute watchdog takes 1.2 s, the round delay a few ms.
    const local = await startLocalProcess(['--memory', '--no-demo'], { TIME_SCALE: '0.002', SIMULATOR_SEED: '3' });
    try {
      expect(local.output()).toMatch(/call placer\s+http:\/\/127\.0\.0\.1:\d+\/calls\s+\(built-in simulator, seed 3\)/);
      expect(local.output()).toContain('whsec_');
      // The operator creates the tenant and issues its API key; the tenant's back end creates and follows a batch with the key.
      const tenant = await json(`${local.url}/v1/tenants/acme`, { method: 'PUT', body: JSON.stringify({ concurrencyLimit: 3, ownerEmail: 'owner@example.com' }) });
      expect(tenant.status).toBe(200);
      const issued = await json(`${local.url}/v1/tenants/acme/keys`, { method: 'POST' });
      expect(issued.status).toBe(201);
      const asAcme = { authorization: `Bearer ${issued.body.key as string}` };
      const contacts = Array.from({ length: 8 }, (_, i) => ({ number: `+1415555${String(2000 + i)}` }));
      const created = await json(`${local.url}/v1/batches`, {
        method: 'POST',
        headers: asAcme,
        body: JSON.stringify({ contacts, maxAttempts: 3, retry: { baseSeconds: 5, capSeconds: 60 } }),
      });
      expect(created.status).toBe(201);
      const { batchId } = created.body;

      let batch: any;
      const deadline = Date.now() + 60_000;
      do {
        await new Promise((r) => setTimeout(r, 200));
        batch = (await json(`${local.url}/v1/batches/${batchId}`, { headers: asAcme })).body;
      } while (batch.status !== 'Finalised' && Date.now() < deadline);
      expect(batch.status).toBe('Finalised');
      expect(batch.counts.byStatus).toEqual({ Queued: 0, Calling: 0, Completed: 8, RetryEligible: 0, Suppressed: 0 });
      const byCodeTotal = Object.values(batch.counts.byCode as Record<string, number>).reduce((a, b) => a + b, 0);
      expect(byCodeTotal).toBe(8);
      const listed = (await json(`${local.url}/v1/batches/${batchId}/contacts`, { headers: asAcme })).body.contacts;
      expect(listed.map((c: any) => c.contactNumber)).toEqual(contacts.map((c) => c.number));
      expect(listed.every((c: any) => c.status === 'Completed' && c.attempts >= 1 && c.attempts <= 3)).toBe(true);
      expect((await json(`${local.url}/v1/tenants/acme`, { headers: asAcme })).body.activeCalls).toBe(0);
      const finalisers = (await json(`${local.url}/v1/ops/jobs?kind=calls.finalise`)).body.jobs;
      expect(finalisers.length).toBe(batch.round);
      expect(finalisers.every((j: any) => j.state === 'completed')).toBe(true);
    } finally {
      expect(await local.stop()).toBe(0);
    }
    expect(alive(local.dynamoPid)).toBe(false);
  }, 120_000);
});
