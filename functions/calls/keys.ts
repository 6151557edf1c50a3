import { createHash, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { TENANT_ID_PATTERN, tenantKeyPrefix } from '../platform/tenancy.ts';
import type { ApiKeyVerifier } from '../platform/tenancy.ts';

/**
 * Tenants' API keys (docs/operations.md, "API keys"). An operator issues one (`POST
 * /v1/tenants/{tenantId}/keys`); the tenant sends it as `Authorization: Bearer <key>` and acts for itself
 * on the tenant routes. A key is
 *
 * ```
 *   rdl_<tenantId>.<keyId>.<secret>        keyId  k_ and 16 hex (8 random bytes): names the key, never secret
 *                                          secret 43 base64url characters (32 random bytes)
 * ```
 *
 * and is stored only as the SHA-256 of the whole key, in its tenant's partition
 * (`TENANT#<tenantId>#KEYS` / `KEY#<keyId>`): the key itself names the item, so checking one is one
 * consistent GetItem (cached per container for {@link KEY_CACHE_MS}) and a constant-time comparison of
 * hashes. `rdl_` makes a leaked key recognisable to secret scanners.
 */

/** Every key starts with this. */
export const API_KEY_PREFIX = 'rdl_';

const KEY_ID = /^k_[0-9a-f]{16}$/;
const API_KEY = new RegExp(`^${API_KEY_PREFIX}(${TENANT_ID_PATTERN})\\.(k_[0-9a-f]{16})\\.([A-Za-z0-9_-]{43})$`);

/** A key id (`k_` and 16 hex), as a route's path parameter. */
export const keyIdSchema = z.string().regex(KEY_ID, 'not a key id (k_ and 16 hex characters)');

/**
 * How long a container trusts what it read of a key. A key revoked is refused by every container within
 * this (the lookup itself is a consistent read), well within the 60 s the API promises.
 */
export const KEY_CACHE_MS = 30_000;
/** A key's `lastUsedAt` is written at most this often (a conditional write: once across containers too). */
export const LAST_USED_EVERY_MS = 60_000;
/** At most this many keys are cached per container; the oldest goes first. */
const KEY_CACHE_MAX = 10_000;

/** A key's item, as stored (never the key: its hash). */
export interface ApiKeyRow {
  pk: string;
  sk: string;
  tenantId: string;
  keyId: string;
  /** SHA-256 of the whole key, hex. */
  hash: string;
  createdAt: string;
  lastUsedAt?: string;
  revokedAt?: string;
}

/** The partition of a tenant's keys. */
export const apiKeysPartition = (tenantId: string): string => `${tenantKeyPrefix(tenantId)}KEYS`;
export const apiKeyKey = (tenantId: string, keyId: string) => ({ pk: apiKeysPartition(tenantId), sk: `KEY#${keyId}` });

/** What `GET /v1/tenants/{tenantId}/keys` shows of a key: never its hash. */
export const apiKeyViewSchema = z.object({
  keyId: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable().describe('when it was last used, to the minute (written at most once a minute)'),
  revokedAt: z.string().nullable(),
});
export type ApiKeyView = z.infer<typeof apiKeyViewSchema>;
export const apiKeyView = (row: ApiKeyRow): ApiKeyView => ({ keyId: row.keyId, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt ?? null, revokedAt: row.revokedAt ?? null });

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** A new key for a tenant: what the operator is shown once (`key`), and what is stored (`hash`). `random(n)` gives n random bytes. */
export function newApiKey(tenantId: string, random: (bytes: number) => Buffer): { keyId: string; key: string; hash: string } {
  const keyId = `k_${random(8).toString('hex')}`;
  const key = `${API_KEY_PREFIX}${tenantId}.${keyId}.${random(32).toString('base64url')}`;
  return { keyId, key, hash: sha256(key) };
}

/** The tenant and key id a presented key names, if it has a key's shape. */
export function parseApiKey(presented: string): { tenantId: string; keyId: string } | undefined {
  const match = API_KEY.exec(presented);
  return match ? { tenantId: match[1]!, keyId: match[2]! } : undefined;
}

/** Whether a presented key is the one a stored hash was made from, compared in constant time. */
export function matchesHash(presented: string, storedHash: string): boolean {
  const stored = Buffer.from(storedHash, 'hex');
  const given = Buffer.from(sha256(presented), 'hex');
  return stored.length === given.length && timingSafeEqual(stored, given);
}

/** What {@link ApiKeys} reads and writes (functions/calls/store.ts). */
export interface ApiKeyStore {
  getApiKey(tenantId: string, keyId: string): Promise<ApiKeyRow | undefined>;
  /** Sets `lastUsedAt` to `now` unless it is younger than `everyMs`; false when it was (or the key is gone). */
  touchApiKey(tenantId: string, keyId: string, now: number, everyMs: number): Promise<boolean>;
}

/**
 * The tenant auth step's key check, with a per-container cache (functions/platform/http.ts asks it for
 * every tenant route request):
 *
 * ```
 *  presented ─► shape rdl_<tenant>.<keyId>.<secret>? ── no ──────────────────► refused (no read)
 *            ─► the key's item: cached < KEY_CACHE_MS, else one consistent GetItem
 *                 none, or revoked ─────────────────────────────────────────► refused
 *            ─► SHA-256(presented) = its hash (constant time)? ── no ───────► refused
 *            ─► the key's tenant; lastUsedAt written if a minute has passed (at most once a minute)
 * ```
 *
 * Only found items are cached (a key just issued works at once); a revoked one is refused by every
 * container within {@link KEY_CACHE_MS}.
 */
export class ApiKeys implements ApiKeyVerifier {
  private readonly store: ApiKeyStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly cache = new Map<string, { row: ApiKeyRow; until: number }>();
  /** When this container last wrote (or tried to write) each key's lastUsedAt. */
  private readonly touched = new Map<string, number>();

  constructor(deps: { store: ApiKeyStore; clock: Clock; logger: Logger }) {
    this.store = deps.store;
    this.clock = deps.clock;
    this.logger = deps.logger;
  }

  async verify(presented: string): Promise<{ tenantId: string; keyId: string } | undefined> {
    const named = parseApiKey(presented);
    if (!named) return undefined;
    const row = await this.lookup(named.tenantId, named.keyId);
    if (!row || row.revokedAt !== undefined || row.tenantId !== named.tenantId || !matchesHash(presented, row.hash)) return undefined;
    await this.touch(row);
    return { tenantId: row.tenantId, keyId: row.keyId };
  }

  /** Forgets what this container read of a key (its revocation through this container is seen at once). */
  forget(tenantId: string, keyId: string): void {
    this.cache.delete(`${tenantId}/${keyId}`);
  }

  private async lookup(tenantId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const id = `${tenantId}/${keyId}`;
    const now = this.clock.now();
    const hit = this.cache.get(id);
    if (hit && hit.until > now) return hit.row;
    this.cache.delete(id);
    const row = await this.store.getApiKey(tenantId, keyId);
    if (!row) return undefined;
    this.cache.set(id, { row, until: now + KEY_CACHE_MS });
    if (this.cache.size > KEY_CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    return row;
  }

  /** lastUsedAt, at most once a minute per key: this container asks once a minute, and the write's condition makes it once across containers. */
  private async touch(row: ApiKeyRow): Promise<void> {
    const now = this.clock.now();
    const id = `${row.tenantId}/${row.keyId}`;
    if ((this.touched.get(id) ?? Number.NEGATIVE_INFINITY) > now - LAST_USED_EVERY_MS) return;
    if (row.lastUsedAt !== undefined && Date.parse(row.lastUsedAt) > now - LAST_USED_EVERY_MS) return;
    this.touched.set(id, now);
    if (this.touched.size > KEY_CACHE_MAX) this.touched.delete(this.touched.keys().next().value!);
    try {
      await this.store.touchApiKey(row.tenantId, row.keyId, now, LAST_USED_EVERY_MS);
    } catch (error) {
      // The request goes on: lastUsedAt is a hint, and the next minute writes it.
      this.logger.warn('lastUsedAt not written', { tenantId: row.tenantId, keyId: row.keyId, error: error instanceof Error ? error.name : String(error) });
    }
  }
}
