import { createHash } from 'node:crypto';
import * as z from 'zod';
import { HttpError } from './http.ts';

/**
 * Client-driven idempotency for creating requests (`Idempotency-Key`), with no extra read or item on the
 * normal path: the key decides the new item's id, so a retry's `attribute_not_exists` Put meets the first
 * request's item and fails. Only then is the stored item compared with the request:
 *
 *   first request  ──► Put <prefix>_<hash(tenant, key)> if absent ──► 201
 *   a retry        ──► the same Put fails ──► stored requestHash = this body's? ──► 200, the first answer, nothing written
 *                                                                  └─ no ──────► 422 idempotency_key_reused
 *
 * Used by `POST /v1/batches` and `POST /v1/endpoints`.
 */

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The 32 hex characters a tenant's key names: tenant-scoped, so keys never collide across tenants. */
export const keyHash = (tenantId: string, key: string): string => sha256(`${tenantId}\n${key}`).slice(0, 32);

/** The id a tenant's key names: `<prefix>_` and {@link keyHash}, like a random one. */
export const idForKey = (prefix: string, tenantId: string, key: string): string => `${prefix}_${keyHash(tenantId, key)}`;

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
 * dropped), so a retry that spells the same request differently still matches.
 */
export const requestHashOf = (body: unknown): string => sha256(canonicalJson(body));

/** The `Idempotency-Key` request header of a creating route; `creates` names what it creates ("batch"). */
export const idempotencyKeyHeaders = (creates: string) =>
  z.object({
    'idempotency-key': z
      .string()
      .regex(/^[\x20-\x7e]{1,255}$/, 'expected 1–255 printable ASCII characters')
      .optional()
      .describe(
        `Makes the request safe to retry: the ${creates} id follows from the tenant and this key, so sending the same body with the same key again ` +
          `answers 200 with the ${creates} already created (and creates nothing); the same key with a different body is a 422. 1–255 printable ASCII characters.`,
      ),
  });

/** 422: the key was used before with a different body (nothing written). */
export const idempotencyKeyReused = (creates: string): HttpError =>
  new HttpError(
    422,
    'idempotency_key_reused',
    `this Idempotency-Key was already used with a different request body; nothing was written. Send the original body to get its ${creates}, or a new key for a new ${creates}`,
  );
