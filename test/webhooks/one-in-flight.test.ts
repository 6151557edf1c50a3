import { afterEach, describe, expect, it } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import { COOLDOWN_MS, LEASE_MS } from '../../functions/webhooks/lease.ts';
import { UNWATCH_IDLE_MS } from '../../functions/webhooks/sweep.ts';
import { watchValue } from '../../functions/webhooks/store.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const minutes = 60_000;

/** Records `n` events for tenant `t`, eight transactions at a time (as a domain's requests would). */
async function recordMany(fx: Awaited<ReturnType<typeof webhooksFixture>>, n: number) {
  const events: Awaited<ReturnType<typeof fx.recordEvent>>[] = [];
  for (let i = 0; i < n; i += 8) {
    events.push(...(await Promise.all(Array.from({ length: Math.min(8, n - i) }, (_, j) => fx.recordEvent('t', 'call.completed', { i: i + j })))));
  }
  return events;
}

describe('one delivery per endpoint in flight (real workers on the local queues)', () => {
  it('TwoHundredDeliveriesToOneEndpoint_TheReceiverNeverSeesTwoAtOnce_AndEachArrivesExactlyOnce', async () => {
    const receiver = await Receiver.start([{ status: 200, delayMs: 2 }]);
    const fx = await webhooksFixture({ transport: 'local' });
    closers.push(() => receiver.close(), fx.close);
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
    const events = await recordMany(fx, 200);
    await fx.settle(60 * minutes);

    expect(receiver.requests).toHaveLength(200);
    expect(receiver.maxInFlight).toBe(1);
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
    // The deliveries that got a job (those published while the endpoint was free, and any that ran only to
    // find it busy) each made one real attempt; the rest were sent by the lease holder within its run and
    // left no row. Every delivery is counted on the endpoint, once.
    const rows = await fx.deliveryRows(events, endpointId);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.every((r) => r.state === 'completed' && r.attempt === 1 && r.attempts.length === 1)).toBe(true);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
    const endpoint = await fx.webhooks.deps.store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBeUndefined();
    expect(endpoint?.delivered).toBe(200);
    // The lease's writes left the sweep's index alone (`watch` kept at release); the sweep drops the
    // endpoint once it has been idle for UNWATCH_IDLE_MS.
    expect(endpoint?.watch).toBe(watchValue(endpointId));
    await fx.webhooks.sweep(fx.clock.now() + LEASE_MS + UNWATCH_IDLE_MS);
    expect((await fx.webhooks.deps.store.getEndpoint(endpointId))?.watch).toBeUndefined();
  }, 120_000);

  it('WhileAnEndpointFails_OneDeliveryProbesIt_TheOthersWaitWithoutSpendingAttempts_AndGoAtOnceWhenItRecovers', async () => {
    const receiver = await Receiver.start([{ status: 500 }]);
    const fx = await webhooksFixture({ transport: 'local' });
    closers.push(() => receiver.close(), fx.close);
    // When each request arrives, on the fixture's clock (the receiver's own `at` is real time).
    const arrivals: number[] = [];
    receiver.reply(() => (arrivals.push(fx.clock.now()), { status: 500 }));
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
    const start = fx.clock.now();
    const events = await recordMany(fx, 30);

    await fx.settle(60 * minutes);
    const duringOutage = receiver.requests.length;
    // webhook.deliver's 5 s and 5 min retries of the first failure, then one probe per cooldown.
    expect(duringOutage).toBeGreaterThanOrEqual(10);
    expect(duringOutage).toBeLessThanOrEqual(16);
    const gaps = arrivals.slice(1).map((at, i) => at - arrivals[i]!);
    // The first delivery's own 5 s and 5 min retries (± 10 % jitter; an SQS timer rounds up to the second) …
    expect(gaps[0]).toBeGreaterThanOrEqual(4_500);
    expect(gaps[0]).toBeLessThanOrEqual(6_500);
    expect(gaps[1]).toBeGreaterThanOrEqual(270_000);
    expect(gaps[1]).toBeLessThanOrEqual(331_000);
    // … then every probe exactly one cooldown after the last: 5 min, never sooner, never bunched.
    expect(gaps.length).toBeGreaterThanOrEqual(9);
    for (const gap of gaps.slice(2)) expect(gap).toBe(5 * 60_000);
    const rows = await fx.deliveryRows(events, endpointId);
    // Every request was some delivery's real attempt, each probe a job's; nobody else spent one: the
    // deliveries still waiting with no job made none, and a waiting job none either.
    expect(rows.reduce((sum, r) => sum + r.attempt, 0)).toBe(duringOutage);
    expect(rows.length).toBeLessThanOrEqual(duringOutage);
    const waiting = await fx.webhooks.deps.store.waitListHead(endpointId, 100);
    expect(waiting.length + rows.filter((r) => r.state === 'retryable' || r.state === 'snoozed' || r.state === 'scheduled').length).toBeGreaterThanOrEqual(30 - 1);
    expect(rows.every((r) => r.state !== 'discarded' && r.state !== 'completed')).toBe(true);
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).failingSince).toBe(new Date(start).toISOString());

    receiver.reply([{ status: 200 }]);
    const recovered = fx.clock.now();
    await fx.settle(60 * minutes);
    const done = await fx.deliveryRows(events, endpointId);
    expect(done.every((r) => r.state === 'completed')).toBe(true);
    // Every event answered 200 once it recovered, the last within a cooldown of the recovery.
    const delivered = arrivals.slice(duringOutage);
    expect(new Set(receiver.requests.slice(duringOutage).map((r) => r.headers['webhook-id']))).toEqual(new Set(events.map((e) => e.id)));
    expect(Math.max(...delivered) - recovered).toBeLessThanOrEqual(COOLDOWN_MS);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
    expect(receiver.maxInFlight).toBe(1);
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).failingSince).toBeNull();
  });
});
