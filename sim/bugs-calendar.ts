import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AppointmentState, BookingStore } from '../functions/calendar/booking-store.ts';
import type { AppointmentRow, HoldWrite } from '../functions/calendar/booking-store.ts';
import type { CalendarProvider } from '../functions/calendar/port.ts';
import type { TransactItem } from '../functions/jobs/index.ts';
import { BOOK_ROUTE, calendarIdOf } from './calendar-plan.ts';
import type { BatchPlan, Plan, TenantPlan } from './plan.ts';

/**
 * The calendar's planted bugs (issue 29, §4), one per invariant, each another implementation of one part of
 * the booking passed in through a seam (sim/host.ts `Alterations.bookingStore`, `calendarProvider`), never
 * a branch in functions/. sim/bugs.ts lists them with the others; sim/bug-proofs.ts says which plan
 * catches each ({@link calendarPlan}).
 */

/**
 * A booking store whose hold leaves out the cells' condition (absent, or held by an expired hold): a hold
 * over another booking's cells overwrites them, and both bookings commit Booked.
 */
export class HoldIgnoresCells extends BookingStore {
  override holdItems(hold: HoldWrite): TransactItem[] {
    return super.holdItems(hold).map((item) => {
      if (!item.name.startsWith('cell ') || !('Put' in item) || !item.Put) return item;
      // The cell's Put had only its condition's names and values: they go with it (DynamoDB refuses unused ones).
      const { ConditionExpression: _condition, ExpressionAttributeNames: _names, ExpressionAttributeValues: _values, ReturnValuesOnConditionCheckFailure: _stored, ...put } = item.Put;
      return { ...item, Put: put };
    });
  }
}

/**
 * A booking store whose read of an appointment takes a Pending one for Booked: the settle job, which reads
 * it, finds a hold whose route died between the insert and the commit "kept", and neither abandons it nor
 * deletes its event.
 */
export class SettleKeepsPending extends BookingStore {
  override async getAppointment(tenantId: string, appointmentId: string): Promise<AppointmentRow | undefined> {
    const row = await super.getAppointment(tenantId, appointmentId);
    return row?.state === AppointmentState.Pending ? { ...row, state: AppointmentState.Booked } : row;
  }
}

/** A provider whose insert is sent again, with the same event, when the first one's outcome is unknown. */
export function insertResentOnUnknown(inner: CalendarProvider): CalendarProvider {
  return {
    freeBusy: (calendar, from, to, options) => inner.freeBusy(calendar, from, to, options),
    insert: async (calendar, event, options) => {
      const first = await inner.insert(calendar, event, options);
      return first.type === 'unknown' ? inner.insert(calendar, event, options) : first;
    },
    get: (calendar, eventId, options) => inner.get(calendar, eventId, options),
    delete: (calendar, eventId, options) => inner.delete(calendar, eventId, options),
  };
}

export const calendarBugs = [
  {
    name: 'hold-ignores-cells',
    description: "the booking's hold puts its grid cells without their condition (absent, or an expired hold's): a second booking of a held slot overwrites the cells and commits Booked too",
    alterations: { bookingStore: (db: DynamoDBDocumentClient, table: string) => new HoldIgnoresCells(db, table) },
  },
  {
    name: 'settle-keeps-pending',
    description: 'the settle job reads a Pending appointment as Booked: a booking whose route died after its insert, before its commit, is never abandoned and its event stays in the calendar',
    alterations: { bookingStore: (db: DynamoDBDocumentClient, table: string) => new SettleKeepsPending(db, table) },
  },
  {
    name: 'insert-resent-on-unknown',
    description: "the booking route's provider sends the insert again when the first answer was lost, timed out or a 5xx",
    alterations: { calendarProvider: insertResentOnUnknown },
  },
] as const;

/** The targeted plans the calendar bugs are proven on: one tenant, one calendar, two booking batches. */
export type CalendarPlanName = 'race' | 'crash' | 'lost-insert';

/**
 * - `race`: two batches of three contacts each, limit 2, every call's agent books tomorrow's first slot (the
 *   target): the first booking holds it, every later one must find it taken; no faults;
 * - `crash`: one batch of two contacts, the agent books; the first booking route dies after its insert
 *   reached the calendar, before its commit (`crash.afterSideEffect`);
 * - `lost-insert`: one batch of two contacts, the agent books; the first insert is applied and its answer
 *   lost (`calendar.lostResponse`).
 */
export function calendarPlan(name: CalendarPlanName): Plan {
  const calendarId = calendarIdOf('t1');
  const numbers = (from: number, n: number) => Array.from({ length: n }, (_, i) => `+1646555${String(3000 + from + i)}`);
  const batch = (key: string, contacts: string[], createAtMs: number): BatchPlan => ({
    key,
    contacts,
    maxAttempts: 1,
    retry: { baseSeconds: 5, capSeconds: 60 },
    createAtMs,
    appointments: { calendarId, durationMinutes: 30, bufferMinutes: 0, maxDaysAhead: 14 },
    agent: 'books-target',
  });
  const tenant = (batches: BatchPlan[]): TenantPlan => ({ id: 't1', concurrencyLimit: 2, accessRequests: 0, endpoints: [], batches, calendars: [calendarId] });
  const seed = 910_000 + ['race', 'crash', 'lost-insert'].indexOf(name);
  switch (name) {
    case 'race':
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', numbers(0, 3), 0), batch('t1-b2', numbers(10, 3), 5_000)])] }, faults: [] };
    case 'crash':
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', numbers(0, 2), 0)])] }, faults: [{ id: 1, kind: 'crash.afterSideEffect', target: { where: 'api', name: BOOK_ROUTE }, nth: 1 }] };
    case 'lost-insert':
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', numbers(0, 2), 0)])] }, faults: [{ id: 1, kind: 'calendar.lostResponse', op: 'insert', nth: 1 }] };
    default:
      return name satisfies never;
  }
}
