import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, ApiKeys, KEY_CACHE_MS, LAST_USED_EVERY_MS, matchesHash, newApiKey, parseApiKey } from '../../functions/calls/keys.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { callsFixture } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

/**
 * Tenants' API keys through the operator routes (issue, list, revoke) and the tenant auth step: what a
 * request without a key, with a malformed, unknown, wrong or revoked one is answered (401 and a Bearer
 * challenge, nothing read of the body, nothing written), several keys of a tenant at once, a revocation
 * seen by every container within the cache's life, and lastUsedAt written at most once a minute.
 */

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

async function fixture(): Promise<CallsFixture> {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  expect((await fx.send('PUT', '/v1/tenants/acme', { concurrencyLimit: 2 })).status).toBe(200);
  return fx;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Every item of the calls table under a tenant's keys partition. */
async function keyItems(fx: CallsFixture, tenantId: string): Promise<Record<string, unknown>[]> {
  const result = await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.calls, ConsistentRead: true }));
  return ((result.Items ?? []) as Record<string, unknown>[]).filter((i) => i['pk'] === `TENANT#${tenantId}#KEYS`);
}

describe('API keys: issued by an operator, shown once, stored as a hash', () => {
  it('IssuesAKeyOf32RandomBytesPrefixedRdl_ShownOnceAndStoredOnlyAsItsHash', async () => {
    const fx = await fixture();
    const issued = await fx.send('POST', '/v1/tenants/acme/keys');
    expect(issued.status).toBe(201);
    expect(Object.keys(issued.body).sort()).toEqual(['key', 'keyId']);
    const { keyId, key } = issued.body as { keyId: string; key: string };
    expect(key).toMatch(/^rdl_acme\.k_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(Buffer.from(key.split('.')[2]!, 'base64url')).toHaveLength(32);
    expect(parseApiKey(key)).toEqual({ tenantId: 'acme', keyId });
    const stored = await keyItems(fx, 'acme');
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(key.split('.')[2]);
    expect(matchesHash(key, stored[0]!['hash'] as string)).toBe(true);
    // Listed without the key or its hash.
    const listed = await fx.send('GET', '/v1/tenants/acme/keys');
    expect(listed).toEqual({ status: 200, body: { keys: [{ keyId, createdAt: new Date(fx.clock.now()).toISOString(), lastUsedAt: null, revokedAt: null }] } });
    // The key works for its tenant.
    expect((await fx.send('GET', '/v1/tenants/acme', undefined, bearer(key))).status).toBe(200);
  });

  it('RefusesToIssueForAnUnknownTenantAndToListOrRevokeWhatDoesNotExist_WritingNothing', async () => {
    const fx = await fixture();
    expect((await fx.send('POST', '/v1/tenants/nobody/keys')).status).toBe(404);
    expect(await keyItems(fx, 'nobody')).toEqual([]);
    expect((await fx.send('GET', '/v1/tenants/nobody/keys')).status).toBe(404);
    expect((await fx.send('DELETE', `/v1/tenants/acme/keys/k_${'0'.repeat(16)}`)).status).toBe(404);
    expect((await fx.send('DELETE', '/v1/tenants/acme/keys/not-a-key')).status).toBe(400);
    expect(await keyItems(fx, 'acme')).toEqual([]);
  });

  it('SeveralKeysOfATenantWorkAtOnce_AndRevokingOneLeavesTheOthers', async () => {
    const fx = await fixture();
    const first = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { keyId: string; key: string };
    const second = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { keyId: string; key: string };
    expect(first.keyId).not.toBe(second.keyId);
    for (const key of [first.key, second.key]) expect((await fx.send('GET', '/v1/batches', undefined, bearer(key))).status).toBe(200);
    const revoked = await fx.send('DELETE', `/v1/tenants/acme/keys/${first.keyId}`);
    expect(revoked).toMatchObject({ status: 200, body: { keyId: first.keyId, revokedAt: new Date(fx.clock.now()).toISOString() } });
    // Revoking again changes nothing: the time it was revoked stays.
    fx.clock.advance(5_000);
    expect((await fx.send('DELETE', `/v1/tenants/acme/keys/${first.keyId}`)).body.revokedAt).toBe(revoked.body.revokedAt);
    // Revoked through this container: refused at once here.
    expect((await fx.send('GET', '/v1/batches', undefined, bearer(first.key))).status).toBe(401);
    expect((await fx.send('GET', '/v1/batches', undefined, bearer(second.key))).status).toBe(200);
    const listed = (await fx.send('GET', '/v1/tenants/acme/keys')).body.keys as { keyId: string; revokedAt: string | null }[];
    expect(listed.map((k) => [k.keyId, k.revokedAt !== null]).sort()).toEqual([[first.keyId, true], [second.keyId, false]].sort());
  });
});

describe('the tenant auth step', () => {
  it('AnswersNoKeyAMalformedUnknownWrongOrRevokedKeyWith401AndABearerChallenge_ReadingNoBodyAndWritingNothing', async () => {
    const fx = await fixture();
    const { keyId, key } = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { keyId: string; key: string };
    const other = newApiKey('acme', randomBytes);
    const wrongSecret = `${API_KEY_PREFIX}acme.${keyId}.${randomBytes(32).toString('base64url')}`;
    const otherTenantsName = key.replace('rdl_acme.', 'rdl_globex.');
    await fx.send('DELETE', `/v1/tenants/acme/keys/${keyId}`);
    const before = await fx.callsItems();
    fx.counter.reset();
    const cases: [string, Record<string, string>, string][] = [
      ['none', {}, 'Bearer realm="redial"'],
      ['empty', { authorization: '' }, 'Bearer realm="redial"'],
      ['basic', { authorization: 'Basic YWNtZTpzZWNyZXQ=' }, 'Bearer realm="redial", error="invalid_token"'],
      ['not a key', bearer('hello'), 'Bearer realm="redial", error="invalid_token"'],
      ['unknown', bearer(other.key), 'Bearer realm="redial", error="invalid_token"'],
      ['wrong secret', bearer(wrongSecret), 'Bearer realm="redial", error="invalid_token"'],
      ['renamed tenant', bearer(otherTenantsName), 'Bearer realm="redial", error="invalid_token"'],
      ['revoked', bearer(key), 'Bearer realm="redial", error="invalid_token"'],
    ];
    for (const [what, headers, challenge] of cases) {
      // A body that is not even JSON: refused before anything reads it.
      const response = await fetch(`${fx.url}/v1/batches`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{not json' });
      expect(response.status, what).toBe(401);
      expect(response.headers.get('www-authenticate'), what).toBe(challenge);
      expect(((await response.json()) as { error: string }).error, what).toBe('unauthorized');
    }
    const operations = [...fx.counter.counts.keys()];
    expect(operations.filter((op) => !op.endsWith('.GetItem'))).toEqual([]);
    // Only well-formed keys cost a read: one each (unknown, wrong secret, renamed, revoked; nothing cached but what exists).
    expect(fx.counter.counts.get('DynamoDB.GetItem') ?? 0).toBeLessThanOrEqual(4);
    expect(await fx.callsItems()).toEqual(before);
  });

  it('ARevokedKeyIsRefusedByEveryContainerWithinTheCachesLife_WellWithin60Seconds', async () => {
    const fx = await fixture();
    const { keyId, key } = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { keyId: string; key: string };
    // Another container: its own cache over the same table.
    const elsewhere = new ApiKeys({ store: new CallsStore(fx.clients.dynamo, fx.tableNames.calls), clock: fx.clock, logger: createLogger('test') });
    expect(await elsewhere.verify(key)).toEqual({ tenantId: 'acme', keyId });
    expect((await fx.send('DELETE', `/v1/tenants/acme/keys/${keyId}`)).status).toBe(200);
    const revokedAt = fx.clock.now();
    // It trusts what it read for KEY_CACHE_MS, and no longer.
    fx.clock.set(revokedAt + KEY_CACHE_MS - 1);
    expect(await elsewhere.verify(key)).toEqual({ tenantId: 'acme', keyId });
    fx.clock.set(revokedAt + KEY_CACHE_MS);
    expect(await elsewhere.verify(key)).toBeUndefined();
    expect(KEY_CACHE_MS).toBeLessThanOrEqual(60_000);
  });

  it('WritesLastUsedAtAtMostOnceAMinutePerKey_WhateverTheContainers', async () => {
    const fx = await fixture();
    const { keyId, key } = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { keyId: string; key: string };
    const store = new CallsStore(fx.clients.dynamo, fx.tableNames.calls);
    const containers = [fx.system.calls.keys, new ApiKeys({ store, clock: fx.clock, logger: createLogger('test') }), new ApiKeys({ store, clock: fx.clock, logger: createLogger('test') })];
    const lastUsed = async () => (await store.getApiKey('acme', keyId))?.lastUsedAt;
    const start = fx.clock.now();
    fx.counter.reset();
    // Thirty requests in the first minute, spread over three containers.
    for (let i = 0; i < 30; i++) {
      fx.clock.set(start + i * 1_000);
      expect(await containers[i % 3]!.verify(key)).toEqual({ tenantId: 'acme', keyId });
    }
    expect(await lastUsed()).toBe(new Date(start).toISOString());
    // One write: the other containers read the key after it, and saw a lastUsedAt younger than a minute. (One
    // that had read it before would ask once, and the write's condition would refuse it.)
    expect(fx.counter.counts.get('DynamoDB.UpdateItem')).toBe(1);
    fx.clock.set(start + LAST_USED_EVERY_MS + 1);
    await containers[1]!.verify(key);
    expect(await lastUsed()).toBe(new Date(start + LAST_USED_EVERY_MS + 1).toISOString());
    expect((await fx.send('GET', '/v1/tenants/acme/keys')).body.keys[0].lastUsedAt).toBe(new Date(start + LAST_USED_EVERY_MS + 1).toISOString());

    // Two containers that read the key a minute on, both before either wrote: both ask, and the write's
    // condition lets one through.
    const later = start + 2 * LAST_USED_EVERY_MS + 2;
    fx.clock.set(later);
    const readBefore = await store.getApiKey('acme', keyId);
    const racingStore = { getApiKey: () => Promise.resolve(readBefore), touchApiKey: store.touchApiKey.bind(store) };
    const racing = [new ApiKeys({ store: racingStore, clock: fx.clock, logger: createLogger('test') }), new ApiKeys({ store: racingStore, clock: fx.clock, logger: createLogger('test') })];
    fx.counter.reset();
    await Promise.all(racing.map((container) => container.verify(key)));
    expect(fx.counter.counts.get('DynamoDB.UpdateItem')).toBe(2);
    expect(await lastUsed()).toBe(new Date(later).toISOString());
    expect(await store.touchApiKey('acme', keyId, later + 1, LAST_USED_EVERY_MS)).toBe(false);
  });

  it('RefusesATenantIdOfAnotherTenantInTheBodyOrQueryWith403_AndTakesTheKeysTenantWhenThereIsNone', async () => {
    const fx = await fixture();
    const { key } = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { key: string };
    const body = { contacts: [{ number: '+14155550100' }], maxAttempts: 1 };
    expect((await fx.send('POST', '/v1/batches', { ...body, tenantId: 'globex' }, bearer(key))).status).toBe(403);
    expect((await fx.send('GET', '/v1/batches?tenantId=globex', undefined, bearer(key))).status).toBe(403);
    const named = await fx.send('POST', '/v1/batches', { ...body, tenantId: 'acme' }, bearer(key));
    const unnamed = await fx.send('POST', '/v1/batches', body, bearer(key));
    for (const created of [named, unnamed]) {
      expect(created.status).toBe(201);
      expect(created.body.batchId).toMatch(/^b_acme\./);
    }
    expect((await fx.send('GET', '/v1/batches?tenantId=acme', undefined, bearer(key))).body.batches).toHaveLength(2);
  });

  it('TheOperatorCopyActsForTheTenantInItsPath_WithTheSameHandlers', async () => {
    const fx = await fixture();
    const { key } = (await fx.send('POST', '/v1/tenants/acme/keys')).body as { key: string };
    const created = await fx.send('POST', '/v1/ops/tenants/acme/batches', { contacts: [{ number: '+14155550100' }], maxAttempts: 1 });
    expect(created.status).toBe(201);
    expect((await fx.send('GET', `/v1/batches/${created.body.batchId}`, undefined, bearer(key))).body).toMatchObject({ tenantId: 'acme' });
    expect((await fx.send('GET', `/v1/ops/tenants/acme/batches/${created.body.batchId}`)).body).toMatchObject({ tenantId: 'acme' });
    // The copy of another tenant's path finds nothing of acme's, and refuses acme's name in its body.
    expect((await fx.send('GET', `/v1/ops/tenants/globex/batches/${created.body.batchId}`)).status).toBe(404);
    expect((await fx.send('POST', '/v1/ops/tenants/globex/batches', { tenantId: 'acme', contacts: [{ number: '+14155550100' }], maxAttempts: 1 })).status).toBe(403);
    expect((await fx.send('GET', '/v1/ops/tenants/acme')).body).toMatchObject({ tenantId: 'acme' });
    // An operator's copy names a tenant that may not exist: creating in it is a 404, nothing written.
    expect((await fx.send('POST', '/v1/ops/tenants/ghost/batches', { contacts: [{ number: '+14155550100' }], maxAttempts: 1 })).status).toBe(404);
  });
});
