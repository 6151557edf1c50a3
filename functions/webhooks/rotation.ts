import type { EndpointRow } from './endpoint.ts';
import type { EndpointSecrets } from './secrets.ts';

/**
 * Secret rotation (`POST /v1/endpoints/{id}/rotate-secret`, docs/webhooks.md "Rotating the secret"):
 *
 * ```
 *   rotate at t ──► new secret signs from now on; the old one signs too until t + 24 h
 *                   webhook-signature: "v1,<new> v1,<old>"  ──(t + 24 h)──►  "v1,<new>"
 *   rotate again ─► the secret that signed becomes the previous one; the one before it ends (two at most)
 *   expireOldNow ─► no previous one: only the new secret signs, at once
 * ```
 *
 * Both are sealed (secrets.ts), each bound to its endpoint and tenant; time is the injected clock's.
 */

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;

/** Whether the endpoint's previous secret still signs at `now`. */
export const previousLive = (row: Pick<EndpointRow, 'previousSecretCiphertext' | 'previousSecretUntil'>, now: number): boolean =>
  row.previousSecretCiphertext !== undefined && row.previousSecretUntil !== undefined && Date.parse(row.previousSecretUntil) > now;

/** The secrets a delivery to `row` signs with at `now`: the current one first, then the previous one while it lives. */
export async function signingSecrets(secrets: EndpointSecrets, row: EndpointRow, now: number): Promise<string[]> {
  const current = await secrets.open(row);
  if (!previousLive(row, now)) return [current];
  return [current, await secrets.open({ endpointId: row.endpointId, tenantId: row.tenantId, secretCiphertext: row.previousSecretCiphertext! })];
}

/**
 * What a rotation at `now` writes: the new secret's ciphertext, and the current one's as the previous
 * (sealed now if it was still stored in plaintext), unless `expireOldNow`.
 */
export async function rotationOf(
  secrets: EndpointSecrets,
  row: EndpointRow,
  secret: string,
  now: number,
  expireOldNow: boolean,
): Promise<{ ciphertext: string; previous?: { ciphertext: string; until: number } }> {
  const ciphertext = await secrets.seal(row, secret);
  if (expireOldNow) return { ciphertext };
  const old = row.secretCiphertext ?? (row.secret !== undefined ? await secrets.seal(row, row.secret) : undefined);
  return old === undefined ? { ciphertext } : { ciphertext, previous: { ciphertext: old, until: now + PREVIOUS_SECRET_MS } };
}
