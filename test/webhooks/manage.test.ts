import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyKey, ApiKeys, newApiKey } from '../../functions/calls/keys.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { iso } from '../../functions/platform/clock.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import type { Resolver } from '../../functions/platform/vetted-http.ts';
import { webhookRoutes } from '../../functions/webhooks/api.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { EventType } from '../../functions/webhooks/events.ts';
import { DELETED_RETENTION_SECONDS, PURGED_METRIC } from '../../functions/webhooks/manage.ts';
import { PREVIOUS_SECRET_MS } from '../../functions/webhooks/rotation.ts';
import { EXPIRED_METRIC } from '../../functions/webhooks/expiry.ts';
import { isPending } from '../../functions/webhooks/store.ts';
import { Receiver, verify, webhooksFixture } from '../support/webhooks.ts';
import type { Received } from '../support/webhooks.ts';

/**
 * Managing an endpoint through the tenant API (PATCH, DELETE, rotate-secret) on DynamoDB Local, with real
 * HTTP receivers and the manual clock: each request is sent to the URL and signed with the secrets
 * committed before it starts; a deleted endpoint gets nothing more and what waited for it is discarded.
 */

let fx: Awaited<ReturnType<typeof webhooksFixture>>;
let server: LocalHttpServer;
const receivers: Receiver[] = [];
const resolve: Resolver = async (host) => {
  if (host === 'hooks.example.com') return [{ address: '93.184.216.34', family: 4 }];
  if (host === 'internal.example.com') return [{ address: '10.0.0.7', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
let calls: CallsStore;
const keys = new Map<string, string>();

beforeAll(async () => {
  fx = await webhooksFixture({ resolve });
  calls = new CallsStore(fx.clients.dynamo, fx.tableNames.calls);
  const verifier = new ApiKeys({ store: calls, clock: fx.clock, logger: fx.logger });
  server = await startHttpServer({ port: 0, handler: createApiHandler(webhookRoutes(() => fx.webhooks), fx.logger, { keys: () => verifier }) });
});
afterAll(async () => {
  await server.close();
  for (const r of receivers) await r.close();
  await fx.close();
});

async function receiver(script: Parameters<typeof Receiver.start>[0]): Promise<Receiver> {
  const r = await Receiver.start(script);
  receivers.push(r);
  return r;
}

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

/** A request as `tenant`, with its key. */
async function call(tenant: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${await keyOf(tenant)}` };
  const response = await fetch(`${server.url}${path}`, {
    method,
    ...(body === undefined ? { headers } : { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}

async function register(tenant: string, url: string, extra: Record<string, unknown> = {}): Promise<{ endpointId: string; secret: string }> {
  const created = await call(tenant, 'POST', '/v1/endpoints', { url, ...extra });
  expect(created.status).toBe(201);
  return created.body;
}

const issuesOf = (body: any): string[] => (body.issues as { path: string }[]).map((i) => i.path);

describe('PATCH /v1/endpoints/{id}', () => {
  it('ChangesUrlEventTypesAndDescription_DescriptionAlsoOnPostAndGet_BadInputIs400WithFieldPathsAndWritesNothing', async () => {
    const { endpointId } = await register('patch', 'https://hooks.example.com/a', { description: 'orders hook' });
    expect((await call('patch', 'GET', `/v1/endpoints/${endpointId}`)).body).toMatchObject({ description: 'orders hook', url: 'https://hooks.example.com/a', eventTypes: null });

    const changed = await call('patch', 'PATCH', `/v1/endpoints/${endpointId}`, { url: 'https://hooks.example.com/b', eventTypes: ['batch.finalised'], description: 'batches' });
    expect(changed).toMatchObject({ status: 200, body: { endpointId, url: 'https://hooks.example.com/b', eventTypes: ['batch.finalised'], description: 'batches' } });
    expect((await call('patch', 'PATCH', `/v1/endpoints/${endpointId}`, { eventTypes: null, description: null })).body).toMatchObject({ eventTypes: null, description: null });

    const before = await fx.webhooks.deps.store.getEndpoint(endpointId);
    const bad = await call('patch', 'PATCH', `/v1/endpoints/${endpointId}`, { url: 7, eventTypes: ['nope'], description: 'x'.repeat(501), extra: 1 });
    expect(bad.status).toBe(400);
    expect(issuesOf(bad.body)).toEqual(expect.arrayContaining(['body.url', 'body.eventTypes.0', 'body.description', 'body.extra']));
    expect((await call('patch', 'PATCH', `/v1/endpoints/${endpointId}`, {})).status).toBe(400);
    for (const url of ['http://169.254.169.254/latest', 'https://internal.example.com/in', 'https://nowhere.example.com/', 'ftp://hooks.example.com/']) {
      const refused = await call('patch', 'PATCH', `/v1/endpoints/${endpointId}`, { url });
      expect(refused.status, url).toBe(400);
      expect(issuesOf(refused.body), url).toEqual(['body.url']);
    }
    expect(await fx.webhooks.deps.store.getEndpoint(endpointId)).toEqual(before);
    expect((await call('patch', 'PATCH', `/v1/endpoints/ep_patch.${'0'.repeat(32)}`, { description: 'x' })).status).toBe(404);
  });

  it('ANewUrl_ClearsFailingSince_ReleasesTheDeliveriesHeldForTheOldOne_AndEveryLaterRequestGoesToTheNewUrl', async () => {
    const old = await receiver([{ status: 500 }]);
    const next = await receiver([{ status: 200 }]);
    const { endpointId } = await register('moving', old.url());
    const events = [];
    for (let i = 0; i < 3; i++) {
      fx.clock.advance(1);
      events.push(await fx.recordEvent('moving', EventType.callCompleted, { i }));
    }
    const first = deliveryJobId(events[0]!.id, endpointId);
    // The first fails: the endpoint is failing, and the first holds the lease, due again on its backoff.
    expect((await fx.run(first)).result).toBe('retryable');
    expect((await fx.webhooks.deps.store.getEndpoint(endpointId))?.failingSince).toBeDefined();
    const due = Date.parse((await fx.job(first)).scheduledAt);
    expect(due).toBeGreaterThan(fx.clock.now());

    const changed = await call('moving', 'PATCH', `/v1/endpoints/${endpointId}`, { url: next.url() });
    expect(changed.body).toMatchObject({ url: next.url(), failingSince: null });
    // Released: the holder is due now, not on its backoff.
    expect(Date.parse((await fx.job(first)).scheduledAt)).toBeLessThanOrEqual(fx.clock.now());
    expect((await fx.run(first)).result).toBe('completed');
    expect(old.requests).toHaveLength(1);
    expect(next.requests.map((r) => r.headers['webhook-id'])).toEqual(events.map((e) => e.id));
  });

  it('NewEventTypesApplyToEventsPublishedAfter_DeliveriesAlreadyWrittenAreDelivered', async () => {
    const r = await receiver([{ status: 200 }]);
    const { endpointId } = await register('subs', r.url());
    const a = await fx.recordEvent('subs', EventType.callCompleted, { i: 0 });
    fx.clock.advance(1);
    const b = await fx.recordEvent('subs', EventType.callCompleted, { i: 1 });
    expect((await fx.webhooks.deps.store.waitListHead(endpointId, 5)).filter(isPending).map((e) => e.event.id)).toEqual([b.id]);
    expect((await call('subs', 'PATCH', `/v1/endpoints/${endpointId}`, { eventTypes: ['batch.finalised'] })).status).toBe(200);
    fx.clock.advance(1);
    const c = await fx.recordEvent('subs', EventType.callCompleted, { i: 2 });
    expect((await fx.run(deliveryJobId(a.id, endpointId))).result).toBe('completed');
    expect(r.requests.map((q) => q.headers['webhook-id'])).toEqual([a.id, b.id]);
    expect(await fx.jobs.store.get(deliveryJobId(c.id, endpointId))).toBeUndefined();
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
  });
});

describe('DELETE /v1/endpoints/{id}', () => {
  it('StopsTheEndpointAtOnce_ThePurgeDiscardsWhatWaitedAsEndpointDeleted_Counted_ASecondDeleteAndGetAre404_TheTombstoneIsKept30Days', async () => {
    const r = await receiver([{ status: 200 }]);
    const { endpointId } = await register('deleting', r.url());
    const events = [];
    for (let i = 0; i < 4; i++) {
      fx.clock.advance(1);
      events.push(await fx.recordEvent('deleting', EventType.callCompleted, { i }));
    }
    const ids = events.map((e) => deliveryJobId(e.id, endpointId));
    expect(await fx.webhooks.deps.store.countWaiting(endpointId)).toBe(3);

    const deleted = await call('deleting', 'DELETE', `/v1/endpoints/${endpointId}`);
    expect(deleted).toMatchObject({ status: 202, body: { endpointId, deletedAt: iso(fx.clock.now()), purgeJobId: `webhook.purge:${endpointId}` } });
    expect((await call('deleting', 'DELETE', `/v1/endpoints/${endpointId}`)).status).toBe(404);
    expect((await call('deleting', 'GET', `/v1/endpoints/${endpointId}`)).status).toBe(404);
    for (const [method, path] of [['PATCH', ''], ['POST', '/rotate-secret'], ['POST', '/enable'], ['POST', '/redeliver'], ['GET', '/deliveries']] as const) {
      expect((await call('deleting', method, `/v1/endpoints/${endpointId}${path}`, method === 'PATCH' ? { description: 'x' } : path === '/rotate-secret' ? {} : undefined)).status, `${method} ${path}`).toBe(404);
    }
    expect((await call('deleting', 'GET', '/v1/endpoints')).body.endpoints).toEqual([]);
    // An event published after the delete goes nowhere.
    const later = await fx.recordEvent('deleting');
    expect(await fx.jobs.store.get(deliveryJobId(later.id, endpointId))).toBeUndefined();

    // The purge runs first: the three waiting with no job become discarded jobs; then the first delivery
    // (woken) finds its endpoint deleted. Nothing is sent; all four are discarded as endpoint_deleted.
    const before = await fx.jobs.client.count(['webhook.deliver']);
    const deadBefore = before.deadLetters.find((d) => d.reason === 'endpoint_deleted')?.count ?? 0;
    expect((await fx.run(`webhook.purge:${endpointId}`)).result).toBe('completed');
    await fx.drain(60_000);
    expect(r.requests).toEqual([]);
    const rows = await Promise.all(ids.map((id) => fx.job(id)));
    expect(rows.map((row) => [row.state, row.discardReason])).toEqual(ids.map(() => ['discarded', 'endpoint_deleted']));
    expect(await fx.webhooks.deps.store.countWaiting(endpointId)).toBe(0);
    expect(await fx.job(`webhook.purge:${endpointId}`)).toMatchObject({ state: 'completed' });
    const tombstone = await fx.webhooks.deps.store.getEndpoint(endpointId);
    expect(tombstone).toMatchObject({ endpointId, deletedAt: deleted.body.deletedAt, disabled: true, expiresAt: Math.floor(Date.parse(deleted.body.deletedAt) / 1000) + DELETED_RETENTION_SECONDS });
    // Counted: the purge's own on the tombstone and its metric; every one among the job layer's dead letters, by reason.
    expect(tombstone?.purged).toBe(3);
    expect(fx.metrics.total(PURGED_METRIC)).toBe(3);
    const dead = (await fx.jobs.client.count(['webhook.deliver'])).deadLetters.find((d) => d.kind === 'webhook.deliver' && d.reason === 'endpoint_deleted');
    expect((dead?.count ?? 0) - deadBefore).toBe(4);
  });

  it('ADrainThatIsRunningWhenTheDeleteCommits_SendsNothingMore', async () => {
    const r = await receiver([{ status: 200 }]);
    const { endpointId } = await register('mid-drain', r.url());
    const events = [];
    for (let i = 0; i < 5; i++) {
      fx.clock.advance(1);
      events.push(await fx.recordEvent('mid-drain', EventType.callCompleted, { i }));
    }
    // The delete commits right after the holder's second request is answered (inside its drain).
    const http = fx.webhooks.deps.http;
    const send = http.send.bind(http);
    let deleteDone: Promise<unknown> | undefined;
    fx.webhooks.deps.http = {
      vet: (host) => http.vet(host),
      send: async (request) => {
        const response = await send(request);
        if (r.requests.length === 2 && !deleteDone) {
          deleteDone = call('mid-drain', 'DELETE', `/v1/endpoints/${endpointId}`);
          await deleteDone;
        }
        return response;
      },
    };
    try {
      expect((await fx.run(deliveryJobId(events[0]!.id, endpointId))).result).toBe('completed');
    } finally {
      fx.webhooks.deps.http = http;
    }
    expect((await deleteDone) as { status: number }).toMatchObject({ status: 202 });
    expect(r.requests.map((q) => q.headers['webhook-id'])).toEqual([events[0]!.id, events[1]!.id]);
    await fx.drain(60_000);
    expect(r.requests).toHaveLength(2);
    const rest = await Promise.all(events.slice(2).map((e) => fx.job(deliveryJobId(e.id, endpointId))));
    expect(rest.map((row) => [row.state, row.discardReason])).toEqual(rest.map(() => ['discarded', 'endpoint_deleted']));
  });
});

describe('POST /v1/endpoints/{id}/rotate-secret', () => {
  it('For24HoursEachDeliveryCarriesBothSignatures_ThenOnlyTheNewOne_ARotationEndsTheOlder_ExpireOldNowEndsItAtOnce', async () => {
    const r = await receiver([{ status: 200 }]);
    const { endpointId, secret: first } = await register('rotating', r.url());
    const deliver = async () => {
      fx.clock.advance(1000);
      const event = await fx.recordEvent('rotating');
      expect((await fx.run(deliveryJobId(event.id, endpointId))).result).toBe('completed');
      return r.requests.at(-1)!;
    };
    const verifies = (secret: string, request: Received) => {
      try {
        verify(secret, request, fx.clock.now());
        return true;
      } catch {
        return false;
      }
    };

    const rotated = await call('rotating', 'POST', `/v1/endpoints/${endpointId}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    const second = rotated.body.secret as string;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(rotated.body.previousSecretUntil).toBe(iso(fx.clock.now() + PREVIOUS_SECRET_MS));
    const row = await fx.webhooks.deps.store.getEndpoint(endpointId);
    expect(JSON.stringify(row)).not.toContain(second.slice(6, 20));
    expect((await call('rotating', 'GET', `/v1/endpoints/${endpointId}`)).body.rotation).toEqual({ rotatedAt: iso(fx.clock.now()), previousSecretUntil: rotated.body.previousSecretUntil });

    const both = await deliver();
    expect(both.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect([verifies(second, both), verifies(first, both)]).toEqual([true, true]);

    fx.clock.advance(PREVIOUS_SECRET_MS);
    const after = await deliver();
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect([verifies(second, after), verifies(first, after)]).toEqual([true, false]);

    // Two rotations: the secret before the previous one no longer signs (two at most).
    const third = (await call('rotating', 'POST', `/v1/endpoints/${endpointId}/rotate-secret`, {})).body.secret as string;
    const fourth = (await call('rotating', 'POST', `/v1/endpoints/${endpointId}/rotate-secret`, {})).body.secret as string;
    const two = await deliver();
    expect(two.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect([fourth, third, second, first].map((s) => verifies(s, two))).toEqual([true, true, false, false]);

    const now = await call('rotating', 'POST', `/v1/endpoints/${endpointId}/rotate-secret`, { expireOldNow: true });
    expect(now.body.previousSecretUntil).toBeNull();
    const only = await deliver();
    expect([now.body.secret, fourth].map((s) => verifies(s, only))).toEqual([true, false]);

    const bad = await call('rotating', 'POST', `/v1/endpoints/${endpointId}/rotate-secret`, { expireOldNow: 'yes', more: 1 });
    expect(bad.status).toBe(400);
    expect(issuesOf(bad.body)).toEqual(expect.arrayContaining(['body.expireOldNow', 'body.more']));
    expect(verifies(now.body.secret, await deliver())).toBe(true);
  });
});

describe('the wait list’s retention', () => {
  it('ADeliveryWaitingWithNoJobNearItsEntrysTtl_IsDiscardedByTheSweepAsWaitExpired_Counted_AYoungerOneStays', async () => {
    const r = await receiver([{ status: 200 }]);
    const { endpointId } = await register('expiring', r.url());
    // The first takes the lease (its job is never run here); the second waits behind it with no job.
    const first = await fx.recordEvent('expiring', EventType.callCompleted, { i: 0 });
    fx.clock.advance(1);
    const old = await fx.recordEvent('expiring', EventType.callCompleted, { i: 1 });
    fx.clock.advance(29 * 86400_000 - 60_000);
    const young = await fx.recordEvent('expiring', EventType.callCompleted, { i: 2 });
    // A day before its entry's TTL (30 days after it was put) it is not yet due; within the day it is.
    expect((await fx.webhooks.sweep(fx.clock.now())).expired).toBe(0);
    fx.clock.advance(2 * 60_000);
    const report = await fx.webhooks.sweep(fx.clock.now());
    expect(report.expired).toBe(1);
    expect(await fx.job(deliveryJobId(old.id, endpointId))).toMatchObject({ state: 'discarded', discardReason: 'wait_expired', attempt: 0 });
    expect(fx.metrics.total(EXPIRED_METRIC)).toBe(1);
    const waiting = await fx.webhooks.deps.store.waitListHead(endpointId, 10);
    expect(waiting.map((w) => w.jobId)).not.toContain(deliveryJobId(old.id, endpointId));
    // The younger one (its endpoint's lease had expired: it is a job) is not touched.
    expect((await fx.job(deliveryJobId(young.id, endpointId))).state).not.toBe('discarded');
    expect(await fx.jobs.store.get(deliveryJobId(first.id, endpointId))).toBeDefined();
  });
});
