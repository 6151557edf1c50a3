import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { LocalSecretKey, SecretKeyError } from '../../functions/platform/secret-key.ts';
import type { EncryptionContext, SecretKey } from '../../functions/platform/secret-key.ts';
import { createWebhooksContext } from '../../functions/webhooks/context.ts';
import { deliveryJobId, endpointKey } from '../../functions/webhooks/endpoint.ts';
import { sealPlaintextSecrets } from '../../functions/webhooks/seal.ts';
import { SECRET_CACHE_MS } from '../../functions/webhooks/secrets.ts';
import { Receiver, verify, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A local key that counts what it is asked to do: KMS's requests, on AWS. */
class CountingKey implements SecretKey {
  encrypts = 0;
  decrypts = 0;
  private readonly key = LocalSecretKey.generate();

  encrypt(plaintext: string, context: EncryptionContext): Promise<string> {
    this.encrypts++;
    return this.key.encrypt(plaintext, context);
  }

  decrypt(ciphertext: string, context: EncryptionContext): Promise<string> {
    this.decrypts++;
    return this.key.decrypt(ciphertext, context);
  }
}

async function setup() {
  const key = new CountingKey();
  const receiver = await Receiver.start();
  const fx = await webhooksFixture({ secretKey: key });
  closers.push(() => receiver.close(), fx.close);
  const raw = async (endpointId: string) =>
    (await fx.clients.dynamo.send(new GetCommand({ TableName: fx.tableNames.webhooks, Key: endpointKey(endpointId), ConsistentRead: true }))).Item!;
  /** Records an event for t1, fans it out, and runs its delivery to `endpointId`. */
  const deliverOne = async (endpointId: string) => {
    const event = await fx.recordEvent('t1');
    return fx.run(deliveryJobId(event.id, endpointId));
  };
  return { key, receiver, fx, raw, deliverOne };
}

describe('endpoint signing secrets at rest', () => {
  it('RegisteringStoresOnlyTheSecretsCiphertext_BoundToItsEndpointAndTenant', async () => {
    const { key, receiver, fx, raw } = await setup();
    const { endpointId, secret } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });

    const item = await raw(endpointId);
    expect(item).not.toHaveProperty('secret');
    expect(JSON.stringify(item)).not.toContain(secret.slice('whsec_'.length, 30));
    const ciphertext = item['secretCiphertext'] as string;
    expect(key.encrypts).toBe(1);
    expect(await key.decrypt(ciphertext, { endpointId, tenantId: 't1' })).toBe(secret);
    await expect(key.decrypt(ciphertext, { endpointId, tenantId: 't2' })).rejects.toBeInstanceOf(SecretKeyError);
    await expect(key.decrypt(ciphertext, { endpointId: 'ep_other', tenantId: 't1' })).rejects.toBeInstanceOf(SecretKeyError);
  });

  it('ADeliverySignsWithTheDecryptedSecret_AndARegistrationReplayedShowsTheSameSecretAgain', async () => {
    const { receiver, fx, deliverOne } = await setup();
    const first = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() }, 'key-1');
    const replay = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() }, 'key-1');
    expect(replay).toEqual({ ...first, replayed: true });

    expect((await deliverOne(first.endpointId)).result).toBe('completed');
    expect(() => verify(first.secret, receiver.requests[0]!, fx.clock.now())).not.toThrow();
  });

  it('ACiphertextCopiedToAnotherEndpointsRowSignsNothingThere', async () => {
    const { receiver, fx, raw, deliverOne } = await setup();
    const a = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url('/a') });
    const b = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url('/b') });
    await fx.clients.dynamo.send(
      new UpdateCommand({
        TableName: fx.tableNames.webhooks,
        Key: endpointKey(b.endpointId),
        UpdateExpression: 'SET secretCiphertext = :c',
        ExpressionAttributeValues: { ':c': (await raw(a.endpointId))['secretCiphertext'] },
      }),
    );

    const result = await deliverOne(b.endpointId);
    expect(result.result).toBe('retryable');
    expect(receiver.requests.filter((r) => r.path === '/b')).toHaveLength(0);
    const delivery = (await fx.jobs.client.list({ state: 'retryable', kind: 'webhook.deliver' })).jobs[0]!;
    expect(delivery.attempts.at(-1)?.error).toMatch(/does not decrypt under this key and context/);
    // Nothing was sent. The lease its publisher took for it stays its own: its retry is the endpoint's next
    // delivery, and what is published meanwhile waits behind it.
    expect((await raw(b.endpointId))['holder']).toBe(delivery.id);
  });

  it('AnEndpointStoredWithItsSecretInPlaintextKeepsDelivering_AndSealingItKeepsTheSameSecret', async () => {
    const { key, receiver, fx, raw, deliverOne } = await setup();
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    // As an endpoint was stored before secrets were encrypted.
    const legacy = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    await fx.clients.dynamo.send(
      new UpdateCommand({ TableName: fx.tableNames.webhooks, Key: endpointKey(endpointId), UpdateExpression: 'SET secret = :s REMOVE secretCiphertext', ExpressionAttributeValues: { ':s': legacy } }),
    );
    const decryptsBefore = key.decrypts;
    expect((await deliverOne(endpointId)).result).toBe('completed');
    expect(() => verify(legacy, receiver.requests[0]!, fx.clock.now())).not.toThrow();
    expect(key.decrypts).toBe(decryptsBefore);

    expect(await sealPlaintextSecrets(fx.webhooks.deps.store, fx.webhooks.deps.secrets)).toEqual({ sealed: 1, skipped: 0 });
    const sealed = await raw(endpointId);
    expect(sealed).not.toHaveProperty('secret');
    expect(await key.decrypt(sealed['secretCiphertext'] as string, { endpointId, tenantId: 't1' })).toBe(legacy);
    expect((await deliverOne(endpointId)).result).toBe('completed');
    expect(() => verify(legacy, receiver.requests[1]!, fx.clock.now())).not.toThrow();
    // Run again, it finds nothing left to seal.
    expect(await sealPlaintextSecrets(fx.webhooks.deps.store, fx.webhooks.deps.secrets)).toEqual({ sealed: 0, skipped: 0 });
  });

  it('SealingLeavesAnEndpointWhosePlaintextChangedMeanwhileAsItIs', async () => {
    const { fx, receiver, raw } = await setup();
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    await fx.clients.dynamo.send(
      new UpdateCommand({ TableName: fx.tableNames.webhooks, Key: endpointKey(endpointId), UpdateExpression: 'SET secret = :s REMOVE secretCiphertext', ExpressionAttributeValues: { ':s': 'whsec_old' } }),
    );
    const { rows } = await fx.webhooks.deps.store.plaintextSecretEndpoints();
    expect(rows.map((r) => r.endpointId)).toEqual([endpointId]);
    // Sealed by someone else between the read and the write: the conditional write refuses.
    const ciphertext = await fx.webhooks.deps.secrets.seal(rows[0]!, 'whsec_old');
    expect(await fx.webhooks.deps.store.sealSecret(endpointId, 'whsec_old', ciphertext)).toBe(true);
    expect(await fx.webhooks.deps.store.sealSecret(endpointId, 'whsec_old', ciphertext)).toBe(false);
    expect((await raw(endpointId))['secretCiphertext']).toBe(ciphertext);
  });

  it('DeliveriesToOneEndpointAskTheKeyOnceWithinFiveMinutes', async () => {
    const { key, receiver, fx, deliverOne } = await setup();
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    for (let i = 0; i < 3; i++) expect((await deliverOne(endpointId)).result).toBe('completed');
    expect(key.decrypts).toBe(1);
    fx.clock.set(fx.clock.now() + SECRET_CACHE_MS + 1);
    expect((await deliverOne(endpointId)).result).toBe('completed');
    expect(key.decrypts).toBe(2);
    expect(receiver.requests).toHaveLength(4);
  });

  it('AContextGivenNoKey_AsTheIntakeAndTheRescuerAre_CanNeitherRegisterNorSign', async () => {
    const { fx, receiver } = await setup();
    const keyless = createWebhooksContext({
      jobs: fx.jobs.client,
      db: fx.clients.dynamo,
      table: fx.tableNames.webhooks,
      clock: fx.clock,
      logger: createLogger('test'),
      metrics: new MemoryMetrics(),
      webhooks: { allowLoopback: true },
    });
    closers.push(() => keyless.close());
    await expect(keyless.endpoints.register(operatorScope('t1'), { url: receiver.url() })).rejects.toThrow(/may not use the endpoint-secrets key/);
    const row = (await fx.webhooks.deps.store.getEndpoint((await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() })).endpointId))!;
    await expect(keyless.deps.secrets.open(row)).rejects.toThrow(/may not use the endpoint-secrets key/);
  });
});
