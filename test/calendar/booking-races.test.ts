import { afterEach, describe, expect, it } from 'vitest';
import { settleJobId } from '../../functions/calendar/booking.ts';
import { appointmentIds } from '../../functions/calendar/booking-store.ts';
import type { AppointmentFields } from '../../functions/calendar/booking-store.ts';
import { eventIdFor } from '../../functions/calendar/event-ids.ts';
import { SETTLE_GRACE_MS, SETTLE_SECOND_LOOK_MS } from '../../functions/calendar/kinds.ts';
import { JobSnooze } from '../../functions/jobs/index.ts';
import { bookingFixture, CALENDAR_ID, FIRST_SLOT, PROVIDER_CALENDAR, TENANT } from './booking-fixture.ts';
import type { BookingFixture, BookingFixtureOptions } from './booking-fixture.ts';

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
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
/** Calendar requests of one op the simulator received. */
const count = (fx: BookingFixture, op: string) => fx.simulator.requests.filter((r) => r.op === op).length;
/** Everything a booking writes: the calendar table, the supplier.invoke jobs, the kept events. */
const snapshot = async (fx: BookingFixture) => ({ calendar: (await fx.calendarItems()).all, jobs: await fx.settleJobs(), events: await fx.events() });

describe('races on DynamoDB Local', () => {
  it('TwoCallsOneSlot_ExactlyOne201_TheOther409SlotTakenWithFreeSlots', async () => {
    const fx = await fixture();
    const answers = await Promise.all([fx.bookAt(0, FIRST_SLOT), fx.bookAt(1, FIRST_SLOT)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const lost = answers.find((a) => a.status === 409)!;
    expect(lost.body.error).toBe('slot_taken');
    expect(lost.body.slots.length).toBeGreaterThan(0);
    expect(lost.body.slots.map((s: { start: string }) => s.start)).not.toContain(iso(FIRST_SLOT));
    // One insert: the loser held nothing and sent nothing but the freeBusy for its alternatives.
    expect(count(fx, 'insert')).toBe(1);
    expect(count(fx, 'freeBusy')).toBe(1);
    const items = await fx.calendarItems();
    expect(items.appointments.map((a) => a.state)).toEqual(['Booked']);
    expect(new Set(items.cells.map((c) => c.appointmentId)).size).toBe(1);
  });

  it('OverlappingBookingsOfDifferentLengthsCollide_OnTheirBuffersToo', async () => {
    const fx = await fixture();
    const base = { tenantId: TENANT, batchId: fx.batchId, calendarId: CALENDAR_ID, eventId: 'e'.repeat(64), insert: 1, deadline: fx.clock.now() + 2500 };
    const batchHex = fx.batchId.slice(-32);
    const hold = (n: number, start: number, minutes: number, bufferMinutes: number) => {
      const call = fx.call(n);
      const appointment: Omit<AppointmentFields, 'state' | 'createdAt' | 'updatedAt'> = {
        ...base,
        appointmentId: appointmentIds.make(batchHex, String(n).padStart(16, '0')),
        contactNumber: call.contactNumber,
        callId: call.callId,
        start: iso(start),
        end: iso(start + minutes * MIN),
        bufferMinutes,
      };
      return fx.store.transact(fx.store.holdItems({ appointment, batchHex, insertsRead: 0, cellsExpireAt: fx.clock.now() + 60_000, now: fx.clock.now() }));
    };
    // A: 09:00–10:00, no buffer. B: 10:10–10:20 with a 15-minute buffer reaches back to 09:55.
    expect((await hold(0, FIRST_SLOT, 60, 0)).committed).toBe(true);
    const b = await hold(1, FIRST_SLOT + 70 * MIN, 10, 15);
    expect(b.committed).toBe(false);
    expect(Object.keys(b.committed ? {} : b.refused)).toEqual(['cell cell#2026-03-02T14:55Z']);
    // C: 10:05–10:35 with a 5-minute buffer starts at 10:00: it touches A and does not overlap it.
    expect((await hold(2, FIRST_SLOT + 65 * MIN, 30, 5)).committed).toBe(true);
    // D: a 2-hour booking across both collides with both.
    const d = await hold(3, FIRST_SLOT - 60 * MIN, 240, 0);
    expect(d.committed).toBe(false);
  });

  it('AnExpiredHoldIsTakenOver_ByItsExpiryInTheCondition_NotByTTL', async () => {
    const fx = await fixture();
    // Contact 0's route dies after its hold: the hold stays Pending, its cells expire at the deadline + grace.
    fx.crashAfterHold();
    const crashed = await fx.bookAt(0, FIRST_SLOT);
    expect(crashed.status).toBeGreaterThanOrEqual(500);
    fx.restore();
    const [pending] = (await fx.calendarItems()).appointments;
    expect(pending!.state).toBe('Pending');

    // Before the cells expire, the slot is taken.
    expect((await fx.bookAt(1, FIRST_SLOT)).body.error).toBe('slot_taken');
    // Once they expired (expiry is kept in whole seconds, rounded up: `expiresAt < now` holds the second after), still
    // in the table (nothing deleted them), contact 1 takes it over.
    fx.clock.set(pending!.deadline + SETTLE_GRACE_MS + 2_000);
    const taken = await fx.bookAt(1, FIRST_SLOT);
    expect(taken.status).toBe(201);
    const cells = (await fx.calendarItems()).cells;
    expect(new Set(cells.map((c) => c.appointmentId))).toEqual(new Set([taken.body.appointmentId]));
  });

  it('AnInjectedTransactionConflictOnTheHoldIs503AndWritesAndSendsNothing', async () => {
    const fx = await fixture();
    const before = await snapshot(fx);
    fx.conflictNextTransaction();
    const answer = await fx.bookAt(0, FIRST_SLOT);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('unavailable');
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(await snapshot(fx)).toEqual(before);
    expect(count(fx, 'insert')).toBe(0);
    // The next try books, with the call's first insert counter (nothing was taken).
    fx.restore();
    expect((await fx.bookAt(0, FIRST_SLOT)).status).toBe(201);
    expect((await fx.calendarItems()).appointments[0]!.insert).toBe(1);
  });
});

describe('settle: every insert not kept is deleted', () => {
  it('ACrashBetweenInsertAndBookedCommit_TheSettleJobAbandonsTheHoldAndDeletesTheEvent', async () => {
    const fx = await fixture();
    fx.crashAfterHold();
    const answer = await fx.bookAt(0, FIRST_SLOT);
    expect(answer.status).toBe(500);
    fx.restore();
    const [row] = (await fx.calendarItems()).appointments;
    expect(row).toMatchObject({ state: 'Pending' });
    expect(fx.simulator.events(PROVIDER_CALENDAR)).toEqual([expect.objectContaining({ id: row!.eventId, status: 'confirmed' })]);
    const job = await fx.jobs.store.mustGet(settleJobId(row!.eventId, 'hold'));

    // Before the grace: wait. At deadline + grace: abandon, read, delete.
    const early = await fx.runSettle(job, row!.deadline);
    expect(early).toMatchObject({ outcome: 'thrown', error: expect.any(JobSnooze) });
    expect(await fx.runSettle(job, row!.deadline + SETTLE_GRACE_MS)).toEqual({ outcome: 'completed' });
    expect(fx.simulator.events(PROVIDER_CALENDAR)).toEqual([expect.objectContaining({ id: row!.eventId, status: 'cancelled' })]);
    expect((await fx.calendarItems()).appointments[0]!.state).toBe('Failed');
    expect(fx.simulator.requests.filter((r) => r.op !== 'token').map((r) => `${r.op} ${r.status}`)).toEqual(['insert 200', 'get 200', 'delete 204']);

    // Run again (its answer lost): it reads a deleted event and sends no delete.
    expect(await fx.runSettle(job)).toEqual({ outcome: 'completed' });
    expect(count(fx, 'delete')).toBe(1);
    // Once the abandoned hold's cells expired, the call may book again: its next insert has a new id (counter 2).
    fx.clock.set(row!.deadline + SETTLE_GRACE_MS + 2_000);
    const again = await fx.bookAt(0, FIRST_SLOT);
    expect(again.status).toBe(201);
    const call = fx.call(0);
    expect(fx.simulator.events(PROVIDER_CALENDAR).at(-1)!.id).toBe(eventIdFor({ tenantId: TENANT, calendarId: CALENDAR_ID, callId: call.callId, start: FIRST_SLOT, counter: 2 }));
  });

  it('AnInsertAppliedThenHanging_Is503CalendarUnavailable_AndTheSettleJobDeletesIt', async () => {
    const fx = await fixture();
    fx.simulator.inject('insert', { kind: 'applyThenHang' });
    const answer = await fx.bookAt(0, FIRST_SLOT);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('calendar_unavailable');
    expect(answer.headers.get('retry-after')).toBe('1');
    // Each request once: the token exchange and the insert.
    expect(fx.simulator.requests.map((r) => r.op)).toEqual(['token', 'insert']);
    const items = await fx.calendarItems();
    // Not kept: Failed at once, its cells let go.
    expect(items.appointments[0]).toMatchObject({ state: 'Failed' });
    expect(items.cells).toEqual([]);
    expect(fx.simulator.events(PROVIDER_CALENDAR)[0]!.status).toBe('confirmed');

    const job = await fx.jobs.store.mustGet(settleJobId(items.appointments[0]!.eventId, 'hold'));
    expect(await fx.runSettle(job)).toEqual({ outcome: 'completed' });
    expect(fx.simulator.events(PROVIDER_CALENDAR)[0]!.status).toBe('cancelled');
    expect(await fx.events()).toEqual([]);
  });

  it('AnInsertThatNeverLanded_IsLookedForOnceMoreAtTheSecondLook_ThenDone', async () => {
    const fx = await fixture();
    fx.simulator.inject('insert', { kind: 'hang' });
    expect((await fx.bookAt(0, FIRST_SLOT)).status).toBe(503);
    const [row] = (await fx.calendarItems()).appointments;
    const job = await fx.jobs.store.mustGet(settleJobId(row!.eventId, 'hold'));
    const first = await fx.runSettle(job);
    expect(first).toMatchObject({ outcome: 'thrown', error: expect.any(JobSnooze) });
    expect((first as unknown as { error: JobSnooze }).error.until).toBe(row!.deadline + SETTLE_SECOND_LOOK_MS);
    expect(await fx.runSettle(job, row!.deadline + SETTLE_SECOND_LOOK_MS)).toEqual({ outcome: 'completed' });
    expect(count(fx, 'get')).toBe(2);
    expect(count(fx, 'delete')).toBe(0);
  });
});

describe('cancel', () => {
  it('ConfirmedByTheCalendar_Is204_CancelledWithItsEvent_CellsLetGo_AndTheCallMayRebook', async () => {
    const fx = await fixture();
    const booked = await fx.bookAt(0, FIRST_SLOT);
    const answer = await fx.cancelOf(0, booked.body.appointmentId);
    expect(answer.status).toBe(204);
    const items = await fx.calendarItems();
    expect(items.appointments).toEqual([expect.objectContaining({ state: 'Cancelled', cancelledAt: expect.any(String) })]);
    expect(items.cells).toEqual([]);
    expect(fx.simulator.events(PROVIDER_CALENDAR)[0]!.status).toBe('cancelled');
    expect((await fx.events()).map((e) => e.type).sort()).toEqual(['appointment.booked', 'appointment.cancelled']);
    // Each request once: the delete (the token is cached from the insert).
    expect(fx.simulator.requests.map((r) => r.op)).toEqual(['token', 'insert', 'delete']);
    // Cancelled again: 204, nothing sent. Another call books the slot; this one rebooks with a new id.
    expect((await fx.cancelOf(0, booked.body.appointmentId)).status).toBe(204);
    expect(count(fx, 'delete')).toBe(1);
    const rebooked = await fx.bookAt(0, FIRST_SLOT + 80 * MIN);
    expect(rebooked.status).toBe(201);
    expect(rebooked.body.appointmentId).not.toBe(booked.body.appointmentId);
  });

  it('NotConfirmed_Is202Cancelling_AndItsSettleJobDeletesTheEventAndCommitsCancelled', async () => {
    const fx = await fixture();
    const booked = await fx.bookAt(0, FIRST_SLOT);
    fx.simulator.inject('delete', { kind: 'status', status: 503 });
    const answer = await fx.cancelOf(0, booked.body.appointmentId);
    expect(answer).toMatchObject({ status: 202, body: { status: 'cancelling' } });
    const [row] = (await fx.calendarItems()).appointments;
    expect(row!.state).toBe('Cancelling');
    // The cells stay held while the event may still be in the calendar.
    expect((await fx.calendarItems()).cells.length).toBe(10);
    expect((await fx.events()).map((e) => e.type).sort()).toEqual(['appointment.booked', 'appointment.cancelled']);

    const job = await fx.jobs.store.mustGet(settleJobId(row!.eventId, 'cancel'));
    expect(job).toMatchObject({ kind: 'supplier.invoke', state: 'scheduled' });
    expect(await fx.runSettle(job)).toEqual({ outcome: 'completed' });
    expect(fx.simulator.events(PROVIDER_CALENDAR)[0]!.status).toBe('cancelled');
    const after = await fx.calendarItems();
    expect(after.appointments[0]!.state).toBe('Cancelled');
    expect(after.cells).toEqual([]);
    // The hold's own settle job, when it runs, finds the event deleted and sends no delete.
    const hold = await fx.jobs.store.mustGet(settleJobId(row!.eventId, 'hold'));
    expect(await fx.runSettle(hold)).toEqual({ outcome: 'completed' });
    expect(fx.simulator.requests.filter((r) => r.op === 'delete').map((r) => r.status)).toEqual([503, 204]);
  });

  it('AnotherCallsAppointmentIsNotFound', async () => {
    const fx = await fixture();
    const booked = await fx.bookAt(0, FIRST_SLOT);
    expect(await fx.cancelOf(1, booked.body.appointmentId)).toMatchObject({ status: 404, body: { error: 'not_found' } });
    expect(await fx.cancelOf(1, 'appt_nonsense')).toMatchObject({ status: 404 });
    expect((await fx.calendarItems()).appointments[0]!.state).toBe('Booked');
  });
});
