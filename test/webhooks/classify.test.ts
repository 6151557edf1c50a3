import { describe, expect, it } from 'vitest';
import { classifyResponse, parseRetryAfter, RETRY_AFTER_CAP_MS, RETRY_AFTER_FLOOR_MS } from '../../functions/webhooks/classify.ts';

const NOW = Date.parse('2026-01-05T09:00:00.000Z');

describe('classifyResponse: every status lands in one place', () => {
  it('sorts the whole status range as docs/webhooks.md says', () => {
    const seen = new Map<string, number[]>();
    for (let status = 100; status <= 599; status++) {
      const type = classifyResponse(status, undefined, NOW).type;
      seen.set(type, [...(seen.get(type) ?? []), status]);
    }
    expect(seen.get('delivered')).toEqual(Array.from({ length: 100 }, (_, i) => 200 + i));
    expect(seen.get('gone')).toEqual([410]);
    expect(seen.get('rejected')).toEqual(Array.from({ length: 100 }, (_, i) => 400 + i).filter((s) => ![408, 410, 429].includes(s)));
    const failed = seen.get('failed')!;
    for (const status of [100, 199, 300, 301, 302, 307, 308, 399, 408, 429, 500, 502, 503, 504, 599]) expect(failed, String(status)).toContain(status);
    expect(seen.get('throttled')).toBeUndefined();
  });

  it('throttles only 429 and 503 with a readable Retry-After', () => {
    expect(classifyResponse(429, '30', NOW)).toEqual({ type: 'throttled', status: 429, until: NOW + 30_000, retryAfter: '30' });
    expect(classifyResponse(503, '30', NOW)).toMatchObject({ type: 'throttled', until: NOW + 30_000 });
    expect(classifyResponse(500, '30', NOW).type).toBe('failed');
    expect(classifyResponse(502, '30', NOW).type).toBe('failed');
    expect(classifyResponse(429, 'soon', NOW)).toMatchObject({ type: 'failed', error: expect.stringContaining('unreadable Retry-After') });
    expect(classifyResponse(301, '30', NOW).type).toBe('failed');
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates (IMF-fixdate and the obsolete forms)', () => {
    expect(parseRetryAfter('120', NOW)).toBe(NOW + 120_000);
    expect(parseRetryAfter(' 7 ', NOW)).toBe(NOW + 7_000);
    expect(parseRetryAfter('Mon, 05 Jan 2026 10:00:00 GMT', NOW)).toBe(NOW + 3600_000);
    expect(parseRetryAfter('Monday, 05-Jan-26 10:00:00 GMT', NOW)).toBe(NOW + 3600_000);
    expect(parseRetryAfter('Mon Jan  5 10:00:00 2026', NOW)).toBeDefined();
  });

  it('caps at 10 h and floors at a second, so a Retry-After never postpones longer nor spins', () => {
    expect(parseRetryAfter(String(86_400), NOW)).toBe(NOW + RETRY_AFTER_CAP_MS);
    expect(parseRetryAfter('99999999999999999999', NOW)).toBe(NOW + RETRY_AFTER_CAP_MS);
    expect(parseRetryAfter('Fri, 01 Jan 2100 00:00:00 GMT', NOW)).toBe(NOW + RETRY_AFTER_CAP_MS);
    expect(parseRetryAfter('0', NOW)).toBe(NOW + RETRY_AFTER_FLOOR_MS);
    expect(parseRetryAfter('Mon, 05 Jan 2026 08:00:00 GMT', NOW)).toBe(NOW + RETRY_AFTER_FLOOR_MS);
  });

  it('refuses what is neither', () => {
    for (const value of ['', '-5', '1.5', '2026-01-05T10:00:00Z', 'tomorrow', '12abc', 'Mon, 99 Foo 2026']) expect(parseRetryAfter(value, NOW), value).toBeUndefined();
  });
});
