import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DecryptCommand, EncryptCommand } from '@aws-sdk/client-kms';
import type { KMSClient } from '@aws-sdk/client-kms';

/**
 * Encryption of small secrets at rest (webhook endpoints' signing secrets) under a key the host holds: AWS
 * KMS on AWS ({@link KmsSecretKey}), AES-256-GCM under a local key elsewhere ({@link LocalSecretKey}).
 * Callers see one interface, so the stores and their tests run the same code on both.
 *
 * Every ciphertext is bound to its {@link EncryptionContext}: decrypting with another context fails, so a
 * ciphertext copied to another row (another endpoint, another tenant) is useless there.
 */
export interface SecretKey {
  /** Encrypts `plaintext` (at most 4 KB), bound to `context`; the result is text, to store as it is. */
  encrypt(plaintext: string, context: EncryptionContext): Promise<string>;
  /** Decrypts what {@link SecretKey.encrypt} returned, under the same context; anything else throws {@link SecretKeyError}. */
  decrypt(ciphertext: string, context: EncryptionContext): Promise<string>;
}

/** Non-secret names of what is encrypted (KMS logs them in CloudTrail). */
export type EncryptionContext = Readonly<Record<string, string>>;

/** A ciphertext that does not decrypt under this key and context (tampered, moved, or another key's). */
export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
}

/**
 * AWS KMS: Encrypt and Decrypt with a symmetric key, directly (a signing secret is far below KMS's 4 KB
 * limit, so no data key is needed). Decrypt names the key, so a ciphertext of another key is refused
 * rather than decrypted with whatever key it names. Each call is one request, sent once (the client has
 * retries off, functions/platform/aws.ts).
 */
export class KmsSecretKey implements SecretKey {
  private readonly kms: KMSClient;
  private readonly keyId: string;

  constructor(kms: KMSClient, keyId: string) {
    this.kms = kms;
    this.keyId = keyId;
  }

  async encrypt(plaintext: string, context: EncryptionContext): Promise<string> {
    const result = await this.kms.send(new EncryptCommand({ KeyId: this.keyId, Plaintext: Buffer.from(plaintext, 'utf8'), EncryptionContext: { ...context } }));
    if (!result.CiphertextBlob) throw new Error('KMS Encrypt returned no ciphertext');
    return Buffer.from(result.CiphertextBlob).toString('base64');
  }

  async decrypt(ciphertext: string, context: EncryptionContext): Promise<string> {
    try {
      const result = await this.kms.send(new DecryptCommand({ KeyId: this.keyId, CiphertextBlob: Buffer.from(ciphertext, 'base64'), EncryptionContext: { ...context } }));
      if (!result.Plaintext) throw new Error('KMS Decrypt returned no plaintext');
      return Buffer.from(result.Plaintext).toString('utf8');
    } catch (error) {
      // A wrong context or a foreign ciphertext; anything else (throttling, access) is thrown as it is.
      if (error instanceof Error && (error.name === 'InvalidCiphertextException' || error.name === 'IncorrectKeyException')) {
        throw new SecretKeyError(`ciphertext does not decrypt under this key and context (${error.name})`, { cause: error });
      }
      throw error;
    }
  }
}

/** The first byte of a local ciphertext: its format, so a later one can be told apart. */
const LOCAL_FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A key on this machine: AES-256-GCM with a random 96-bit IV per secret, the encryption context as
 * additional authenticated data (canonical JSON, keys sorted), so a ciphertext moved to another context
 * fails its tag. Stored as base64 of `format ‖ iv ‖ tag ‖ ciphertext`. For the local runtime and the tests,
 * where there is no KMS; it protects a copy of the tables, not a machine whose key file is readable.
 */
export class LocalSecretKey implements SecretKey {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error(`a local secret key is 32 bytes, got ${key.length}`);
    this.key = key;
  }

  /** A new random key, for one process (secrets sealed under it are unreadable once it exits). */
  static generate(): LocalSecretKey {
    return new LocalSecretKey(randomBytes(32));
  }

  /**
   * The key kept in `path` (created, readable by the owner only, if it does not exist yet): the local
   * runtime keeps it beside its data (DATA_DIR), so endpoints registered before a restart still sign.
   */
  static atPath(path: string): LocalSecretKey {
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true });
      try {
        // Owner-only from the first byte; `wx`: a runtime that created it meanwhile keeps its own.
        writeFileSync(path, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    return new LocalSecretKey(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64'));
  }

  encrypt(plaintext: string, context: EncryptionContext): Promise<string> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(aad(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Promise.resolve(Buffer.concat([Buffer.from([LOCAL_FORMAT]), iv, cipher.getAuthTag(), body]).toString('base64'));
  }

  decrypt(ciphertext: string, context: EncryptionContext): Promise<string> {
    const bytes = Buffer.from(ciphertext, 'base64');
    if (bytes.length < 1 + IV_BYTES + TAG_BYTES || bytes[0] !== LOCAL_FORMAT) return Promise.reject(new SecretKeyError('not a local ciphertext'));
    const iv = bytes.subarray(1, 1 + IV_BYTES);
    const tag = bytes.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(aad(context));
    decipher.setAuthTag(tag);
    try {
      return Promise.resolve(Buffer.concat([decipher.update(bytes.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'));
    } catch (error) {
      return Promise.reject(new SecretKeyError('ciphertext does not decrypt under this key and context', { cause: error }));
    }
  }
}

const aad = (context: EncryptionContext): Buffer =>
  Buffer.from(JSON.stringify(Object.keys(context).sort().map((key) => [key, context[key]])), 'utf8');
