/**
 * What one delivery attempt's answer means (the status matrix of docs/webhooks.md, "Delivery"). Pure: the response's
 * status and Retry-After, or the error the request failed with, and the time, in; a classified result out.
 *
 * | answer | result | the job |
 * |---|---|---|
 * | 2xx | delivered | completed; failingSince cleared |
 * | 429 or 503 with a valid Retry-After | throttled | snoozed to that time (≤ 10 h), no attempt spent |
 * | 408, 429/503 without Retry-After, other 5xx, 3xx (never followed), timeout, connection failure | failed | retryable |
 * | 410 | gone | discarded (`gone`); endpoint disabled |
 * | other 4xx | rejected | discarded (`http_4xx`) |
 * | an address the SSRF guard refuses | blocked | discarded (`ssrf_blocked`) |
 */

/** The longest a Retry-After may postpone a delivery. */
export const RETRY_AFTER_CAP_MS = 10 * 3600_000;
/** The shortest: a `Retry-After: 0` must not turn into a busy loop of snoozes that spend no attempt. */
export const RETRY_AFTER_FLOOR_MS = 1_000;

/** A classified attempt. */
export type DeliveryResult =
  | { type: 'delivered'; status: number }
  | { type: 'throttled'; status: number; until: number; retryAfter: string }
  | { type: 'failed'; status?: number; error: string }
  | { type: 'gone'; status: 410 }
  | { type: 'rejected'; status: number }
  | { type: 'blocked'; error: string };

/**
 * Classifies an HTTP answer. Every status lands in exactly one branch; the order of the checks is the
 * table above.
 */
export function classifyResponse(status: number, retryAfter: string | undefined, now: number): DeliveryResult {
  if (status >= 200 && status < 300) return { type: 'delivered', status };
  if (status === 429 || status === 503) {
    const until = retryAfter === undefined ? undefined : parseRetryAfter(retryAfter, now);
    if (until !== undefined && retryAfter !== undefined) return { type: 'throttled', status, until, retryAfter };
    return { type: 'failed', status, error: `HTTP ${status}${retryAfter === undefined ? ' without Retry-After' : ` with an unreadable Retry-After "${retryAfter.slice(0, 64)}"`}` };
  }
  if (status === 410) return { type: 'gone', status };
  if (status === 408) return { type: 'failed', status, error: 'HTTP 408' };
  if (status >= 400 && status < 500) return { type: 'rejected', status };
  if (status >= 300 && status < 400) return { type: 'failed', status, error: `HTTP ${status}: redirects are not followed` };
  return { type: 'failed', status, error: `HTTP ${status}` };
}

/**
 * The time a Retry-After names, capped at {@link RETRY_AFTER_CAP_MS} from now and at least
 * {@link RETRY_AFTER_FLOOR_MS} away; `undefined` when it is neither delay-seconds nor an HTTP date
 * (RFC 9110 §10.2.3).
 */
export function parseRetryAfter(value: string, now: number): number | undefined {
  const text = value.trim();
  let at: number;
  if (/^\d+$/.test(text)) {
    at = now + Number(text) * 1000;
  } else {
    // IMF-fixdate, or the obsolete RFC 850 / asctime forms, which Date.parse also reads; a bare number
    // or an ISO string is not an HTTP date.
    if (!/^[A-Za-z]{3}/.test(text)) return undefined;
    at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
  }
  return Math.min(now + RETRY_AFTER_CAP_MS, Math.max(now + RETRY_AFTER_FLOOR_MS, at));
}
