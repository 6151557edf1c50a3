import { afterEach, describe, expect, it } from 'vitest';
import { eventIdFor } from '../../../functions/calendar/event-ids.ts';
import { SETTLE_GRACE_MS, SETTLE_SECOND_LOOK_MS } from '../../../functions/calendar/kinds.ts';
import { settleInCalendar } from '../../../functions/calendar/settle.ts';
import { GoogleCalendarProvider } from '../../../functions/calendar/google.ts';
import { CalendarSimulator } from '../../../functions/calendar/local/simulator.ts';
import type { Fault, SimulatorOptions } from '../../../functions/calendar/local/simulator.ts';
import type { CalendarAccess, NewEvent } from '../../../functions/calendar/port.ts';
import { ManualClock } from '../../../functions/platform/clock.ts';
import { seededRng } from '../../../functions/platform/rng.ts';

/** The Google provider (google.ts) talking to the simulator: the same requests redial sends Google. */

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const calendar: CalendarAccess = {
  providerCalendarId: 'sales@example.test',
  timeZone: 'Europe/Berlin',
  credentials: { clientId: 'client', clientSecret: 'secret', refreshToken: '1//refresh' },
};
const at = (hhmm: string) => Date.parse(`2026-03-03T${hhmm}:00Z`);

async function setup(options: Partial<SimulatorOptions> = {}) {
  const clock = new ManualClock(Date.parse('2026-03-02T14:00:00Z'));
  const simulator = await CalendarSimulator.start({ clock, ...options });
  closers.push(() => simulator.close());
  const google = new GoogleCalendarProvider({ clock, calendarBaseUrl: simulator.calendarBaseUrl, tokenUrl: simulator.tokenUrl });
  let counter = 0;
  const newEvent = (start = at('15:00'), minutes = 30): NewEvent => ({
    id: eventIdFor({ tenantId: 't_acme', calendarId: 'sales', callId: 'c_1', start, counter: ++counter }),
    start,
    end: start + minutes * 60_000,
    summary: 'Call back',
    tags: { redialAppointmentId: `a_${counter}` },
  });
  // 2.5 s to spare; the fault tests give less, so a request that gets no answer is cut in 200 ms.
  const inTime = () => ({ deadline: clock.now() + 2_500 });
  const short = () => ({ deadline: clock.now() + 500 });
  return { clock, simulator, google, newEvent, inTime, short };
}

describe('the calendar simulator', () => {
  it('AnswersInsertGetFreeBusyAndDeleteAsGoogleDoes', async () => {
    const { simulator, google, newEvent, inTime } = await setup();
    const event = newEvent(at('15:00'));
    simulator.seedEvent(calendar.providerCalendarId, { id: 'theirmeeting1', start: at('16:00'), end: at('17:00') });

    expect(await google.insert(calendar, event, inTime())).toEqual({ type: 'ok', event: { id: event.id, status: 'confirmed', start: event.start, end: event.end, tags: event.tags } });
    expect(await google.freeBusy(calendar, at('00:00'), at('23:00'), inTime())).toEqual({
      type: 'ok',
      busy: [
        { start: at('15:00'), end: at('15:30') },
        { start: at('16:00'), end: at('17:00') },
      ],
    });
    expect(await google.get(calendar, event.id, inTime())).toMatchObject({ type: 'ok', event: { id: event.id, status: 'confirmed' } });
    expect(await google.delete(calendar, event.id, inTime())).toEqual({ type: 'deleted' });
    // A deleted event is still answered by get, cancelled; a second delete is 410; it is free again.
    expect(await google.get(calendar, event.id, inTime())).toMatchObject({ type: 'ok', event: { id: event.id, status: 'cancelled' } });
    expect(await google.delete(calendar, event.id, inTime())).toEqual({ type: 'gone', status: 410 });
    expect(await google.freeBusy(calendar, at('00:00'), at('23:00'), inTime())).toEqual({ type: 'ok', busy: [{ start: at('16:00'), end: at('17:00') }] });
    // An id never inserted: get 404, delete 404; an id seen before, even deleted, cannot be inserted again.
    expect(await google.get(calendar, 'neverinserted', inTime())).toEqual({ type: 'not_found' });
    expect(await google.delete(calendar, 'neverinserted', inTime())).toEqual({ type: 'gone', status: 404 });
    expect(await google.insert(calendar, { ...newEvent(), id: event.id }, inTime())).toMatchObject({ type: 'rejected', status: 409, reason: 'duplicate' });
    expect(await google.insert(calendar, { ...newEvent(), id: 'Not-Base32hex' }, inTime())).toMatchObject({ type: 'rejected', status: 400, reason: 'invalid' });
    // One token exchange served all of it.
    expect(simulator.requests.filter((r) => r.op === 'token')).toHaveLength(1);
  });

  it('RefusesAnAccessTokenItDidNotIssueOrThatExpiredAndARevokedRefreshToken', async () => {
    const { clock, simulator, google, inTime } = await setup({ tokenLifetimeSeconds: 3600 });
    const bearer = (token: string) => fetch(`${simulator.calendarBaseUrl}/calendars/x/events/abcdef`, { headers: { authorization: `Bearer ${token}` } });
    expect((await bearer('made-up')).status).toBe(401);
    const issued = (await (await fetch(simulator.tokenUrl, { method: 'POST', body: 'client_id=c&client_secret=s&refresh_token=r&grant_type=refresh_token' })).json()) as { access_token: string };
    expect((await bearer(issued.access_token)).status).toBe(404);
    clock.advance(3_600_000);
    expect((await bearer(issued.access_token)).status).toBe(401);

    simulator.revoke(calendar.credentials.refreshToken);
    expect(await google.get(calendar, 'abcdef', inTime())).toMatchObject({ type: 'not_sent', reason: 'token_refused' });
  });

  it('AppliesAnInsertWhoseAnswerItThenLosesTheInjectedTimeoutAfterSend', async () => {
    const { simulator, google, newEvent, short } = await setup();
    simulator.inject('insert', { kind: 'applyThenHang' });
    const event = newEvent();

    expect(await google.insert(calendar, event, short())).toEqual({ type: 'unknown', error: 'no answer within the deadline (TimeoutError)' });

    expect(simulator.events(calendar.providerCalendarId).map((e) => [e.id, e.status])).toEqual([[event.id, 'confirmed']]);
    expect(simulator.requests.filter((r) => r.op === 'insert')).toMatchObject([{ applied: true, status: 'none', fault: { kind: 'applyThenHang' } }]);
  });

  it('AppliesASlowInsertAfterTheClientGaveUpOnIt', async () => {
    const { simulator, google, newEvent, short } = await setup();
    simulator.inject('insert', { kind: 'delay', ms: 400 });
    const event = newEvent();

    expect(await google.insert(calendar, event, short())).toMatchObject({ type: 'unknown' });
    expect(simulator.events(calendar.providerCalendarId)).toEqual([]); // not yet
    await simulator.idle();
    expect(simulator.events(calendar.providerCalendarId).map((e) => e.id)).toEqual([event.id]); // landed late
  });

  it('ProducesEachInjectedFailureOnceAndInOrder', async () => {
    const { simulator, google, newEvent, inTime, short } = await setup();
    const cases: [Fault, (e: NewEvent) => Promise<unknown>, unknown, boolean][] = [
      [{ kind: 'status', status: 503 }, (e) => google.insert(calendar, e, inTime()), { type: 'unknown', status: 503 }, false],
      [{ kind: 'rateLimit' }, (e) => google.insert(calendar, e, inTime()), { type: 'rate_limited', status: 403, reason: 'rateLimitExceeded' }, false],
      [{ kind: 'rateLimit', status: 429 }, (e) => google.insert(calendar, e, inTime()), { type: 'rate_limited', status: 429 }, false],
      [{ kind: 'rateLimit', reason: 'userRateLimitExceeded' }, (e) => google.insert(calendar, e, inTime()), { type: 'rate_limited', reason: 'userRateLimitExceeded' }, false],
      [{ kind: 'hang' }, (e) => google.insert(calendar, e, short()), { type: 'unknown' }, false],
      [{ kind: 'drop' }, (e) => google.insert(calendar, e, inTime()), { type: 'unknown' }, false],
      [{ kind: 'applyThenDrop' }, (e) => google.insert(calendar, e, inTime()), { type: 'unknown' }, true],
      [{ kind: 'applyThenStatus', status: 500 }, (e) => google.insert(calendar, e, inTime()), { type: 'unknown', status: 500 }, true],
    ];
    for (const [fault, call, expected, applied] of cases) {
      simulator.inject('insert', fault);
      const event = newEvent();
      expect(await call(event), JSON.stringify(fault)).toMatchObject(expected as object);
      await simulator.idle();
      expect(simulator.events(calendar.providerCalendarId).some((e) => e.id === event.id), JSON.stringify(fault)).toBe(applied);
    }
    // Each fault was spent by its one request: the next insert goes through.
    expect(await google.insert(calendar, newEvent(), inTime())).toMatchObject({ type: 'ok' });
  });

  it('AnswersFreeBusyWithErrorsForTheCalendarWhenTold', async () => {
    const { simulator, google, inTime } = await setup();
    simulator.inject('freeBusy', { kind: 'freeBusyErrors', reason: 'internalError' });

    expect(await google.freeBusy(calendar, at('00:00'), at('23:00'), inTime())).toEqual({ type: 'calendar_errors', errors: [{ domain: 'global', reason: 'internalError' }] });
    expect(await google.freeBusy(calendar, at('00:00'), at('23:00'), inTime())).toEqual({ type: 'ok', busy: [] });
  });

  it('AppliesADeleteWhoseAnswerIsA500', async () => {
    const { simulator, google, newEvent, inTime } = await setup();
    const event = newEvent();
    await google.insert(calendar, event, inTime());
    simulator.inject('delete', { kind: 'applyThenStatus', status: 500 });

    expect(await google.delete(calendar, event.id, inTime())).toMatchObject({ type: 'unknown', status: 500 });
    expect(await google.get(calendar, event.id, inTime())).toMatchObject({ type: 'ok', event: { status: 'cancelled' } });
  });

  it('TakesInstructionsOverItsControlApi', async () => {
    const { simulator, google, newEvent, inTime } = await setup();
    const post = (body: unknown) => fetch(`${simulator.url}/_sim/faults`, { method: 'POST', body: JSON.stringify(body) });

    expect((await post({ op: 'insert', fault: { kind: 'status', status: 502 }, count: 2 })).status).toBe(204);
    expect((await post({ op: 'insert', fault: { kind: 'explode' } })).status).toBe(400);
    expect((await post({ op: 'nap', fault: { kind: 'hang' } })).status).toBe(400);

    expect(await google.insert(calendar, newEvent(), inTime())).toMatchObject({ type: 'unknown', status: 502 });
    expect(await google.insert(calendar, newEvent(), inTime())).toMatchObject({ type: 'unknown', status: 502 });
    const kept = newEvent();
    expect(await google.insert(calendar, kept, inTime())).toMatchObject({ type: 'ok' });
    const listed = (await (await fetch(`${simulator.url}/_sim/events?calendarId=${encodeURIComponent(calendar.providerCalendarId)}`)).json()) as { events: { id: string }[] };
    expect(listed.events.map((e) => e.id)).toEqual([kept.id]);
    const logged = (await (await fetch(`${simulator.url}/_sim/requests`)).json()) as { requests: { op: string }[] };
    expect(logged.requests.map((r) => r.op)).toEqual(['token', 'insert', 'insert', 'insert']);
  });

  it('DrawsTheSameFaultsFromTheSameSeed', async () => {
    const run = async (seed: number) => {
      const faults: Fault[] = [{ kind: 'status', status: 503 }, { kind: 'rateLimit' }, { kind: 'freeBusyErrors' }];
      const { google, inTime } = await setup({ random: { rng: seededRng(seed), rate: 0.5, faults, ops: ['get'] } });
      const outcomes: string[] = [];
      for (let n = 0; n < 24; n++) outcomes.push((await google.get(calendar, 'abcdef', inTime())).type);
      return outcomes;
    };
    const first = await run(7);
    expect(await run(7)).toEqual(first);
    expect(new Set(first)).toEqual(new Set(['not_found', 'unknown', 'rate_limited'])); // freeBusy errors never fall on a get
    expect(await run(8)).not.toEqual(first);
  });
});

describe('the settle job against the simulator', () => {
  it('DeletesAnInsertThatTimedOutAfterBeingAppliedAndEndsOnTheNextRun', async () => {
    const { clock, simulator, google, newEvent, short, inTime } = await setup();
    simulator.inject('insert', { kind: 'applyThenHang' });
    const event = newEvent();
    const routeDeadline = short().deadline;
    expect(await google.insert(calendar, event, { deadline: routeDeadline })).toMatchObject({ type: 'unknown' });

    clock.set(routeDeadline + SETTLE_GRACE_MS);
    const run = { provider: google, calendar, eventId: event.id, routeDeadline, now: () => clock.now(), requestDeadline: () => inTime().deadline };
    expect(await settleInCalendar(run)).toEqual({ type: 'done', why: 'deleted' });
    expect(simulator.events(calendar.providerCalendarId).map((e) => e.status)).toEqual(['cancelled']);
    // Run again (its answer lost, say): the read finds it deleted and sends no delete.
    expect(await settleInCalendar(run)).toEqual({ type: 'done', why: 'the event is already deleted' });
    expect(simulator.requests.filter((r) => r.op === 'delete')).toHaveLength(1);
  });

  it('WaitsForALateInsertThenDeletesIt', async () => {
    const { clock, simulator, google, newEvent, short, inTime } = await setup();
    simulator.inject('insert', { kind: 'delay', ms: 400 });
    const event = newEvent();
    const routeDeadline = short().deadline;
    await google.insert(calendar, event, { deadline: routeDeadline });
    clock.set(routeDeadline + SETTLE_GRACE_MS);
    const run = { provider: google, calendar, eventId: event.id, routeDeadline, now: () => clock.now(), requestDeadline: () => inTime().deadline };

    expect(await settleInCalendar(run)).toMatchObject({ type: 'wait', until: routeDeadline + SETTLE_SECOND_LOOK_MS });
    await simulator.idle(); // Google applies it after all
    clock.set(routeDeadline + SETTLE_SECOND_LOOK_MS);
    expect(await settleInCalendar(run)).toEqual({ type: 'done', why: 'deleted' });
    expect(simulator.events(calendar.providerCalendarId).map((e) => e.status)).toEqual(['cancelled']);
  });

  it('RetriesADeleteThatIsRateLimitedAndDiscardsWhenTheCredentialsAreRefused', async () => {
    const { clock, simulator, google, newEvent, inTime } = await setup();
    const event = newEvent();
    await google.insert(calendar, event, inTime());
    const run = { provider: google, calendar, eventId: event.id, routeDeadline: clock.now(), now: () => clock.now(), requestDeadline: () => inTime().deadline };
    simulator.inject('delete', { kind: 'rateLimit', reason: 'userRateLimitExceeded' });

    expect(await settleInCalendar(run)).toEqual({ type: 'retry', error: 'rate limited: HTTP 403 userRateLimitExceeded' });
    expect(simulator.events(calendar.providerCalendarId).map((e) => e.status)).toEqual(['confirmed']);

    google.forgetTokens();
    simulator.revoke(calendar.credentials.refreshToken);
    expect(await settleInCalendar(run)).toMatchObject({ type: 'discard', reason: 'credentials_refused' });
  });
});
