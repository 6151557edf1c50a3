import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_WEBHOOK_SECRET } from '../../functions/calls/local/config.ts';
import { signCallWebhook } from '../../functions/calls/signature.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

/**
 * The agent's calendar tools as the local runtime serves them (functions/app/system.ts wires the calls
 * context's answers into the calendar context): a live call's availability and booking through HTTP,
 * signed as call results are, against the built-in calendar; a forged signature and a call that is not
 * live are refused before anything is sent to the calendar.
 */
let runtime: LocalRuntime;

beforeAll(async () => {
  process.env['LOG_LEVEL'] ??= 'ERROR';
  // Every call's result is lost: the call stays live until its watchdog, long after this test.
  runtime = await startTestRuntime({ port: 0, timeScale: 1, calls: { simulatorMix: { noPickup: 0, sipFailure: 0, shortCall: 0, genuineFail: 0, completed: 0, userRejection: 0, temporaryUnavailable: 0, invalidNumber: 0, duplicateWebhook: 0, lostWebhook: 1 } } });
});

afterAll(async () => {
  await runtime?.stop();
});

let sent = 0;
/** A tool request, signed with the intake's secret (or not). */
async function tool(path: string, body: Record<string, unknown>, sign = true) {
  const raw = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (sign) Object.assign(headers, signCallWebhook(DEV_WEBHOOK_SECRET, `msg_tool_${++sent}`, Math.floor(Date.now() / 1000), raw));
  const response = await fetch(`${runtime.url}${path}`, { method: 'POST', headers, body: raw });
  return { status: response.status, body: (await response.json().catch(() => undefined)) as Record<string, any> | undefined };
}

async function json(path: string, init: RequestInit & { key?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(init.key ? { authorization: `Bearer ${init.key}` } : {}) };
  const response = await fetch(`${runtime.url}${path}`, { ...init, headers });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

describe('the agent’s calendar tools on the local runtime', () => {
  it('ABookingDuringALiveCallIsAnswered201AndLandsInTheCalendar_AForgedOrDeadCallIsRefusedAndSendsNothing', async () => {
    expect((await json('/v1/tenants/tools', { method: 'PUT', body: JSON.stringify({ concurrencyLimit: 2 }) })).status).toBe(200);
    const key = (await json('/v1/tenants/tools/keys', { method: 'POST', body: '{}' })).body['key'] as string;
    const calendar = { provider: 'google', timezone: 'UTC', bookableHours: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['00:00', '24:00']]])), credentials: { clientId: 'c', clientSecret: 's', refreshToken: 'r' } };
    expect((await json('/v1/calendars/sales', { method: 'PUT', key, body: JSON.stringify(calendar) })).status).toBe(200);
    const created = await json('/v1/batches', { method: 'POST', key, body: JSON.stringify({ contacts: [{ number: '+14155550101' }], maxAttempts: 1, appointments: { calendarId: 'sales', durationMinutes: 30 } }) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const batchId = created.body['batchId'] as string;

    // The dialer places the call; the placer holds it (its result is never sent).
    let call: { callId: string; contactNumber: string } | undefined;
    for (let i = 0; i < 200 && !call; i++) {
      call = runtime.simulator!.calls.find((c) => c.batchId === batchId);
      if (!call) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(call).toBeDefined();
    const ref = { batchId, contactNumber: call!.contactNumber, callId: call!.callId };

    const before = runtime.calendarSimulator.requests.length;
    expect((await tool('/v1/calls/availability', ref, false)).status).toBe(401);
    const dead = await tool('/v1/calls/availability', { ...ref, callId: `${ref.callId.slice(0, -1)}${ref.callId.endsWith('0') ? '1' : '0'}` });
    expect(dead).toMatchObject({ status: 409, body: { error: 'call_not_live' } });
    expect(runtime.calendarSimulator.requests.length).toBe(before);

    const availability = await tool('/v1/calls/availability', { ...ref, limit: 3 });
    expect(availability.status, JSON.stringify(availability.body)).toBe(200);
    const slots = availability.body!['slots'] as { start: string; end: string }[];
    expect(slots).toHaveLength(3);
    const booked = await tool('/v1/calls/appointments', { ...ref, start: slots[0]!.start });
    expect(booked.status, JSON.stringify(booked.body)).toBe(201);
    expect(booked.body).toMatchObject({ start: slots[0]!.start, end: slots[0]!.end });
    const events = [...runtime.calendarSimulator.requests].filter((r) => r.op === 'insert');
    expect(events).toHaveLength(1);
    // Sent again, the same booking: the same answer, nothing sent to the calendar.
    const count = runtime.calendarSimulator.requests.length;
    expect(await tool('/v1/calls/appointments', { ...ref, start: slots[0]!.start })).toEqual(booked);
    expect(runtime.calendarSimulator.requests.length).toBe(count);
  });
});
