import { signCallWebhook } from '../../functions/calls/signature.ts';
import { CalendarSimulator } from '../../functions/calendar/local/simulator.ts';
import type { Fault as CalendarFault, SimulatedOp, SimulatedRequest } from '../../functions/calendar/local/simulator.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import type { SimClock } from '../clock.ts';
import type { FaultInjector } from '../faults.ts';
import { hashDraw } from '../plan.ts';
import type { BatchPlan, Fault } from '../plan.ts';
import type { Activity, Scopes } from '../scope.ts';
import { BOOK_ROUTE } from '../calendar-plan.ts';
import type { PlacedCall } from './placer.ts';

/**
 * The calendar side of the world (issue 29): the built-in calendar (functions/calendar/local/simulator.ts,
 * Google's shapes on 127.0.0.1), which redial's provider talks to as to Google, and the AI call handler's
 * calendar tools: during some calls of a batch with `appointments`, the agent asks for availability and
 * books a slot, and sometimes cancels it, through the signed tool routes, as a live call would.
 *
 * Its choices are drawn per call from the seed and the call id ({@link hashDraw}: a stream of its own, so no
 * other draw of the plan moves). It books either a slot the availability answer offered or a **target**
 * slot every batch of the tenant's calendar aims at (the calendar's first bookable hour tomorrow, on every
 * batch's grid whatever its length): calls of different batches then contend for one slot.
 *
 * The tool requests are sent **one at a time** across the whole world, and each waits, before the next, for
 * the calendar's delayed requests to land (`simulator.idle()`): so the calendar requests logged between a
 * tool request's send and the next one's are that request's (settle jobs read and delete, never ask freeBusy
 * or insert), and `calendar.sent-once` can count them per request; and a slow insert lands while the clock
 * stands still, inside the settle job's second look, as a late insert would on Google within its bound.
 * Two bookings of one slot thus meet as a sequence (the second finds the cells held), never in flight at
 * once; the race in flight is test/calendar/booking-races.test.ts's, on DynamoDB Local.
 */

/** Tomorrow 09:00 in the calendars' zone (Europe/London is UTC in January): the slot calls race for. */
export const TARGET_DAY_START = Date.parse('2026-01-06T09:00:00.000Z');

/** One tool request the agent sent, and its answer. */
export interface ToolRequest {
  tool: 'availability' | 'book' | 'cancel';
  callId: string;
  batchId: string;
  /** Clock ms when sent. */
  at: number;
  /** `book`: the start asked for. */
  start?: string;
  /** `cancel`: the appointment. */
  appointmentId?: string;
  /** Every status it got, in order (0: no answer). */
  statuses: number[];
  /** The `error` of the last answer, if any. */
  error?: string;
  /** `book` answered 201: the appointment. */
  booked?: { appointmentId: string; start: string; end: string };
  /** The calendar requests the simulator logged while this request (and its re-sends) was out: [from, to) of `simulator.requests`. */
  calendarRequests: [number, number][];
}

/** The answers a tool may give a well-behaved agent (besides 2xx): docs/appointments.md, "Error map". */
export const EXPECTED_TOOL_ANSWERS: Readonly<Record<number, readonly string[]>> = {
  409: ['call_not_live', 'slot_taken', 'appointment_exists', 'not_booked'],
  503: ['calendar_unavailable', 'booking_in_progress', 'unavailable'],
};

const RESEND_DELAY_MS = 1_000;
/** Re-sends after a 503 (its Retry-After: 1) or no answer: a real agent tries once or twice, then moves on. */
const MAX_SENDS = 2;

export interface SimCalendarOptions {
  clock: SimClock;
  activity: Activity;
  scopes: Scopes;
  faults: FaultInjector;
  planFaults: readonly Fault[];
  seed: number;
  /** The tool requests' signing secret (the intake's). */
  secret: string;
}

export class SimCalendar {
  readonly simulator: CalendarSimulator;
  readonly tools: ToolRequest[] = [];
  /** The API's base URL and the batch plans by id, known once the host and the driver exist. */
  private api: { url: string; batchPlanOf: (batchId: string) => BatchPlan | undefined } | undefined;
  private readonly options: SimCalendarOptions;
  /** Conversations in progress (their timers, or a tool request out): the run is not at rest meanwhile. */
  private open = 0;
  /** The one tool request out at a time. */
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(options: SimCalendarOptions, simulator: CalendarSimulator) {
    this.options = options;
    this.simulator = simulator;
  }

  /**
   * Starts the built-in calendar. Its clock is the wall clock, as the local runtime's is: access tokens and
   * the provider's deadlines are real seconds (the provider caches tokens on the wall clock too).
   */
  static async start(options: SimCalendarOptions): Promise<SimCalendar> {
    // An insert that reaches the calendar is the booking route's side effect: a crash.afterSideEffect aimed
    // at the route kills it at its next request, between the insert and its commit.
    const onRequest = (request: SimulatedRequest) => {
      if (request.op === 'insert') options.scopes.routeSideEffect(BOOK_ROUTE);
    };
    return new SimCalendar(options, await CalendarSimulator.start({ clock: systemClock, onRequest }));
  }

  /** Where the provider sends its requests, and the tools' secret (functions/calendar/deps.ts `CalendarConfig`). */
  config(): { calendarBaseUrl: string; tokenUrl: string; toolsSecret: string } {
    return { calendarBaseUrl: this.simulator.calendarBaseUrl, tokenUrl: this.simulator.tokenUrl, toolsSecret: this.options.secret };
  }

  attach(url: string, batchPlanOf: (batchId: string) => BatchPlan | undefined): void {
    this.api = { url, batchPlanOf };
  }

  /** Whether a conversation is still going on. */
  get busy(): boolean {
    return this.open > 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.simulator.close();
  }

  /**
   * The placer accepted `call`: if its batch books appointments, the agent may talk calendar during it,
   * from a moment after the call starts (the clock stands still while its requests are out, so the
   * conversation ends before the result, due 1–10 s after the call was accepted).
   */
  duringCall(call: PlacedCall): void {
    const plan = this.api?.batchPlanOf(call.batchId);
    if (!plan?.appointments || this.closed) return;
    const drawn = (what: string) => hashDraw(this.options.seed * 67 + 29, `${call.callId}:${what}`);
    // A targeted plan's agent talks on every call, books the target slot and cancels nothing.
    const draw = plan.agent === 'books-target' ? (what: string) => (what === 'cancel' ? 1 : 0) : drawn;
    if (draw('talks') >= 0.7) return;
    this.open++;
    this.options.clock.setTimer(
      this.options.clock.now() + 200,
      () => void this.converse(call, plan.appointments!, draw).finally(() => this.open--),
      'agent',
    );
  }

  private async converse(call: PlacedCall, settings: NonNullable<BatchPlan['appointments']>, draw: (what: string) => number): Promise<void> {
    const ref = { batchId: call.batchId, contactNumber: call.contactNumber, callId: call.callId };
    const grid = (settings.durationMinutes + settings.bufferMinutes) * 60_000;
    const offered = await this.tool(call, 'availability', { ...ref, from: new Date(TARGET_DAY_START).toISOString(), to: new Date(TARGET_DAY_START + 3 * 3_600_000).toISOString(), limit: 5 });
    const slots = (offered?.body as { slots?: { start: string }[] } | undefined)?.slots ?? [];
    // The target slot (tomorrow's first, on every batch's grid), the next one on this batch's grid, or an offered one.
    const roll = draw('slot');
    const start =
      roll < 0.4 || slots.length === 0
        ? new Date(TARGET_DAY_START + (roll < 0.25 ? 0 : grid)).toISOString()
        : slots[Math.floor(draw('which') * Math.min(slots.length, 3))]!.start;
    const booked = await this.tool(call, 'book', { ...ref, start: new Date(Date.parse(start)).toISOString().replace('.000Z', 'Z') });
    const appointmentId = (booked?.body as { appointmentId?: string } | undefined)?.appointmentId;
    if (booked?.status === 201 && appointmentId && draw('cancel') < 0.25) await this.tool(call, 'cancel', { ...ref, appointmentId });
  }

  /**
   * Sends one tool request, in turn with every other (see the class comment), and again once after a 503 or
   * no answer, a second later on the clock (its Retry-After). Before each send, the plan's calendar fault
   * aimed at the calendar request it makes (if its turn has come) is armed in the simulator.
   */
  private async tool(call: PlacedCall, tool: ToolRequest['tool'], body: Record<string, unknown>): Promise<{ status: number; body: unknown } | undefined> {
    const record: ToolRequest = {
      tool,
      callId: call.callId,
      batchId: call.batchId,
      at: this.options.clock.now(),
      ...(typeof body['start'] === 'string' ? { start: body['start'] } : {}),
      ...(typeof body['appointmentId'] === 'string' ? { appointmentId: body['appointmentId'] } : {}),
      statuses: [],
      calendarRequests: [],
    };
    this.tools.push(record);
    let answer: { status: number; body: unknown } | undefined;
    for (let n = 0; n < MAX_SENDS; n++) {
      if (n > 0) await new Promise<void>((resolve) => this.options.clock.setTimer(this.options.clock.now() + RESEND_DELAY_MS, resolve, 'agent'));
      const turn = this.queue.then(() => this.options.activity.track(() => this.send(record, body, n)));
      this.queue = turn.then(
        () => undefined,
        () => undefined,
      );
      answer = await turn;
      if (!answer || (answer.status !== 0 && answer.status !== 502 && answer.status !== 503)) break;
    }
    return answer;
  }

  private async send(record: ToolRequest, body: Record<string, unknown>, n: number): Promise<{ status: number; body: unknown } | undefined> {
    if (this.closed || !this.api) return undefined;
    const path = record.tool === 'availability' ? '/v1/calls/availability' : record.tool === 'book' ? '/v1/calls/appointments' : '/v1/calls/appointments/cancel';
    const raw = JSON.stringify(body);
    this.arm(record);
    const from = this.simulator.requests.length;
    const headers = signCallWebhook(this.options.secret, `tool_${record.callId}_${this.tools.indexOf(record)}_${n}`, Math.floor(Date.now() / 1000), raw);
    let answer: { status: number; body: unknown };
    try {
      const response = await fetch(`${this.api.url}${path}`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(30_000) });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? (JSON.parse(text) as unknown) : undefined;
      } catch {
        parsed = undefined;
      }
      answer = { status: response.status, body: parsed };
    } catch {
      answer = { status: 0, body: undefined };
    }
    // A delayed calendar request lands before the next tool request (see the class comment).
    await this.simulator.idle();
    record.calendarRequests.push([from, this.simulator.requests.length]);
    record.statuses.push(answer.status);
    const error = (answer.body as { error?: unknown } | undefined)?.error;
    if (typeof error === 'string') record.error = error;
    else delete record.error;
    if (answer.status === 201) record.booked = answer.body as NonNullable<ToolRequest['booked']>;
    return answer;
  }

  /** Arms the plan's calendar fault aimed at this tool's calendar request, if its turn has come. */
  private arm(record: ToolRequest): void {
    const tool = record.tool;
    const op: SimulatedOp = tool === 'availability' ? 'freeBusy' : tool === 'book' ? 'insert' : 'delete';
    const fault = this.options.faults.take(
      ['calendar.timeoutAfterSend', 'calendar.serverError', 'calendar.slow', 'calendar.lostResponse'],
      (f) => f.op === op,
      () => `${tool} of call ${record.callId}${record.start ? ` at ${record.start}` : ''}`,
    );
    if (fault) this.simulator.inject(op, simulatorFault(fault));
  }
}

/** A plan's calendar fault as the simulator's. */
function simulatorFault(fault: Extract<Fault, { kind: 'calendar.timeoutAfterSend' | 'calendar.serverError' | 'calendar.slow' | 'calendar.lostResponse' }>): CalendarFault {
  switch (fault.kind) {
    case 'calendar.timeoutAfterSend':
      return { kind: 'applyThenHang' };
    case 'calendar.serverError':
      return fault.applied ? { kind: 'applyThenStatus', status: 500 } : { kind: 'status', status: 503 };
    case 'calendar.slow':
      return { kind: 'delay', ms: fault.ms ?? 1_000 };
    case 'calendar.lostResponse':
    default:
      return { kind: 'applyThenDrop' };
  }
}
