import { RETRYABLE_CODES } from '../../functions/calls/codes.ts';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { callsRoutes } from '../../functions/calls/api.ts';
import { callsDefaults } from '../../functions/calls/config.ts';
import { callsDeps } from '../../functions/calls/deps.ts';
import { dialKind } from '../../functions/calls/kinds.ts';
import { contactKey } from '../../functions/calls/model.ts';
import type { OwnerMail } from '../../functions/calls/ports.ts';
import { MAX_CONTACTS_PER_BATCH } from '../../functions/calls/schemas.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
const servers: LocalHttpServer[] = [];
afterEach(async () => {
  await Promise.all([...fixtures.splice(0).map((fx) => fx.stop()), ...servers.splice(0).map((s) => s.close())]);
});

async function fixture() {
  // No worker: these tests look at what the API writes, not at what the dialer does next.
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  return fx;
}

const paths = (body: any): string[] => body.issues.map((i: { path: string }) => i.path);

describe('tenant and batch API: validated at the edge, nothing written on bad input', () => {
  it('BadTenantBodiesAre400WithFieldPathsAndWriteNothing', async () => {
    const fx = await fixture();
    const cases: [string, unknown, string[]][] = [
      ['/v1/tenants/acme', { concurrencyLimit: 0 }, ['body.concurrencyLimit']],
      ['/v1/tenants/acme', { concurrencyLimit: 2, ownerEmail: 'not-an-address' }, ['body.ownerEmail']],
      ['/v1/tenants/acme', {}, ['body.concurrencyLimit']],
      ['/v1/tenants/a%20b', { concurrencyLimit: 2 }, ['path.tenantId']],
    ];
    for (const [path, body, expected] of cases) {
      const response = await fx.api('PUT', path, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(paths(response.body)).toEqual(expected);
    }
    expect(await fx.callsItems()).toEqual([]);
  });

  it('BadBatchBodiesAre400WithFieldPathsAndWriteNothing', async () => {
    const fx = await fixture();
    expect((await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 })).status).toBe(200);
    const tenantOnly = await fx.callsItems();
    const ok = { tenantId: 'acme', contacts: [{ number: '+14155550100' }, { number: '+14155550101' }], maxAttempts: 2 };
    const cases: [unknown, string[]][] = [
      [{ ...ok, contacts: [{ number: '+14155550100' }, { number: '4155550101' }] }, ['body.contacts.1.number']],
      [{ ...ok, contacts: [{ number: '+14155550100' }, { number: '+14155550101' }, { number: '+14155550100' }] }, ['body.contacts.2.number']],
      [{ ...ok, contacts: [] }, ['body.contacts']],
      [{ ...ok, maxAttempts: 0 }, ['body.maxAttempts']],
      [{ ...ok, maxAttempts: 2.5 }, ['body.maxAttempts']],
      [{ ...ok, callingWindow: { timezone: 'Europe/Atlantis', start: '09:00', end: '17:00' } }, ['body.callingWindow.timezone']],
      [{ ...ok, callingWindow: { timezone: 'Europe/Berlin', start: '9am', end: '17:00' } }, ['body.callingWindow.start']],
      [{ ...ok, retry: { baseSeconds: 60, capSeconds: 30 } }, ['body.retry.capSeconds']],
      [{ ...ok, minConversationDurationSeconds: -1 }, ['body.minConversationDurationSeconds']],
      [{ ...ok, tenantId: 'no body' }, ['body.tenantId']],
      [{ ...ok, contacts: numbers(MAX_CONTACTS_PER_BATCH + 1).map((number) => ({ number })) }, ['body.contacts']],
    ];
    const asAcme = { authorization: `Bearer ${await fx.keyOf('acme')}` };
    for (const [body, expected] of cases) {
      const response = await fx.api('POST', '/v1/batches', body, asAcme);
      expect(response.status, JSON.stringify(expected)).toBe(400);
      expect(paths(response.body)).toEqual(expected);
    }
    // Another tenant's id in the body: refused (the tenant is the key's), whether that tenant exists or not.
    await fx.api('PUT', '/v1/tenants/other', { concurrencyLimit: 3 });
    const withOther = await fx.callsItems();
    for (const tenantId of ['other', 'nobody']) {
      const response = await fx.api('POST', '/v1/batches', { ...ok, tenantId }, asAcme);
      expect(response.status, tenantId).toBe(403);
      expect(paths(response.body)).toEqual(['body.tenantId']);
    }
    expect(await fx.callsItems()).toEqual(withOther);
    expect(withOther.filter((i) => !tenantOnly.some((t) => t['pk'] === i['pk'] && t['sk'] === i['sk'])).every((i) => String(i['pk']).startsWith('TENANT#other'))).toBe(true);
    expect(await fx.allJobs()).toEqual([]);
  });

  it('UnknownFieldsAre400NamingEachOneAndWriteNothing_ATypoNeverFallsBackToADefault', async () => {
    const fx = await fixture();
    const tenant = await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3, ownerMail: 'owner@example.com' });
    expect(tenant.status).toBe(400);
    expect(paths(tenant.body)).toEqual(['body.ownerMail']);
    expect(await fx.callsItems()).toEqual([]);

    expect((await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 })).status).toBe(200);
    const tenantOnly = await fx.callsItems();
    const ok = { tenantId: 'acme', contacts: [{ number: '+14155550100' }], maxAttempts: 2 };
    const cases: [unknown, string[]][] = [
      [{ ...ok, maxAtempts: 3 }, ['body.maxAtempts']],
      [{ ...ok, contacts: [{ number: '+14155550100', name: 'Ada' }] }, ['body.contacts.0.name']],
      [{ ...ok, retry: { baseSeconds: 5, capSeconds: 60, jitter: 0 } }, ['body.retry.jitter']],
      [{ ...ok, callingWindow: { timezone: 'Europe/Berlin', start: '09:00', end: '17:00', weekday: [1] } }, ['body.callingWindow.weekday']],
      [{ ...ok, minConversationDuration: 30, retries: 2 }, ['body.minConversationDuration', 'body.retries']],
    ];
    for (const [body, expected] of cases) {
      const response = await fx.api('POST', '/v1/batches', body);
      expect(response.status, JSON.stringify(expected)).toBe(400);
      expect(paths(response.body)).toEqual(expected);
    }
    expect(await fx.callsItems()).toEqual(tenantOnly);
    expect(await fx.allJobs()).toEqual([]);
  });

  it('ABatchIsCreatedWithItsRoundOneListAndItsDialerInOneTransactionAndListsItsContactsInUploadOrder', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 });
    const unordered = ['+447700900003', '+12025550101', '+447700900001', '+33612345678'];
    const batchId = await fx.createBatch({ numbers: unordered, maxAttempts: 3, concurrencyLimit: 3, callingWindow: { timezone: 'Europe/London', start: '08:00', end: '20:00', weekdays: [1, 2, 3, 4, 5] } });
    const batch = await fx.api('GET', `/v1/batches/${batchId}`);
    expect(batch.body).toEqual({
      batchId,
      tenantId: 'acme',
      status: 'Pending',
      // Campaign control's fields, at their defaults (control/batch-control.ts).
      pausedFrom: null,
      pausedAt: null,
      startAt: null,
      maxConcurrentCalls: null,
      retryOn: [...RETRYABLE_CODES],
      parentBatchId: null,
      round: 1,
      maxAttempts: 3,
      contactCount: 4,
      counts: { byStatus: { Queued: 4, Calling: 0, Completed: 0, RetryEligible: 0, Suppressed: 0 }, deferred: 0, byCode: {} },
      createdAt: new Date(fx.clock.now()).toISOString(),
      finalisedAt: null,
      variableNames: [],
      // 07700 900xxx is Ofcom's range for drama: possible, never assigned — accepted, flagged.
      invalidNumbers: 2,
      duplicatesDropped: 0,
      appointments: null,
    });
    // An invalid +44 number names no one region (+44 is also Guernsey's, Jersey's, the Isle of Man's).
    const regions = [null, 'US', null, 'FR'];
    const valid = [false, true, false, true];
    const sources = ['batch', 'areaCode', 'batch', 'number'];
    expect((await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body).toEqual({
      contacts: unordered.map((contactNumber, i) => ({
        contactNumber,
        status: 'Queued',
        code: null,
        attempts: 0,
        // The window (London) is evaluated in each contact's zone: its area code's, its region's, or the batch's when the number names no one region.
        callingZones: expect.objectContaining({ source: sources[i] }),
        deferred: null,
        externalId: null,
        timezone: null,
        numberValid: valid[i],
        region: regions[i],
        lastCall: null,
      })),
    });
    const jobs = await fx.allJobs();
    expect(jobs.map((j) => [j.id, j.kind, j.state])).toEqual([[`calls.dial:${batchId}:1`, dialKind.kind, 'available']]);
    const unknown = `b_acme.${'0'.repeat(32)}`;
    expect((await fx.api('GET', `/v1/batches/${unknown}`)).status).toBe(404);
    expect((await fx.api('GET', `/v1/batches/${unknown}/contacts`)).status).toBe(404);
    expect((await fx.api('DELETE', `/v1/batches/${unknown}`)).status).toBe(404);
    // Not a batch id redial issues: a 400 naming the path parameter.
    expect(paths((await fx.api('GET', '/v1/batches/b_nope')).body)).toEqual(['path.id']);
  });

  it('TheLargestBatchFitsItsOneTransaction', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 });
    const all = numbers(MAX_CONTACTS_PER_BATCH, '+1202');
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 1 });
    const batch = await fx.store.getBatch(batchId);
    expect(batch).toMatchObject({ contactCount: MAX_CONTACTS_PER_BATCH, listPages: 20, nQueued: MAX_CONTACTS_PER_BATCH });
    // Listed a page at a time (1,000 by default): ten pages, then no cursor.
    const listed: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = (await fx.api('GET', `/v1/batches/${batchId}/contacts${cursor ? `?cursor=${cursor}` : ''}`)).body;
      listed.push(...page.contacts.map((c: any) => c.contactNumber));
      cursor = page.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(10);
    expect(listed).toEqual(all);
  });

  it('ContactsComeAPageAtATimeInUploadOrderWithTheirStatesAcrossListPages', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 });
    const all = numbers(1234, '+1303');
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 2 });
    // Contact 700 (on the second list page) has been dialled and completed.
    await fx.clients.dynamo.send(
      new PutCommand({
        TableName: fx.tableNames.calls,
        Item: { ...contactKey(batchId, all[700]!), batchId, contactNumber: all[700], status: 'Completed', round: 1, attempts: 1, code: 'COMPLETED' },
      }),
    );
    const pages: any[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.api('GET', `/v1/batches/${batchId}/contacts?limit=333${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body);
      cursor = page.body.cursor;
    } while (cursor);
    expect(pages.map((p) => p.contacts.length)).toEqual([333, 333, 333, 235]);
    const contacts = pages.flatMap((p) => p.contacts);
    expect(contacts.map((c: any) => c.contactNumber)).toEqual(all);
    expect(contacts[700]).toMatchObject({ contactNumber: all[700], status: 'Completed', code: 'COMPLETED', attempts: 1 });
    expect(contacts.filter((c: any) => c.status === 'Queued')).toHaveLength(1233);

    const badLimit = await fx.api('GET', `/v1/batches/${batchId}/contacts?limit=1001`);
    expect(badLimit.status).toBe(400);
    expect(paths(badLimit.body)).toEqual(['query.limit']);
    const badCursor = await fx.api('GET', `/v1/batches/${batchId}/contacts?cursor=bm9wZQ`);
    expect(badCursor.status).toBe(400);
    expect(paths(badCursor.body)).toEqual(['query.cursor']);
  });

  it('GETBatchesListsNewestFirstAPageAtATimeFromTheBatchIndexWithoutAScan', async () => {
    const fx = await fixture();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await fx.createBatch({ numbers: [`+1202555010${i}`], maxAttempts: 1 }));
      fx.clock.advance(1000);
    }
    // A keyed retry writes nothing, the batch index included: the batch is listed once.
    const keyed = { tenantId: 'acme', contacts: [{ number: '+12025550199' }], maxAttempts: 1 };
    expect((await fx.api('POST', '/v1/batches', keyed, { 'idempotency-key': 'list-once' })).status).toBe(201);
    expect((await fx.api('POST', '/v1/batches', keyed, { 'idempotency-key': 'list-once' })).status).toBe(200);
    const newestFirst = [(await fx.api('GET', '/v1/batches?limit=1')).body.batches[0].batchId, ...[...ids].reverse()];

    fx.counter.reset();
    const pages: any[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.api('GET', `/v1/batches?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      pages.push(page.body);
      cursor = page.body.cursor;
    } while (cursor);
    const listed = pages.flatMap((p) => p.batches);
    expect(listed.map((b: any) => b.batchId)).toEqual(newestFirst);
    expect(listed[1]).toEqual((await fx.api('GET', `/v1/batches/${ids[4]}`)).body);
    expect([...fx.counter.counts.keys()].filter((op) => op.endsWith('.Scan'))).toEqual([]);
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.BatchGetItem': pages.length, 'DynamoDB.GetItem': 1, 'DynamoDB.Query': pages.length });

    const badCursor = await fx.api('GET', '/v1/batches?cursor=bm9wZQ');
    expect(badCursor.status).toBe(400);
    expect(paths(badCursor.body)).toEqual(['query.cursor']);
    expect(paths((await fx.api('GET', '/v1/batches?limit=101')).body)).toEqual(['query.limit']);
  });

  it('ATenantPutKeepsItsCallsInProgressAndRemovesAnOwnerEmailLeftOut', async () => {
    const fx = await fixture();
    expect((await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3, ownerEmail: 'o@example.com' })).body).toEqual({ tenantId: 'acme', concurrencyLimit: 3, ownerEmail: 'o@example.com', activeCalls: 0, maxCallsPerNumberPer24h: 3 });
    await fx.clients.dynamo.send(new PutCommand({ TableName: fx.tableNames.calls, Item: { ...(await fx.store.getTenant('acme'))!, active: 2 } }));
    expect((await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 5 })).body).toEqual({ tenantId: 'acme', concurrencyLimit: 5, ownerEmail: null, activeCalls: 2, maxCallsPerNumberPer24h: 3 });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(2);
    // Another tenant's id, existing or not, is a 404 to acme's key, as an unknown one is.
    await fx.api('PUT', '/v1/tenants/other', { concurrencyLimit: 3 });
    const asAcme = { authorization: `Bearer ${await fx.keyOf('acme')}` };
    expect((await fx.api('GET', '/v1/tenants/nobody', undefined, asAcme)).status).toBe(404);
    expect(await fx.api('GET', '/v1/tenants/other', undefined, asAcme)).toEqual({ status: 404, body: { error: 'not_found', message: 'tenant other not found' } });
  });
});

describe('tenant PUT: the owner-mail port adds to the same transaction', () => {
  async function routesWith(fx: CallsFixture, ownerEmailChanged: OwnerMail['ownerEmailChanged']) {
    const wired = fx.system.calls;
    const deps = callsDeps({
      store: new CallsStore(fx.clients.dynamo, fx.tableNames.calls),
      jobs: fx.jobs.client,
      ports: { ...wired.ports, ownerMail: { ...wired.ports.ownerMail, ownerEmailChanged } },
      clock: fx.clock,
      rng: fx.rng,
      logger: createLogger('test'),
      config: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: undefined, callTimeoutSeconds: 600 },
    });
    const server = await startHttpServer({ port: 0, handler: createApiHandler(callsRoutes(() => deps), createLogger('test'), { keys: () => deps.keys }) });
    servers.push(server);
    return async (tenantId: string, body: unknown) => {
      const response = await fetch(`${server.url}/v1/tenants/${tenantId}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
  }

  it('ThePortsJobCommitsWithTheTenantAndIsWokenAfter', async () => {
    const fx = await fixture();
    const put = await routesWith(fx, async ({ tenantId, ownerEmail }) => {
      const job = fx.jobs.client.prepare(dialKind, { batchId: `confirm-${tenantId}`, round: 1 }, { id: `hook:${tenantId}:${ownerEmail}` });
      return { items: [job.item], jobs: [job] };
    });
    expect((await put('acme', { concurrencyLimit: 2, ownerEmail: 'o@example.com' })).status).toBe(200);
    expect((await fx.jobs.store.mustGet('hook:acme:o@example.com')).state).toBe('available');
    expect(fx.transport.counts.sendMessage).toBe(1);
  });

  it('APortsItemThatFailsLeavesTheTenantUnwritten', async () => {
    const fx = await fixture();
    const put = await routesWith(fx, async () => ({
      items: [{ name: 'hook check', ConditionCheck: { TableName: fx.tableNames.jobs, Key: { id: 'no-such-row' }, ConditionExpression: 'attribute_exists(id)' } }],
      jobs: [],
    }));
    const response = await put('acme', { concurrencyLimit: 2, ownerEmail: 'o@example.com' });
    expect(response.status).toBe(409);
    expect(await fx.store.getTenant('acme')).toBeUndefined();
  });
});
