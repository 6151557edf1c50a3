import { afterEach, describe, expect, it } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { eventBody } from '../../functions/webhooks/signing.ts';
import { Receiver, verify, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('the body of an event', () => {
  it('IsTheSameBytesWhateverOrderItsDataKeysWereStoredAndReadBackIn', () => {
    const base = { id: 'evt_1', tenantId: 't', type: 'call.completed' as const, timestamp: '2026-12-01T00:00:00.000Z' };
    const one = eventBody({ ...base, data: { round: 1, code: 'X', nested: { b: 2, a: [{ y: 1, x: 2 }] } } });
    const other = eventBody({ ...base, data: { nested: { a: [{ x: 2, y: 1 }], b: 2 }, code: 'X', round: 1 } });
    expect(one).toBe(other);
    expect(one).toBe('{"type":"call.completed","timestamp":"2026-12-01T00:00:00.000Z","data":{"code":"X","nested":{"a":[{"x":2,"y":1}],"b":2},"round":1}}');
  });
});

describe('signed delivery (Standard Webhooks)', () => {
  it('EveryAttemptVerifiesWithTheSameWebhookIdAndItsOwnTimestamp', async () => {
    const receiver = await Receiver.start([{ status: 500 }, { status: 500 }, { status: 200 }]);
    const fx = await webhooksFixture();
    closers.push(() => receiver.close(), fx.close);
    const { endpointId, secret } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    const event = await fx.recordEvent('t1', 'call.completed', { callId: 'c-1', code: 'COMPLETED' });
    const id = deliveryJobId(event.id, endpointId);

    const times: number[] = [];
    for (const expected of ['retryable', 'retryable', 'completed']) {
      const result = await fx.runWhenDue(id);
      times.push(fx.clock.now());
      expect(result.result).toBe(expected);
    }

    expect(receiver.requests).toHaveLength(3);
    const payloads = receiver.requests.map((request, i) => verify(secret, request, times[i]!));
    for (const payload of payloads) expect(payload).toEqual({ type: 'call.completed', timestamp: event.timestamp, data: { callId: 'c-1', code: 'COMPLETED' } });
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));
    const stamps = receiver.requests.map((r) => Number(r.headers['webhook-timestamp']));
    expect(new Set(stamps).size).toBe(3);
    expect(stamps).toEqual(times.map((t) => Math.floor(t / 1000)));
    // The retries came on webhook.deliver's schedule: 5 s, then 5 min (±10 %).
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(4_500);
    expect(times[1]! - times[0]!).toBeLessThanOrEqual(5_500);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(270_000);
    expect(times[2]! - times[1]!).toBeLessThanOrEqual(330_000);
    const row = await fx.job(id);
    expect(row.attempts.map((a) => a.outcome)).toEqual(['retryable', 'retryable', 'completed']);
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).failingSince).toBeNull();
  });

  it('UnderAScaledLocalClock_TheTimestampIsTheWallClocks_SoAReceiverChecksItAgainstItsOwn', async () => {
    const receiver = await Receiver.start();
    const wall = { now: () => Date.parse('2026-01-05T09:00:00.000Z') - 3 * 3600_000 };
    const fx = await webhooksFixture({ wallClock: wall });
    closers.push(() => receiver.close(), fx.close);
    const { endpointId, secret } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    const event = await fx.recordEvent('t1');
    expect((await fx.run(deliveryJobId(event.id, endpointId))).result).toBe('completed');
    const request = receiver.requests[0]!;
    expect(Number(request.headers['webhook-timestamp'])).toBe(wall.now() / 1000);
    expect(() => verify(secret, request, wall.now())).not.toThrow();
    // Against the job clock (three hours ahead here) the same message is refused as too old.
    expect(() => verify(secret, request, fx.clock.now())).toThrow(/too old/i);
  });

  it('ASignatureMadeWithAnotherSecretOrATamperedBodyDoesNotVerify', async () => {
    const receiver = await Receiver.start();
    const fx = await webhooksFixture();
    closers.push(() => receiver.close(), fx.close);
    const { endpointId, secret } = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url() });
    const other = await fx.webhooks.endpoints.register(operatorScope('t1'), { url: receiver.url('/other') });
    const event = await fx.recordEvent('t1');
    await fx.run(deliveryJobId(event.id, endpointId));
    const request = receiver.requests.find((r) => r.path === '/hook')!;
    expect(() => verify(secret, request, fx.clock.now())).not.toThrow();
    expect(() => verify(other.secret, request, fx.clock.now())).toThrow(/signature/i);
    expect(() => verify(secret, { ...request, body: request.body.replace('"n":1', '"n":2') }, fx.clock.now())).toThrow(/signature/i);
    expect(() => verify(secret, request, fx.clock.now() + 10 * 60_000)).toThrow(/too old/i);
  });
});
