/**
 * The calendar provider port: the four calls an appointment needs (free/busy, insert, get, delete), each
 * sent once within a deadline, each answering a typed result that says what the caller may conclude.
 * Google Calendar v3 implements it (google.ts); locally a simulator answers the same requests
 * (local/simulator.ts). Nothing here retries: a route answers 503 at once, the `supplier.invoke` job
 * decides with its policy (kinds.ts).
 *
 * What a failure means for the caller:
 *
 * | result | was it applied? | a route | the settle job |
 * |---|---|---|---|
 * | `not_sent` | no: nothing left the process (no time left, or no access token) | 503 | retry, or discard when the credentials were refused |
 * | `unknown` | perhaps: sent, no usable answer (timeout, connection lost, 5xx, 408, 3xx, an unreadable 2xx) | 503; an insert is left to the settle job | retry |
 * | `rate_limited` | no (Google's 403 rate-limit reasons, 429) | 503 | retry |
 * | `unauthorized` | no (401: the access token was refused; the cached one is dropped) | 503 | retry (a fresh token) |
 * | `rejected` | no: a permanent 4xx (400, 403 other reasons, 404 where absence is not an answer, 409…) | 503 | discard with an alert |
 */

/** An instant interval [start, end), epoch ms. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** Which calendar to talk to, and with what. The app builds it from the tenant's stored settings. */
export interface CalendarAccess {
  /** The provider's calendar id (Google: `primary`, or an address such as `team@group.calendar.google.com`). */
  readonly providerCalendarId: string;
  /** The calendar's IANA zone: inserted events carry it, so they read right in the calendar. */
  readonly timeZone: string;
  readonly credentials: GoogleCredentials;
}

/** OAuth client and refresh token with access to the calendar (stored encrypted, never returned). */
export interface GoogleCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly refreshToken: string;
}

/** What each call is given besides its arguments. */
export interface CallOptions {
  /**
   * When the caller stops waiting, epoch ms on the provider's clock (wall time: a route's budget is real
   * seconds). Each request's timeout is what remains minus the provider's margin; with less than its
   * minimum left, nothing is sent (`not_sent`).
   */
  readonly deadline: number;
}

/** An event redial inserts: an appointment. */
export interface NewEvent {
  /** The client-chosen id (event-ids.ts): fresh per insert, never re-used. */
  readonly id: string;
  readonly start: number;
  readonly end: number;
  readonly summary: string;
  readonly description?: string;
  /** Stored on the event as private extended properties, so a reader of the calendar can trace it back. */
  readonly tags: Readonly<Record<string, string>>;
}

/** An event as the provider reports it. */
export interface CalendarEvent {
  readonly id: string;
  /** `cancelled`: deleted (Google's `events.get` keeps answering a deleted event, with this status). */
  readonly status: 'confirmed' | 'tentative' | 'cancelled';
  /** Absent on a deleted event (Google guarantees only its id). */
  readonly start?: number;
  readonly end?: number;
  readonly tags: Readonly<Record<string, string>>;
}

/** Why a request got no usable answer; see the table in this file's comment. */
export type CalendarFailure =
  | { readonly type: 'not_sent'; readonly reason: NotSentReason; readonly error: string }
  | { readonly type: 'unknown'; readonly status?: number; readonly error: string }
  | { readonly type: 'rate_limited'; readonly status: number; readonly reason: string; readonly retryAfter?: string }
  | { readonly type: 'unauthorized'; readonly status: number; readonly reason?: string }
  | { readonly type: 'rejected'; readonly status: number; readonly reason?: string; readonly message: string };

/**
 * Why nothing was sent. `no_time`: less than the minimum request time was left before the deadline.
 * `token_unavailable`: the token exchange got no usable answer (transient). `token_refused`: Google refused
 * the refresh token or the client (`invalid_grant`, `invalid_client`: revoked or wrong credentials; permanent).
 */
export type NotSentReason = 'no_time' | 'token_unavailable' | 'token_refused';

/**
 * `freeBusy`: the calendar's busy intervals, or `calendar_errors` when Google answered but could not
 * compute them for this calendar (the answer's `calendars[id].errors`, or no entry for it at all): never
 * read as "all free".
 */
export type FreeBusyResult =
  | { readonly type: 'ok'; readonly busy: readonly Interval[] }
  | { readonly type: 'calendar_errors'; readonly errors: readonly { readonly domain: string; readonly reason: string }[] }
  | CalendarFailure;

/** `insert`: applied (the event as Google stored it), or a failure (`unknown` may have been applied). */
export type InsertResult = { readonly type: 'ok'; readonly event: CalendarEvent } | CalendarFailure;

/** `get`: the event (a deleted one with status `cancelled`), `not_found` (404: never inserted), or a failure. */
export type GetResult = { readonly type: 'ok'; readonly event: CalendarEvent } | { readonly type: 'not_found' } | CalendarFailure;

/** `delete`: deleted now (2xx), or `gone` (404 or 410: there is nothing to delete, which is success too), or a failure. */
export type DeleteResult = { readonly type: 'deleted' } | { readonly type: 'gone'; readonly status: number } | CalendarFailure;

/**
 * A calendar provider. Every method sends at most one request to the calendar (plus, when its cached
 * access token is missing or about to expire, one token exchange before it), never re-sends, and never
 * throws for anything the network or the provider does: every outcome is a result.
 */
export interface CalendarProvider {
  /** The busy intervals of the calendar in [from, to). */
  freeBusy(calendar: CalendarAccess, from: number, to: number, options: CallOptions): Promise<FreeBusyResult>;
  /** Inserts an event with its client-chosen id. */
  insert(calendar: CalendarAccess, event: NewEvent, options: CallOptions): Promise<InsertResult>;
  /** Reads an event by id. */
  get(calendar: CalendarAccess, eventId: string, options: CallOptions): Promise<GetResult>;
  /** Deletes an event by id, notifying nobody. */
  delete(calendar: CalendarAccess, eventId: string, options: CallOptions): Promise<DeleteResult>;
}
