import { describe, expect, it } from 'vitest';
import { seededRng } from '../../functions/platform/rng.ts';
import { baseDelayMs, exponential, policy, retryDelayMs, retrySchedule, schedule, totalScheduleMs } from '../../functions/jobs/policies.ts';
import type { Policy } from '../../functions/jobs/policies.ts';
import { allKinds } from '../../functions/app/system.ts';

/** The policy table as the contexts declare it (what `ops policies` prints), by kind. */
const policies: Record<string, Policy> = Object.fromEntries(allKinds.map((k) => [k.kind, k.policy]));
const policyOf = (kind: string): Policy => {
  const found = policies[kind];
  if (!found) throw new Error(`no kind ${kind} in the table`);
  return found;
};

const s = 1000;
const min = 60 * s;
const h = 60 * min;

describe('policies: the policy table of docs/job-layer.md, exactly', () => {
  it('DefaultBackoff doubles from 1 s and is capped at 15 min', () => {
    const backoff = policyOf('webhook.fanout').backoff;
    expect([1, 2, 3, 4, 9, 10, 11, 30].map((attempt) => baseDelayMs(backoff, attempt))).toEqual([
      1 * s, 2 * s, 4 * s, 8 * s, 256 * s, 512 * s, 900 * s, 900 * s,
    ]);
  });

  it('DefaultBackoff kinds get 10 attempts: 9 waits of 1 s … 256 s, 511 s in all', () => {
    for (const kind of ['webhook.fanout', 'calls.dial', 'calls.watchdog', 'calls.finalise', 'calls.import', 'calls.suppressions.import', 'ops.probe'] as const) {
      const rows = retrySchedule(policyOf(kind));
      expect(rows.map((r) => r.delayMs / s)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256]);
      expect(totalScheduleMs(policyOf(kind))).toBe(511 * s);
      expect(policyOf(kind).onExhausted).toBe('discard_alert');
    }
  });

  it('mail kinds wait 20 s then ×3: 7 waits over 8 attempts, 21 860 s ≈ 6.07 h', () => {
    for (const kind of ['owner.notify', 'access_request.approval_mail', 'owner.email_confirmation'] as const) {
      const rows = retrySchedule(policyOf(kind));
      expect(policyOf(kind).maxAttempts).toBe(8);
      expect(rows.map((r) => r.delayMs / s)).toEqual([20, 60, 180, 540, 1620, 4860, 14580]);
      expect(totalScheduleMs(policyOf(kind))).toBe(21_860 * s);
      expect(totalScheduleMs(policyOf(kind)) / h).toBeCloseTo(6.07, 2);
    }
  });

  it('webhook.deliver waits 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h: 17 waits, ≈ 5.32 days, discarded without alert', () => {
    const policy = policyOf('webhook.deliver');
    const rows = retrySchedule(policy);
    expect(policy.maxAttempts).toBe(18);
    expect(rows).toHaveLength(17);
    expect(rows.slice(0, 6).map((r) => r.delayMs)).toEqual([5 * s, 5 * min, 30 * min, 2 * h, 5 * h, 10 * h]);
    expect(rows.slice(5).every((r) => r.delayMs === 10 * h)).toBe(true);
    expect(totalScheduleMs(policy)).toBe((5 + 300 + 1800 + 7200 + 18000 + 12 * 36000) * s);
    expect(totalScheduleMs(policy) / (24 * h)).toBeCloseTo(5.32, 2);
    expect(policy.onExhausted).toBe('discard');
  });

  it('supplier.invoke waits 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then 2 h: 11 waits, ≈ 11.7 h, discarded with an alert', () => {
    const policy = policyOf('supplier.invoke');
    const rows = retrySchedule(policy);
    expect(policy.maxAttempts).toBe(12);
    expect(rows.map((r) => r.delayMs / s)).toEqual([5, 30, 120, 600, 1800, 3600, 7200, 7200, 7200, 7200, 7200]);
    expect(totalScheduleMs(policy) / h).toBeCloseTo(11.71, 2);
    expect(policy.onExhausted).toBe('discard_alert');
  });

  it('printed schedules show the ±10 % jitter range and the cumulative time', () => {
    const [first, second] = retrySchedule(policyOf('owner.notify'));
    expect(first).toEqual({ afterAttempt: 1, delayMs: 20 * s, minMs: 18 * s, maxMs: 22 * s, cumulativeMs: 20 * s });
    expect(second).toEqual({ afterAttempt: 2, delayMs: 60 * s, minMs: 54 * s, maxMs: 66 * s, cumulativeMs: 80 * s });
  });
});

describe('policies: the table is assembled from the contexts', () => {
  it('lists every kind once, the table\'s and redial\'s own, with the periodic sweep on one attempt', () => {
    expect(allKinds.map((k) => k.kind).sort()).toEqual(
      [
        'access_request.approval_mail', 'calls.deferred_watchdog', 'calls.dial', 'calls.finalise', 'calls.import', 'calls.pause_expiry', 'calls.start', 'calls.suppressions.import', 'calls.watchdog', 'ops.probe', 'owner.email_confirmation',
        'owner.notify', 'supplier.invoke', 'webhook.deliver', 'webhook.fanout', 'webhook.notice', 'webhook.purge', 'webhook.recover', 'webhook.restart', 'webhook.sweep', 'webhook.wake',
      ],
    );
    expect(policyOf('webhook.sweep')).toMatchObject({ maxAttempts: 1, backoff: { type: 'none' }, onExhausted: 'next_period' });
    expect(retrySchedule(policyOf('webhook.sweep'))).toEqual([]);
  });

  it('builders: policy() defaults to ±10 % jitter and an alert, exponential() is uncapped unless told, schedule() needs a delay', () => {
    const mail = policy({ maxAttempts: 8, backoff: exponential({ initialSeconds: 20, factor: 3 }) });
    expect(mail).toEqual(policyOf('owner.notify'));
    expect(mail).toMatchObject({ jitter: 0.1, onExhausted: 'discard_alert' });
    expect(baseDelayMs(exponential({ initialSeconds: 1, factor: 2, capSeconds: 4 }), 10)).toBe(4 * s);
    expect(baseDelayMs(schedule([5, 300]), 7)).toBe(300 * s);
    expect(() => schedule([])).toThrow(RangeError);
    expect(() => policy({ maxAttempts: 0, backoff: schedule([1]) })).toThrow(RangeError);
  });
});

describe('jitter', () => {
  it('stays within ±10 % of every delay of every policy, and spreads across that range', () => {
    const rng = seededRng(7);
    for (const policy of Object.values(policies)) {
      for (let attempt = 1; attempt < policy.maxAttempts; attempt++) {
        const base = baseDelayMs(policy.backoff, attempt);
        let low = Infinity;
        let high = -Infinity;
        for (let i = 0; i < 400; i++) {
          const delay = retryDelayMs(policy, attempt, rng);
          low = Math.min(low, delay);
          high = Math.max(high, delay);
          expect(delay).toBeGreaterThanOrEqual(Math.floor(base * 0.9));
          expect(delay).toBeLessThanOrEqual(Math.ceil(base * 1.1));
        }
        // A batch that failed together does not retry at one instant: draws cover most of the band.
        expect(high - low).toBeGreaterThan(base * 0.15);
      }
    }
  });

  it('is deterministic for a seed', () => {
    const draw = (seed: number) => {
      const rng = seededRng(seed);
      return Array.from({ length: 5 }, (_, i) => retryDelayMs(policyOf('webhook.deliver'), i + 1, rng));
    };
    expect(draw(3)).toEqual(draw(3));
    expect(draw(3)).not.toEqual(draw(4));
  });
});
