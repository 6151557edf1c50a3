import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyKey, ApiKeys, newApiKey } from '../../functions/calls/keys.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { iso } from '../../functions/platform/clock.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { tenantIdSchema } from '../../functions/platform/tenancy.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import type { Resolver } from '../../functions/platform/vetted-http.ts';
import { webhookRoutes } from '../../functions/webhooks/api.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import { tenantNamed } from '../support/calls.ts';

let fx: Awaited<ReturnType<typeof webhooksFixture>>;
let server: LocalHttpServer;
let receiver: Receiver;
const resolve: Resolver = async (host) => {
  if (host === 'hooks.example.com') return [{ address: '93.184.216.34', family: 4 }];
  if (host === 'internal.example.com') return [{ address: '10.0.0.7', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

let calls: CallsStore;
const keys = new Map<string, string>();
let lastTenant = 'api';

beforeAll(async () => {
  fx = await webhooksFixture({ resolve });
  receiver = await Receiver.start();
  // The tenant routes check keys as the deployed tenant API does: the calls context's keys, over its table.
  calls = new CallsStore(fx.clients.dynamo, fx.tableNames.calls);
  const verifier = new ApiKeys({ store: calls, clock: fx.clock, logger: fx.logger });
  server = await startHttpServer({ port: 0, handler: createApiHandler(webhookRoutes(() => fx.webhooks), fx.logger, { keys: () => verifier }) });
});
afterAll(async () => {
  await server.close();
  await receiver.close();
  await fx.close();
});

/** A tenant, created in the calls table with one API key (as `PUT /v1/tenants/{tenantId}` and `POST …/keys` would), and that key. */
async function keyOf(tenantId: string): Promise<string> {
  if (!keys.has(tenantId)) {
    const now = fx.clock.now();
    await calls.transact(calls.upsertTenantItems({ tenantId, concurrencyLimit: 1, ownerEmail: undefined, now }));
    const { keyId, key, hash } = newApiKey(tenantId, randomBytes);
    const created = await calls.transact(calls.createApiKeyItems({ ...apiKeyKey(tenantId, keyId), tenantId, keyId, hash, createdAt: iso(now) }));
    if (!created.committed) throw new Error(`no key for ${tenantId}`);
    keys.set(tenantId, key);
  }
  return keys.get(tenantId)!;
}

/**
 * A request; on an endpoint route without an Authorization header of the test's own, as the tenant it
 * names (the body's tenantId when it is one, the tenant of the path's endpoint id, else the last one), with
 * that tenant's key.
 */
async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  if (!Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
    const named = tenantNamed(method, path, typeof body === 'object' ? body : undefined, lastTenant);
    if (named !== undefined) {
      lastTenant = tenantIdSchema.safeParse(named).success ? named : lastTenant;
      headers = { authorization: `Bearer ${await keyOf(lastTenant)}`, ...headers };
    }
  }
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? { headers } : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe('the endpoint API', () => {
  it('POST /v1/endpoints registers an endpoint and shows its whsec_ secret of 32 random bytes once', async () => {
    const created = await call('POST', '/v1/endpoints', { tenantId: 'api', url: 'https://hooks.example.com/in', eventTypes: ['call.completed'] });
    expect(created.status).toBe(201);
    expect(created.body['endpointId']).toMatch(/^ep_api\.[a-f0-9]{32}$/);
    const secret = created.body['secret'] as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const shown = await call('GET', `/v1/endpoints/${String(created.body['endpointId'])}`);
    expect(shown).toEqual({
      status: 200,
      body: {
        endpointId: created.body['endpointId'],
        tenantId: 'api',
        url: 'https://hooks.example.com/in',
        eventTypes: ['call.completed'],
        createdAt: new Date(fx.clock.now()).toISOString(),
        failingSince: null,
        disabled: false,
        disabledReason: null,
        disabledAt: null,
        delivered: 0,
        description: null,
        rotation: null,
        waiting: 0,
      },
    });
    expect(JSON.stringify(shown.body)).not.toContain(secret.slice(6, 20));
    const again = await call('POST', '/v1/endpoints', { tenantId: 'api', url: 'https://hooks.example.com/in' });
    expect(again.body['secret']).not.toBe(secret);
  });

  it('POST /v1/endpoints with an Idempotency-Key: 20 racing retries register one endpoint, and each gets its id and secret', async () => {
    const body = { tenantId: 'idem', url: 'https://hooks.example.com/idem', eventTypes: ['call.completed', 'batch.finalised'] };
    const key = { 'idempotency-key': 'register-hooks-1' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => call('POST', '/v1/endpoints', body, key)));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(19).fill(200), 201]);
    const first = answers.find((a) => a.status === 201)!.body;
    for (const a of answers) expect(a.body).toEqual(first);
    expect((await fx.webhooks.deps.store.tenantEndpoints('idem')).map((e) => e.endpointId)).toEqual([first['endpointId']]);

    // The same body with its fields in another order is the same request; anything else under the key is refused.
    const reordered = await call('POST', '/v1/endpoints', { eventTypes: body.eventTypes, url: body.url, tenantId: 'idem' }, key);
    expect(reordered).toEqual({ status: 200, body: first });
    const other = await call('POST', '/v1/endpoints', { ...body, url: 'https://hooks.example.com/other' }, key);
    expect(other.status).toBe(422);
    expect(other.body['error']).toBe('idempotency_key_reused');
    // Another tenant's same key is another endpoint.
    const elsewhere = await call('POST', '/v1/endpoints', { ...body, tenantId: 'idem2' }, key);
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body['endpointId']).not.toBe(first['endpointId']);
    expect(await fx.webhooks.deps.store.tenantEndpoints('idem')).toHaveLength(1);

    const badKey = await call('POST', '/v1/endpoints', body, { 'idempotency-key': 'tab\tkey' });
    expect(badKey.status).toBe(400);
    expect((badKey.body['issues'] as { path: string }[])[0]?.path).toBe('headers.idempotency-key');
  });

  it('refuses bad input with 400 and field paths, and writes nothing', async () => {
    const bad = await call('POST', '/v1/endpoints', { tenantId: '', url: 42, eventTypes: ['call.completed', 'nope'], extra: true });
    expect(bad.status).toBe(400);
    const paths = (bad.body['issues'] as { path: string }[]).map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['body.tenantId', 'body.url', 'body.eventTypes.1', 'body.extra']));
    expect((await call('POST', '/v1/endpoints', '{not json')).status).toBe(400);
    expect((await call('POST', '/v1/endpoints', { tenantId: 'bad tenant!', url: 'https://hooks.example.com/' })).status).toBe(400);
    expect(await fx.webhooks.deps.store.tenantEndpoints('')).toEqual([]);
  });

  it('refuses URLs the SSRF guard blocks with 400 on body.url, and writes nothing', async () => {
    // This fixture lets 127.0.0.1 through (the local runtime's setting); nothing else on loopback passes.
    for (const url of ['http://127.0.0.2/x', 'http://2130706434/', 'http://0x0a000001/', 'http://169.254.169.254/latest', 'https://internal.example.com/in', 'https://nowhere.example.com/', 'ftp://hooks.example.com/', 'https://u:p@hooks.example.com/']) {
      const refused = await call('POST', '/v1/endpoints', { tenantId: 'ssrf-api', url });
      expect(refused.status, url).toBe(400);
      expect((refused.body['issues'] as { path: string; message: string }[])[0]?.path, url).toBe('body.url');
    }
    expect(await fx.webhooks.deps.store.tenantEndpoints('ssrf-api')).toEqual([]);
  });

  it('answers 404 for an unknown endpoint and 400 for a malformed id', async () => {
    const unknown = `ep_api.${'0'.repeat(32)}`;
    expect((await call('GET', `/v1/endpoints/${unknown}`)).status).toBe(404);
    expect((await call('POST', `/v1/endpoints/${unknown}/enable`)).status).toBe(404);
    expect((await call('POST', `/v1/endpoints/${unknown}/redeliver`)).status).toBe(404);
    expect((await call('GET', `/v1/endpoints/ep_${'0'.repeat(32)}`)).status).toBe(400);
    const malformed = await call('GET', '/v1/endpoints/../jobs');
    expect([400, 404]).toContain(malformed.status);
    expect((await call('GET', '/v1/endpoints/not-an-id')).status).toBe(400);
  });

  it('enable and redeliver: 409 while disabled, then every discarded delivery requeued', async () => {
    receiver.reply([{ status: 410 }]);
    const created = await call('POST', '/v1/endpoints', { tenantId: 'redeliver', url: receiver.url() });
    const endpointId = created.body['endpointId'] as string;
    const event = await fx.recordEvent('redeliver');
    expect((await fx.run(deliveryJobId(event.id, endpointId))).result).toBe('discarded');
    expect((await call('GET', `/v1/endpoints/${endpointId}`)).body).toMatchObject({ disabled: true, disabledReason: 'gone' });

    const conflict = await call('POST', `/v1/endpoints/${endpointId}/redeliver`);
    expect(conflict.status).toBe(409);
    receiver.reply([{ status: 200 }]);
    expect(await call('POST', `/v1/endpoints/${endpointId}/enable`)).toMatchObject({ status: 200, body: { disabled: false, disabledReason: null, failingSince: null } });
    expect(await call('POST', `/v1/endpoints/${endpointId}/redeliver`)).toEqual({ status: 200, body: { requeued: 1 } });
    expect((await fx.run(deliveryJobId(event.id, endpointId))).result).toBe('completed');
  });

  it("GET /v1/endpoints lists the key's tenant's newest first a page at a time from its own partition, never a secret and never a Scan", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      fx.clock.advance(60_000);
      ids.push((await call('POST', '/v1/endpoints', { tenantId: 'lister', url: `https://hooks.example.com/list/${i}` })).body['endpointId'] as string);
    }
    // Another tenant's endpoint, registered last: never in this tenant's listing.
    fx.clock.advance(60_000);
    const theirs = (await call('POST', '/v1/endpoints', { tenantId: 'lister-other', url: 'https://hooks.example.com/list/other' })).body['endpointId'] as string;
    const asLister = { authorization: `Bearer ${await keyOf('lister')}` };
    fx.counter.reset();
    const first = await call('GET', '/v1/endpoints?limit=2', undefined, asLister);
    expect(first.status).toBe(200);
    const listed = first.body['endpoints'] as { endpointId: string; tenantId: string; url: string }[];
    expect(listed.map((e) => e.endpointId)).toEqual([ids[2], ids[1]]);
    // The listing shows each endpoint as GET does, but for the wait list's count (a read per endpoint).
    const { waiting, ...one } = (await call('GET', `/v1/endpoints/${ids[2]}`, undefined, asLister)).body;
    expect(waiting).toBe(0);
    expect(listed[0]).toEqual(one);
    expect(JSON.stringify(first.body)).not.toContain('whsec_');
    const second = await call('GET', `/v1/endpoints?limit=2&cursor=${String(first.body['cursor'])}`, undefined, asLister);
    expect((second.body['endpoints'] as { endpointId: string }[]).map((e) => e.endpointId)).toEqual([ids[0]]);
    expect(second.body['cursor']).toBeUndefined();
    expect([...fx.counter.counts.keys()].filter((op) => op.endsWith('.Scan'))).toEqual([]);
    expect((await call('GET', '/v1/endpoints?cursor=bm9wZQ', undefined, asLister)).status).toBe(400);
    // Its cursor is its own: another tenant presenting it is refused, not shown this tenant's page.
    expect((await call('GET', `/v1/endpoints?limit=2&cursor=${String(first.body['cursor'])}`, undefined, { authorization: `Bearer ${await keyOf('lister-other')}` })).status).toBe(400);
    expect((await call('GET', '/v1/endpoints', undefined, { authorization: `Bearer ${await keyOf('lister-other')}` })).body['endpoints']).toMatchObject([{ endpointId: theirs }]);
  });

  it("GET /v1/endpoints/{id}/deliveries shows this endpoint's deliveries with every attempt, and no other endpoint's", async () => {
    let answered = 0;
    receiver.reply(() => (answered++ === 0 ? { status: 503 } : { status: 200 }));
    const mine = (await call('POST', '/v1/endpoints', { tenantId: 'deliveries', url: receiver.url() })).body['endpointId'] as string;
    const other = await call('POST', '/v1/endpoints', { tenantId: 'deliveries-other', url: receiver.url() });
    const event = await fx.recordEvent('deliveries');
    const others = await fx.recordEvent('deliveries-other');
    expect((await fx.run(deliveryJobId(event.id, mine))).result).toBe('retryable');
    expect((await fx.runWhenDue(deliveryJobId(event.id, mine))).result).toBe('completed');

    const found = await call('GET', `/v1/endpoints/${mine}/deliveries`);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ endpointId: mine, perState: 200 });
    const deliveries = found.body['deliveries'] as { jobId: string; eventId: string; state: string; attempts: { outcome: string; error?: string }[] }[];
    expect(deliveries.map((d) => [d.jobId, d.eventId, d.state])).toEqual([[deliveryJobId(event.id, mine), event.id, 'completed']]);
    expect(deliveries[0]!.attempts.map((a) => a.outcome)).toEqual(['retryable', 'completed']);
    expect(deliveries[0]!.attempts[0]!.error).toContain('503');
    // The other endpoint's view shows its own delivery (not run yet), and nothing of this one's.
    const theirs = (await call('GET', `/v1/endpoints/${String(other.body['endpointId'])}/deliveries`)).body['deliveries'] as { eventId: string; state: string }[];
    expect(theirs.map((d) => [d.eventId, d.state])).toEqual([[others.id, 'available']]);
    expect((await call('GET', `/v1/endpoints/ep_deliveries.${'0'.repeat(32)}/deliveries`)).status).toBe(404);
    expect((await call('GET', `/v1/endpoints/${mine}/deliveries?perState=201`)).status).toBe(400);
  });
});
