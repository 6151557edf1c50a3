import { afterEach, describe, expect, it } from 'vitest';
import { batchIdForKey } from '../../functions/calls/idempotency.ts';
import { batchPartition } from '../../functions/calls/model.ts';
import { canonicalJson } from '../../functions/platform/idempotency.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A tenant `acme` (and any others named), no worker: these tests look at what the API writes. */
async function fixture(...tenants: string[]) {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  for (const tenantId of ['acme', ...tenants]) expect((await fx.api('PUT', `/v1/tenants/${tenantId}`, { concurrencyLimit: 3 })).status).toBe(200);
  return fx;
}

const body = (tenantId = 'acme', count = 3) => ({ tenantId, contacts: numbers(count).map((number) => ({ number })), maxAttempts: 2 });
const keyed = (key: string) => ({ 'idempotency-key': key });

/** What the calls and jobs tables hold, and how many wake-ups were sent: a replay must change none of it. */
async function written(fx: CallsFixture) {
  return { calls: await fx.callsItems(), jobs: await fx.allJobs(), wakeups: fx.transport.counts.sendMessage };
}

describe('POST /v1/batches with an Idempotency-Key: a retry creates nothing new', () => {
  it('TheBatchIdFollowsFromTheTenantAndTheKeyAndTheRowRemembersTheKey', async () => {
    const fx = await fixture();
    const created = await fx.api('POST', '/v1/batches', body(), keyed('order-1'));
    expect(created).toEqual({ status: 201, body: { batchId: batchIdForKey('acme', 'order-1') } });
    // Like a random one, it names its tenant: b_<tenantId>.<32 hex>.
    expect(created.body.batchId).toMatch(/^b_acme\.[0-9a-f]{32}$/);
    const row = await fx.store.getBatch(created.body.batchId);
    expect(row).toMatchObject({ tenantId: 'acme', idempotencyKey: 'order-1', requestHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('AReplayAfterSuccessAnswers200WithTheSameBatchAndWritesNothing', async () => {
    const fx = await fixture();
    const first = await fx.api('POST', '/v1/batches', body(), keyed('order-1'));
    expect(first.status).toBe(201);
    const before = await written(fx);
    expect(before.jobs.map((j) => j.id)).toEqual([`calls.dial:${first.body.batchId}:1`]);

    // The same request, its fields in another order and the default spelled out: the same validated body.
    const { tenantId, contacts, maxAttempts } = body();
    const again = await fx.api('POST', '/v1/batches', { maxAttempts, contacts, tenantId, minConversationDurationSeconds: 10 }, keyed('order-1'));
    expect(again).toEqual({ status: 200, body: { batchId: first.body.batchId } });
    expect(await written(fx)).toEqual(before);
  });

  it('TheSameKeyWithADifferentBodyIs422AndWritesNothing', async () => {
    const fx = await fixture();
    expect((await fx.api('POST', '/v1/batches', body(), keyed('order-1'))).status).toBe(201);
    const before = await written(fx);
    for (const different of [body('acme', 4), { ...body(), maxAttempts: 3 }, { ...body(), contacts: [...body().contacts].reverse() }]) {
      const refused = await fx.api('POST', '/v1/batches', different, keyed('order-1'));
      expect(refused.status, JSON.stringify(different)).toBe(422);
      expect(refused.body.error).toBe('idempotency_key_reused');
      expect(refused.body.message).toMatch(/already used with a different request body; nothing was written/);
    }
    expect(await written(fx)).toEqual(before);
  });

  it('TheSameKeyForTwoTenantsCreatesTwoBatches', async () => {
    const fx = await fixture('globex');
    const acme = await fx.api('POST', '/v1/batches', body('acme'), keyed('order-1'));
    const globex = await fx.api('POST', '/v1/batches', body('globex'), keyed('order-1'));
    expect([acme.status, globex.status]).toEqual([201, 201]);
    expect(acme.body.batchId).not.toBe(globex.body.batchId);
    expect((await fx.store.getBatch(acme.body.batchId))?.tenantId).toBe('acme');
    expect((await fx.store.getBatch(globex.body.batchId))?.tenantId).toBe('globex');
    expect((await fx.allJobs()).length).toBe(2);
  });

  it('WithoutAKeyEveryRequestCreatesABatch', async () => {
    const fx = await fixture();
    const first = await fx.api('POST', '/v1/batches', body());
    const second = await fx.api('POST', '/v1/batches', body());
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(first.body.batchId).not.toBe(second.body.batchId);
    const row = await fx.store.getBatch(first.body.batchId);
    expect(row).toBeDefined();
    expect(row).not.toHaveProperty('idempotencyKey');
    expect(row).not.toHaveProperty('requestHash');
  });

  it('ABadKeyIs400NamingTheHeaderAndWritesNothing', async () => {
    const fx = await fixture();
    const before = await written(fx);
    for (const bad of ['', 'x'.repeat(256), 'tab\there', 'ünïcode']) {
      const response = await fx.api('POST', '/v1/batches', body(), keyed(bad));
      expect(response.status, JSON.stringify(bad)).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path)).toEqual(['headers.idempotency-key']);
    }
    expect(await written(fx)).toEqual(before);
    // The longest key, spaces and punctuation included, is fine.
    expect((await fx.api('POST', '/v1/batches', body(), keyed(`${'k'.repeat(127)} ~!"{}${'k'.repeat(122)}`))).status).toBe(201);
  });

  it('TwentyConcurrentRequestsWithOneKeyCreateOneBatchOneListAndOneDialer', async () => {
    const fx = await fixture();
    const request = body('acme', 600); // two list pages
    const answers = await Promise.all(Array.from({ length: 20 }, () => fx.api('POST', '/v1/batches', request, keyed('campaign-7'))));
    const batchId = batchIdForKey('acme', 'campaign-7');
    expect(answers.map((a) => a.status).sort()).toEqual([...Array<number>(19).fill(200), 201]);
    expect(new Set(answers.map((a) => a.body.batchId))).toEqual(new Set([batchId]));

    const items = await fx.callsItems();
    expect(items.filter((i) => i['sk'] === 'BATCH').map((i) => i['batchId'])).toEqual([batchId]);
    expect(items.filter((i) => String(i['sk']).startsWith('LIST#')).map((i) => [i['pk'], i['sk']])).toEqual([
      [batchPartition(batchId), 'LIST#001#00000'],
      [batchPartition(batchId), 'LIST#001#00001'],
    ]);
    expect((await fx.allJobs()).map((j) => j.id)).toEqual([`calls.dial:${batchId}:1`]);
    expect(fx.transport.counts.sendMessage).toBe(1);
  });
});

describe('canonicalJson', () => {
  it('SortsObjectKeysAtEveryDepthAndKeepsArrayOrder', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { y: 1, x: 2 }], c: 'é' }, u: undefined })).toBe('{"a":{"c":"é","d":[3,{"x":2,"y":1}]},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });
});
