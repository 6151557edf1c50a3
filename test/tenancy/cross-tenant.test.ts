import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiDocument } from '../../functions/app/system.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

/**
 * Tenant B, with its own API key, against tenant A's things, on every tenant route of the OpenAPI document:
 * ids of A's batches and endpoints, A's cursors, and A's id in bodies and queries. Each answers as for
 * something that does not exist (404), refuses the other tenant's name (403) or cursor (400), or shows B's
 * own things only — and nothing is written anywhere (no DynamoDB write, no wake-up sent), nothing of A's
 * changes. A tenant route added to the API without a probe below fails the first test.
 */

let fx: CallsFixture;
let receiver: { url: string; close: () => Promise<void> };
/** What tenant A has, as A's own key saw it. */
const a = { batches: [] as string[], endpoints: [] as string[], batchesCursor: '', endpointsCursor: '', contactsCursor: '', exportCursor: '', recoveryId: '', suppressionsCursor: '', suppressionImport: '', calendarsCursor: '' };
/** A's calendars (ids each tenant chooses: B may have one of the same name, it is another calendar). */
const A_CALENDARS = ['sales', 'support'];
const calendarBody = { provider: 'google', timezone: 'Europe/Berlin', bookableHours: { mon: [['09:00', '17:00']] }, credentials: { clientId: 'a-client', clientSecret: 'a-secret', refreshToken: 'a-refresh' } };
/** Numbers on A's suppression list. */
const A_SUPPRESSED = ['+14155550901', '+14155550902'];
/** B's own batch (to present A's contacts cursor on). */
let bBatch = '';
let asA: Record<string, string>;
let asB: Record<string, string>;

/** What B is answered, and whether that answer is what the probe expects. */
interface Probe {
  method: string;
  path: string;
  body?: unknown;
  /** The status expected. */
  status: number;
  /** Further checks of the answer (B's own things only, the error named). */
  check?: (body: any) => void;
}

/**
 * How each tenant route is probed with B's key against A's things: every route of the OpenAPI document with
 * the API-key security scheme must be here (the first test holds the two lists together).
 */
/** An upload id of A's scope (its shape; whether A ever uploaded it does not matter to B's answer). */
const A_UPLOAD = `u_tenant-a.${'a'.repeat(32)}`;

const PROBES: Record<string, () => Probe[]> = {
  'GET /v1/tenants/{tenantId}': () => [{ method: 'GET', path: '/v1/tenants/tenant-a', status: 404, check: (body) => expect(body).toEqual({ error: 'not_found', message: 'tenant tenant-a not found' }) }],
  'GET /v1/batches': () => [
    { method: 'GET', path: '/v1/batches', status: 200, check: (body) => expect(body.batches.map((b: any) => b.tenantId)).toEqual(['tenant-b']) },
    { method: 'GET', path: `/v1/batches?limit=1&cursor=${a.batchesCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
    { method: 'GET', path: '/v1/batches?tenantId=tenant-a', status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') },
  ],
  'POST /v1/batches': () => [
    { method: 'POST', path: '/v1/batches', body: { tenantId: 'tenant-a', contacts: [{ number: '+14155550999' }], maxAttempts: 1 }, status: 403, check: (body) => expect(body.issues[0].path).toBe('body.tenantId') },
    // A batch of B's booking into A's calendar: B has no such calendar.
    ...A_CALENDARS.map((calendarId) => ({
      method: 'POST',
      path: '/v1/batches',
      body: { contacts: [{ number: '+14155550999' }], maxAttempts: 1, appointments: { calendarId, durationMinutes: 30 } },
      status: 400,
      check: (body: any) => expect(body.issues[0].path).toBe('body.appointments.calendarId'),
    })),
  ],
  'GET /v1/batches/{id}': () => a.batches.map((id) => ({ method: 'GET', path: `/v1/batches/${id}`, status: 404, check: notFound('batch', id) })),
  'DELETE /v1/batches/{id}': () => a.batches.map((id) => ({ method: 'DELETE', path: `/v1/batches/${id}`, status: 404, check: notFound('batch', id) })),
  'GET /v1/batches/{id}/rounds': () => a.batches.map((id) => ({ method: 'GET', path: `/v1/batches/${id}/rounds`, status: 404, check: notFound('batch', id) })),
  'GET /v1/batches/{id}/contacts': () => [
    ...a.batches.map((id) => ({ method: 'GET', path: `/v1/batches/${id}/contacts`, status: 404, check: notFound('batch', id) })),
    { method: 'GET', path: `/v1/batches/${a.batches[0]}/contacts?cursor=${a.contactsCursor}`, status: 404, check: notFound('batch', a.batches[0]!) },
    // A's contacts cursor on B's own batch: not B's cursor.
    { method: 'GET', path: `/v1/batches/${bBatch}/contacts?limit=1&cursor=${a.contactsCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
  ],
  'GET /v1/batches/{id}/contacts/{number}/attempts': () =>
    a.batches.map((id, i) => ({ method: 'GET', path: `/v1/batches/${id}/contacts/${encodeURIComponent(`+141555${8 + i}1000`)}/attempts`, status: 404, check: notFound('batch', id) })),
  'GET /v1/batches/{id}/export': () => [
    ...a.batches.map((id) => ({ method: 'GET', path: `/v1/batches/${id}/export?format=jsonl`, status: 404, check: notFound('batch', id) })),
    { method: 'GET', path: `/v1/batches/${a.batches[0]}/export?cursor=${a.exportCursor}`, status: 404, check: notFound('batch', a.batches[0]!) },
    // A's export cursor on B's own batch: not B's cursor.
    { method: 'GET', path: `/v1/batches/${bBatch}/export?cursor=${a.exportCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
    { method: 'GET', path: `/v1/batches/${bBatch}/export?tenantId=tenant-a`, status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') },
  ],
  // B naming A in the settings of a CSV batch, an upload or an import; B importing A's upload (an id of A's scope names nothing of B's).
  'POST /v1/batches/csv': () => [{ method: 'POST', path: '/v1/batches/csv?maxAttempts=1&tenantId=tenant-a', body: 'number\n+14155550100\n', status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') }],
  'POST /v1/uploads': () => [{ method: 'POST', path: '/v1/uploads?tenantId=tenant-a', status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') }],
  'POST /v1/batches/imports': () => [
    { method: 'POST', path: '/v1/batches/imports', body: { tenantId: 'tenant-a', uploadId: A_UPLOAD, maxAttempts: 1 }, status: 403, check: (body) => expect(body.issues[0].path).toBe('body.tenantId') },
    { method: 'POST', path: '/v1/batches/imports', body: { uploadId: A_UPLOAD, maxAttempts: 1 }, status: 404, check: (body) => expect(body.message).toContain(A_UPLOAD) },
  ],
  // Campaign control on A's batches: as for a batch that does not exist.
  'POST /v1/batches/{id}/pause': () => a.batches.map((id) => ({ method: 'POST', path: `/v1/batches/${id}/pause`, status: 404, check: notFound('batch', id) })),
  'POST /v1/batches/{id}/resume': () => a.batches.map((id) => ({ method: 'POST', path: `/v1/batches/${id}/resume`, status: 404, check: notFound('batch', id) })),
  'PATCH /v1/batches/{id}': () => a.batches.map((id) => ({ method: 'PATCH', path: `/v1/batches/${id}`, body: { maxConcurrentCalls: 1 }, status: 404, check: notFound('batch', id) })),
  'POST /v1/batches/{id}/rerun': () => a.batches.map((id) => ({ method: 'POST', path: `/v1/batches/${id}/rerun`, body: {}, status: 404, check: notFound('batch', id) })),
  // A's suppression list: B's listing shows B's own (none), A's cursor is not B's, A's entries are not B's to remove,
  // A's import is not B's to read, and B cannot name A.
  'GET /v1/suppressions': () => [
    { method: 'GET', path: '/v1/suppressions', status: 200, check: (body) => expect(body.suppressions).toEqual([]) },
    { method: 'GET', path: `/v1/suppressions?limit=1&cursor=${a.suppressionsCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
  ],
  'DELETE /v1/suppressions/{number}': () => A_SUPPRESSED.map((number) => ({ method: 'DELETE', path: `/v1/suppressions/${encodeURIComponent(number)}`, status: 404 })),
  'PUT /v1/suppressions/{number}': () => [{ method: 'PUT', path: `/v1/suppressions/${encodeURIComponent(A_SUPPRESSED[0]!)}`, body: { tenantId: 'tenant-a' }, status: 400, check: (body) => expect(JSON.stringify(body.issues)).toContain('tenantId') }],
  'GET /v1/suppressions/imports/{id}': () => [{ method: 'GET', path: `/v1/suppressions/imports/${a.suppressionImport}`, status: 404 }],
  'POST /v1/suppressions/csv': () => [{ method: 'POST', path: '/v1/suppressions/csv?tenantId=tenant-a', body: 'number\n+14155550903\n', status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') }],
  'POST /v1/suppressions/imports': () => [{ method: 'POST', path: '/v1/suppressions/imports', body: { uploadId: A_UPLOAD }, status: 404 }],
  // A's calendars: not found for B, A's listing cursor not B's, and B's PUT without credentials creates nothing (B has no such calendar).
  'GET /v1/calendars': () => [
    { method: 'GET', path: '/v1/calendars', status: 200, check: (body) => expect(body.calendars).toEqual([]) },
    { method: 'GET', path: `/v1/calendars?limit=1&cursor=${a.calendarsCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
  ],
  'GET /v1/calendars/{calendarId}': () => A_CALENDARS.map((id) => ({ method: 'GET', path: `/v1/calendars/${id}`, status: 404, check: notFound('calendar', id) })),
  'DELETE /v1/calendars/{calendarId}': () => A_CALENDARS.map((id) => ({ method: 'DELETE', path: `/v1/calendars/${id}`, status: 404, check: notFound('calendar', id) })),
  'PUT /v1/calendars/{calendarId}': () =>
    A_CALENDARS.map((id) => ({ method: 'PUT', path: `/v1/calendars/${id}`, body: { ...calendarBody, credentials: undefined, timezone: 'UTC' }, status: 400, check: (body: any) => expect(body.issues[0].path).toBe('body.credentials') })),
  'POST /v1/endpoints': () => [{ method: 'POST', path: '/v1/endpoints', body: { tenantId: 'tenant-a', url: receiver.url }, status: 403, check: (body) => expect(body.issues[0].path).toBe('body.tenantId') }],
  'GET /v1/endpoints': () => [
    { method: 'GET', path: '/v1/endpoints', status: 200, check: (body) => expect(body.endpoints).toEqual([]) },
    { method: 'GET', path: `/v1/endpoints?limit=1&cursor=${a.endpointsCursor}`, status: 400, check: (body) => expect(body.issues[0].path).toBe('query.cursor') },
    { method: 'GET', path: '/v1/endpoints?tenantId=tenant-a', status: 403, check: (body) => expect(body.issues[0].path).toBe('query.tenantId') },
  ],
  'GET /v1/endpoints/{id}': () => a.endpoints.map((id) => ({ method: 'GET', path: `/v1/endpoints/${id}`, status: 404, check: notFound('endpoint', id) })),
  'GET /v1/endpoints/{id}/deliveries': () => a.endpoints.map((id) => ({ method: 'GET', path: `/v1/endpoints/${id}/deliveries`, status: 404, check: notFound('endpoint', id) })),
  'POST /v1/endpoints/{id}/enable': () => a.endpoints.map((id) => ({ method: 'POST', path: `/v1/endpoints/${id}/enable`, status: 404, check: notFound('endpoint', id) })),
  'POST /v1/endpoints/{id}/redeliver': () => a.endpoints.map((id) => ({ method: 'POST', path: `/v1/endpoints/${id}/redeliver`, status: 404, check: notFound('endpoint', id) })),
  'PATCH /v1/endpoints/{id}': () =>
    a.endpoints.flatMap((id) => [
      { method: 'PATCH', path: `/v1/endpoints/${id}`, body: { description: 'mine now' }, status: 404, check: notFound('endpoint', id) },
      { method: 'PATCH', path: `/v1/endpoints/${id}`, body: { url: `${receiver.url}/b` }, status: 404, check: notFound('endpoint', id) },
    ]),
  'DELETE /v1/endpoints/{id}': () => a.endpoints.map((id) => ({ method: 'DELETE', path: `/v1/endpoints/${id}`, status: 404, check: notFound('endpoint', id) })),
  'POST /v1/endpoints/{id}/rotate-secret': () =>
    a.endpoints.flatMap((id) => [
      { method: 'POST', path: `/v1/endpoints/${id}/rotate-secret`, body: {}, status: 404, check: notFound('endpoint', id) },
      { method: 'POST', path: `/v1/endpoints/${id}/rotate-secret`, body: { expireOldNow: true }, status: 404, check: notFound('endpoint', id) },
    ]),
  'GET /v1/endpoints/{id}/attempts': () => [
    ...a.endpoints.map((id) => ({ method: 'GET', path: `/v1/endpoints/${id}/attempts`, status: 404, check: notFound('endpoint', id) })),
    { method: 'GET', path: `/v1/endpoints/${a.endpoints[0]}/attempts?status=delivered&since=2020-01-01T00:00:00Z`, status: 404, check: notFound('endpoint', a.endpoints[0]!) },
  ],
  'POST /v1/endpoints/{id}/recover': () =>
    a.endpoints.map((id) => ({ method: 'POST', path: `/v1/endpoints/${id}/recover`, body: { since: new Date(fx.clock.now() - 3600_000).toISOString() }, status: 404, check: notFound('endpoint', id) })),
  'GET /v1/endpoints/{id}/recoveries/{recoveryId}': () =>
    a.endpoints.map((id) => ({ method: 'GET', path: `/v1/endpoints/${id}/recoveries/${a.recoveryId}`, status: 404, check: notFound('endpoint', id) })),
};

/** Exactly the answer an id that never existed gets. */
const notFound = (what: string, id: string) => (body: unknown) => expect(body).toEqual({ error: 'not_found', message: `${what} ${id} not found` });

/** The tenant routes as the OpenAPI document publishes them: those whose security is the API key. */
function tenantRoutesOfTheDocument(): string[] {
  const doc = apiDocument(fx.system.routes()) as { paths: Record<string, Record<string, { security: Record<string, unknown>[] }>> };
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, operation]) => operation.security.some((s) => 'apiKey' in s))
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
}

/** Every item of every table, to compare before and after. */
async function everything(): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [key, table] of Object.entries(fx.tableNames)) {
    const items = ((await fx.clients.dynamo.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []) as Record<string, unknown>[];
    out[key] = items.map((i) => JSON.stringify(i)).sort();
  }
  return out;
}

const WRITES = ['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem'];

beforeAll(async () => {
  // No workers: nothing runs but the requests, so every write would be theirs.
  fx = await callsFixture({ workers: false, webhooks: { allowLoopback: true } });
  const server = createServer((_req, res) => res.writeHead(200).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiver = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };

  for (const tenant of ['tenant-a', 'tenant-b']) expect((await fx.api('PUT', `/v1/tenants/${tenant}`, { concurrencyLimit: 5 })).status).toBe(200);
  asA = { authorization: `Bearer ${await fx.keyOf('tenant-a')}` };
  asB = { authorization: `Bearer ${await fx.keyOf('tenant-b')}` };
  // A: two batches of three contacts, two endpoints; its cursors as A's own listings give them out.
  for (let i = 0; i < 2; i++) {
    const created = await fx.api('POST', '/v1/batches', { contacts: numbers(3, `+141555${8 + i}`).map((number) => ({ number })), maxAttempts: 2 }, asA);
    expect(created.status).toBe(201);
    a.batches.push(created.body.batchId);
    const endpoint = await fx.api('POST', '/v1/endpoints', { url: `${receiver.url}/${i}` }, asA);
    expect(endpoint.status).toBe(201);
    a.endpoints.push(endpoint.body.endpointId);
    fx.clock.advance(1000);
  }
  a.batchesCursor = (await fx.api('GET', '/v1/batches?limit=1', undefined, asA)).body.cursor;
  a.endpointsCursor = (await fx.api('GET', '/v1/endpoints?limit=1', undefined, asA)).body.cursor;
  a.contactsCursor = (await fx.api('GET', `/v1/batches/${a.batches[0]}/contacts?limit=1`, undefined, asA)).body.cursor;
  // The export's next page is a Link header (the body is CSV): its cursor.
  const exported = await fetch(`${fx.url}/v1/batches/${a.batches[0]}/export?limit=1`, { headers: asA });
  a.exportCursor = new URL(/^<([^>]+)>/.exec(exported.headers.get('link') ?? '')?.[1] ?? '', fx.url).searchParams.get('cursor') ?? '';
  for (const cursor of [a.batchesCursor, a.endpointsCursor, a.contactsCursor, a.exportCursor]) expect(cursor).toEqual(expect.any(String));
  expect(a.exportCursor).not.toBe('');
  // A recovery of A's first endpoint (a dry run, never run here: no workers), for B to ask after.
  a.recoveryId = (await fx.api('POST', `/v1/endpoints/${a.endpoints[0]}/recover`, { since: new Date(fx.clock.now() - 60_000).toISOString(), dryRun: true }, asA)).body.recoveryId;
  expect(a.recoveryId).toMatch(/^rcv_/);
  // A's suppression list: two numbers (a listing cursor after the first) and an import of a third.
  for (const number of A_SUPPRESSED) expect((await fx.api('PUT', `/v1/suppressions/${encodeURIComponent(number)}`, { reason: 'asked' }, asA)).status).toBe(200);
  a.suppressionsCursor = (await fx.api('GET', '/v1/suppressions?limit=1', undefined, asA)).body.cursor;
  expect(a.suppressionsCursor).toEqual(expect.any(String));
  const imported = await fetch(`${fx.url}/v1/suppressions/csv`, { method: 'POST', headers: { ...asA, 'content-type': 'text/csv' }, body: 'number\n+14155550904\n' });
  expect(imported.status).toBe(202);
  a.suppressionImport = ((await imported.json()) as { importId: string }).importId;
  // A's calendars, one of them booked into by a batch of A's; a listing cursor after the first.
  for (const id of A_CALENDARS) expect((await fx.api('PUT', `/v1/calendars/${id}`, calendarBody, asA)).status).toBe(200);
  const booking = await fx.api('POST', '/v1/batches', { contacts: [{ number: '+14155550905' }], maxAttempts: 1, appointments: { calendarId: 'sales', durationMinutes: 30 } }, asA);
  expect(booking.status).toBe(201);
  a.batches.push(booking.body.batchId);
  a.calendarsCursor = (await fx.api('GET', '/v1/calendars?limit=1', undefined, asA)).body.cursor;
  expect(a.calendarsCursor).toEqual(expect.any(String));
  // B: one batch of its own, no endpoint.
  bBatch = (await fx.api('POST', '/v1/batches', { contacts: numbers(2, '+1415557').map((number) => ({ number })), maxAttempts: 1 }, asB)).body.batchId;
});

afterAll(async () => {
  await fx?.stop();
  await receiver?.close();
});

describe("tenant B's key against tenant A's things", () => {
  it('EveryTenantRouteOfTheOpenApiDocumentHasAProbe_AndEveryProbeIsATenantRoute', () => {
    const routes = tenantRoutesOfTheDocument();
    expect(routes.length).toBeGreaterThan(0);
    expect(Object.keys(PROBES).sort()).toEqual(routes.sort());
  });

  it('FindsNothingOfA_RefusesAsNameAndCursors_AndWritesNothingAnywhere', async () => {
    const before = await everything();
    fx.counter.reset();
    const sent = fx.transport.counts.sendMessage;
    let probed = 0;
    for (const [route, probes] of Object.entries(PROBES)) {
      const list = probes();
      expect(list.length, route).toBeGreaterThan(0);
      for (const probe of list) {
        const answer = await fx.send(probe.method, probe.path, probe.body, asB);
        expect(answer.status, `${route}: ${probe.method} ${probe.path} → ${JSON.stringify(answer.body)}`).toBe(probe.status);
        probe.check?.(answer.body);
        probed++;
      }
    }
    expect(probed).toBeGreaterThan(Object.keys(PROBES).length);
    const written = [...fx.counter.counts.entries()].filter(([operation]) => WRITES.some((w) => operation.endsWith(`.${w}`)));
    expect(written).toEqual([]);
    expect(fx.transport.counts.sendMessage).toBe(sent);
    expect(await everything()).toEqual(before);
  });

  it('LeavesAsThingsAsAsKeySeesThem', async () => {
    for (const id of a.batches) expect((await fx.api('GET', `/v1/batches/${id}`, undefined, asA)).body).toMatchObject({ batchId: id, tenantId: 'tenant-a', status: 'Pending' });
    for (const id of a.endpoints) expect((await fx.api('GET', `/v1/endpoints/${id}`, undefined, asA)).body).toMatchObject({ endpointId: id, tenantId: 'tenant-a', disabled: false });
    for (const id of A_CALENDARS) expect((await fx.api('GET', `/v1/calendars/${id}`, undefined, asA)).body).toMatchObject({ calendarId: id, timezone: 'Europe/Berlin', credentialsStored: true });
    expect((await fx.api('GET', `/v1/endpoints/${a.endpoints[0]}/recoveries/${a.recoveryId}`, undefined, asA)).body).toMatchObject({ recoveryId: a.recoveryId, status: 'running', requeued: 0 });
    // B's own listing and its own batch are B's, and A's key finds B's batch no more than B's found A's.
    expect((await fx.api('GET', `/v1/batches/${bBatch}`, undefined, asA)).status).toBe(404);
    expect((await fx.api('GET', '/v1/batches', undefined, asA)).body.batches.map((b: any) => b.batchId).sort()).toEqual([...a.batches].sort());
    expect((await fx.api('GET', '/v1/suppressions', undefined, asA)).body.suppressions.map((e: any) => e.number).sort()).toEqual(A_SUPPRESSED);
  });

  it('BSuppressingANumberOnAsListPutsItOnBsOwnList_AsEntryUntouched', async () => {
    const number = A_SUPPRESSED[0]!;
    expect((await fx.api('PUT', `/v1/suppressions/${encodeURIComponent(number)}`, { reason: 'b asked' }, asB)).status).toBe(200);
    expect((await fx.api('GET', '/v1/suppressions', undefined, asB)).body.suppressions).toEqual([expect.objectContaining({ number, reason: 'b asked' })]);
    const aList = (await fx.api('GET', '/v1/suppressions', undefined, asA)).body.suppressions;
    expect(aList.map((e: any) => [e.number, e.reason]).sort()).toEqual(A_SUPPRESSED.map((n) => [n, 'asked']));
    expect((await fx.api('DELETE', `/v1/suppressions/${encodeURIComponent(number)}`, undefined, asB)).status).toBe(200);
    expect((await fx.api('GET', '/v1/suppressions', undefined, asA)).body.suppressions.map((e: any) => e.number).sort()).toEqual(A_SUPPRESSED);
  });
});
