import { afterEach, describe, expect, it } from 'vitest';
import { settleJobId } from '../../functions/calendar/booking.ts';
import { eventIdFor } from '../../functions/calendar/event-ids.ts';
import { SETTLE_GRACE_MS } from '../../functions/calendar/kinds.ts';
import { bookingFixture, CALENDAR_ID, FIRST_SLOT, PROVIDER_CALENDAR, TENANT } from './booking-fixture.ts';
import type { BookingFixture, BookingFixtureOptions } from './booking-fixture.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { parseCallId } from '../../functions/calls/model.ts';

const fixtures: BookingFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

async function fixture(options: BookingFixtureOptions = {}): Promise<BookingFixture> {
  const fx = await bookingFixture(options);
  fixtures.push(fx);
  return fx;
}

const MIN = 60_000;
/** The calendar requests the simulator received, by op (the token exchange included). */
const sent = (fx: BookingFixture) => fx.simulator.requests.map((r) => r.op);
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** Completes contact i's call as the intake does (the same store items, one transaction). */
async function completeCall(fx: BookingFixture, i: number): Promise<void> {
  const call = fx.call(i);
  const at = parseCallId(call.batchId, call.contactNumber, call.callId)!;
  const store = new CallsStore(fx.db, fx.tableNames.calls);
  const done = await store.transact(
    store.completionItems({ batchId: call.batchId, tenantId: TENANT, contactNumber: call.contactNumber, round: 1, page: at.page, pos: at.pos, callId: call.callId, last: false, code: 'COMPLETED', retryable: false, source: 'webhook', now: fx.clock.now() }),
  );
  expect(done.committed).toBe(true);
}

describe('availability', () => {
  it('OffersTheGridInsideBookableHours_LessFreeBusyAndRedialsOwnHolds_SendingOneFreeBusy', async () => {
    const fx = await fixture();
    // Someone else's meeting 09:40–10:00 New York: the 09:40 slot (its buffer too) is busy.
    fx.simulator.seedEvent(PROVIDER_CALENDAR, { id: 'othermeeting1', start: FIRST_SLOT + 40 * MIN, end: FIRST_SLOT + 60 * MIN });
    const first = await fx.availability(0, { limit: 3 });
    expect(first.status).toBe(200);
    // 30 min + 10 min buffer: a 40-minute grid from 09:00; 09:40 is busy, 10:20 is not (its buffer ends at 10:10 ≥ 10:00).
    expect(first.body.slots.map((s: { start: string }) => s.start)).toEqual([iso(FIRST_SLOT), iso(FIRST_SLOT + 80 * MIN), iso(FIRST_SLOT + 120 * MIN)]);
    expect(first.body.slots[0]).toEqual({ start: '2026-03-02T14:00:00Z', end: '2026-03-02T14:30:00Z', localStart: '2026-03-02T09:00:00-05:00', localEnd: '2026-03-02T09:30:00-05:00', timeZone: 'America/New_York' });
    expect(sent(fx)).toEqual(['token', 'freeBusy']);

    // Contact 1 books 09:00: it is held in redial, so contact 2 is not offered it.
    expect((await fx.bookAt(1, FIRST_SLOT)).status).toBe(201);
    const second = await fx.availability(2, { limit: 1 });
    expect(second.body.slots.map((s: { start: string }) => s.start)).toEqual([iso(FIRST_SLOT + 80 * MIN)]);
  });

  it('GivesLocalTimesInTheContactsZoneByTheCampaignControlRule', async () => {
    // A perContact window: a 415 number is in Los Angeles.
    const fx = await fixture({ windowZone: 'America/New_York' });
    const answer = await fx.availability(0, { limit: 1 });
    expect(answer.body.slots).toEqual([{ start: '2026-03-02T14:00:00Z', end: '2026-03-02T14:30:00Z', localStart: '2026-03-02T06:00:00-08:00', localEnd: '2026-03-02T06:30:00-08:00', timeZone: 'America/Los_Angeles' }]);
  });

  it('AFreeBusyAnswerWithErrorsIs503CalendarUnavailable_NeverAllFree', async () => {
    const fx = await fixture();
    fx.simulator.inject('freeBusy', { kind: 'freeBusyErrors', reason: 'notFound' });
    const answer = await fx.availability(0);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('calendar_unavailable');
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(sent(fx)).toEqual(['token', 'freeBusy']);
  });

  it('AFreeBusyTimeoutIs503AtOnce_SentOnce', async () => {
    const fx = await fixture();
    fx.simulator.inject('freeBusy', { kind: 'hang' });
    const answer = await fx.availability(0);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('calendar_unavailable');
    expect(sent(fx)).toEqual(['token', 'freeBusy']);
  });
});

describe('booking', () => {
  it('BooksInOneInsert_CommitsBookedWithItsEvent_AndKeepsTheCellsToThePaddedEnd', async () => {
    const fx = await fixture();
    const answer = await fx.bookAt(0, FIRST_SLOT, { notes: 'wants a demo' });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ appointmentId: expect.stringMatching(/^appt_[0-9a-f]{32}_[0-9a-f]{16}$/), start: '2026-03-02T14:00:00Z', end: '2026-03-02T14:30:00Z' });
    const { appointmentId } = answer.body;
    expect(sent(fx)).toEqual(['token', 'insert']);

    // The event, with the id the hold's counter names.
    const call = fx.call(0);
    const eventId = eventIdFor({ tenantId: TENANT, calendarId: CALENDAR_ID, callId: call.callId, start: FIRST_SLOT, counter: 1 });
    const [event] = fx.simulator.events(PROVIDER_CALENDAR);
    expect(event).toMatchObject({ id: eventId, status: 'confirmed', start: '2026-03-02T14:00:00.000Z', end: '2026-03-02T14:30:00.000Z', description: 'wants a demo', privateProperties: { redialAppointmentId: appointmentId } });

    const items = await fx.calendarItems();
    expect(items.appointments).toEqual([expect.objectContaining({ appointmentId, state: 'Booked', eventId, insert: 1, callId: call.callId, contactNumber: call.contactNumber, notes: 'wants a demo' })]);
    expect(items.pointers).toEqual([expect.objectContaining({ callId: call.callId, appointmentId, state: 'Booked', inserts: 1 })]);
    // [08:50, 09:40): ten 5-minute cells, kept until 09:40 New York (14:40 UTC).
    expect(items.cells.map((c) => c.sk)).toEqual(Array.from({ length: 10 }, (_, i) => `cell#${new Date(FIRST_SLOT - 10 * MIN + i * 5 * MIN).toISOString().slice(0, 16)}Z`));
    expect(new Set(items.cells.map((c) => `${c.state} ${c.expiresAt} ${c.appointmentId}`))).toEqual(new Set([`booked ${(FIRST_SLOT + 40 * MIN) / 1000} ${appointmentId}`]));

    // The settle job, written with the hold, due at the deadline plus the grace; and appointment.booked.
    const job = await fx.jobs.store.mustGet(settleJobId(eventId, 'hold'));
    const deadline = items.appointments[0]!.deadline;
    expect(job).toMatchObject({ kind: 'supplier.invoke', state: 'scheduled', args: { op: 'calendar.settle', tenantId: TENANT, calendarId: CALENDAR_ID, appointmentId, eventId, deadline: new Date(deadline).toISOString() } });
    expect(Date.parse(job.scheduledAt)).toBe(deadline + SETTLE_GRACE_MS);
    expect((await fx.events()).map((e) => [e.type, e.data['appointmentId'], e.data['start']])).toEqual([['appointment.booked', appointmentId, '2026-03-02T14:00:00Z']]);

    // Its settle finds it kept and sends nothing.
    const before = sent(fx).length;
    expect(await fx.runSettle(job)).toEqual({ outcome: 'completed' });
    expect(sent(fx).length).toBe(before);
    expect(fx.simulator.events(PROVIDER_CALENDAR)[0]!.status).toBe('confirmed');
  });

  it('AReSentRequestForTheSameCallAndStartAnswersTheSame201_SendingNothing; AnotherStartIs409', async () => {
    const fx = await fixture();
    const first = await fx.bookAt(0, FIRST_SLOT);
    const again = await fx.bookAt(0, FIRST_SLOT);
    expect(again).toMatchObject({ status: 201, body: first.body });
    const other = await fx.bookAt(0, FIRST_SLOT + 80 * MIN);
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ error: 'appointment_exists', appointmentId: first.body.appointmentId });
    expect(sent(fx)).toEqual(['token', 'insert']);
    expect((await fx.calendarItems()).appointments).toHaveLength(1);
  });

  it('WhileTheCallsBookingIsInProgress_AReSentRequestIs503AndSendsNothing', async () => {
    const fx = await fixture();
    fx.simulator.inject('insert', { kind: 'delay', ms: 300 });
    const slow = fx.bookAt(0, FIRST_SLOT);
    while (!fx.simulator.requests.some((r) => r.op === 'insert')) await new Promise((resolve) => setTimeout(resolve, 5));
    const during = await fx.bookAt(0, FIRST_SLOT);
    expect(during.status).toBe(503);
    expect(during.body.error).toBe('booking_in_progress');
    expect(during.headers.get('retry-after')).toBe('1');
    const done = await slow;
    expect(done.status).toBe(201);
    expect(await fx.bookAt(0, FIRST_SLOT)).toMatchObject({ status: 201, body: done.body });
    expect(sent(fx).filter((op) => op === 'insert')).toHaveLength(1);
  });

  it('AStartOffTheGridOrOutsideBookableHoursIs400OnBodyStart_WritingNothing', async () => {
    const fx = await fixture();
    for (const start of [FIRST_SLOT + 5 * MIN, Date.parse('2026-03-02T23:00:00Z'), Date.parse('2026-03-07T15:00:00Z')]) {
      const answer = await fx.bookAt(0, start);
      expect(answer.status).toBe(400);
      expect(answer.body.issues).toEqual([{ path: 'body.start', message: expect.stringContaining('not a bookable slot') }]);
    }
    expect((await fx.calendarItems()).appointments).toEqual([]);
    expect(sent(fx)).toEqual([]);
  });

  it('ABadSignatureIs401AndNothingIsReadOrSent', async () => {
    const fx = await fixture();
    const answer = await fx.tool('/v1/calls/appointments', { ...fx.call(0), start: iso(FIRST_SLOT) }, { secret: 'whsec_dGhpcyBpcyBub3QgdGhlIGtleSBhdCBhbGw=' });
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe('invalid_signature');
    expect((await fx.calendarItems()).appointments).toEqual([]);
    expect(sent(fx)).toEqual([]);
  });
});

describe('liveness', () => {
  it('AfterTheCallsResultAppliedEveryToolIs409CallNotLive_AndNothingIsWrittenOrSent', async () => {
    const fx = await fixture();
    const booked = await fx.bookAt(0, FIRST_SLOT);
    const before = sent(fx).length;
    await completeCall(fx, 0);
    await completeCall(fx, 1);
    const snapshot = await fx.calendarItems();
    expect(await fx.availability(1)).toMatchObject({ status: 409, body: { error: 'call_not_live' } });
    expect(await fx.bookAt(1, FIRST_SLOT + 80 * MIN)).toMatchObject({ status: 409, body: { error: 'call_not_live' } });
    expect(await fx.cancelOf(0, booked.body.appointmentId)).toMatchObject({ status: 409, body: { error: 'call_not_live' } });
    expect(await fx.calendarItems()).toEqual(snapshot);
    expect(sent(fx).length).toBe(before);
  });

  it('ACallIdNotMadeForThisContactIsNeverLive', async () => {
    const fx = await fixture();
    const answer = await fx.tool('/v1/calls/appointments', { ...fx.call(0), callId: fx.call(1).callId, start: iso(FIRST_SLOT) });
    expect(answer).toMatchObject({ status: 409, body: { error: 'call_not_live' } });
  });
});

describe('appointments of a batch (the join on read)', () => {
  it('ListsEveryAppointmentOfTheBatchWithItsState_FromOneQueryOfItsPartition', async () => {
    const fx = await fixture();
    const a = await fx.bookAt(0, FIRST_SLOT);
    const b = await fx.bookAt(1, FIRST_SLOT + 80 * MIN);
    expect((await fx.cancelOf(1, b.body.appointmentId)).status).toBe(204);
    const rows = await fx.store.appointmentsOfBatch(TENANT, fx.batchId.slice(-32));
    expect(rows.map((r) => [r.appointmentId, r.contactNumber, r.state, r.start]).sort()).toEqual(
      [
        [a.body.appointmentId, fx.contacts[0], 'Booked', '2026-03-02T14:00:00Z'],
        [b.body.appointmentId, fx.contacts[1], 'Cancelled', '2026-03-02T15:20:00Z'],
      ].sort(),
    );
    expect(await fx.store.appointmentsOfBatch('other', fx.batchId.slice(-32))).toEqual([]);
  });
});
