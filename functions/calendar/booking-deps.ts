import type { JobClient, TransactItem } from '../jobs/index.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { Rng } from '../platform/rng.ts';
import type { BookingStore } from './booking-store.ts';
import type { CalendarAccess, CalendarProvider } from './port.ts';
import type { AppointmentsSettings, StoredCalendar } from './schemas.ts';
import { CalendarEvent } from './ports.ts';
import type { CalendarEventPublisher } from './ports.ts';

/**
 * What the booking side of the calendar context (the agent's tools, tools-api.ts, and the settle job,
 * settle-job.ts) needs, as interfaces it owns. The composition root wires them: the calls context answers
 * the call's liveness, its batch's settings and the signature check; the webhooks context publishes the
 * events; the calendar settings store loads a calendar.
 */

/** The call a tool request names: the signed body's `{batchId, contactNumber, callId}`. */
export interface CallRef {
  readonly batchId: string;
  readonly contactNumber: string;
  readonly callId: string;
}

/**
 * "The intake would still apply this call's result" as ConditionChecks for the caller's transaction (the
 * calls context builds them: calls/liveness.ts). Undefined when the call id is not one the dialer made for
 * this contact of this batch: such a call is never live, and nothing need be sent to find out.
 */
export interface LivenessPort {
  checks(call: CallRef): TransactItem[] | undefined;
}

/** What the booking reads of the call's batch and contact. */
export interface BatchBooking {
  /** The batch's tenant (a batch id names it). */
  readonly tenantId: string;
  /** The batch id's own part: the appointments' partition (model.ts `appointmentsPartition`). */
  readonly batchHex: string;
  /** The batch's `appointments` settings; absent: its agent books nothing. */
  readonly appointments: AppointmentsSettings | undefined;
  /**
   * The contact's zone by the campaign-control rule (calls/compliance/recipient.ts `recipientZones`, the
   * first of its zones); absent when the rule has none to give (no calling window): the calendar's zone.
   */
  readonly contactZone: string | undefined;
}

/** A batch's booking settings and the contact's zone; undefined for a batch that does not exist (or is deleted). */
export type BatchBookingReader = (batchId: string, contactNumber: string) => Promise<BatchBooking | undefined>;

/** A tenant's calendar: its settings, and how to reach it (undefined: no credentials stored). */
export type CalendarLoader = (tenantId: string, calendarId: string) => Promise<{ settings: StoredCalendar; access: CalendarAccess | undefined } | undefined>;

/**
 * The call handler's signature on a tool request, checked as the call-result intake checks its own
 * (calls/signature.ts, Standard Webhooks with the intake's secret). `not_configured`: no secret is set.
 */
export type CallSignatureCheck = (headers: Record<string, string | undefined>, rawBody: string, nowMs: number) => { ok: true } | { ok: false; reason: 'refused' | 'not_configured'; message: string };

/** The events the booking announces, committed with the change they announce (ports.ts `CalendarEvent`). */
export const BookingEvent = { booked: CalendarEvent.appointmentBooked, cancelled: CalendarEvent.appointmentCancelled } as const;

/** Publishes an event in the caller's transaction: the context's port (ports.ts `CalendarEventPublisher`). */
export type BookingEvents = Pick<CalendarEventPublisher, 'prepare'>;

/** The booking side's dependencies. */
export interface BookingDeps {
  store: BookingStore;
  provider: CalendarProvider;
  loadCalendar: CalendarLoader;
  batchBooking: BatchBookingReader;
  liveness: LivenessPort;
  verifySignature: CallSignatureCheck;
  jobs: Pick<JobClient, 'prepare' | 'afterCommit'>;
  events: BookingEvents;
  /** Job and store time (TIME_SCALE's): holds' expiry, the settle job's due time, the route's deadline as stored. */
  clock: Clock;
  /** Wall time: the route's budget and each calendar request's deadline (the provider's clock). */
  wallClock: Clock;
  rng: Rng;
  logger: Logger;
  /** The route's budget, wall ms from the handler's start. @default ROUTE_BUDGET_MS (budget.ts) */
  routeBudgetMs?: number;
}

