import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DecryptCommand, EncryptCommand, InvalidCiphertextException, KMSClient, KMSInvalidStateException } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients } from '../../functions/platform/aws.ts';
import { KmsSecretKey, LocalSecretKey, SecretKeyError } from '../../functions/platform/secret-key.ts';

const context = { endpointId: 'ep_1', tenantId: 't1' };
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('LocalSecretKey (AES-256-GCM, KMS’s place locally)', () => {
  it('gives a secret back under the context it was encrypted with, and under no other', async () => {
    const key = LocalSecretKey.generate();
    const sealed = await key.encrypt(secret, context);
    expect(sealed).not.toContain(secret.slice(6));
    expect(await key.decrypt(sealed, { tenantId: 't1', endpointId: 'ep_1' })).toBe(secret);
    const others: Record<string, string>[] = [{ endpointId: 'ep_2', tenantId: 't1' }, { endpointId: 'ep_1', tenantId: 't2' }, { endpointId: 'ep_1' }, { ...context, extra: 'x' }];
    for (const other of others) {
      await expect(key.decrypt(sealed, other), JSON.stringify(other)).rejects.toBeInstanceOf(SecretKeyError);
    }
  });

  it('encrypts the same secret differently every time (a random IV each)', async () => {
    const key = LocalSecretKey.generate();
    expect(await key.encrypt(secret, context)).not.toBe(await key.encrypt(secret, context));
  });

  it('refuses a tampered ciphertext, another key’s, and text that is no ciphertext', async () => {
    const key = LocalSecretKey.generate();
    const sealed = Buffer.from(await key.encrypt(secret, context), 'base64');
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1]! ^= 1;
    await expect(key.decrypt(flipped.toString('base64'), context)).rejects.toBeInstanceOf(SecretKeyError);
    await expect(LocalSecretKey.generate().decrypt(sealed.toString('base64'), context)).rejects.toBeInstanceOf(SecretKeyError);
    await expect(key.decrypt('d2hzZWNfYWJj', context)).rejects.toBeInstanceOf(SecretKeyError);
  });

  it('keeps one key in a file of its own, readable by its owner only, across runtimes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redial-key-'));
    try {
      const path = join(dir, 'data', 'endpoint-secrets.key');
      const sealed = await LocalSecretKey.atPath(path).encrypt(secret, context);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(await LocalSecretKey.atPath(path).decrypt(sealed, context)).toBe(secret);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('KmsSecretKey (AWS KMS)', () => {
  const kms = mockClient(KMSClient);
  afterEach(() => kms.reset());
  const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

  it('sends one Encrypt and one Decrypt, each naming the key and the endpoint’s encryption context', async () => {
    kms.on(EncryptCommand).resolves({ CiphertextBlob: new Uint8Array([1, 2, 3]), KeyId: keyArn });
    kms.on(DecryptCommand).resolves({ Plaintext: new TextEncoder().encode(secret), KeyId: keyArn });
    const key = new KmsSecretKey(new KMSClient({ region: 'eu-west-1', maxAttempts: 1 }), keyArn);

    const sealed = await key.encrypt(secret, context);
    expect(sealed).toBe(Buffer.from([1, 2, 3]).toString('base64'));
    expect(await key.decrypt(sealed, context)).toBe(secret);

    const encrypt = kms.commandCalls(EncryptCommand);
    expect(encrypt).toHaveLength(1);
    expect(encrypt[0]!.args[0].input).toEqual({ KeyId: keyArn, Plaintext: Buffer.from(secret, 'utf8'), EncryptionContext: { endpointId: 'ep_1', tenantId: 't1' } });
    const decrypt = kms.commandCalls(DecryptCommand);
    expect(decrypt).toHaveLength(1);
    expect(decrypt[0]!.args[0].input).toEqual({ KeyId: keyArn, CiphertextBlob: Buffer.from([1, 2, 3]), EncryptionContext: { endpointId: 'ep_1', tenantId: 't1' } });
  });

  it('reports a ciphertext KMS will not decrypt (another context, another key) as a SecretKeyError, and any other failure as it came', async () => {
    const key = new KmsSecretKey(new KMSClient({ region: 'eu-west-1', maxAttempts: 1 }), keyArn);
    const disabled = new KMSInvalidStateException({ message: 'key is disabled', $metadata: {} });
    kms.on(DecryptCommand).rejectsOnce(new InvalidCiphertextException({ message: 'bad', $metadata: {} })).rejectsOnce(disabled);
    await expect(key.decrypt('AQID', context)).rejects.toBeInstanceOf(SecretKeyError);
    await expect(key.decrypt('AQID', context)).rejects.toBe(disabled);
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(2);
  });

  it('is built in functions/platform with its own retries off', async () => {
    const clients = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    expect(await clients.kms.config.maxAttempts()).toBe(1);
  });
});
