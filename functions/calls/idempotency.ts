import { createHash } from 'node:crypto';
import type { BatchBody } from './schemas.ts';

/**
 * Idempotent batch creation (`Idempotency-Key` on `POST /v1/batches`), with no extra read or item on the
 * normal path: the key decides the batch id, so a retry's batch Put meets the first request's row and its
 * `attribute_not_exists` condition fails. Only then is the stored row compared with the request:
 *
 *   first request  ──► Put BATCH#b_<hash(tenant, key)> if absent ──► 201 {batchId}
 *   a retry        ──► the same Put fails ──► row's requestHash = this body's? ──► 200 {batchId}, nothing written
 *                                                                └─ no ──────► 422 idempotency_key_reused
 */

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The batch id a tenant's key names: `b_` and 32 hex characters, like a random one; tenant-scoped, so keys never collide across tenants. */
export const batchIdForKey = (tenantId: string, key: string): string => `b_${sha256(`${tenantId}\n${key}`).slice(0, 32)}`;

/** JSON with every object's keys sorted, so two equal bodies serialise alike whatever order their fields came in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What a keyed request asked for: the sha256 of its validated body (defaults filled in, unknown fields
 * dropped), so a retry that spells the same batch differently still matches.
 */
export const requestHash = (body: BatchBody): string => sha256(canonicalJson(body));
