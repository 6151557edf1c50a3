import * as z from 'zod';
import { HttpError, route, unavailable } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { BookingDeps, CallRef } from './booking-deps.ts';
import { availability, book, cancel, routeTime } from './booking.ts';
import type { AvailabilityOutcome, BookOutcome, CallRefusal, CancelOutcome, CalendarUnavailable, StoreUnavailable } from './booking.ts';
import { MAX_SLOT_LIMIT } from './slots.ts';

/**
 * The agent's calendar tools, signed by the AI call handler exactly as the call-result intake is (Standard
 * Webhooks with the intake's secret: `verifySignature`, wired to calls/signature.ts), the signed body
 * naming the call `{batchId, contactNumber, callId}`. Every answer, and what it means for the agent:
 *
 * | status | body | when |
 * |---|---|---|
 * | 200 | `{slots: [{start, end, localStart, localEnd, timeZone}]}` | availability |
 * | 201 | `{appointmentId, start, end}` | booked — and the same answer to a re-sent request for the same call and start |
 * | 204 | — | cancelled: the calendar confirmed the delete |
 * | 202 | `{status: "cancelling"}` | cancelled; the delete is the settle job's |
 * | 400 | `{error: "invalid_request", issues}` | a bad body, or a `start` that is not a bookable slot (`body.start`) |
 * | 401 | `{error: "invalid_signature"}` | missing, wrong or stale signature |
 * | 404 | `{error: "not_found"}` | cancel: no such appointment of this call |
 * | 409 | `{error: "call_not_live"}` | the intake would no longer apply the call's result |
 * | 409 | `{error: "slot_taken", slots}` | another booking holds part of the slot; `slots`: free ones now (absent if freeBusy gave no answer) |
 * | 409 | `{error: "appointment_exists", appointmentId}` | the call has one already (cancel first to rebook) |
 * | 409 | `{error: "not_booked"}` | cancel: the appointment's booking failed; nothing to cancel |
 * | 409 | `{error: "appointments_not_enabled"}` / `{error: "calendar_not_configured"}` | the batch books nothing / its calendar is missing or has no credentials |
 * | 503 | `{error: "calendar_unavailable"}`, `Retry-After: 1` | the calendar failed, timed out or rate-limited (the route does not try again) |
 * | 503 | `{error: "booking_in_progress"}`, `Retry-After: 1` | this call's booking is still in progress: nothing was sent |
 * | 503 | `{error: "unavailable"}`, `Retry-After: 1` | the store was contended: nothing was written |
 */

/** A tool request's body is small: the call, a start, notes. */
export const TOOLS_MAX_BODY_BYTES = 16 * 1024;

const callFields = {
  batchId: z.string().min(1).max(200),
  contactNumber: z.string().regex(/^\+[1-9]\d{1,14}$/, 'expected an E.164 number'),
  callId: z.string().min(1).max(200),
};
const instant = z.iso.datetime({ message: 'expected an ISO-8601 UTC time (…Z)' });

export const availabilityBody = z.strictObject({
  ...callFields,
  from: instant.optional(),
  to: instant.optional(),
  limit: z.number().int().min(1).max(MAX_SLOT_LIMIT).optional(),
});
export const bookBody = z.strictObject({ ...callFields, start: instant, notes: z.string().max(2000).optional() });
export const cancelBody = z.strictObject({ ...callFields, appointmentId: z.string().min(1).max(100) });

const slotSchema = z.object({ start: z.string(), end: z.string(), localStart: z.string(), localEnd: z.string(), timeZone: z.string() });
export const slotsResponse = z.object({ slots: z.array(slotSchema) });
export const bookedResponse = z.object({ appointmentId: z.string(), start: z.string(), end: z.string() });
export const cancellingResponse = z.object({ status: z.literal('cancelling') });

const RETRY = { 'retry-after': '1' };
const calendarUnavailable = (why: string) => new HttpError(503, 'calendar_unavailable', 'the calendar did not answer in time; nothing is kept, try again', undefined, { headers: RETRY, cause: why });

/** The answers every tool shares: the call, its batch, its calendar, the store. */
function refusal(outcome: CallRefusal | CalendarUnavailable | StoreUnavailable | { type: 'not_live' }, logger: BookingDeps['logger']): HttpError {
  if (outcome.type === 'calendar_unavailable' || outcome.type === 'unavailable') logger.warn('calendar tool answered 503', { outcome: outcome.type, why: outcome.why });
  switch (outcome.type) {
    case 'not_live':
      return new HttpError(409, 'call_not_live', 'the call is not in progress: its result would no longer apply');
    case 'appointments_not_enabled':
      return new HttpError(409, 'appointments_not_enabled', 'the batch books no appointments (no `appointments` settings)');
    case 'calendar_not_configured':
      return new HttpError(409, 'calendar_not_configured', `calendar ${outcome.calendarId} does not exist or has no credentials`);
    case 'calendar_unavailable':
      return calendarUnavailable(outcome.why);
    case 'unavailable':
      return unavailable(undefined, RETRY);
    default:
      return outcome satisfies never;
  }
}

const callOf = (body: CallRef): CallRef => ({ batchId: body.batchId, contactNumber: body.contactNumber, callId: body.callId });

/** The three tool routes over the booking's deps (resolved on the first request, so listing routes needs none). */
export function toolRoutes(deps: () => BookingDeps): ApiRoute[] {
  const guard = ({ headers, rawBody }: { headers: Record<string, string>; rawBody: string }) => {
    const d = deps();
    const verdict = d.verifySignature(headers, rawBody, d.wallClock.now());
    if (verdict.ok) return;
    throw verdict.reason === 'refused' ? new HttpError(401, 'invalid_signature', verdict.message) : unavailable(verdict.message);
  };
  const common = {
    method: 'POST' as const,
    auth: 'none' as const,
    maxBodyBytes: TOOLS_MAX_BODY_BYTES,
    guard,
  };
  const shared = {
    400: { description: 'invalid body' },
    401: { description: 'missing, wrong or stale signature' },
    409: { description: 'call_not_live, appointments_not_enabled or calendar_not_configured (and the route’s own conflicts)' },
    413: { description: 'body too large' },
    503: { description: 'calendar_unavailable, or the store was contended: nothing kept, try again', headers: { 'retry-after': 'seconds: 1' } },
  };

  const availabilityRoute = route({
    ...common,
    path: '/v1/calls/availability',
    summary: 'Calendar tool: free slots for the live call’s batch (signed as the call-result intake)',
    body: availabilityBody,
    responses: { 200: { description: 'slots, in UTC and in the contact’s zone', schema: slotsResponse }, ...shared },
    handler: async ({ body }) => {
      const d = deps();
      const time = routeTime(d, d.wallClock.now());
      const outcome: AvailabilityOutcome = await availability(
        d,
        callOf(body),
        {
          ...(body.from !== undefined ? { from: Date.parse(body.from) } : {}),
          ...(body.to !== undefined ? { to: Date.parse(body.to) } : {}),
          ...(body.limit !== undefined ? { limit: body.limit } : {}),
        },
        time,
      );
      if (outcome.type === 'slots') return { status: 200, body: { slots: outcome.slots } };
      throw refusal(outcome, d.logger);
    },
  });

  const bookRoute = route({
    ...common,
    path: '/v1/calls/appointments',
    summary: 'Calendar tool: book a slot for the live call (one appointment per call)',
    body: bookBody,
    responses: {
      201: { description: 'booked (a re-sent request for the same call and start answers the same)', schema: bookedResponse },
      ...shared,
      409: { description: 'slot_taken (with free slots), appointment_exists, call_not_live, appointments_not_enabled, calendar_not_configured' },
      503: { description: 'calendar_unavailable, booking_in_progress (nothing sent), or the store was contended', headers: { 'retry-after': 'seconds: 1' } },
    },
    handler: async ({ body }) => {
      const d = deps();
      const time = routeTime(d, d.wallClock.now());
      const outcome: BookOutcome = await book(d, callOf(body), { start: Date.parse(body.start), ...(body.notes !== undefined ? { notes: body.notes } : {}) }, time);
      switch (outcome.type) {
        case 'booked':
          return { status: 201, body: { appointmentId: outcome.appointmentId, start: outcome.start, end: outcome.end } };
        case 'slot_taken':
          throw new HttpError(409, 'slot_taken', 'another booking holds part of this slot', outcome.slots ? { slots: outcome.slots } : undefined);
        case 'appointment_exists':
          throw new HttpError(409, 'appointment_exists', 'the call has an appointment already: cancel it first to book another', { appointmentId: outcome.appointmentId });
        case 'in_progress':
          throw new HttpError(503, 'booking_in_progress', 'this call’s booking is still in progress; nothing was sent', undefined, { headers: RETRY });
        case 'not_bookable':
          throw new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path: 'body.start', message: outcome.message }] });
        case 'not_live':
        case 'appointments_not_enabled':
        case 'calendar_not_configured':
        case 'calendar_unavailable':
        case 'unavailable':
          throw refusal(outcome, d.logger);
        default:
          return outcome satisfies never;
      }
    },
  });

  const cancelRoute = route({
    ...common,
    path: '/v1/calls/appointments/cancel',
    summary: 'Calendar tool: cancel the live call’s appointment',
    body: cancelBody,
    responses: {
      202: { description: 'cancelled; the calendar delete is left to a job', schema: cancellingResponse },
      204: { description: 'cancelled: the calendar confirmed the delete' },
      404: { description: 'no such appointment of this call' },
      ...shared,
      409: { description: 'call_not_live (the call ended), not_booked' },
      503: { description: 'booking_in_progress, or the store was contended: nothing written', headers: { 'retry-after': 'seconds: 1' } },
    },
    handler: async ({ body }) => {
      const d = deps();
      const time = routeTime(d, d.wallClock.now());
      const outcome: CancelOutcome = await cancel(d, callOf(body), body.appointmentId, time);
      switch (outcome.type) {
        case 'cancelled':
          return { status: 204 };
        case 'cancelling':
          return { status: 202, body: { status: 'cancelling' } };
        case 'not_found':
          throw new HttpError(404, 'not_found', 'appointment not found');
        case 'not_booked':
          throw new HttpError(409, 'not_booked', 'the appointment was never booked: nothing to cancel');
        case 'in_progress':
          throw new HttpError(503, 'booking_in_progress', 'the appointment’s booking is still in progress', undefined, { headers: RETRY });
        case 'not_live':
        case 'unavailable':
          throw refusal(outcome, d.logger);
        default:
          return outcome satisfies never;
      }
    },
  });

  return [availabilityRoute, bookRoute, cancelRoute];
}
