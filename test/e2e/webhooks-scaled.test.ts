import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { Receiver } from '../support/webhooks.ts';
import { startLocalProcess } from '../support/local-process.ts';

const RESULTS = 40;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** A JSON request, as the API's clients send it. */
async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const response = await fetch(url, init?.body === undefined ? init : { ...init, headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } });
  return { status: response.status, body: await response.json() };
}

/** A call placer that accepts every call and keeps what it was asked, so the test can post the results itself. */
async function acceptingPlacer() {
  const calls: { batchId: string; contactNumber: string; callId: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { calls, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/calls`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The black-box scenario of one delivery in flight under a fast clock: the local stack at TIME_SCALE 0.01
 * (a 5-minute lease passes in 3 s of real time), an endpoint that answers in 150 ms, and 40 call results
 * posted at once: 41 events (40 call.completed and the batch.finalised), each sent once, never two at once.
 * Before the lease was measured on the clock the drain runs on, the holder's drain (up to 15 s of real
 * time; here about 6 s) outlived its lease (3 s), the sweep started a second runner, and the endpoint got
 * 56–58 requests for the 41 events, two at once (with 20 results, as first reported, 22–23 requests in
 * about 2 runs of 5; 40 makes the drain outlast two leases, so the old code fails every run).
 */
describe('npm start at TIME_SCALE 0.01: one delivery in flight whatever the clock', () => {
  it('FortyResultsAtOnceToASlowEndpoint_ItGetsEachEventOnce_NeverTwoAtOnce', async () => {
    const placer = await acceptingPlacer();
    const receiver = await Receiver.start([{ status: 200, delayMs: 150 }]);
    const local = await startLocalProcess(['--memory', '--no-demo'], { TIME_SCALE: '0.01', CALL_PLACER_URL: placer.url, CALL_WEBHOOK_SECRET: SECRET });
    try {
      expect((await json(`${local.url}/v1/tenants/acme`, { method: 'PUT', body: JSON.stringify({ concurrencyLimit: RESULTS }) })).status).toBe(200);
      const issued = await json(`${local.url}/v1/tenants/acme/keys`, { method: 'POST' });
      expect(issued.status).toBe(201);
      const asAcme = { authorization: `Bearer ${issued.body.key as string}` };
      const endpoint = await json(`${local.url}/v1/endpoints`, { method: 'POST', headers: asAcme, body: JSON.stringify({ url: receiver.url() }) });
      expect(endpoint.status).toBe(201);
      const contacts = Array.from({ length: RESULTS }, (_, i) => ({ number: `+1415555${String(3000 + i)}` }));
      const created = await json(`${local.url}/v1/batches`, { method: 'POST', headers: asAcme, body: JSON.stringify({ contacts, maxAttempts: 1 }) });
      expect(created.status).toBe(201);
      await until(`${RESULTS} calls placed`, () => placer.calls.length >= RESULTS, 30_000);

      // The results at once, signed as the AI call handler signs them (wall-clock timestamps).
      const signer = new Webhook(SECRET);
      const answers = await Promise.all(
        placer.calls.map(async (call, i) => {
          const body = JSON.stringify({ batchId: call.batchId, contactNumber: call.contactNumber, callId: call.callId, code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 });
          const id = `msg_scaled_${i}`;
          const at = new Date();
          const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signer.sign(id, at, body) };
          return json(`${local.url}/v1/calls/webhook`, { method: 'POST', headers, body });
        }),
      );
      expect(answers.map((a) => a.body.outcome)).toEqual(Array(RESULTS).fill('applied'));

      await until('every event counted on the endpoint', async () => (await json(`${local.url}/v1/endpoints/${endpoint.body.endpointId}`, { headers: asAcme })).body.delivered >= RESULTS + 1, 60_000);
      // Longer than a lease and a sweep on this clock (5 min + 5 min = 6 s real): a second runner would have sent by now.
      await new Promise((r) => setTimeout(r, 7_000));
      const ids = receiver.requests.map((r) => r.headers['webhook-id']);
      expect(new Set(ids).size).toBe(RESULTS + 1);
      expect(receiver.requests).toHaveLength(RESULTS + 1);
      expect(receiver.maxInFlight).toBe(1);
      const batch = await json(`${local.url}/v1/batches/${created.body.batchId}`, { headers: asAcme });
      expect(batch.body.status).toBe('Finalised');
    } finally {
      await local.stop();
      await receiver.close();
      await placer.close();
    }
  }, 120_000);
});
