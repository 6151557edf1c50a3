import { createServer } from 'node:net';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import type { Answer } from '../support/webhooks.ts';

type Fixture = Awaited<ReturnType<typeof webhooksFixture>>;

let fx: Fixture;
const receivers: Receiver[] = [];
const hours = 3600_000;

beforeAll(async () => {
  fx = await webhooksFixture({ requestTimeoutMs: 300 });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await fx.close();
});

/** A fresh endpoint answering `answer`, one event for it, and one attempt of its delivery. */
async function attemptOnce(answer: Answer | { url: string }) {
  let url: string;
  let receiver: Receiver | undefined;
  if (typeof answer === 'object' && 'url' in answer) {
    url = answer.url;
  } else {
    receiver = await Receiver.start([answer]);
    receivers.push(receiver);
    url = receiver.url();
  }
  const tenantId = `t-${Math.random().toString(36).slice(2)}`;
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope(tenantId), { url });
  const event = await fx.recordEvent(tenantId);
  const id = deliveryJobId(event.id, endpointId);
  const before = fx.clock.now();
  const result = await fx.run(id);
  return { result: result.result, row: await fx.job(id), endpoint: await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId), receiver, before, id, endpointId };
}

/** A port on 127.0.0.1 with nothing listening. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the status matrix: what each answer does to the delivery and the endpoint', () => {
  it('200 completes the delivery and leaves the endpoint healthy', async () => {
    const { result, row, endpoint, receiver } = await attemptOnce({ status: 200 });
    expect(result).toBe('completed');
    expect(row.state).toBe('completed');
    expect(endpoint.failingSince).toBeNull();
    expect(receiver!.requests).toHaveLength(1);
  });

  it('204 completes the delivery', async () => {
    const { result, endpoint } = await attemptOnce({ status: 204 });
    expect(result).toBe('completed');
    expect(endpoint.failingSince).toBeNull();
  });

  it('301 is retryable, and its Location is never requested', async () => {
    const elsewhere = await Receiver.start();
    receivers.push(elsewhere);
    const { result, row, endpoint } = await attemptOnce({ status: 301, headers: { location: elsewhere.url('/moved') } });
    expect(result).toBe('retryable');
    expect(row.attempts[0]?.error).toMatch(/301.*redirects are not followed/);
    expect(endpoint.failingSince).not.toBeNull();
    expect(elsewhere.requests).toHaveLength(0);
  });

  it('408 is retryable and marks the endpoint failing', async () => {
    const { result, row, endpoint, before } = await attemptOnce({ status: 408 });
    expect(result).toBe('retryable');
    expect(row.attempt).toBe(1);
    expect(endpoint.failingSince).toBe(new Date(before).toISOString());
  });

  it('410 discards the delivery as gone, disables the endpoint and sets failingSince (any non-success does)', async () => {
    const { result, row, endpoint, before } = await attemptOnce({ status: 410 });
    expect(result).toBe('discarded');
    expect(row.discardReason).toBe('gone');
    expect(endpoint).toMatchObject({ disabled: true, disabledReason: 'gone', failingSince: new Date(before).toISOString() });
  });

  it('429 without Retry-After is retryable', async () => {
    const { result, row, endpoint } = await attemptOnce({ status: 429 });
    expect(result).toBe('retryable');
    expect(row.attempts[0]?.error).toMatch(/429 without Retry-After/);
    expect(endpoint.failingSince).not.toBeNull();
  });

  it('429 with Retry-After in seconds snoozes to that time and spends no attempt', async () => {
    const { result, row, endpoint, before } = await attemptOnce({ status: 429, headers: { 'retry-after': '120' } });
    expect(result).toBe('snoozed');
    expect(row).toMatchObject({ state: 'snoozed', attempt: 0, attempts: [], snoozes: 1 });
    expect(Date.parse(row.scheduledAt)).toBe(before + 120_000);
    expect(endpoint.failingSince).not.toBeNull();
  });

  it('429 with Retry-After as an HTTP date snoozes to that date', async () => {
    const at = fx.clock.now() + 1 * hours;
    const { result, row } = await attemptOnce({ status: 429, headers: { 'retry-after': new Date(at).toUTCString() } });
    expect(result).toBe('snoozed');
    expect(row.attempt).toBe(0);
    expect(Date.parse(row.scheduledAt)).toBe(Math.floor(at / 1000) * 1000);
  });

  it('503 with Retry-After snoozes; a Retry-After of a day is capped at 10 h', async () => {
    const short = await attemptOnce({ status: 503, headers: { 'retry-after': '30' } });
    expect(short.result).toBe('snoozed');
    expect(Date.parse(short.row.scheduledAt)).toBe(short.before + 30_000);
    const long = await attemptOnce({ status: 503, headers: { 'retry-after': String(24 * 3600) } });
    expect(long.result).toBe('snoozed');
    expect(long.row.attempt).toBe(0);
    expect(Date.parse(long.row.scheduledAt)).toBe(long.before + 10 * hours);
  });

  it('a snoozed delivery runs at the time it was given, and its one real attempt is the only one counted', async () => {
    const { id, receiver, row } = await attemptOnce({ status: 503, headers: { 'retry-after': '60' } });
    receiver!.reply([{ status: 200 }]);
    expect(row.attempt).toBe(0);
    const result = await fx.runWhenDue(id);
    expect(result.result).toBe('completed');
    const done = await fx.job(id);
    expect(done.attempt).toBe(1);
    expect(done.attempts).toHaveLength(1);
    expect(receiver!.requests).toHaveLength(2);
  });

  it('500 is retryable; 503 without Retry-After too', async () => {
    expect((await attemptOnce({ status: 500 })).result).toBe('retryable');
    expect((await attemptOnce({ status: 503 })).result).toBe('retryable');
  });

  it('other 4xx discard the delivery as http_4xx and leave the endpoint enabled', async () => {
    for (const status of [400, 401, 404, 422]) {
      const { result, row, endpoint } = await attemptOnce({ status });
      expect(result, String(status)).toBe('discarded');
      expect(row.discardReason).toBe('http_4xx');
      expect(endpoint.disabled).toBe(false);
      expect(endpoint.failingSince).not.toBeNull();
    }
  });

  it('a receiver that hangs past the timeout is a retryable failure', async () => {
    const started = performance.now();
    const { result, row, receiver } = await attemptOnce('hang');
    expect(result).toBe('retryable');
    expect(row.attempts[0]?.error).toMatch(/timeout|aborted/i);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(receiver!.requests).toHaveLength(1);
  });

  it('a refused connection is a retryable failure', async () => {
    const { result, row } = await attemptOnce({ url: `http://127.0.0.1:${await closedPort()}/hook` });
    expect(result).toBe('retryable');
    expect(row.attempts[0]?.error).toMatch(/ECONNREFUSED/);
  });

  it('each request is sent once: a failing attempt reaches the receiver exactly once', async () => {
    const { receiver } = await attemptOnce({ status: 500 });
    expect(receiver!.requests).toHaveLength(1);
  });
});
