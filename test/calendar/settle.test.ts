import { describe, expect, it } from 'vitest';
import { SETTLE_GRACE_MS, SETTLE_SECOND_LOOK_MS } from '../../functions/calendar/kinds.ts';
import type { CalendarFailure } from '../../functions/calendar/port.ts';
import { afterFailure, settleAfterDelete, settleAfterRead, settleFromHold } from '../../functions/calendar/settle.ts';

const deadline = Date.parse('2026-03-02T15:00:02.500Z');
const event = (status: 'confirmed' | 'tentative' | 'cancelled') => ({ type: 'ok' as const, event: { id: 'abcdef0123', status, tags: {} } });

describe('the settle decision', () => {
  it('LeavesABookingTheRouteCommittedAlone', () => {
    expect(settleFromHold({ state: 'kept' }, deadline, deadline + SETTLE_GRACE_MS)).toMatchObject({ type: 'done' });
  });

  it('WaitsForARouteThatMayStillCommitThenAbandonsItsHold', () => {
    expect(settleFromHold({ state: 'pending' }, deadline, deadline + 1_000)).toEqual({ type: 'wait', until: deadline + SETTLE_GRACE_MS, why: 'the route may still commit' });
    expect(settleFromHold({ state: 'pending' }, deadline, deadline + SETTLE_GRACE_MS)).toEqual({ type: 'abandon' });
  });

  it('ReadsTheCalendarForAnInsertThatWasNotKept', () => {
    expect(settleFromHold({ state: 'not_kept' }, deadline, deadline + SETTLE_GRACE_MS)).toEqual({ type: 'read' });
  });

  it('DeletesAnEventThatIsThereAndEndsOnOneAlreadyDeleted', () => {
    const now = deadline + SETTLE_GRACE_MS;
    expect(settleAfterRead(event('confirmed'), deadline, now)).toEqual({ type: 'delete' });
    expect(settleAfterRead(event('tentative'), deadline, now)).toEqual({ type: 'delete' });
    expect(settleAfterRead(event('cancelled'), deadline, now)).toMatchObject({ type: 'done' });
  });

  it('LooksOnceMoreForAnEventNotThereYetBecauseALateInsertMayStillLand', () => {
    expect(settleAfterRead({ type: 'not_found' }, deadline, deadline + SETTLE_GRACE_MS)).toMatchObject({ type: 'wait', until: deadline + SETTLE_SECOND_LOOK_MS });
    expect(settleAfterRead({ type: 'not_found' }, deadline, deadline + SETTLE_SECOND_LOOK_MS)).toMatchObject({ type: 'done', why: 'the event was never inserted' });
  });

  it('CountsADeleteAnswered404Or410AsDone', () => {
    expect(settleAfterDelete({ type: 'deleted' })).toMatchObject({ type: 'done' });
    expect(settleAfterDelete({ type: 'gone', status: 404 })).toMatchObject({ type: 'done' });
    expect(settleAfterDelete({ type: 'gone', status: 410 })).toMatchObject({ type: 'done' });
  });

  it('RetriesWhatMayPassAndDiscardsOnlyAPermanentRefusal', () => {
    const cases: [CalendarFailure, string, string?][] = [
      [{ type: 'not_sent', reason: 'no_time', error: 'x' }, 'retry'],
      [{ type: 'not_sent', reason: 'token_unavailable', error: 'x' }, 'retry'],
      [{ type: 'not_sent', reason: 'token_refused', error: 'invalid_grant' }, 'discard', 'credentials_refused'],
      [{ type: 'unknown', status: 503, error: 'HTTP 503' }, 'retry'],
      [{ type: 'unknown', error: 'no answer within the deadline (TimeoutError)' }, 'retry'],
      [{ type: 'rate_limited', status: 403, reason: 'rateLimitExceeded' }, 'retry'],
      [{ type: 'rate_limited', status: 403, reason: 'userRateLimitExceeded' }, 'retry'],
      [{ type: 'rate_limited', status: 429, reason: 'rateLimitExceeded' }, 'retry'],
      [{ type: 'unauthorized', status: 401 }, 'retry'],
      [{ type: 'rejected', status: 403, reason: 'forbidden', message: 'Forbidden' }, 'discard', 'http_4xx'],
      [{ type: 'rejected', status: 400, reason: 'badRequest', message: 'Bad Request' }, 'discard', 'http_4xx'],
    ];
    for (const [failure, type, reason] of cases) {
      const step = afterFailure(failure);
      expect(step.type, JSON.stringify(failure)).toBe(type);
      if (reason) expect(step).toMatchObject({ reason });
      // The same failure, from a read or a delete, means the same.
      expect(settleAfterRead(failure, deadline, deadline + SETTLE_GRACE_MS)).toEqual(step);
      expect(settleAfterDelete(failure)).toEqual(step);
    }
  });
});
