import { assertNever } from '../platform/assert.ts';
import { SETTLE_GRACE_MS, SETTLE_SECOND_LOOK_MS, SupplierDiscardReason } from './kinds.ts';
import type { CalendarAccess, CalendarFailure, CalendarProvider, DeleteResult, GetResult } from './port.ts';

/**
 * The settle decision, pure: what the `calendar.settle` job does next with one insert's event. A booking
 * is kept if and only if the route committed Booked (with this event id); everything else the route
 * inserted is deleted.
 *
 * ```
 *   hold ──► kept (Booked, this event) ...................... done: nothing to do
 *        ──► pending, now < deadline + grace ................ wait (snooze) until then
 *        ──► pending, later ................................. abandon it (the store's conditional write:
 *                                                              only if still not Booked), then decide again
 *        ──► not kept (abandoned, failed, cancelled) ........ read the event by id
 *   read ──► confirmed or tentative ......................... delete it
 *        ──► cancelled (Google's get answers deleted events) . done: already deleted
 *        ──► 404, now < deadline + second look ............... wait: a late insert may still land
 *        ──► 404, later ................................... done: never inserted
 *   delete ► 2xx, 404, 410 .................................. done
 *   a failure (read or delete) ► not_sent for credentials ... discard credentials_refused (alert)
 *                              ► rejected (permanent 4xx) ... discard http_4xx (alert)
 *                              ► anything else .............. retry on supplier.invoke's policy
 * ```
 *
 * Why read before deleting: a deleted event is reported by `get` with status `cancelled`, so a settle
 * that runs again after its own delete (its answer lost) ends without another request; and a 404 before
 * the second look waits instead of concluding, since Google may apply an insert after the route stopped
 * waiting for its answer.
 */

/** What the store says about the insert's hold when the settle job runs. */
export type Keeping =
  /** The route committed Booked with this event id, and it has not been cancelled since. */
  | { state: 'kept' }
  /** The route has not committed either way. */
  | { state: 'pending' }
  /** Abandoned (the deadline passed), failed, cancelled, or booked with another event: this insert must not survive. */
  | { state: 'not_kept' };

/** One step of the settle job. */
export type SettleStep =
  | { type: 'done'; why: string }
  /** Snooze (no attempt spent) until `until`. */
  | { type: 'wait'; until: number; why: string }
  /** Make the hold final: abandon it unless Booked (a conditional write), then decide again. */
  | { type: 'abandon' }
  | { type: 'read' }
  | { type: 'delete' }
  /** Throw: a retryable failure, on supplier.invoke's policy. */
  | { type: 'retry'; error: string }
  /** Throw `discard(reason)`. */
  | { type: 'discard'; reason: SupplierDiscardReason; error: string };

/** The first step, from the hold's state. `deadline`: the route's, epoch ms. */
export function settleFromHold(keeping: Keeping, deadline: number, now: number): SettleStep {
  switch (keeping.state) {
    case 'kept':
      return { type: 'done', why: 'the route committed Booked with this event: it is kept' };
    case 'pending':
      return now < deadline + SETTLE_GRACE_MS ? { type: 'wait', until: deadline + SETTLE_GRACE_MS, why: 'the route may still commit' } : { type: 'abandon' };
    case 'not_kept':
      return { type: 'read' };
    default:
      return assertNever(keeping);
  }
}

/** The step after reading the event by id. */
export function settleAfterRead(result: GetResult, deadline: number, now: number): SettleStep {
  switch (result.type) {
    case 'ok':
      return result.event.status === 'cancelled' ? { type: 'done', why: 'the event is already deleted' } : { type: 'delete' };
    case 'not_found':
      return now < deadline + SETTLE_SECOND_LOOK_MS
        ? { type: 'wait', until: deadline + SETTLE_SECOND_LOOK_MS, why: 'not in the calendar yet: a late insert may still land' }
        : { type: 'done', why: 'the event was never inserted' };
    case 'not_sent':
    case 'unknown':
    case 'rate_limited':
    case 'unauthorized':
    case 'rejected':
      return afterFailure(result);
    default:
      return assertNever(result);
  }
}

/** The step after deleting the event. */
export function settleAfterDelete(result: DeleteResult): SettleStep {
  switch (result.type) {
    case 'deleted':
      return { type: 'done', why: 'deleted' };
    case 'gone':
      return { type: 'done', why: `already gone (HTTP ${result.status})` };
    case 'not_sent':
    case 'unknown':
    case 'rate_limited':
    case 'unauthorized':
    case 'rejected':
      return afterFailure(result);
    default:
      return assertNever(result);
  }
}

/**
 * What a failed calendar request means for the job: only a permanent refusal is discarded (with an alert:
 * an event may stay behind); anything that may pass — no time, a token exchange that got no answer, an
 * unknown outcome, a rate limit, a refused access token — is retried on the kind's policy.
 */
export function afterFailure(failure: CalendarFailure): SettleStep {
  switch (failure.type) {
    case 'not_sent':
      return failure.reason === 'token_refused'
        ? { type: 'discard', reason: SupplierDiscardReason.credentials_refused, error: failure.error }
        : { type: 'retry', error: failure.error };
    case 'unknown':
      return { type: 'retry', error: failure.error };
    case 'rate_limited':
      return { type: 'retry', error: `rate limited: HTTP ${failure.status} ${failure.reason}` };
    case 'unauthorized':
      return { type: 'retry', error: `access token refused: HTTP ${failure.status}` };
    case 'rejected':
      return { type: 'discard', reason: SupplierDiscardReason.http_4xx, error: `HTTP ${failure.status}${failure.reason ? ` ${failure.reason}` : ''}: ${failure.message}` };
    default:
      return assertNever(failure);
  }
}

/** What one run of the settle job needs besides the hold: the calendar, the event, the route's deadline, and the run's own deadline for each request. */
export interface SettleRun {
  provider: CalendarProvider;
  calendar: CalendarAccess;
  eventId: string;
  /** The route's deadline, epoch ms (the settle args' `deadline`). */
  routeDeadline: number;
  now: () => number;
  /** This run's deadline for each request (the job's timeout leaves room for both). */
  requestDeadline: () => number;
}

/**
 * Runs the calendar side of a settle for a hold that is not kept: read the event, delete it if it is there,
 * each request sent once. Returns the step the job ends this run with: `done`, `wait` (snooze), `retry`
 * (throw) or `discard`. The store side (whether the hold is kept; abandoning a pending one) comes first,
 * from {@link settleFromHold}.
 */
export async function settleInCalendar(run: SettleRun): Promise<SettleStep> {
  const read = settleAfterRead(await run.provider.get(run.calendar, run.eventId, { deadline: run.requestDeadline() }), run.routeDeadline, run.now());
  if (read.type !== 'delete') return read;
  return settleAfterDelete(await run.provider.delete(run.calendar, run.eventId, { deadline: run.requestDeadline() }));
}
