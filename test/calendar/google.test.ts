import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GoogleCalendarProvider, TOKEN_REFRESH_LEEWAY_MS } from '../../functions/calendar/google.ts';
import type { CalendarAccess } from '../../functions/calendar/port.ts';
import { ManualClock } from '../../functions/platform/clock.ts';

/**
 * The Google provider against a real HTTP server on 127.0.0.1 standing in for Google: every request it
 * sends is recorded byte for byte (method, path and query, headers, body) and answered from a script.
 */

/** Headers Node's fetch adds on its own; anything else a request carries is the provider's and is pinned. */
const TRANSPORT_HEADERS = new Set(['host', 'connection', 'content-length', 'accept', 'accept-language', 'sec-fetch-mode', 'user-agent', 'accept-encoding']);

interface Received {
  method: string;
  path: string;
  /** The provider's own headers (transport headers left out, and checked to be only those). */
  headers: Record<string, string>;
  body: string;
}
type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | 'hang';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function fakeGoogle(reply: (request: Received, index: number) => Reply) {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      const request: Received = { method: req.method!, path: req.url!, headers: own(req.headers), body: Buffer.concat(chunks).toString('utf8') };
      received.push(request);
      const answer = reply(request, received.length - 1);
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      const body = answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=UTF-8', ...answer.headers }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(
    () =>
      new Promise((r) => {
        for (const res of hanging) res.destroy();
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { received, calendarBaseUrl: `${url}/calendar/v3`, tokenUrl: `${url}/token` };
}

function own(headers: IncomingHttpHeaders): Record<string, string> {
  const mine: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (TRANSPORT_HEADERS.has(name)) continue;
    mine[name] = String(value);
  }
  return mine;
}

const calendar: CalendarAccess = {
  providerCalendarId: 'team@group.calendar.google.com',
  timeZone: 'America/New_York',
  credentials: { clientId: '1234.apps.googleusercontent.com', clientSecret: 'GOCSPX-secret', refreshToken: '1//04refresh+token/x' },
};
const tokenAnswer = { status: 200, body: { access_token: 'ya29.first', expires_in: 3599, scope: 'https://www.googleapis.com/auth/calendar.events', token_type: 'Bearer' } };
/** Answers the token exchange, then `then` for every calendar request. */
const withToken = (then: (request: Received) => Reply) => (request: Received) => (request.path === '/token' ? tokenAnswer : then(request));

function provider(google: { calendarBaseUrl: string; tokenUrl: string }, clock = new ManualClock(Date.parse('2026-03-02T14:00:00Z'))) {
  return { clock, google: new GoogleCalendarProvider({ clock, calendarBaseUrl: google.calendarBaseUrl, tokenUrl: google.tokenUrl }) };
}
const inTime = (clock: ManualClock) => ({ deadline: clock.now() + 2_500 });

describe('the Google provider: requests, exactly', () => {
  it('ExchangesTheRefreshTokenThenQueriesFreeBusyForTheOneCalendar', async () => {
    const google = await fakeGoogle(withToken(() => ({ status: 200, body: { kind: 'calendar#freeBusy', calendars: { [calendar.providerCalendarId]: { busy: [] } } } })));
    const { clock, google: p } = provider(google);

    const result = await p.freeBusy(calendar, Date.parse('2026-03-02T14:15:00Z'), Date.parse('2026-03-16T14:00:00Z'), inTime(clock));

    expect(result).toEqual({ type: 'ok', busy: [] });
    expect(google.received).toEqual([
      {
        method: 'POST',
        path: '/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'client_id=1234.apps.googleusercontent.com&client_secret=GOCSPX-secret&refresh_token=1%2F%2F04refresh%2Btoken%2Fx&grant_type=refresh_token',
      },
      {
        method: 'POST',
        path: '/calendar/v3/freeBusy',
        headers: { authorization: 'Bearer ya29.first', 'content-type': 'application/json' },
        body: '{"timeMin":"2026-03-02T14:15:00.000Z","timeMax":"2026-03-16T14:00:00.000Z","items":[{"id":"team@group.calendar.google.com"}]}',
      },
    ]);
  });

  it('InsertsWithTheClientChosenIdNotifyingNobody', async () => {
    const google = await fakeGoogle(
      withToken((request) => ({ status: 200, body: { ...JSON.parse(request.body), kind: 'calendar#event', status: 'confirmed' } })),
    );
    const { clock, google: p } = provider(google);
    const event = {
      id: 'a'.repeat(64),
      start: Date.parse('2026-03-03T15:00:00Z'),
      end: Date.parse('2026-03-03T15:30:00Z'),
      summary: 'Call back: +14155550101',
      description: 'Booked by redial during call c_1',
      tags: { redialTenantId: 't_acme', redialAppointmentId: 'a_1' },
    };

    const result = await p.insert(calendar, event, inTime(clock));

    expect(result).toEqual({ type: 'ok', event: { id: event.id, status: 'confirmed', start: event.start, end: event.end, tags: event.tags } });
    expect(google.received[1]).toEqual({
      method: 'POST',
      path: '/calendar/v3/calendars/team%40group.calendar.google.com/events?sendUpdates=none',
      headers: { authorization: 'Bearer ya29.first', 'content-type': 'application/json' },
      body:
        `{"id":"${'a'.repeat(64)}","summary":"Call back: +14155550101","description":"Booked by redial during call c_1",` +
        '"start":{"dateTime":"2026-03-03T15:00:00.000Z","timeZone":"America/New_York"},"end":{"dateTime":"2026-03-03T15:30:00.000Z","timeZone":"America/New_York"},' +
        '"extendedProperties":{"private":{"redialTenantId":"t_acme","redialAppointmentId":"a_1"}}}',
    });
  });

  it('GetsAndDeletesByEventIdWithNoBody', async () => {
    const google = await fakeGoogle(withToken((request) => (request.method === 'GET' ? { status: 200, body: { id: 'abcdef0123', status: 'confirmed' } } : { status: 204 })));
    const { clock, google: p } = provider(google);

    expect(await p.get(calendar, 'abcdef0123', inTime(clock))).toEqual({ type: 'ok', event: { id: 'abcdef0123', status: 'confirmed', tags: {} } });
    expect(await p.delete(calendar, 'abcdef0123', inTime(clock))).toEqual({ type: 'deleted' });

    expect(google.received.slice(1)).toEqual([
      { method: 'GET', path: '/calendar/v3/calendars/team%40group.calendar.google.com/events/abcdef0123', headers: { authorization: 'Bearer ya29.first' }, body: '' },
      { method: 'DELETE', path: '/calendar/v3/calendars/team%40group.calendar.google.com/events/abcdef0123?sendUpdates=none', headers: { authorization: 'Bearer ya29.first' }, body: '' },
    ]);
  });
});

describe('the Google provider: the access token', () => {
  it('ExchangesOncePerContainerUntilShortlyBeforeItExpires', async () => {
    let tokens = 0;
    const google = await fakeGoogle((request) =>
      request.path === '/token' ? { status: 200, body: { access_token: `ya29.n${++tokens}`, expires_in: 3599, token_type: 'Bearer' } } : { status: 200, body: { id: 'abcdef0123', status: 'confirmed' } },
    );
    const { clock, google: p } = provider(google);

    await p.get(calendar, 'abcdef0123', inTime(clock));
    clock.advance(3_599_000 - TOKEN_REFRESH_LEEWAY_MS - 1);
    await p.get(calendar, 'abcdef0123', inTime(clock));
    clock.advance(1);
    await p.get(calendar, 'abcdef0123', inTime(clock));

    expect(google.received.map((r) => r.headers.authorization ?? r.path)).toEqual(['/token', 'Bearer ya29.n1', 'Bearer ya29.n1', '/token', 'Bearer ya29.n2']);
  });

  it('KeepsOneTokenPerCredentials', async () => {
    let tokens = 0;
    const google = await fakeGoogle((request) =>
      request.path === '/token' ? { status: 200, body: { access_token: `ya29.n${++tokens}`, expires_in: 3599 } } : { status: 200, body: { id: 'abcdef0123' } },
    );
    const { clock, google: p } = provider(google);
    const other = { ...calendar, credentials: { ...calendar.credentials, refreshToken: '1//other' } };

    await p.get(calendar, 'abcdef0123', inTime(clock));
    await p.get(other, 'abcdef0123', inTime(clock));
    await p.get(calendar, 'abcdef0123', inTime(clock));

    expect(google.received.map((r) => r.headers.authorization ?? r.path)).toEqual(['/token', 'Bearer ya29.n1', '/token', 'Bearer ya29.n2', 'Bearer ya29.n1']);
  });

  it('DropsATokenTheCalendarRefusesWithoutSendingTheRequestAgain', async () => {
    let tokens = 0;
    const google = await fakeGoogle((request) => {
      if (request.path === '/token') return { status: 200, body: { access_token: `ya29.n${++tokens}`, expires_in: 3599 } };
      return request.headers.authorization === 'Bearer ya29.n1'
        ? { status: 401, body: { error: { errors: [{ domain: 'global', reason: 'authError', message: 'Invalid Credentials' }], code: 401, message: 'Invalid Credentials' } } }
        : { status: 204 };
    });
    const { clock, google: p } = provider(google);

    expect(await p.delete(calendar, 'abcdef0123', inTime(clock))).toEqual({ type: 'unauthorized', status: 401, reason: 'authError' });
    expect(google.received).toHaveLength(2); // the token, the delete: nothing re-sent
    expect(await p.delete(calendar, 'abcdef0123', inTime(clock))).toEqual({ type: 'deleted' });
    expect(google.received.map((r) => r.headers.authorization ?? r.path)).toEqual(['/token', 'Bearer ya29.n1', '/token', 'Bearer ya29.n2']);
  });

  it('SendsNoCalendarRequestWhenTheRefreshTokenIsRefusedOrTheExchangeFails', async () => {
    const refused = await fakeGoogle(() => ({ status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } }));
    const a = provider(refused);
    expect(await a.google.insert(calendar, { id: 'abcdef0123', start: 0, end: 1, summary: 's', tags: {} }, inTime(a.clock))).toEqual({
      type: 'not_sent',
      reason: 'token_refused',
      error: 'token exchange refused: HTTP 400 invalid_grant: Token has been expired or revoked.',
    });
    expect(refused.received.map((r) => r.path)).toEqual(['/token']);

    const down = await fakeGoogle(() => ({ status: 503 }));
    const b = provider(down);
    expect(await b.google.insert(calendar, { id: 'abcdef0123', start: 0, end: 1, summary: 's', tags: {} }, inTime(b.clock))).toMatchObject({ type: 'not_sent', reason: 'token_unavailable' });
    expect(down.received.map((r) => r.path)).toEqual(['/token']);
  });
});

describe('the Google provider: sent once, within the deadline', () => {
  it('SendsNothingWithLessThanTheMinimumLeft', async () => {
    const google = await fakeGoogle(withToken(() => ({ status: 200, body: {} })));
    const { clock, google: p } = provider(google);

    // 2.5 s budget, 300 ms margin, 100 ms minimum: at 2.101 s, 99 ms would be left.
    const result = await p.freeBusy(calendar, 0, 1, { deadline: clock.now() + 399 });

    expect(result).toMatchObject({ type: 'not_sent', reason: 'no_time' });
    expect(google.received).toEqual([]);
  });

  it('GivesUpOnAnAnswerThatDoesNotComeAndCallsTheInsertUnknown', async () => {
    const google = await fakeGoogle(withToken(() => 'hang'));
    const { clock, google: p } = provider(google);

    // The request's timeout is what remains minus the margin: 500 − 300 = 200 ms.
    const result = await p.insert(calendar, { id: 'abcdef0123', start: 0, end: 1, summary: 's', tags: {} }, { deadline: clock.now() + 500 });

    expect(result).toEqual({ type: 'unknown', error: 'no answer within the deadline (TimeoutError)' });
    expect(google.received.map((r) => r.method)).toEqual(['POST', 'POST']); // the token, the insert: once
  });

  it('FollowsNoRedirect', async () => {
    const google = await fakeGoogle(withToken(() => ({ status: 302, headers: { location: '/elsewhere' } })));
    const { clock, google: p } = provider(google);

    expect(await p.get(calendar, 'abcdef0123', inTime(clock))).toEqual({ type: 'unknown', status: 302, error: 'HTTP 302: redirects are not followed' });
    expect(google.received.map((r) => r.path)).toEqual(['/token', '/calendar/v3/calendars/team%40group.calendar.google.com/events/abcdef0123']);
  });

  it('CallsARefusedConnectionAFailureAndThrowsNothing', async () => {
    // A port nobody listens on: the server is started, its port noted, and closed.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const clock = new ManualClock();
    const p = new GoogleCalendarProvider({ clock, calendarBaseUrl: `http://127.0.0.1:${port}/calendar/v3`, tokenUrl: `http://127.0.0.1:${port}/token` });

    expect(await p.delete(calendar, 'abcdef0123', inTime(clock))).toMatchObject({ type: 'not_sent', reason: 'token_unavailable' });
  });
});
