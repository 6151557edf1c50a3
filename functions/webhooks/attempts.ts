import * as z from 'zod';
import { retrySchedule } from '../jobs/index.ts';
import type { Policy, RunOutcome } from '../jobs/index.ts';
import { tenantKeyPrefix } from '../platform/tenancy.ts';
import type { DeliveryResult } from './classify.ts';
import { endpointIds } from './endpoint.ts';
import { EVENT_RETENTION_SECONDS, eventTypes } from './events.ts';
import type { EventType, WebhookEvent } from './events.ts';

/**
 * The attempt log (docs/webhooks.md, "The attempt log"): one item per attempt to send an event to an
 * endpoint — a job's own attempt and a send from the wait list alike — kept 30 days, in the endpoint's own
 * partition sorted by the attempt's time:
 *
 * | item | pk | sk |
 * |---|---|---|
 * | an attempt | `TENANT#<tenantId>#ATTEMPTS#<hex>` | `AT#<attempt time>#<event id>#<attempt>` |
 *
 * An attempt that delivered (a 2xx) also carries the keys of the sparse `byReceived` index
 * (`receivedBy = TENANT#<tenantId>#RECEIVED#<hex>`, `receivedEvent = <event id>`): a recovery (recover.ts)
 * asks it, by key, whether an event reached the endpoint. So each attempt is one PutItem and nothing else
 * (one write unit, and one more for the index entry of a delivered one).
 */

/** The outcome of one attempt, as the log names it: the classified answer (classify.ts). */
export const attemptResults = ['delivered', 'throttled', 'failed', 'gone', 'rejected', 'blocked'] as const;
export type AttemptResult = (typeof attemptResults)[number];

/** An attempt as stored. Times ISO-8601 UTC. */
export interface AttemptRow {
  pk: string;
  sk: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  /** The delivery's attempt number (1 for a send from the wait list: its first). */
  attempt: number;
  at: string;
  result: AttemptResult;
  /** The HTTP status the endpoint answered; absent when it never answered. */
  status?: number;
  /** Why there was no answer: `timeout`, `connection_refused`, `connection_reset`, `dns`, `ssrf_blocked`, `network`. */
  errorClass?: string;
  /** A short description of the failure, when there was one. */
  error?: string;
  durationMs: number;
  /**
   * When the delivery tries again: a snooze's exact time, or a retry's nominal time (its backoff before the
   * job layer's ±10 % jitter); absent when it will not (delivered, discarded, attempts used up).
   */
  nextRetryAt?: string;
  /** Who sent it: its own job, or the lease holder sending from the wait list. */
  source: 'job' | 'wait_list';
  /** `byReceived`'s keys: on a delivered attempt only. */
  receivedBy?: string;
  receivedEvent?: string;
  expiresAt: number;
}

/** The partition of an endpoint's attempt log. */
export function attemptsPartition(endpointId: string): string {
  const id = endpointIds.parse(endpointId);
  if (!id) throw new RangeError(`not an endpoint id: ${endpointId}`);
  return `${tenantKeyPrefix(id.tenantId)}ATTEMPTS#${id.hex}`;
}

/** The `byReceived` partition of an endpoint: the events it received. */
export function receivedPartition(endpointId: string): string {
  const id = endpointIds.parse(endpointId);
  if (!id) throw new RangeError(`not an endpoint id: ${endpointId}`);
  return `${tenantKeyPrefix(id.tenantId)}RECEIVED#${id.hex}`;
}

/** The sort key of an attempt; attempts at one instant sort by event, then attempt number. */
export const attemptSortKey = (at: string, eventId: string, attempt: number): string => `AT#${at}#${eventId}#${String(attempt).padStart(2, '0')}`;

/** The error class of an attempt that got no answer, from the description the delivery made of its error. */
export function errorClassOf(result: DeliveryResult): string | undefined {
  if (result.type === 'blocked') return 'ssrf_blocked';
  if (result.type !== 'failed' || result.status !== undefined) return undefined;
  const text = result.error;
  // The client rejects with the signal's TimeoutError when its deadline ends a request; `ECONNRESET: aborted`
  // is the peer closing mid-body, a reset.
  if (/Timeout|ETIMEDOUT|TIMEOUT|AbortError/.test(text)) return 'timeout';
  if (/ECONNREFUSED/.test(text)) return 'connection_refused';
  if (/ECONNRESET|EPIPE|socket hang up|other side closed/.test(text)) return 'connection_reset';
  if (/ENOTFOUND|EAI_AGAIN|does not resolve|HostResolution/.test(text)) return 'dns';
  return 'network';
}

/**
 * When a delivery tries again after this attempt's outcome: a snooze's time; a retry's nominal time from
 * the kind's schedule (the job layer adds ±10 % jitter); nothing when it is finished. Pure.
 */
export function nextRetryOf(outcome: RunOutcome, at: number, attempt: number, policy: Policy): number | undefined {
  switch (outcome.type) {
    case 'snoozed':
      return outcome.until ?? at + (outcome.delayMs ?? 0);
    case 'retryable': {
      if (attempt >= policy.maxAttempts) return undefined;
      const row = retrySchedule(policy)[attempt - 1];
      return row ? at + row.delayMs : undefined;
    }
    case 'completed':
    case 'discarded':
      return undefined;
    default:
      return undefined;
  }
}

/** The attempt row of one attempt. Pure. */
export function attemptRow(input: {
  endpointId: string;
  event: WebhookEvent;
  attempt: number;
  startedAt: number;
  durationMs: number;
  result: DeliveryResult;
  nextRetryAt: number | undefined;
  source: AttemptRow['source'];
}): AttemptRow {
  const at = new Date(input.startedAt).toISOString();
  const { result } = input;
  const status = 'status' in result ? result.status : undefined;
  const errorClass = errorClassOf(result);
  const error = 'error' in result ? result.error.slice(0, 300) : undefined;
  return {
    pk: attemptsPartition(input.endpointId),
    sk: attemptSortKey(at, input.event.id, input.attempt),
    endpointId: input.endpointId,
    eventId: input.event.id,
    eventType: input.event.type,
    attempt: input.attempt,
    at,
    result: result.type,
    ...(status !== undefined ? { status } : {}),
    ...(errorClass !== undefined ? { errorClass } : {}),
    ...(error !== undefined ? { error } : {}),
    durationMs: Math.max(0, Math.round(input.durationMs)),
    ...(input.nextRetryAt !== undefined ? { nextRetryAt: new Date(input.nextRetryAt).toISOString() } : {}),
    source: input.source,
    ...(result.type === 'delivered' ? { receivedBy: receivedPartition(input.endpointId), receivedEvent: input.event.id } : {}),
    expiresAt: Math.floor(input.startedAt / 1000) + EVENT_RETENTION_SECONDS,
  };
}

/** One attempt as `GET /v1/endpoints/{id}/attempts` shows it. */
export const attemptViewSchema = z.object({
  eventId: z.string(),
  eventType: z.enum(eventTypes),
  attempt: z.number().int(),
  at: z.string(),
  result: z.enum(attemptResults),
  status: z.number().int().nullable().describe('the HTTP status the endpoint answered; null when it never answered'),
  errorClass: z.string().nullable().describe('why there was no answer: timeout, connection_refused, connection_reset, dns, ssrf_blocked, network'),
  error: z.string().nullable(),
  durationMs: z.number().int(),
  nextRetryAt: z.string().nullable().describe('when the delivery tries again (a retry: its nominal time, ±10 % jitter); null when it will not'),
  source: z.enum(['job', 'wait_list']),
});
export type AttemptView = z.infer<typeof attemptViewSchema>;

export const attemptView = (row: AttemptRow): AttemptView => ({
  eventId: row.eventId,
  eventType: row.eventType,
  attempt: row.attempt,
  at: row.at,
  result: row.result,
  status: row.status ?? null,
  errorClass: row.errorClass ?? null,
  error: row.error ?? null,
  durationMs: row.durationMs,
  nextRetryAt: row.nextRetryAt ?? null,
  source: row.source,
});

/** What the attempt log can be filtered by: times on the attempt's time (`since` inclusive, `until` exclusive). */
export interface AttemptFilter {
  since?: string | undefined;
  until?: string | undefined;
  /** A result name, or an HTTP status. */
  status?: AttemptResult | number | undefined;
  eventType?: EventType | undefined;
}
