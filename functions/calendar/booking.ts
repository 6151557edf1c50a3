import { clockMs, iso } from '../platform/clock.ts';
import { refusedCodes } from '../platform/dynamo.ts';
import type { TransactCancelled, TransactItem } from '../platform/dynamo.ts';
import type { BatchBooking, BookingDeps, CallRef } from './booking-deps.ts';
import { BookingEvent } from './booking-deps.ts';
import { appointmentIds, AppointmentState } from './booking-store.ts';
import type { AppointmentFields, AppointmentRow, CallPointerRow } from './booking-store.ts';
import { ROUTE_BUDGET_MS } from './budget.ts';
import { eventIdFor } from './event-ids.ts';
import { SETTLE_GRACE_MS, supplierInvokeKind } from './kinds.ts';
import type { CalendarAccess, CalendarFailure, FreeBusyResult } from './port.ts';
import type { AppointmentsSettings, StoredCalendar } from './schemas.ts';
import { DEFAULT_LEAD_MS, findSlots, utc } from './slots.ts';
import type { Slot } from './slots.ts';

/**
 * The agent's three tools, as the service the routes (tools-api.ts) answer from: availability, book and
 * cancel, each for one live call, each sending every calendar request at most once within the route's
 * budget (budget.ts). What each answers is a typed outcome; the routes turn it into HTTP.
 *
 * Booking, step by step (docs/appointments.md, "The booking transaction"):
 *
 * ```
 *  read the call's pointer ── Booked, same start ─► 201, the same answer (nothing sent)
 *                          ── Booked, another ────► 409 appointment_exists
 *                          ── Pending ────────────► 503: in progress (nothing sent)
 *  hold (ONE transaction): cells free or expired · appointment Pending (event id, insert counter) ·
 *        the call's pointer (no kept appointment, counter as read) · the settle job (deadline + grace) ·
 *        liveness ConditionChecks            refused: call_not_live / slot_taken (+ slots) / re-read the pointer
 *  insert the event, once ── ok ─► Booked commit (Pending, before the deadline, cells still ours;
 *                         │         cells kept to the padded end; appointment.booked) ─► 201
 *                         └─ anything else (refused, no answer, 5xx, timeout) ─► Failed commit (cells let go)
 *                                                                              ─► 503 calendar_unavailable
 *  the settle job (settle-job.ts) deletes every insert not kept: kept ⇔ the route committed Booked.
 * ```
 *
 * The booking sends one calendar request (the insert); it does not ask freeBusy again for its own slot:
 * the hold grid guards redial's own bookings, and the slot came from an availability answer moments
 * before. A refused hold asks freeBusy once for the alternatives it offers.
 */

/** Why a tool refuses before the calendar is asked: the call, its batch or its calendar. */
export type CallRefusal =
  | { type: 'not_live' }
  /** The batch names no `appointments` settings. */
  | { type: 'appointments_not_enabled' }
  /** The batch's calendar does not exist, or has no credentials. */
  | { type: 'calendar_not_configured'; calendarId: string };

/** The calendar could not answer in time (a failure, a timeout, a rate limit, freeBusy's `errors`): 503, try again. */
export type CalendarUnavailable = { type: 'calendar_unavailable'; why: string };
/** The store could not decide (another writer held an item, or an unexplained refusal): 503, nothing written. */
export type StoreUnavailable = { type: 'unavailable'; why: string };

export type AvailabilityOutcome = { type: 'slots'; slots: Slot[] } | CallRefusal | CalendarUnavailable | StoreUnavailable;

export type BookOutcome =
  | { type: 'booked'; appointmentId: string; start: string; end: string; replayed: boolean }
  | { type: 'slot_taken'; slots: Slot[] | undefined }
  | { type: 'appointment_exists'; appointmentId: string }
  /** The call's booking is still in progress (Pending): nothing was sent. */
  | { type: 'in_progress' }
  /** `start` is not a slot of the batch's grid inside the calendar's bookable hours and its horizon. */
  | { type: 'not_bookable'; message: string }
  | CallRefusal
  | CalendarUnavailable
  | StoreUnavailable;

export type CancelOutcome =
  | { type: 'cancelled' }
  | { type: 'cancelling' }
  | { type: 'not_found' }
  /** The appointment was never kept (its insert failed): nothing to cancel. */
  | { type: 'not_booked' }
  | { type: 'in_progress' }
  | { type: 'not_live' }
  | StoreUnavailable;

/** The time a route has: its wall-time deadline for calendar requests, and the same instant on the store's clock. */
export interface RouteTime {
  /** Wall ms: each calendar request's deadline. */
  wallDeadline: number;
}

/** A route's time, from its handler's start (wall ms). */
export function routeTime(deps: Pick<BookingDeps, 'routeBudgetMs'>, handlerStartWall: number): RouteTime {
  return { wallDeadline: handlerStartWall + (deps.routeBudgetMs ?? ROUTE_BUDGET_MS) };
}

/** The route's deadline on the store's clock: what stays of the budget, in the store's time (TIME_SCALE). */
const storeDeadline = (deps: Pick<BookingDeps, 'clock' | 'wallClock'>, time: RouteTime): number =>
  deps.clock.now() + clockMs(deps.clock, Math.max(0, time.wallDeadline - deps.wallClock.now()));

/** What a tool reads before it asks the calendar anything. */
interface CallContext {
  batch: BatchBooking;
  appointments: AppointmentsSettings;
  checks: TransactItem[];
  calendar: { settings: StoredCalendar; access: CalendarAccess };
}

/** The call's batch, its appointments settings and calendar, and its liveness checks; or why the tool refuses. */
async function callContext(deps: BookingDeps, call: CallRef): Promise<CallContext | CallRefusal> {
  const checks = deps.liveness.checks(call);
  if (!checks) return { type: 'not_live' };
  const batch = await deps.batchBooking(call.batchId, call.contactNumber);
  if (!batch) return { type: 'not_live' };
  if (!batch.appointments) return { type: 'appointments_not_enabled' };
  const calendar = await deps.loadCalendar(batch.tenantId, batch.appointments.calendarId);
  if (!calendar?.access) return { type: 'calendar_not_configured', calendarId: batch.appointments.calendarId };
  return { batch, appointments: batch.appointments, checks, calendar: { settings: calendar.settings, access: calendar.access } };
}

const isRefusal = (value: CallContext | CallRefusal): value is CallRefusal => 'type' in value;

/** Whether a cancelled transaction was refused by the liveness checks. */
const liveRefused = (cancelled: TransactCancelled, checks: readonly TransactItem[]): boolean =>
  checks.some((check) => cancelled.refused[check.name]?.code === 'ConditionalCheckFailed');

// ─── availability ─────────────────────────────────────────────────────────────────────────────────

/** What the agent asks for: a window and a count (slots.ts' defaults apply). */
export interface SlotRequest {
  from?: number;
  to?: number;
  limit?: number;
}

/**
 * `POST /v1/calls/availability`: the live call's batch's slots, free in the calendar (one freeBusy) and in
 * redial's own holds (one Query). Liveness is the same ConditionChecks the hold uses, alone in a
 * transaction, before the calendar is asked.
 */
export async function availability(deps: BookingDeps, call: CallRef, request: SlotRequest, time: RouteTime): Promise<AvailabilityOutcome> {
  const context = await callContext(deps, call);
  if (isRefusal(context)) return context;
  const live = await deps.store.transact(context.checks);
  if (!live.committed) {
    if (live.contention) return { type: 'unavailable', why: 'contention' };
    if (liveRefused(live, context.checks)) return { type: 'not_live' };
    return { type: 'unavailable', why: `liveness check refused: ${JSON.stringify(refusedCodes(live))}` };
  }
  return freeSlots(deps, context, request, time);
}

/** Slots free in the calendar and in the holds; `calendar_unavailable` when freeBusy gives no answer (never "all free"). */
async function freeSlots(deps: BookingDeps, context: CallContext, request: SlotRequest, time: RouteTime): Promise<{ type: 'slots'; slots: Slot[] } | CalendarUnavailable> {
  const { appointments, calendar } = context;
  const now = deps.clock.now();
  const bufferMs = appointments.bufferMinutes * 60_000;
  const horizon = now + appointments.maxDaysAhead * 86_400_000;
  const from = Math.max(now, request.from ?? now + DEFAULT_LEAD_MS);
  const to = Math.min(horizon, request.to ?? horizon);
  if (!(from < to)) return { type: 'slots', slots: [] };
  const busy: FreeBusyResult = await deps.provider.freeBusy(calendar.access, from - bufferMs, to + bufferMs, { deadline: time.wallDeadline });
  if (busy.type !== 'ok') return { type: 'calendar_unavailable', why: busy.type === 'calendar_errors' ? `freeBusy errors: ${busy.errors.map((e) => e.reason).join(', ')}` : describeFailure(busy) };
  const heldCells = await deps.store.heldCells(context.batch.tenantId, appointments.calendarId, from - bufferMs, to + bufferMs, now);
  const slots = findSlots({
    bookableHours: calendar.settings.bookableHours,
    calendarZone: calendar.settings.timezone,
    contactZone: context.batch.contactZone ?? calendar.settings.timezone,
    durationMinutes: appointments.durationMinutes,
    bufferMinutes: appointments.bufferMinutes,
    maxDaysAhead: appointments.maxDaysAhead,
    now,
    from,
    to,
    ...(request.limit !== undefined ? { limit: request.limit } : {}),
    busy: busy.busy,
    heldCells,
  });
  return { type: 'slots', slots };
}

// ─── booking ──────────────────────────────────────────────────────────────────────────────────────

/** What the agent books: a slot's start, and notes for the event. */
export interface BookRequest {
  start: number;
  notes?: string;
}

/** `POST /v1/calls/appointments` (see this file's comment). */
export async function book(deps: BookingDeps, call: CallRef, request: BookRequest, time: RouteTime): Promise<BookOutcome> {
  const context = await callContext(deps, call);
  if (isRefusal(context)) return context;
  const { batch, appointments, calendar } = context;
  const pointer = await deps.store.getPointer(batch.tenantId, batch.batchHex, call.callId);
  const known = fromPointer(pointer, request.start);
  if (known) return known;

  const now = deps.clock.now();
  const durationMs = appointments.durationMinutes * 60_000;
  const start = request.start;
  const end = start + durationMs;
  if (!isSlotStart(context, start, now)) {
    return { type: 'not_bookable', message: `not a bookable slot: starts on the ${appointments.durationMinutes + appointments.bufferMinutes}-minute grid inside the calendar's bookable hours, from now to ${appointments.maxDaysAhead} days ahead` };
  }

  // The hold: cells, appointment, pointer, settle job and liveness, in one transaction.
  const insert = (pointer?.inserts ?? 0) + 1;
  const eventId = eventIdFor({ tenantId: batch.tenantId, calendarId: appointments.calendarId, callId: call.callId, start, counter: insert });
  const appointmentId = appointmentIds.make(batch.batchHex, randomHex(deps, 16));
  const deadline = storeDeadline(deps, time);
  const row: Omit<AppointmentRow, 'pk' | 'sk' | 'state' | 'createdAt' | 'updatedAt'> = {
    appointmentId,
    tenantId: batch.tenantId,
    batchId: call.batchId,
    contactNumber: call.contactNumber,
    callId: call.callId,
    calendarId: appointments.calendarId,
    start: utc(start),
    end: utc(end),
    bufferMinutes: appointments.bufferMinutes,
    eventId,
    insert,
    deadline,
    ...(request.notes !== undefined ? { notes: request.notes } : {}),
  };
  const settle = deps.jobs.prepare(
    supplierInvokeKind,
    { op: 'calendar.settle', tenantId: batch.tenantId, calendarId: appointments.calendarId, appointmentId, eventId, deadline: iso(deadline) },
    { id: settleJobId(eventId, 'hold'), at: deadline + SETTLE_GRACE_MS },
  );
  const held = await deps.store.transact([
    ...deps.store.holdItems({ appointment: row, batchHex: batch.batchHex, insertsRead: pointer?.inserts ?? 0, cellsExpireAt: deadline + SETTLE_GRACE_MS, now }),
    settle.item,
    ...context.checks,
  ]);
  if (!held.committed) return holdRefused(deps, context, call, request, held, time);
  await deps.jobs.afterCommit([settle]);

  // The one insert.
  const stored: AppointmentFields = { ...row, state: AppointmentState.Pending, createdAt: iso(now), updatedAt: iso(now) };
  const inserted = await deps.provider.insert(
    calendar.access,
    {
      id: eventId,
      start,
      end,
      summary: `Appointment: ${call.contactNumber}`,
      ...(request.notes !== undefined ? { description: request.notes } : {}),
      tags: { redialAppointmentId: appointmentId, redialBatchId: call.batchId, redialCallId: call.callId },
    },
    { deadline: time.wallDeadline },
  );
  if (inserted.type !== 'ok') {
    await fail(deps, stored, batch.batchHex, `insert: ${describeFailure(inserted)}`);
    return { type: 'calendar_unavailable', why: describeFailure(inserted) };
  }

  // The Booked commit, with appointment.booked.
  const committedAt = deps.clock.now();
  const event = await deps.events.prepare({ tenantId: batch.tenantId, type: BookingEvent.booked, data: eventData(stored) }, committedAt);
  const booked = await deps.store.transact([...deps.store.bookedItems(stored, batch.batchHex, committedAt), ...event.items]);
  if (!booked.committed) {
    await event.abandon();
    deps.logger.warn('the insert succeeded but Booked did not commit; the settle job deletes the event', { appointmentId, refused: refusedCodes(booked) });
    await fail(deps, stored, batch.batchHex, 'Booked commit refused');
    return { type: 'calendar_unavailable', why: 'the booking did not commit in time' };
  }
  await event.afterCommit();
  return { type: 'booked', appointmentId, start: row.start, end: row.end, replayed: false };
}

/** The job id of a settle: one per insert (`hold`), and one more for a cancel of the kept one (`cancel`). */
export const settleJobId = (eventId: string, why: 'hold' | 'cancel'): string => `calendar.settle:${eventId}:${why}`;

/** The answer a call's pointer gives before anything is held, if it gives one. */
function fromPointer(pointer: CallPointerRow | undefined, start: number): BookOutcome | undefined {
  if (!pointer) return undefined;
  switch (pointer.state) {
    case AppointmentState.Booked:
      return Date.parse(pointer.start) === start
        ? { type: 'booked', appointmentId: pointer.appointmentId, start: pointer.start, end: pointer.end, replayed: true }
        : { type: 'appointment_exists', appointmentId: pointer.appointmentId };
    case AppointmentState.Pending:
      return { type: 'in_progress' };
    case AppointmentState.Failed:
    case AppointmentState.Cancelling:
    case AppointmentState.Cancelled:
      return undefined;
    default:
      return pointer.state satisfies never;
  }
}

/** Why the hold did not commit, from its refused items. */
async function holdRefused(deps: BookingDeps, context: CallContext, call: CallRef, request: BookRequest, held: TransactCancelled, time: RouteTime): Promise<BookOutcome> {
  if (held.contention) return { type: 'unavailable', why: 'contention' };
  if (liveRefused(held, context.checks)) return { type: 'not_live' };
  if (held.refused['call']?.code === 'ConditionalCheckFailed') {
    // Another request of the same call held first, or the call has a kept appointment: the pointer says which.
    const pointer = (held.refused['call'].item as CallPointerRow | undefined) ?? (await deps.store.getPointer(context.batch.tenantId, context.batch.batchHex, call.callId));
    return fromPointer(pointer, request.start) ?? { type: 'unavailable', why: 'the call took another insert meanwhile' };
  }
  if (Object.entries(held.refused).some(([name, refusal]) => name.startsWith('cell ') && refusal.code === 'ConditionalCheckFailed')) {
    const alternatives = await freeSlots(deps, context, {}, time);
    if (alternatives.type !== 'slots') deps.logger.warn('slot taken; no alternatives (freeBusy gave no answer)', { why: alternatives.why });
    return { type: 'slot_taken', slots: alternatives.type === 'slots' ? alternatives.slots : undefined };
  }
  deps.logger.error('hold refused for no reason the store explains; nothing was written', { refused: refusedCodes(held) });
  return { type: 'unavailable', why: 'unexplained refusal' };
}

/** The Failed commit after an insert that did not end Booked: best effort (the settle job abandons it otherwise). */
async function fail(deps: BookingDeps, row: AppointmentFields, batchHex: string, why: string): Promise<void> {
  const failed = await deps.store.transact(deps.store.failedItems(row, batchHex, deps.clock.now()));
  if (!failed.committed) deps.logger.warn('Failed not committed; the settle job abandons the hold after its grace', { appointmentId: row.appointmentId, why, refused: refusedCodes(failed) });
}

/** Whether `start` is a slot start of the batch's grid in the calendar's bookable hours, from now to the horizon (busy time aside). */
function isSlotStart(context: CallContext, start: number, now: number): boolean {
  const { appointments, calendar } = context;
  const [slot] = findSlots({
    bookableHours: calendar.settings.bookableHours,
    calendarZone: calendar.settings.timezone,
    contactZone: calendar.settings.timezone,
    durationMinutes: appointments.durationMinutes,
    bufferMinutes: appointments.bufferMinutes,
    maxDaysAhead: appointments.maxDaysAhead,
    now,
    from: start,
    to: start + appointments.durationMinutes * 60_000,
    limit: 1,
    busy: [],
    heldCells: new Set(),
  });
  return slot !== undefined && Date.parse(slot.start) === start;
}

// ─── cancel ───────────────────────────────────────────────────────────────────────────────────────

/**
 * `POST /v1/calls/appointments/cancel`: a Booked appointment of this live call becomes Cancelling, with a
 * settle job and `appointment.cancelled`, in one transaction with the liveness checks; then the calendar
 * delete, sent once: confirmed (or already gone) → Cancelled, its cells let go (204); anything else → the
 * job deletes it (202). The cells stay held until the calendar confirms, so nobody books over an event
 * that is still there.
 */
export async function cancel(deps: BookingDeps, call: CallRef, appointmentId: string, time: RouteTime): Promise<CancelOutcome> {
  const checks = deps.liveness.checks(call);
  if (!checks) return { type: 'not_live' };
  const batch = await deps.batchBooking(call.batchId, call.contactNumber);
  if (!batch) return { type: 'not_live' };
  const row = await deps.store.getAppointment(batch.tenantId, appointmentId);
  if (!row || row.batchId !== call.batchId || row.callId !== call.callId) return { type: 'not_found' };
  const known = cancelFromState(row.state);
  if (known) return known;

  const now = deps.clock.now();
  const deadline = storeDeadline(deps, time);
  const settle = deps.jobs.prepare(
    supplierInvokeKind,
    { op: 'calendar.settle', tenantId: row.tenantId, calendarId: row.calendarId, appointmentId, eventId: row.eventId, deadline: iso(deadline) },
    { id: settleJobId(row.eventId, 'cancel'), at: deadline + SETTLE_GRACE_MS },
  );
  const event = await deps.events.prepare({ tenantId: row.tenantId, type: BookingEvent.cancelled, data: eventData(row) }, now);
  const cancelling = await deps.store.transact([...deps.store.cancellingItems(row, batch.batchHex, now), settle.item, ...event.items, ...checks]);
  if (!cancelling.committed) {
    await event.abandon();
    if (cancelling.contention) return { type: 'unavailable', why: 'contention' };
    if (liveRefused(cancelling, checks)) return { type: 'not_live' };
    const stored = cancelling.refused['appointment']?.item as AppointmentRow | undefined;
    return (stored && cancelFromState(stored.state)) ?? { type: 'unavailable', why: `cancel refused: ${JSON.stringify(refusedCodes(cancelling))}` };
  }
  await Promise.all([deps.jobs.afterCommit([settle]), event.afterCommit()]);

  const calendar = await deps.loadCalendar(row.tenantId, row.calendarId);
  if (!calendar?.access) return { type: 'cancelling' };
  const deleted = await deps.provider.delete(calendar.access, row.eventId, { deadline: time.wallDeadline });
  if (deleted.type !== 'deleted' && deleted.type !== 'gone') return { type: 'cancelling' };
  const done = await deps.store.transact(deps.store.cancelledItems({ ...row, state: AppointmentState.Cancelling }, batch.batchHex, deps.clock.now()));
  // The calendar confirmed: the answer is 204 either way; a Cancelled not committed is the settle job's to write.
  if (!done.committed) deps.logger.warn('the calendar confirmed the delete; Cancelled is left to the settle job', { appointmentId, refused: refusedCodes(done) });
  return { type: 'cancelled' };
}

function cancelFromState(state: AppointmentState): CancelOutcome | undefined {
  switch (state) {
    case AppointmentState.Booked:
      return undefined;
    case AppointmentState.Cancelled:
      return { type: 'cancelled' };
    case AppointmentState.Cancelling:
      return { type: 'cancelling' };
    case AppointmentState.Pending:
      return { type: 'in_progress' };
    case AppointmentState.Failed:
      return { type: 'not_booked' };
    default:
      return state satisfies never;
  }
}

// ─── plumbing ─────────────────────────────────────────────────────────────────────────────────────

/** What `appointment.booked` and `appointment.cancelled` carry. */
function eventData(row: Pick<AppointmentRow, 'appointmentId' | 'batchId' | 'contactNumber' | 'callId' | 'calendarId' | 'start' | 'end' | 'notes'>): Record<string, unknown> {
  return {
    appointmentId: row.appointmentId,
    batchId: row.batchId,
    contactNumber: row.contactNumber,
    callId: row.callId,
    calendarId: row.calendarId,
    start: row.start,
    end: row.end,
    ...(row.notes !== undefined ? { notes: row.notes } : {}),
  };
}

/** `length` lowercase hex characters from the injected RNG. */
function randomHex(deps: Pick<BookingDeps, 'rng'>, length: number): string {
  let out = '';
  while (out.length < length) out += deps.rng.int(0, 0xffff).toString(16).padStart(4, '0');
  return out.slice(0, length);
}

/** A calendar failure, in a line. */
export function describeFailure(failure: CalendarFailure): string {
  switch (failure.type) {
    case 'not_sent':
      return `not sent (${failure.reason}): ${failure.error}`;
    case 'unknown':
      return `no usable answer${failure.status !== undefined ? ` (HTTP ${failure.status})` : ''}: ${failure.error}`;
    case 'rate_limited':
      return `rate limited: HTTP ${failure.status} ${failure.reason}`;
    case 'unauthorized':
      return `access token refused: HTTP ${failure.status}`;
    case 'rejected':
      return `refused: HTTP ${failure.status}${failure.reason ? ` ${failure.reason}` : ''}: ${failure.message}`;
    default:
      return failure satisfies never;
  }
}
