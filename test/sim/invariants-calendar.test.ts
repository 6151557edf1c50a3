import { describe, expect, it } from 'vitest';
import type { AppointmentRow } from '../../functions/calendar/booking-store.ts';
import { cellSortKey, holdCells, holdPartition } from '../../functions/calendar/holds.ts';
import type { SimulatedEvent, SimulatedRequest } from '../../functions/calendar/local/simulator.ts';
import { BOOK_ROUTE, drawCalendars } from '../../sim/calendar-plan.ts';
import type { CalendarObserved } from '../../sim/invariants-calendar.ts';
import { keptExactly, oneHolderPerCell, sentOnce, toolsExpectedAnswers } from '../../sim/invariants-calendar.ts';
import { drawPlan } from '../../sim/plan.ts';
import type { ToolRequest } from '../../sim/world/calendar-agent.ts';

// A world of one calendar: appointments as the booking store writes them, their cells, the calendar's events.
const NOW = Date.parse('2026-01-05T09:30:00Z');
let n = 0;

function appointment(start: string, minutes: number, state: AppointmentRow['state'], extra: Partial<AppointmentRow> = {}): AppointmentRow {
  n++;
  const end = new Date(Date.parse(start) + minutes * 60_000).toISOString();
  return {
    pk: 'TENANT#t1#BATCH#b1#APPTS',
    sk: `APPT#appt_${n}`,
    appointmentId: `appt_${n}`,
    tenantId: 't1',
    batchId: 'b1',
    contactNumber: '+15550001',
    callId: `call${n}`,
    calendarId: 'cal-t1',
    start,
    end,
    bufferMinutes: 0,
    state,
    eventId: `e${String(n).padStart(6, '0')}`,
    insert: 1,
    deadline: NOW,
    createdAt: new Date(NOW).toISOString(),
    updatedAt: new Date(NOW).toISOString(),
    ...extra,
  };
}

/** The cells a holding appointment's transaction wrote. */
function cellsOf(a: AppointmentRow): Record<string, unknown>[] {
  return holdCells(Date.parse(a.start), Date.parse(a.end), a.bufferMinutes * 60_000).map((cell) => ({
    pk: holdPartition(a.tenantId, a.calendarId),
    sk: cellSortKey(cell),
    calendarId: a.calendarId,
    appointmentId: a.appointmentId,
    callId: a.callId,
    state: 'booked',
    expiresAt: Math.ceil(Date.parse(a.end) / 1000),
  }));
}

function event(a: AppointmentRow, status: SimulatedEvent['status'] = 'confirmed'): SimulatedEvent {
  return { calendarId: 'primary', id: a.eventId, status, start: a.start, end: a.end, timeZone: 'Europe/London', summary: undefined, description: undefined, privateProperties: { redialAppointmentId: a.appointmentId }, created: NOW, updated: NOW };
}

const request = (op: SimulatedRequest['op'], extra: Partial<SimulatedRequest> = {}): SimulatedRequest => ({ at: NOW, op, method: 'POST', path: '/', applied: true, status: 200, ...extra });

function observed(parts: Partial<CalendarObserved> & { appointments?: AppointmentRow[]; cells?: Record<string, unknown>[] }): CalendarObserved {
  const { appointments = [], cells, ...rest } = parts;
  return {
    now: NOW,
    settled: true,
    items: [...appointments, ...(cells ?? appointments.filter((a) => a.state === 'Booked' || a.state === 'Cancelling').flatMap(cellsOf))] as unknown as Record<string, unknown>[],
    events: [],
    requests: [],
    tools: [],
    ...rest,
  };
}

const tool = (t: Partial<ToolRequest>): ToolRequest => ({ tool: 'book', callId: 'c1', batchId: 'b1', at: NOW, statuses: [201], calendarRequests: [], ...t });

describe('calendar.one-holder-per-cell', () => {
  it('HoldsWhenBookedAppointmentsOfOneCalendarMeetEdgeToEdge', () => {
    const a = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    const b = appointment('2026-01-06T09:30:00Z', 60, 'Booked');
    expect(oneHolderPerCell(observed({ appointments: [a, b] }))).toEqual([]);
  });

  it('ReportsTwoBookedAppointmentsOfDifferentLengthsThatOverlap', () => {
    const a = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    const b = appointment('2026-01-06T09:15:00Z', 60, 'Booked');
    const found = oneHolderPerCell(observed({ appointments: [a, b], cells: cellsOf(a) }));
    expect(found.map((v) => v.message)).toContainEqual(expect.stringContaining('two Booked appointments collide'));
  });

  it('ReportsBuffersThatOverlapThoughTheMeetingsDoNot', () => {
    const a = appointment('2026-01-06T09:00:00Z', 30, 'Booked', { bufferMinutes: 15 });
    const b = appointment('2026-01-06T09:35:00Z', 30, 'Booked');
    expect(oneHolderPerCell(observed({ appointments: [a, b], cells: [...cellsOf(a)] })).length).toBeGreaterThan(0);
  });

  it('IgnoresACancelledOrFailedAppointmentOnTheSameSlot', () => {
    const a = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    const b = appointment('2026-01-06T09:00:00Z', 30, 'Cancelled');
    const c = appointment('2026-01-06T09:00:00Z', 30, 'Failed');
    expect(oneHolderPerCell(observed({ appointments: [a, b, c] }))).toEqual([]);
  });

  it('ReportsABookedAppointmentWhoseCellAnotherHoldTookOver', () => {
    const a = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    const other = appointment('2026-01-06T09:00:00Z', 30, 'Failed');
    const cells = cellsOf(a).map((c, i) => (i === 2 ? { ...c, appointmentId: other.appointmentId, callId: other.callId } : c));
    const found = oneHolderPerCell(observed({ appointments: [a, other], cells }));
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toContain(`held by ${other.appointmentId}`);
  });

  it('AcceptsAnExpiredCellWhateverItSays', () => {
    const a = appointment('2026-01-05T08:00:00Z', 30, 'Booked');
    const cells = cellsOf(a).map((c) => ({ ...c, appointmentId: 'someone else' }));
    expect(oneHolderPerCell(observed({ appointments: [a], cells }))).toEqual([]);
  });
});

describe('calendar.kept-exactly', () => {
  it('HoldsWhenEveryBookedEventIsConfirmedAndEveryOtherIsDeleted', () => {
    const kept = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    const failed = appointment('2026-01-06T10:00:00Z', 30, 'Failed');
    const cancelled = appointment('2026-01-06T11:00:00Z', 30, 'Cancelled');
    expect(keptExactly(observed({ appointments: [kept, failed, cancelled], events: [event(kept), event(failed, 'cancelled'), event(cancelled, 'cancelled')] }))).toEqual([]);
  });

  it('ReportsABookedAppointmentWithoutItsEvent', () => {
    const kept = appointment('2026-01-06T09:00:00Z', 30, 'Booked');
    expect(keptExactly(observed({ appointments: [kept] })).map((v) => v.message)).toEqual([expect.stringContaining('not in the calendar')]);
    expect(keptExactly(observed({ appointments: [kept], events: [event(kept, 'cancelled')] })).map((v) => v.message)).toEqual([expect.stringContaining('is cancelled')]);
  });

  it('ReportsAnInsertNoBookedAppointmentKeeps', () => {
    const failed = appointment('2026-01-06T10:00:00Z', 30, 'Failed');
    expect(keptExactly(observed({ appointments: [failed], events: [event(failed)] })).map((v) => v.message)).toEqual([expect.stringContaining('no Booked appointment keeps it')]);
  });

  it('ReportsAnAppointmentLeftPendingOrCancellingAtRest', () => {
    const pending = appointment('2026-01-06T10:00:00Z', 30, 'Pending');
    const cancelling = appointment('2026-01-06T11:00:00Z', 30, 'Cancelling');
    expect(keptExactly(observed({ appointments: [pending, cancelling], events: [event(pending, 'cancelled'), event(cancelling, 'cancelled')] }))).toHaveLength(2);
  });

  it('SaysNothingBeforeTheRunCameToRest', () => {
    const failed = appointment('2026-01-06T10:00:00Z', 30, 'Failed');
    expect(keptExactly(observed({ settled: false, appointments: [failed], events: [event(failed)] }))).toEqual([]);
  });
});

describe('calendar.sent-once', () => {
  it('HoldsWhenEveryInsertIdIsSentOnceAndEachToolSendsOneOfEach', () => {
    const requests = [request('freeBusy'), request('insert', { eventId: 'e1' }), request('token'), request('insert', { eventId: 'e2' })];
    const tools = [tool({ tool: 'availability', calendarRequests: [[0, 1]] }), tool({ calendarRequests: [[1, 3]] }), tool({ calendarRequests: [[3, 4]] })];
    expect(sentOnce(observed({ requests, tools }))).toEqual([]);
  });

  it('ReportsAnInsertIdSentTwice', () => {
    const requests = [request('insert', { eventId: 'e1', status: 'none' }), request('insert', { eventId: 'e1', status: 409 })];
    expect(sentOnce(observed({ requests })).map((v) => v.message)).toEqual(['event e1 was inserted 2 times']);
  });

  it('ReportsAToolRequestThatAskedFreeBusyTwice', () => {
    const requests = [request('freeBusy', { status: 503 }), request('freeBusy')];
    const tools = [tool({ tool: 'availability', calendarRequests: [[0, 2]] })];
    expect(sentOnce(observed({ requests, tools })).map((v) => v.message)).toEqual([expect.stringContaining('sent 2 freeBusy requests')]);
  });

  it('CountsEachSendOfARequestOnItsOwn', () => {
    // The agent re-sent after a 503: one freeBusy each time is the route's one request per send.
    const requests = [request('freeBusy', { status: 503 }), request('freeBusy')];
    const tools = [tool({ tool: 'availability', statuses: [503, 200], calendarRequests: [[0, 1], [1, 2]] })];
    expect(sentOnce(observed({ requests, tools }))).toEqual([]);
  });
});

describe('calendar.tools-expected-answers', () => {
  it('AcceptsTheAnswersTheAgentIsToldToExpect', () => {
    const tools = [tool({ statuses: [503, 201] }), tool({ statuses: [409], error: 'slot_taken' }), tool({ statuses: [502, 503], error: 'booking_in_progress' }), tool({ tool: 'cancel', statuses: [202] })];
    expect(toolsExpectedAnswers(observed({ tools }))).toEqual([]);
  });

  it('ReportsA400OrAnUnknown409OrNoAnswer', () => {
    const tools = [tool({ statuses: [400], error: 'invalid_request' }), tool({ statuses: [409], error: 'calendar_not_configured' }), tool({ statuses: [0] })];
    expect(toolsExpectedAnswers(observed({ tools }))).toHaveLength(3);
  });
});

describe('calendars in plans', () => {
  it('AreDrawnFromAStreamOfTheirOwnAfterEverythingElse', () => {
    const plans = Array.from({ length: 200 }, (_, i) => drawPlan(i + 1));
    const withCalendars = plans.filter((p) => p.campaign.tenants.some((t) => t.calendars));
    expect(withCalendars.length).toBeGreaterThan(30);
    expect(withCalendars.length).toBeLessThan(100);
    for (const plan of withCalendars) {
      const booking = plan.campaign.tenants.flatMap((t) => t.batches.filter((b) => b.appointments));
      for (const b of booking) expect(plan.campaign.tenants.some((t) => t.calendars?.includes(b.appointments!.calendarId) && t.batches.includes(b))).toBe(true);
      // Calendar faults come last, numbered after the others: `--only` of an older plan's ids keeps its faults.
      const first = plan.faults.findIndex((f) => f.kind.startsWith('calendar.') || ('target' in f && f.target.name === BOOK_ROUTE));
      if (first >= 0) expect(plan.faults.slice(first).every((f) => f.kind.startsWith('calendar.') || ('target' in f && f.target.name === BOOK_ROUTE))).toBe(true);
    }
    // The same seed, drawn again with its calendar draw alone: the same calendars and faults.
    const seed = withCalendars[0]!.seed;
    const copy = structuredClone(drawPlan(seed).campaign);
    for (const t of copy.tenants) {
      delete t.calendars;
      for (const b of t.batches) delete b.appointments;
    }
    drawCalendars(seed, copy, 1);
    expect(copy).toEqual(drawPlan(seed).campaign);
  });
});
