import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { SignatureError } from './errors.ts';

/** How far a webhook's timestamp may be from now, either way (Standard Webhooks' default). */
export const SIGNATURE_TOLERANCE_SECONDS = 5 * 60;


/**
 * A Standard Webhooks verifier on an injected clock. The `standardwebhooks` package computes the
 * signature; the timestamp is checked here against `nowMs`, because the package reads `Date.now()`
 * itself, and tests run on a fake clock. Returns nothing: the caller parses and validates the body it already has.
 *
 * @example
 * const verify = callWebhookVerifier('whsec_…');
 * verify(headers, rawBody, clock.now()); // throws SignatureError
 */
export function callWebhookVerifier(secret: string): (headers: Record<string, string | undefined>, rawBody: string, nowMs: number) => void {
  const signer = new Webhook(secret);
  return (headers, rawBody, nowMs) => {
    const id = headers['webhook-id'];
    const timestampHeader = headers['webhook-timestamp'];
    const signatures = headers['webhook-signature'];
    if (!id || !timestampHeader || !signatures) throw new SignatureError('missing_headers');
    if (!/^\d{1,12}$/.test(timestampHeader)) throw new SignatureError('invalid_timestamp');
    const timestamp = Number(timestampHeader);
    const now = Math.floor(nowMs / 1000);
    if (now - timestamp > SIGNATURE_TOLERANCE_SECONDS) throw new SignatureError('timestamp_too_old');
    if (timestamp - now > SIGNATURE_TOLERANCE_SECONDS) throw new SignatureError('timestamp_too_new');
    const expected = Buffer.from(signer.sign(id, new Date(timestamp * 1000), rawBody).slice('v1,'.length));
    for (const candidate of v1Signatures(signatures)) {
      const given = Buffer.from(candidate);
      if (given.length === expected.length && timingSafeEqual(given, expected)) return;
    }
    throw new SignatureError('no_matching_signature');
  };
}

/**
 * The `v1` signatures in a `webhook-signature` value. Several are space-separated (key rotation); two
 * header lines reach us joined with ", " (or "," by API Gateway), so each space-separated part is read as
 * `version,signature` pairs: `v1,a, v1,b` and `v1,a,v1,b` both give `a` and `b`. The `standardwebhooks`
 * library accepts those shapes too (it reads the first pair of each part); other versions are skipped.
 */
export function v1Signatures(header: string): string[] {
  const found: string[] = [];
  for (const part of header.split(' ')) {
    const fields = part.split(',');
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'v1' && fields[i + 1]) found.push(fields[i + 1]!);
  }
  return found;
}

/** Signs a body as the AI call handler does (the local simulator and tests use it). */
export function signCallWebhook(secret: string, id: string, timestampSeconds: number, rawBody: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestampSeconds * 1000), rawBody),
  };
}

/** Whether a string is a secret the verifier accepts: `whsec_` + base64 of at least 16 bytes (or the bare base64). */
export function isWebhookSecret(secret: string): boolean {
  const body = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body) || body.length % 4 !== 0) return false;
  return Buffer.from(body, 'base64').length >= 16;
}
