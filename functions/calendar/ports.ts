import type { PreparedJob, TransactItem } from '../jobs/index.ts';
import type { BatchBookingReader, CallSignatureCheck, LivenessPort } from './booking-deps.ts';

/**
 * What the calendar context asks of the rest of redial, as interfaces it owns; the composition root
 * (functions/app/contexts/calendar.ts) wires them to the calls and webhooks contexts.
 */
export interface CalendarPorts {
  /** The batches that name a calendar (the calls context's store). */
  batches: CalendarBatches;
  /** Appointment events for tenants' endpoints (the webhooks context's publisher). */
  events: CalendarEventPublisher;
  /**
   * What the agent's tools ask of the calls context: the call's liveness, its batch's booking settings and
   * the contact's zone, the call handler's signature. Only the functions serving the tools have it (the
   * calendarTools function, the local host); the tool routes answer 503 where it is absent.
   */
  calls?: CallToolsPort;
}

/** The calls context's answers to the agent's tools (booking-deps.ts). */
export interface CallToolsPort {
  liveness: LivenessPort;
  batchBooking: BatchBookingReader;
  verifySignature: CallSignatureCheck;
}

/** What the calendar context needs to know of batches. */
export interface CalendarBatches {
  /**
   * Which of these batches of the tenant are live (not Finalised, Cancelled or Deleted, and still stored):
   * a calendar a live batch books into may not be deleted.
   */
  live(tenantId: string, batchIds: readonly string[]): Promise<string[]>;
}

/** The events the calendar context announces. */
export const CalendarEvent = {
  appointmentBooked: 'appointment.booked',
  appointmentCancelled: 'appointment.cancelled',
} as const;
export type CalendarEventType = (typeof CalendarEvent)[keyof typeof CalendarEvent];

/** Writes that commit with the caller's change, and the jobs among them to wake once it has committed. */
export interface Contribution {
  items: TransactItem[];
  jobs: PreparedJob[];
}

/**
 * Publishes an event in the caller's transaction, as the calls context's port does (functions/calls/ports.ts
 * `EventPublisher`): after the commit the caller runs `afterCommit`; if the transaction does not commit,
 * `abandon`. Neither throws.
 */
export interface CalendarEventPublisher {
  prepare(
    input: { tenantId: string; type: CalendarEventType; data: Record<string, unknown>; /** A deterministic id, for an event a replayed request must not announce twice. */ id?: string },
    now: number,
  ): Promise<Contribution & { eventId: string; afterCommit(): Promise<void>; abandon(): Promise<void> }>;
}
