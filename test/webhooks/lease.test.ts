import { describe, expect, it } from 'vitest';
import { retrySchedule } from '../../functions/jobs/index.ts';
import { webhookDeliverKind } from '../../functions/webhooks/kinds.ts';
import { admit, afterAttempt, COOLDOWN_MS, DISABLE_AFTER_MS, LEASE_MS, leaseOf } from '../../functions/webhooks/lease.ts';
import type { AttemptContext, LeaseState } from '../../functions/webhooks/lease.ts';

const NOW = Date.parse('2026-01-05T09:00:00.000Z');
const policy = webhookDeliverKind.policy;
const at = (attempt: number, now = NOW): AttemptContext => ({ now, attempt, maxAttempts: 18, policy });
const healthy: LeaseState = { disabled: false, holder: 'me', busyUntil: NOW + LEASE_MS };

describe('admission', () => {
  it('a free or expired lease is taken, a live one of another parks, a disabled endpoint discards', () => {
    expect(admit({ disabled: false }, 'me', NOW)).toEqual({ type: 'send', acquire: true });
    expect(admit({ disabled: false, holder: 'old', busyUntil: NOW - 1 }, 'me', NOW)).toEqual({ type: 'send', acquire: true });
    expect(admit({ disabled: false, holder: 'other', busyUntil: NOW + 1 }, 'me', NOW)).toEqual({ type: 'park' });
    expect(admit({ disabled: false, holder: 'me', busyUntil: NOW - 1 }, 'me', NOW)).toEqual({ type: 'send', acquire: false });
    expect(admit({ disabled: true }, 'me', NOW)).toEqual({ type: 'disabled' });
    expect(leaseOf({ disabled: false, holder: 'other', busyUntil: NOW }, 'me', NOW)).toBe('taken');
  });

  it('a failing endpoint rests until nextProbeAt: whoever gets the lease before then waits with it', () => {
    const failing: LeaseState = { disabled: false, failingSince: NOW - 60_000, nextProbeAt: NOW + 1000 };
    expect(admit(failing, 'me', NOW)).toEqual({ type: 'wait', until: NOW + 1000, acquire: true });
    expect(admit({ ...failing, holder: 'me', busyUntil: NOW + LEASE_MS }, 'me', NOW)).toEqual({ type: 'wait', until: NOW + 1000, acquire: false });
    expect(admit(failing, 'me', NOW + 1000)).toEqual({ type: 'send', acquire: true });
  });
});

describe('afterAttempt', () => {
  it('a success completes, clears failingSince and passes the lease on at once', () => {
    expect(afterAttempt({ ...healthy, failingSince: NOW - 1 }, { type: 'delivered', status: 200 }, at(3))).toEqual({
      job: { type: 'completed' },
      endpoint: { health: 'healthy', nextProbeAt: null, lease: { type: 'pass', armedUntil: null } },
    });
  });

  it('a fresh failure keeps the lease for webhook.deliver\'s 5 s and 5 min retries of the same delivery', () => {
    const [first, second] = retrySchedule(policy);
    const one = afterAttempt(healthy, { type: 'failed', error: 'HTTP 500' }, at(1));
    expect(one.endpoint).toEqual({ health: 'failing', nextProbeAt: NOW + first!.minMs, lease: { type: 'keep', busyUntil: NOW + first!.maxMs + LEASE_MS } });
    expect(one.job).toEqual({ type: 'retryable', error: 'HTTP 500' });
    const two = afterAttempt({ ...healthy, failingSince: NOW - 5_000 }, { type: 'failed', error: 'HTTP 500' }, at(2));
    expect(two.endpoint.lease).toEqual({ type: 'keep', busyUntil: NOW + second!.maxMs + LEASE_MS });
    expect(two.rejoin).toBeUndefined();
  });

  it('past a cooldown of failure, or with a longer backoff, the probe role passes on, armed one cooldown out, and the delivery rejoins the list', () => {
    const third = afterAttempt({ ...healthy, failingSince: NOW - 5_000 }, { type: 'failed', error: 'HTTP 500' }, at(3));
    expect(third.endpoint).toEqual({ health: 'failing', nextProbeAt: NOW + COOLDOWN_MS, lease: { type: 'pass', armedUntil: NOW + COOLDOWN_MS } });
    expect(third.rejoin).toEqual({ notBefore: NOW + retrySchedule(policy)[2]!.minMs });
    const old = afterAttempt({ ...healthy, failingSince: NOW - COOLDOWN_MS }, { type: 'failed', error: 'HTTP 500' }, at(1));
    expect(old.endpoint.lease).toEqual({ type: 'pass', armedUntil: NOW + COOLDOWN_MS });
    const last = afterAttempt(healthy, { type: 'failed', error: 'HTTP 500' }, at(18));
    expect(last.endpoint.lease).toEqual({ type: 'pass', armedUntil: NOW + COOLDOWN_MS });
    expect(last.rejoin).toBeUndefined();
  });

  it('a Retry-After keeps the lease until then and snoozes; the endpoint counts as failing', () => {
    const step = afterAttempt(healthy, { type: 'throttled', status: 429, until: NOW + 60_000, retryAfter: '60' }, at(1));
    expect(step.job).toMatchObject({ type: 'snoozed', until: NOW + 60_000 });
    expect(step.endpoint).toEqual({ health: 'failing', nextProbeAt: NOW + 60_000, lease: { type: 'keep', busyUntil: NOW + 60_000 + LEASE_MS } });
  });

  it('410 disables; other 4xx and a blocked address discard and pass the lease on at once', () => {
    expect(afterAttempt(healthy, { type: 'gone', status: 410 }, at(1))).toMatchObject({ job: { type: 'discarded', reason: 'gone' }, endpoint: { disable: 'gone', lease: { type: 'pass', armedUntil: null } } });
    expect(afterAttempt(healthy, { type: 'rejected', status: 404 }, at(1))).toMatchObject({ job: { type: 'discarded', reason: 'http_4xx' }, endpoint: { health: 'failing', lease: { type: 'pass', armedUntil: null } } });
    expect(afterAttempt(healthy, { type: 'blocked', error: 'x' }, at(1))).toMatchObject({ job: { type: 'discarded', reason: 'ssrf_blocked' } });
    expect(afterAttempt(healthy, { type: 'rejected', status: 404 }, at(1)).endpoint.disable).toBeUndefined();
  });

  it('the disable threshold is five days of 24 h, as a number: 432 000 000 ms after failingSince, not a millisecond sooner', () => {
    const fiveDays = 5 * 24 * 3600 * 1000;
    expect(fiveDays).toBe(432_000_000);
    const failing = { type: 'failed', error: 'HTTP 500' } as const;
    expect(afterAttempt({ ...healthy, failingSince: NOW - (fiveDays - 1) }, failing, at(12)).endpoint.disable).toBeUndefined();
    expect(afterAttempt({ ...healthy, failingSince: NOW - fiveDays }, failing, at(12))).toMatchObject({ job: { reason: 'endpoint_disabled' }, endpoint: { disable: 'failing' } });
  });

  it('any failure five days after failingSince disables the endpoint and discards the delivery', () => {
    const old: LeaseState = { ...healthy, failingSince: NOW - DISABLE_AFTER_MS };
    for (const result of [
      { type: 'failed', error: 'HTTP 500' },
      { type: 'throttled', status: 503, until: NOW + 1000, retryAfter: '1' },
    ] as const) {
      expect(afterAttempt(old, result, at(12))).toMatchObject({ job: { type: 'discarded', reason: 'endpoint_disabled' }, endpoint: { disable: 'failing' } });
    }
    expect(afterAttempt(old, { type: 'rejected', status: 400 }, at(12))).toMatchObject({ job: { reason: 'http_4xx' }, endpoint: { disable: 'failing' } });
    expect(afterAttempt({ ...old, failingSince: NOW - DISABLE_AFTER_MS + 1 }, { type: 'failed', error: 'x' }, at(12)).endpoint.disable).toBeUndefined();
  });
});
