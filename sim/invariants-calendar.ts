import type { AppointmentRow, HoldCellRow } from '../functions/calendar/booking-store.ts';
import { cellSortKey, collide, holdCells, holdPartition } from '../functions/calendar/holds.ts';
import type { SimulatedEvent, SimulatedRequest } from '../functions/calendar/local/simulator.ts';
import type { ToolRequest } from './world/calendar-agent.ts';
import { EXPECTED_TOOL_ANSWERS } from './world/calendar-agent.ts';

/**
 * The calendar's invariants (issue 29, §4), over the `calendar` table as the run left it, the built-in
 * calendar's events and request log, and the agent's tool requests. Pure: the runner reads what they take
 * (sim/invariants.ts `observe`, `SimHost.calendar`); test/sim/invariants-calendar.test.ts breaks each.
 */

export interface CalendarObserved {
  /** Clock ms when the tables were read. */
  now: number;
  /** The run came to rest (every settle job ran): `calendar.kept-exactly` is only meaningful then. */
  settled: boolean;
  /** Every item of the `calendar` table. */
  items: readonly Record<string, unknown>[];
  /** Every event the built-in calendar holds (every one redial's: the simulation seeds none). */
  events: readonly SimulatedEvent[];
  /** Every request the built-in calendar received. */
  requests: readonly SimulatedRequest[];
  /** The agent's tool requests. */
  tools: readonly ToolRequest[];
}

export interface CalendarViolation {
  invariant: string;
  message: string;
}

const appointmentsOf = (o: CalendarObserved) => o.items.filter((i) => String(i['sk']).startsWith('APPT#')) as unknown as AppointmentRow[];
const cellsOf = (o: CalendarObserved) => o.items.filter((i) => String(i['sk']).startsWith('cell#')) as unknown as (HoldCellRow & { pk: string; sk: string })[];

/** States in which an appointment holds its cells: its event is, or may still be, in the calendar. */
const HOLDING = new Set<string>(['Pending', 'Booked', 'Cancelling']);

const span = (a: AppointmentRow) => ({ start: Date.parse(a.start), end: Date.parse(a.end), bufferMs: a.bufferMinutes * 60_000 });

/**
 * `calendar.one-holder-per-cell`: no two Booked appointments of a calendar collide (their padded intervals
 * share a grid cell), whatever their lengths; no cell is claimed by two holding appointments; and every
 * holding appointment's cells that have not expired are stored as its own (a cell taken over by another hold
 * is one the condition let through).
 */
export function oneHolderPerCell(o: CalendarObserved): CalendarViolation[] {
  const out: CalendarViolation[] = [];
  const byCalendar = new Map<string, AppointmentRow[]>();
  for (const a of appointmentsOf(o)) {
    if (!HOLDING.has(a.state)) continue;
    const key = `${a.tenantId} ${a.calendarId}`;
    byCalendar.set(key, [...(byCalendar.get(key) ?? []), a]);
  }
  for (const [calendar, held] of byCalendar) {
    for (let i = 0; i < held.length; i++) {
      for (let j = i + 1; j < held.length; j++) {
        const [a, b] = [held[i]!, held[j]!];
        if (!collide(span(a), span(b))) continue;
        const both = a.state === 'Booked' && b.state === 'Booked';
        out.push({
          invariant: 'calendar.one-holder-per-cell',
          message: `${both ? 'two Booked appointments collide' : 'two holding appointments share a cell'} in calendar ${calendar}: ${a.appointmentId} (${a.state} ${a.start}–${a.end} ±${a.bufferMinutes} min, call ${a.callId}) and ${b.appointmentId} (${b.state} ${b.start}–${b.end} ±${b.bufferMinutes} min, call ${b.callId})`,
        });
      }
    }
  }
  const cells = new Map(cellsOf(o).map((c) => [`${c.pk} ${c.sk}`, c]));
  for (const a of appointmentsOf(o)) {
    if (a.state !== 'Booked' && a.state !== 'Cancelling') continue;
    const partition = holdPartition(a.tenantId, a.calendarId);
    for (const cell of holdCells(Date.parse(a.start), Date.parse(a.end), a.bufferMinutes * 60_000)) {
      const stored = cells.get(`${partition} ${cellSortKey(cell)}`);
      if (stored && stored.expiresAt * 1000 < o.now) continue;
      if (stored?.appointmentId === a.appointmentId) continue;
      out.push({
        invariant: 'calendar.one-holder-per-cell',
        message: `${a.state} appointment ${a.appointmentId} (${a.start}, call ${a.callId}) does not hold its cell ${cellSortKey(cell)}: ${stored ? `held by ${stored.appointmentId} (call ${stored.callId}, ${stored.state})` : 'no cell stored'}`,
      });
      break;
    }
  }
  return out;
}

/**
 * `calendar.kept-exactly`, at rest (every settle job has run): every Booked appointment's event is in the
 * calendar and not cancelled; every other event redial inserted is deleted (the settle job's compensating
 * delete); and no appointment is left Pending or Cancelling.
 */
export function keptExactly(o: CalendarObserved): CalendarViolation[] {
  if (!o.settled) return [];
  const out: CalendarViolation[] = [];
  const events = new Map(o.events.map((e) => [e.id, e]));
  const kept = new Set<string>();
  for (const a of appointmentsOf(o)) {
    if (a.state === 'Pending' || a.state === 'Cancelling') {
      out.push({ invariant: 'calendar.kept-exactly', message: `appointment ${a.appointmentId} (call ${a.callId}, ${a.start}) is still ${a.state} at rest: its settle job did not settle it` });
    }
    if (a.state !== 'Booked') continue;
    kept.add(a.eventId);
    const event = events.get(a.eventId);
    if (event?.status !== 'confirmed') {
      out.push({ invariant: 'calendar.kept-exactly', message: `Booked appointment ${a.appointmentId} (call ${a.callId}, ${a.start}): its event ${a.eventId} is ${event ? event.status : 'not in the calendar'}` });
    }
  }
  for (const event of o.events) {
    if (kept.has(event.id) || event.status === 'cancelled') continue;
    const appointment = event.privateProperties['redialAppointmentId'];
    out.push({ invariant: 'calendar.kept-exactly', message: `event ${event.id} (${event.start}, appointment ${appointment ?? '?'}) is in the calendar, but no Booked appointment keeps it` });
  }
  return out;
}

/**
 * `calendar.sent-once`: no route sends a calendar request twice. Each insert's event id reaches the calendar
 * at most once (a fresh id per insert: a re-sent insert repeats one), and each tool request (each send of
 * it by the agent) made at most one freeBusy and at most one insert (the agent sends them one at a time, and
 * settle jobs ask neither, so the requests logged while one was out are its own).
 */
export function sentOnce(o: CalendarObserved): CalendarViolation[] {
  const out: CalendarViolation[] = [];
  const inserts = new Map<string, number>();
  for (const r of o.requests) if (r.op === 'insert' && r.eventId) inserts.set(r.eventId, (inserts.get(r.eventId) ?? 0) + 1);
  for (const [eventId, n] of inserts) if (n > 1) out.push({ invariant: 'calendar.sent-once', message: `event ${eventId} was inserted ${n} times` });
  for (const t of o.tools) {
    t.calendarRequests.forEach(([from, to], send) => {
      const window = o.requests.slice(from, to);
      for (const op of ['freeBusy', 'insert'] as const) {
        const n = window.filter((r) => r.op === op).length;
        if (n > 1) out.push({ invariant: 'calendar.sent-once', message: `${t.tool} of call ${t.callId}${t.start ? ` at ${t.start}` : ''} (send ${send + 1}) sent ${n} ${op} requests` });
      }
    });
  }
  return out;
}

/**
 * `calendar.tools-expected-answers`: every tool request got a 2xx, a 502 (its function died: a crash fault),
 * or a 409 / 503 whose `error` the agent is told to expect (docs/appointments.md, "Error map"); never a 400,
 * 401, 404, 500, or no answer at all.
 */
export function toolsExpectedAnswers(o: CalendarObserved): CalendarViolation[] {
  const out: CalendarViolation[] = [];
  for (const t of o.tools) {
    const last = t.statuses.at(-1);
    for (const status of t.statuses) {
      if ((status >= 200 && status < 300) || status === 502) continue;
      const expected = EXPECTED_TOOL_ANSWERS[status];
      // Only the last answer's error is kept; an earlier 503 of a re-sent request is one the agent re-sent on.
      if (expected && (status !== last || (t.error !== undefined && expected.includes(t.error)))) continue;
      out.push({ invariant: 'calendar.tools-expected-answers', message: `${t.tool} of call ${t.callId}${t.start ? ` at ${t.start}` : ''} answered ${status === 0 ? 'nothing' : status}${status === last && t.error ? ` (${t.error})` : ''}` });
    }
  }
  return out;
}

/** The calendar's invariants, by name (docs/simulation.md describes each). */
export const calendarInvariants: Readonly<Record<string, (o: CalendarObserved) => CalendarViolation[]>> = {
  'calendar.one-holder-per-cell': oneHolderPerCell,
  'calendar.kept-exactly': keptExactly,
  'calendar.sent-once': sentOnce,
  'calendar.tools-expected-answers': toolsExpectedAnswers,
};
