import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookEvent } from './events.ts';

/**
 * Standard Webhooks (standardwebhooks.com) signing, through the `standardwebhooks` package. Every attempt
 * of a delivery carries the event id as `webhook-id` (receivers dedupe on it) and its own time as
 * `webhook-timestamp`; the body is `{type, timestamp, data}`, the same bytes on every attempt.
 */

/**
 * A new signing secret: `whsec_` and 32 random bytes, base64 (the format the package reads). From the
 * operating system's CSPRNG on purpose, not the injected (seedable) RNG: a secret must not be predictable.
 */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * The body of an event, as sent: `{type, timestamp, data}`, with the keys of `data` (at every depth) in
 * sorted order. An event travels in DynamoDB items (its delivery's job, its wait-list entry), and DynamoDB
 * keeps no order of a map's keys; sorting them makes every attempt's body the same bytes however the event
 * was stored and read back.
 */
export const eventBody = (event: WebhookEvent): string => JSON.stringify({ type: event.type, timestamp: event.timestamp, data: sortedKeys(event.data) });

/** A JSON value with every object's keys in sorted order. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/**
 * Headers and body of one attempt, signed at `attemptAt` (epoch ms). With several secrets (the new and the
 * previous one, for a day after a rotation: rotation.ts) `webhook-signature` carries one `v1,<signature>`
 * per secret, space-separated, the first secret's first, as Standard Webhooks allows; a receiver that
 * holds either secret verifies it.
 */
export function signedRequest(secrets: string | readonly string[], event: WebhookEvent, attemptAt: number): { headers: Record<string, string>; body: string } {
  const body = eventBody(event);
  // The package signs whole seconds; the header carries the same second.
  const timestamp = new Date(Math.floor(attemptAt / 1000) * 1000);
  const signature = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => new Webhook(secret).sign(event.id, timestamp, body)).join(' ');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'redial-webhooks/0.1',
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp.getTime() / 1000),
      'webhook-signature': signature,
    },
  };
}
