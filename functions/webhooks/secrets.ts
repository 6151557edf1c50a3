import type { Clock } from '../platform/clock.ts';
import type { EncryptionContext, SecretKey } from '../platform/secret-key.ts';
import type { EndpointRow } from './endpoint.ts';

/** How long a decrypted secret stays in a container's memory: deliveries to one endpoint within it ask KMS once. */
export const SECRET_CACHE_MS = 5 * 60_000;

/** How many decrypted secrets a container keeps at most (the oldest goes first). */
export const SECRET_CACHE_ENTRIES = 1000;

/**
 * Endpoint signing secrets at rest. A secret is encrypted when its endpoint is registered and stored as
 * `secretCiphertext`; the plaintext is shown once, in the registration's answer, and never stored. The
 * ciphertext is bound to the endpoint and its tenant (the encryption context), so it cannot be moved to
 * another endpoint's row and used there.
 *
 * Endpoints stored before secrets were encrypted carry the plaintext in `secret`: they keep working, read
 * as they are, until `sealPlaintextSecrets` (functions/webhooks/seal.ts) encrypts them in place
 * (docs/operations.md, "Endpoint secrets").
 *
 * Decrypted secrets are kept in memory for {@link SECRET_CACHE_MS}, by ciphertext: a worker delivering to
 * the same endpoint again within it asks KMS nothing (docs/capacity.md counts what it does ask).
 */
export class EndpointSecrets {
  private readonly key: SecretKey;
  private readonly clock: Clock;
  private readonly cache = new Map<string, { secret: string; until: number }>();

  constructor(key: SecretKey, clock: Clock) {
    this.key = key;
    this.clock = clock;
  }

  /** The stored form of a new endpoint's secret. */
  seal(endpoint: Pick<EndpointRow, 'endpointId' | 'tenantId'>, secret: string): Promise<string> {
    return this.key.encrypt(secret, contextOf(endpoint));
  }

  /** The secret an endpoint signs with: its ciphertext decrypted (or remembered), or the plaintext of an endpoint stored before encryption. */
  async open(endpoint: Pick<EndpointRow, 'endpointId' | 'tenantId' | 'secret' | 'secretCiphertext'>): Promise<string> {
    const { secretCiphertext } = endpoint;
    if (secretCiphertext === undefined) {
      if (endpoint.secret === undefined) throw new Error(`endpoint ${endpoint.endpointId} has no secret`);
      return endpoint.secret;
    }
    const now = this.clock.now();
    const cached = this.cache.get(secretCiphertext);
    if (cached && cached.until > now) return cached.secret;
    const secret = await this.key.decrypt(secretCiphertext, contextOf(endpoint));
    this.cache.delete(secretCiphertext);
    if (this.cache.size >= SECRET_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(secretCiphertext, { secret, until: now + SECRET_CACHE_MS });
    return secret;
  }
}

/** The encryption context's keys: lib/redial-stack.ts lets the functions use the key only with exactly these. */
export const SECRET_CONTEXT_KEYS = ['endpointId', 'tenantId'] as const;

/** What a secret's ciphertext is bound to: its endpoint and its tenant. */
export const contextOf = (endpoint: Pick<EndpointRow, 'endpointId' | 'tenantId'>): EncryptionContext =>
  ({ endpointId: endpoint.endpointId, tenantId: endpoint.tenantId }) satisfies Record<(typeof SECRET_CONTEXT_KEYS)[number], string>;
