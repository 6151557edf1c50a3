import { describe, expect, it } from 'vitest';
import { classifyFailure, readDelete, readFreeBusy, readGet, readInsert, readToken } from '../../functions/calendar/google-answers.ts';

/** A Google error body, as the Calendar API's error guide gives them. */
const googleError = (code: number, reason: string, message = reason, domain = 'global') =>
  JSON.stringify({ error: { errors: [{ domain, reason, message }], code, message } });
const answer = (status: number, text = '', headers: Record<string, string> = {}) => ({ status, text, headers });

describe("Google's answers", () => {
  it('ReadsEachDocumentedRateLimitAsRateLimitedWhether403Or429', () => {
    for (const reason of ['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded', 'dailyLimitExceeded']) {
      expect(classifyFailure(answer(403, googleError(403, reason, 'x', 'usageLimits')))).toEqual({ type: 'rate_limited', status: 403, reason });
    }
    expect(classifyFailure(answer(429, googleError(429, 'rateLimitExceeded', 'Rate Limit Exceeded', 'usageLimits'), { 'retry-after': '7' }))).toEqual({
      type: 'rate_limited',
      status: 429,
      reason: 'rateLimitExceeded',
      retryAfter: '7',
    });
    expect(classifyFailure(answer(429, 'Too Many Requests'))).toMatchObject({ type: 'rate_limited', reason: 'tooManyRequests' });
  });

  it('ReadsAnyOther403AndOther4xxAsAPermanentRefusal', () => {
    expect(classifyFailure(answer(403, googleError(403, 'forbiddenForNonOrganizer', 'Shared properties can only be changed by the organizer of the event.', 'calendar')))).toEqual({
      type: 'rejected',
      status: 403,
      reason: 'forbiddenForNonOrganizer',
      message: 'Shared properties can only be changed by the organizer of the event.',
    });
    expect(classifyFailure(answer(403, 'not json'))).toEqual({ type: 'rejected', status: 403, message: 'HTTP 403' });
    expect(classifyFailure(answer(400, googleError(400, 'timeRangeEmpty', 'The specified time range is empty.', 'calendar')))).toMatchObject({ type: 'rejected', reason: 'timeRangeEmpty' });
    expect(classifyFailure(answer(409, googleError(409, 'duplicate', 'The requested identifier already exists.')))).toMatchObject({ type: 'rejected', status: 409, reason: 'duplicate' });
  });

  it('ReadsA401AsARefusedAccessTokenAndTransientAnswersAsUnknown', () => {
    expect(classifyFailure(answer(401, googleError(401, 'authError', 'Invalid Credentials')))).toEqual({ type: 'unauthorized', status: 401, reason: 'authError' });
    expect(classifyFailure(answer(500, googleError(500, 'backendError', 'Backend Error')))).toEqual({ type: 'unknown', status: 500, error: 'HTTP 500: Backend Error' });
    expect(classifyFailure(answer(503))).toEqual({ type: 'unknown', status: 503, error: 'HTTP 503' });
    expect(classifyFailure(answer(408))).toEqual({ type: 'unknown', status: 408, error: 'HTTP 408' });
    expect(classifyFailure(answer(302))).toEqual({ type: 'unknown', status: 302, error: 'HTTP 302: redirects are not followed' });
  });

  it('NeverReadsAFreeBusyAnswerWithErrorsOrWithoutTheCalendarAsFree', () => {
    const withErrors = JSON.stringify({ kind: 'calendar#freeBusy', timeMin: 'x', timeMax: 'y', calendars: { primary: { errors: [{ domain: 'global', reason: 'notFound' }], busy: [] } } });
    expect(readFreeBusy(answer(200, withErrors), 'primary')).toEqual({ type: 'calendar_errors', errors: [{ domain: 'global', reason: 'notFound' }] });
    const other = JSON.stringify({ kind: 'calendar#freeBusy', calendars: { other: { busy: [] } } });
    expect(readFreeBusy(answer(200, other), 'primary')).toMatchObject({ type: 'calendar_errors' });
    expect(readFreeBusy(answer(200, '{"kind":'), 'primary')).toMatchObject({ type: 'unknown', status: 200 });
    const busy = JSON.stringify({ calendars: { primary: { busy: [{ start: '2026-03-02T15:00:00Z', end: '2026-03-02T15:30:00Z' }] } } });
    expect(readFreeBusy(answer(200, busy), 'primary')).toEqual({ type: 'ok', busy: [{ start: Date.parse('2026-03-02T15:00:00Z'), end: Date.parse('2026-03-02T15:30:00Z') }] });
    expect(readFreeBusy(answer(200, JSON.stringify({ calendars: { primary: {} } })), 'primary')).toEqual({ type: 'ok', busy: [] });
    expect(readFreeBusy(answer(403, googleError(403, 'rateLimitExceeded')), 'primary')).toMatchObject({ type: 'rate_limited' });
  });

  it('ReadsAnInsertsEventAndCallsAnUnreadable2xxUnknownBecauseItMayHaveBeenApplied', () => {
    const event = JSON.stringify({
      kind: 'calendar#event',
      id: 'abcdef0123',
      status: 'confirmed',
      start: { dateTime: '2026-03-02T10:00:00-05:00', timeZone: 'America/New_York' },
      end: { dateTime: '2026-03-02T10:30:00-05:00', timeZone: 'America/New_York' },
      extendedProperties: { private: { redialAppointmentId: 'a_1' } },
    });
    expect(readInsert(answer(200, event))).toEqual({
      type: 'ok',
      event: { id: 'abcdef0123', status: 'confirmed', start: Date.parse('2026-03-02T15:00:00Z'), end: Date.parse('2026-03-02T15:30:00Z'), tags: { redialAppointmentId: 'a_1' } },
    });
    expect(readInsert(answer(200, ''))).toEqual({ type: 'unknown', status: 200, error: 'unreadable insert answer' });
    expect(readInsert(answer(503))).toMatchObject({ type: 'unknown', status: 503 });
  });

  it('ReadsADeletedEventFromGetAsCancelledAndA404AsNotFound', () => {
    expect(readGet(answer(200, JSON.stringify({ id: 'abcdef0123', status: 'cancelled' })))).toEqual({ type: 'ok', event: { id: 'abcdef0123', status: 'cancelled', tags: {} } });
    expect(readGet(answer(404, googleError(404, 'notFound', 'Not Found')))).toEqual({ type: 'not_found' });
    expect(readGet(answer(410, googleError(410, 'deleted', 'Resource has been deleted')))).toEqual({ type: 'not_found' });
  });

  it('ReadsADeleteAnswered404Or410AsGone', () => {
    expect(readDelete(answer(204))).toEqual({ type: 'deleted' });
    expect(readDelete(answer(200))).toEqual({ type: 'deleted' });
    expect(readDelete(answer(404, googleError(404, 'notFound', 'Not Found')))).toEqual({ type: 'gone', status: 404 });
    expect(readDelete(answer(410, googleError(410, 'deleted', 'Resource has been deleted')))).toEqual({ type: 'gone', status: 410 });
    expect(readDelete(answer(403, googleError(403, 'userRateLimitExceeded', 'User Rate Limit Exceeded', 'usageLimits')))).toMatchObject({ type: 'rate_limited' });
  });

  it('ReadsTheTokenEndpointsAnswersByRfc6749', () => {
    expect(readToken(answer(200, JSON.stringify({ access_token: '1/fFAGRNJru1FTz70BzhT3Zg', expires_in: 3920, scope: 's', token_type: 'Bearer' })))).toEqual({
      type: 'ok',
      accessToken: '1/fFAGRNJru1FTz70BzhT3Zg',
      expiresInSeconds: 3920,
    });
    expect(readToken(answer(400, JSON.stringify({ error: 'invalid_grant', error_description: 'Token has been expired or revoked.' })))).toEqual({
      type: 'refused',
      status: 400,
      error: 'invalid_grant: Token has been expired or revoked.',
    });
    expect(readToken(answer(401, JSON.stringify({ error: 'invalid_client' })))).toMatchObject({ type: 'refused', status: 401 });
    expect(readToken(answer(429))).toMatchObject({ type: 'unavailable' });
    expect(readToken(answer(503))).toMatchObject({ type: 'unavailable' });
    expect(readToken(answer(200, '{}'))).toMatchObject({ type: 'unavailable', error: 'unreadable token answer' });
    expect(readToken(answer(200, JSON.stringify({ access_token: 'x', expires_in: 10, token_type: 'MAC' })))).toMatchObject({ type: 'refused' });
  });
});
