import * as z from 'zod';
import type { CalendarEvent, CalendarFailure, DeleteResult, FreeBusyResult, GetResult, InsertResult } from './port.ts';

/**
 * What Google's answers mean, pure: a status, headers and body in, a typed result (port.ts) out. The
 * shapes are those of the Calendar v3 reference and its error guide
 * (developers.google.com/workspace/calendar/api/guides/errors); every error body is
 *
 * ```json
 * { "error": { "errors": [ { "domain": "usageLimits", "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded" } ],
 *              "code": 403, "message": "Rate Limit Exceeded" } }
 * ```
 *
 * | answer | result |
 * |---|---|
 * | 2xx with a readable body (none for a delete) | the call's own success |
 * | 2xx with an unreadable body | `unknown` (it may have been applied; the settle job finds out) |
 * | 404 on get | `not_found` ("the requested resource … has never existed") |
 * | 404, 410 on delete | `gone`: 410 `deleted` is "already deleted… no further action is necessary" |
 * | 429; 403 with reason rateLimitExceeded, userRateLimitExceeded, quotaExceeded or dailyLimitExceeded | `rate_limited` |
 * | 401 | `unauthorized` (the access token; the provider drops it) |
 * | 408, 3xx (never followed), 5xx, anything else | `unknown` |
 * | other 4xx (400, other 403s, 404 elsewhere, 409 `duplicate`, 412…) | `rejected` |
 *
 * The guide: "rateLimitExceeded errors can return either 403 or 429 error codes—currently they are
 * functionally similar and should be responded to in the same way". `quotaExceeded` ("Calendar usage
 * limits exceeded") puts the user's calendar in read-only mode for several hours (Google Workspace Admin
 * Help 2905486) and `dailyLimitExceeded` is the project's daily quota: both clear with time, so a
 * compensating delete waits them out on its policy rather than being dropped.
 */

/** Google's 403 reasons that mean "too many requests, for now" (the `errors[].reason` of the error body). */
export const RATE_LIMIT_REASONS: readonly string[] = ['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded', 'dailyLimitExceeded'];

/** A raw answer, as platform/outbound.ts returns it. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

const errorBody = z.object({
  error: z.object({
    errors: z.array(z.object({ domain: z.string().optional(), reason: z.string().optional(), message: z.string().optional() })).optional(),
    code: z.number().optional(),
    message: z.string().optional(),
  }),
});

/** The first `errors[].reason` and the message of a Google error body, when it is one. */
export function errorDetails(text: string): { reason: string | undefined; reasons: string[]; message: string | undefined } {
  const parsed = errorBody.safeParse(parseJson(text));
  if (!parsed.success) return { reason: undefined, reasons: [], message: undefined };
  const reasons = (parsed.data.error.errors ?? []).flatMap((e) => (e.reason ? [e.reason] : []));
  return { reason: reasons[0], reasons, message: parsed.data.error.message };
}

/** Classifies an answer that is not the call's own success (see the table above). */
export function classifyFailure(answer: RawAnswer): CalendarFailure {
  const { status } = answer;
  const { reason, reasons, message } = errorDetails(answer.text);
  const retryAfter = answer.headers['retry-after'];
  if (status === 429 || (status === 403 && reasons.some((r) => RATE_LIMIT_REASONS.includes(r)))) {
    return { type: 'rate_limited', status, reason: reasons.find((r) => RATE_LIMIT_REASONS.includes(r)) ?? reason ?? 'tooManyRequests', ...(retryAfter ? { retryAfter } : {}) };
  }
  if (status === 401) return { type: 'unauthorized', status, ...(reason ? { reason } : {}) };
  if (status === 408) return { type: 'unknown', status, error: 'HTTP 408' };
  if (status >= 400 && status < 500) return { type: 'rejected', status, ...(reason ? { reason } : {}), message: message ?? `HTTP ${status}` };
  if (status >= 300 && status < 400) return { type: 'unknown', status, error: `HTTP ${status}: redirects are not followed` };
  return { type: 'unknown', status, error: `HTTP ${status}${message ? `: ${message.slice(0, 200)}` : ''}` };
}

/** A request that got no answer at all (timeout, connection refused or reset). */
export function noAnswer(error: unknown): CalendarFailure {
  const name = error instanceof Error ? error.name : '';
  const text = error instanceof Error ? error.message : String(error);
  return { type: 'unknown', error: name === 'TimeoutError' || name === 'AbortError' ? `no answer within the deadline (${name})` : `no answer: ${text.slice(0, 200)}` };
}

// ─── freeBusy.query ──────────────────────────────────────────────────────────────────────────────────

/**
 * The freeBusy answer (calendar v3 reference, freebusy/query):
 * `{ kind: "calendar#freeBusy", timeMin, timeMax, groups: {…}, calendars: { (key): { errors: [{domain, reason}], busy: [{start, end}] } } }`.
 */
const freeBusyBody = z.object({
  calendars: z.record(
    z.string(),
    z.object({
      errors: z.array(z.object({ domain: z.string(), reason: z.string() })).optional(),
      busy: z.array(z.object({ start: z.string(), end: z.string() })).optional(),
    }),
  ),
});

/** A freeBusy answer for one calendar: its busy intervals, or its errors (never "all free" on an error or a missing entry). */
export function readFreeBusy(answer: RawAnswer, providerCalendarId: string): FreeBusyResult {
  if (answer.status < 200 || answer.status >= 300) return classifyFailure(answer);
  const parsed = freeBusyBody.safeParse(parseJson(answer.text));
  if (!parsed.success) return { type: 'unknown', status: answer.status, error: 'unreadable freeBusy answer' };
  const entry = parsed.data.calendars[providerCalendarId];
  if (!entry) return { type: 'calendar_errors', errors: [{ domain: 'redial', reason: 'calendarMissingFromAnswer' }] };
  if (entry.errors && entry.errors.length > 0) return { type: 'calendar_errors', errors: entry.errors };
  const busy: { start: number; end: number }[] = [];
  for (const interval of entry.busy ?? []) {
    const start = Date.parse(interval.start);
    const end = Date.parse(interval.end);
    if (!Number.isFinite(start) || !Number.isFinite(end)) return { type: 'unknown', status: answer.status, error: 'unreadable busy interval' };
    busy.push({ start, end });
  }
  return { type: 'ok', busy };
}

// ─── events ──────────────────────────────────────────────────────────────────────────────────────────

/**
 * The parts of an Events resource redial reads (calendar v3 reference, events): `id`, `status`
 * (`confirmed`, `tentative`, `cancelled`: "The get method always returns them"; a deleted event is only
 * guaranteed to carry its id), `start`/`end` `{dateTime, timeZone}` (or `{date}` for all-day events), and
 * `extendedProperties.private`.
 */
const eventBody = z.object({
  id: z.string(),
  status: z.enum(['confirmed', 'tentative', 'cancelled']).default('confirmed'),
  start: z.object({ dateTime: z.string().optional(), date: z.string().optional() }).optional(),
  end: z.object({ dateTime: z.string().optional(), date: z.string().optional() }).optional(),
  extendedProperties: z.object({ private: z.record(z.string(), z.string()).optional() }).optional(),
});

function readEvent(text: string): CalendarEvent | undefined {
  const parsed = eventBody.safeParse(parseJson(text));
  if (!parsed.success) return undefined;
  const { id, status, start, end, extendedProperties } = parsed.data;
  const at = (t: { dateTime?: string | undefined; date?: string | undefined } | undefined) => {
    const value = t?.dateTime ?? t?.date;
    const ms = value === undefined ? Number.NaN : Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  };
  const startMs = at(start);
  const endMs = at(end);
  return { id, status, ...(startMs !== undefined ? { start: startMs } : {}), ...(endMs !== undefined ? { end: endMs } : {}), tags: extendedProperties?.private ?? {} };
}

/** An events.insert answer: "If successful, this method returns an Events resource in the response body." */
export function readInsert(answer: RawAnswer): InsertResult {
  if (answer.status < 200 || answer.status >= 300) return classifyFailure(answer);
  const event = readEvent(answer.text);
  return event ? { type: 'ok', event } : { type: 'unknown', status: answer.status, error: 'unreadable insert answer' };
}

/** An events.get answer: the event (a deleted one with status `cancelled`), or 404 `notFound`. */
export function readGet(answer: RawAnswer): GetResult {
  // A 410 is not documented for get; if it comes, the event is gone all the same.
  if (answer.status === 404 || answer.status === 410) return { type: 'not_found' };
  if (answer.status < 200 || answer.status >= 300) return classifyFailure(answer);
  const event = readEvent(answer.text);
  return event ? { type: 'ok', event } : { type: 'unknown', status: answer.status, error: 'unreadable get answer' };
}

/** An events.delete answer: "If successful, this method returns an empty response body" (204); 404 and 410 mean it is already gone. */
export function readDelete(answer: RawAnswer): DeleteResult {
  if (answer.status >= 200 && answer.status < 300) return { type: 'deleted' };
  if (answer.status === 404 || answer.status === 410) return { type: 'gone', status: answer.status };
  return classifyFailure(answer);
}

// ─── The token exchange ──────────────────────────────────────────────────────────────────────────────

/**
 * The token endpoint's success (Google's OAuth 2.0 for web server applications, "Refreshing an access
 * token"): `{ "access_token": "1/fFAGRNJru1FTz70BzhT3Zg", "expires_in": 3920, "scope": "…", "token_type": "Bearer" }`.
 */
const tokenBody = z.object({ access_token: z.string().min(1), expires_in: z.number().positive(), token_type: z.string().optional() });

/** An access token and how long it lives, or why there is none. */
export type TokenAnswer =
  | { type: 'ok'; accessToken: string; expiresInSeconds: number }
  | { type: 'refused'; status: number; error: string }
  | { type: 'unavailable'; status?: number; error: string };

/**
 * A token answer. RFC 6749 §5.2: errors are 400 (or 401 for `invalid_client`) with `{error, error_description}`;
 * `invalid_grant` is a refresh token that expired or was revoked. Any 4xx but 408 and 429 is a refusal (the
 * same request gets the same answer); 408, 429, 5xx and unreadable answers are transient.
 */
export function readToken(answer: RawAnswer): TokenAnswer {
  const { status } = answer;
  if (status >= 200 && status < 300) {
    const parsed = tokenBody.safeParse(parseJson(answer.text));
    if (!parsed.success) return { type: 'unavailable', status, error: 'unreadable token answer' };
    if (parsed.data.token_type !== undefined && parsed.data.token_type.toLowerCase() !== 'bearer') return { type: 'refused', status, error: `token_type ${parsed.data.token_type}` };
    return { type: 'ok', accessToken: parsed.data.access_token, expiresInSeconds: parsed.data.expires_in };
  }
  const body = z.object({ error: z.string(), error_description: z.string().optional() }).safeParse(parseJson(answer.text));
  const error = body.success ? `${body.data.error}${body.data.error_description ? `: ${body.data.error_description}` : ''}` : `HTTP ${status}`;
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return { type: 'refused', status, error };
  return { type: 'unavailable', status, error };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
