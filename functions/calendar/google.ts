import { createHash } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import { sendOnce } from '../platform/outbound.ts';
import type { OutboundRequest, OutboundResponse } from '../platform/outbound.ts';
import { DEFAULT_MARGIN_MS, DEFAULT_MIN_REQUEST_MS, requestTimeout } from './budget.ts';
import { noAnswer, readDelete, readFreeBusy, readGet, readInsert, readToken } from './google-answers.ts';
import type {
  CalendarAccess,
  CalendarFailure,
  CalendarProvider,
  CallOptions,
  DeleteResult,
  FreeBusyResult,
  GetResult,
  GoogleCredentials,
  InsertResult,
  NewEvent,
} from './port.ts';

/**
 * Google Calendar v3, hand-built over platform/outbound.ts: every request is sent once, follows no
 * redirect and has a timeout cut from the caller's deadline (budget.ts). Google's own Node clients are
 * not used: they retry by default (the retry gate refuses them, test/gate/retry-gate.ts).
 *
 * The requests, exactly (each pinned by test/calendar/google.test.ts against a real HTTP server):
 *
 * ```
 * POST https://oauth2.googleapis.com/token                     content-type: application/x-www-form-urlencoded
 *      client_id=…&client_secret=…&refresh_token=…&grant_type=refresh_token
 * POST https://www.googleapis.com/calendar/v3/freeBusy         authorization: Bearer …, content-type: application/json
 *      {"timeMin":"…Z","timeMax":"…Z","items":[{"id":"<calendar>"}]}
 * POST …/calendar/v3/calendars/<calendar>/events?sendUpdates=none
 *      {"id":"<event id>","summary":…,"description"?:…,"start":{"dateTime":"…Z","timeZone":"<zone>"},"end":{…},
 *       "extendedProperties":{"private":{…}}}
 * GET  …/calendar/v3/calendars/<calendar>/events/<event id>
 * DELETE …/calendar/v3/calendars/<calendar>/events/<event id>?sendUpdates=none
 * ```
 *
 * `sendUpdates=none`: redial's events have no attendees, so nobody would be notified anyway; saying so
 * keeps a tenant's later edit (adding a guest) from turning redial's delete into a cancellation mail sent
 * on its behalf. The access token comes from the refresh token (Google's OAuth 2.0 for web server
 * applications, "Refreshing an access token") and is cached per container, per credentials, until
 * {@link TOKEN_REFRESH_LEEWAY_MS} before it expires; a 401 from the calendar drops it, and the next
 * request (not this one: nothing is re-sent) exchanges again.
 */

/** Google's endpoints (the local runtime points them at the simulator). */
export const GOOGLE_CALENDAR_BASE_URL = 'https://www.googleapis.com/calendar/v3';
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** A cached access token is exchanged again this long before Google says it expires. */
export const TOKEN_REFRESH_LEEWAY_MS = 60_000;

/** Options of {@link GoogleCalendarProvider}. */
export interface GoogleProviderOptions {
  /** Wall time: deadlines and token lifetimes are real seconds, never TIME_SCALE's. */
  clock: Clock;
  /** @default GOOGLE_CALENDAR_BASE_URL */
  calendarBaseUrl?: string;
  /** @default GOOGLE_TOKEN_URL */
  tokenUrl?: string;
  /** Kept back from each request's timeout. @default DEFAULT_MARGIN_MS */
  marginMs?: number;
  /** Below this much time left, nothing is sent. @default DEFAULT_MIN_REQUEST_MS */
  minRequestMs?: number;
  /** The one HTTP send (a recorder wraps it in the simulation). @default sendOnce */
  send?: (request: OutboundRequest) => Promise<OutboundResponse>;
}

/** A request as it goes on the wire: method, URL, headers, body. */
export interface GoogleRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** The token exchange: a refresh token for an access token. */
export function tokenRequest(tokenUrl: string, credentials: GoogleCredentials): GoogleRequest {
  const body = new URLSearchParams({
    client_id: credentials.clientId,
    client_secret: credentials.clientSecret,
    refresh_token: credentials.refreshToken,
    grant_type: 'refresh_token',
  }).toString();
  return { method: 'POST', url: tokenUrl, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body };
}

/** freeBusy.query for one calendar over [from, to). */
export function freeBusyRequest(baseUrl: string, accessToken: string, providerCalendarId: string, from: number, to: number): GoogleRequest {
  const body = JSON.stringify({ timeMin: new Date(from).toISOString(), timeMax: new Date(to).toISOString(), items: [{ id: providerCalendarId }] });
  return { method: 'POST', url: `${baseUrl}/freeBusy`, headers: jsonHeaders(accessToken), body };
}

/** events.insert of a redial appointment, with its client-chosen id. */
export function insertRequest(baseUrl: string, accessToken: string, calendar: Pick<CalendarAccess, 'providerCalendarId' | 'timeZone'>, event: NewEvent): GoogleRequest {
  const at = (ms: number) => ({ dateTime: new Date(ms).toISOString(), timeZone: calendar.timeZone });
  const body = JSON.stringify({
    id: event.id,
    summary: event.summary,
    ...(event.description !== undefined ? { description: event.description } : {}),
    start: at(event.start),
    end: at(event.end),
    extendedProperties: { private: event.tags },
  });
  return { method: 'POST', url: `${eventsUrl(baseUrl, calendar.providerCalendarId)}?sendUpdates=none`, headers: jsonHeaders(accessToken), body };
}

/** events.get by id. */
export function getRequest(baseUrl: string, accessToken: string, providerCalendarId: string, eventId: string): GoogleRequest {
  return { method: 'GET', url: `${eventsUrl(baseUrl, providerCalendarId)}/${encodeURIComponent(eventId)}`, headers: { authorization: `Bearer ${accessToken}` } };
}

/** events.delete by id, notifying nobody. */
export function deleteRequest(baseUrl: string, accessToken: string, providerCalendarId: string, eventId: string): GoogleRequest {
  return {
    method: 'DELETE',
    url: `${eventsUrl(baseUrl, providerCalendarId)}/${encodeURIComponent(eventId)}?sendUpdates=none`,
    headers: { authorization: `Bearer ${accessToken}` },
  };
}

const eventsUrl = (baseUrl: string, providerCalendarId: string) => `${baseUrl}/calendars/${encodeURIComponent(providerCalendarId)}/events`;
const jsonHeaders = (accessToken: string) => ({ authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' });

interface CachedToken {
  accessToken: string;
  /** When to stop using it: Google's expiry minus the leeway, clock ms. */
  usableUntil: number;
}

/** The Google Calendar v3 provider: see this file's comment. One per container; it holds the token cache. */
export class GoogleCalendarProvider implements CalendarProvider {
  private readonly clock: Clock;
  private readonly baseUrl: string;
  private readonly tokenUrl: string;
  private readonly marginMs: number;
  private readonly minRequestMs: number;
  private readonly send: (request: OutboundRequest) => Promise<OutboundResponse>;
  private readonly tokens = new Map<string, CachedToken>();

  constructor(options: GoogleProviderOptions) {
    this.clock = options.clock;
    this.baseUrl = (options.calendarBaseUrl ?? GOOGLE_CALENDAR_BASE_URL).replace(/\/+$/, '');
    this.tokenUrl = options.tokenUrl ?? GOOGLE_TOKEN_URL;
    this.marginMs = options.marginMs ?? DEFAULT_MARGIN_MS;
    this.minRequestMs = options.minRequestMs ?? DEFAULT_MIN_REQUEST_MS;
    this.send = options.send ?? sendOnce;
    if (!(this.marginMs >= 0) || !(this.minRequestMs > 0)) throw new RangeError('marginMs must be ≥ 0 and minRequestMs > 0');
  }

  async freeBusy(calendar: CalendarAccess, from: number, to: number, options: CallOptions): Promise<FreeBusyResult> {
    const call = await this.call(calendar, options, (token) => freeBusyRequest(this.baseUrl, token, calendar.providerCalendarId, from, to));
    return 'failure' in call ? call.failure : readFreeBusy(call.answer, calendar.providerCalendarId);
  }

  async insert(calendar: CalendarAccess, event: NewEvent, options: CallOptions): Promise<InsertResult> {
    const call = await this.call(calendar, options, (token) => insertRequest(this.baseUrl, token, calendar, event));
    return 'failure' in call ? call.failure : readInsert(call.answer);
  }

  async get(calendar: CalendarAccess, eventId: string, options: CallOptions): Promise<GetResult> {
    const call = await this.call(calendar, options, (token) => getRequest(this.baseUrl, token, calendar.providerCalendarId, eventId));
    return 'failure' in call ? call.failure : readGet(call.answer);
  }

  async delete(calendar: CalendarAccess, eventId: string, options: CallOptions): Promise<DeleteResult> {
    const call = await this.call(calendar, options, (token) => deleteRequest(this.baseUrl, token, calendar.providerCalendarId, eventId));
    return 'failure' in call ? call.failure : readDelete(call.answer);
  }

  /** Drops every cached access token (a test, or a credentials change). */
  forgetTokens(): void {
    this.tokens.clear();
  }

  /** An access token (cached, or exchanged now), then the one calendar request; its raw answer, or why there is none. */
  private async call(
    calendar: CalendarAccess,
    options: CallOptions,
    build: (accessToken: string) => GoogleRequest,
  ): Promise<{ answer: { status: number; headers: Record<string, string>; text: string } } | { failure: CalendarFailure }> {
    const token = await this.accessToken(calendar.credentials, options.deadline);
    if ('failure' in token) return token;
    const sent = await this.sendWithin(build(token.accessToken), options.deadline);
    if ('failure' in sent) return sent;
    if (sent.answer.status === 401) this.tokens.delete(token.key);
    return sent;
  }

  private async accessToken(credentials: GoogleCredentials, deadline: number): Promise<{ accessToken: string; key: string } | { failure: CalendarFailure }> {
    const key = cacheKey(credentials);
    const cached = this.tokens.get(key);
    if (cached && this.clock.now() < cached.usableUntil) return { accessToken: cached.accessToken, key };
    this.tokens.delete(key);
    const sent = await this.sendWithin(tokenRequest(this.tokenUrl, credentials), deadline);
    if ('failure' in sent) {
      const failure = sent.failure;
      return { failure: { type: 'not_sent', reason: failure.type === 'not_sent' ? failure.reason : 'token_unavailable', error: `token exchange: ${describe(failure)}` } };
    }
    const answer = readToken(sent.answer);
    switch (answer.type) {
      case 'ok': {
        // Counted from when the answer came, so the time the exchange took only shortens the token's use.
        const usableUntil = this.clock.now() + answer.expiresInSeconds * 1000 - TOKEN_REFRESH_LEEWAY_MS;
        this.tokens.set(key, { accessToken: answer.accessToken, usableUntil });
        return { accessToken: answer.accessToken, key };
      }
      case 'refused':
        return { failure: { type: 'not_sent', reason: 'token_refused', error: `token exchange refused: HTTP ${answer.status} ${answer.error}` } };
      case 'unavailable':
        return { failure: { type: 'not_sent', reason: 'token_unavailable', error: `token exchange: ${answer.error}` } };
    }
  }

  /** Sends one request with the time left before `deadline` (minus the margin), or nothing when too little is left. */
  private async sendWithin(request: GoogleRequest, deadline: number): Promise<{ answer: OutboundResponse } | { failure: CalendarFailure }> {
    const timeoutMs = requestTimeout(deadline, this.clock.now(), { marginMs: this.marginMs, minRequestMs: this.minRequestMs });
    if (timeoutMs === undefined) return { failure: { type: 'not_sent', reason: 'no_time', error: 'too little time left before the deadline to send' } };
    try {
      return { answer: await this.send({ ...request, timeoutMs }) };
    } catch (error) {
      return { failure: noAnswer(error) };
    }
  }
}

/** The cache key of a set of credentials: a hash, so the map holds no refresh token in the clear. */
function cacheKey(credentials: GoogleCredentials): string {
  return createHash('sha256').update(`${credentials.clientId}\u0000${credentials.refreshToken}`).digest('hex');
}

function describe(failure: CalendarFailure): string {
  switch (failure.type) {
    case 'not_sent':
    case 'unknown':
      return failure.error;
    case 'rate_limited':
      return `HTTP ${failure.status} ${failure.reason}`;
    case 'unauthorized':
      return `HTTP ${failure.status}`;
    case 'rejected':
      return `HTTP ${failure.status} ${failure.message}`;
  }
}
