import { afterEach, describe, expect, it, vi } from 'vitest';
import { watchdogKind } from '../../functions/calls/kinds.ts';
import { jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers, placerGate, scriptByNumber } from '../support/calls.ts';
import type { CallsFixture, PlacerGate } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
const gates: PlacerGate[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

const watchdogsOf = async (fx: CallsFixture) => (await fx.allJobs()).filter((j) => j.kind === 'calls.watchdog').sort((a, b) => a.id.localeCompare(b.id));

describe('watchdog: one per dial run, ending only its own lost calls', () => {
  it('TwentyFiveCallsDialledInTwoRuns_HaveTwoWatchdogs_WhichEndExactlyTheLostCallsWithTimeout', async () => {
    const contacts = numbers(25);
    const lost = [contacts[3]!, contacts[17]!, contacts[22]!];
    const fx = await callsFixture({ script: scriptByNumber(Object.fromEntries(lost.map((n) => [n, ['lostWebhook']]))), resultDelayMs: () => 60_000, callTimeoutSeconds: 600 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 100 });
    await fx.settle();

    // dialsPerRun is 20: the runs start at positions 0 and 20, and each names its watchdog on its contacts.
    const watchdogs = await watchdogsOf(fx);
    expect(watchdogs.map((j) => [j.id, j.state, j.args])).toEqual([
      [jobIds.watchdog(batchId, 1, 0, 0), 'completed', { batchId, round: 1, page: 0, pos: 0, count: 20 }],
      [jobIds.watchdog(batchId, 1, 0, 20), 'completed', { batchId, round: 1, page: 0, pos: 20, count: 5 }],
    ]);
    expect(watchdogs.every((j) => j.cancelRequestedAt === undefined)).toBe(true);
    for (const [i, n] of contacts.entries()) {
      const contact = await fx.store.getContact(batchId, n);
      expect(contact?.watchdogJobId, n).toBe(jobIds.watchdog(batchId, 1, 0, i < 20 ? 0 : 20));
      expect(contact, n).toMatchObject(lost.includes(n) ? { status: 'Completed', code: 'TIMEOUT', source: 'watchdog' } : { status: 'Completed', code: 'COMPLETED', source: 'webhook' });
    }
    // Each lost call ended no earlier than its own timeout.
    for (const n of lost) {
      const contact = (await fx.store.getContact(batchId, n))!;
      expect(Date.parse(contact.completedAt!) - Date.parse(contact.dialledAt!)).toBeGreaterThanOrEqual(600_000);
    }
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 22, TIMEOUT: 3 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
  });

  it('AWatchdogLeavesACallALaterRunPlacedAtAPositionItCovers_ToThatRunsWatchdog_WithoutWaitingForIt', async () => {
    // A limit of one: run 1 dials the first contact and waits for a slot; its watchdog covers positions 0–2.
    // The first result frees the slot after a minute; run 2 dials the second contact (lost) under its own watchdog.
    const contacts = numbers(3);
    const fx = await callsFixture({
      script: scriptByNumber({ [contacts[1]!]: ['lostWebhook'] }),
      resultDelayMs: () => 60_000,
      callTimeoutSeconds: 600,
      noSlotSnoozeMs: 5_000,
    });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 1 });
    await fx.settle();

    const [first, second, third] = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
    expect(first).toMatchObject({ code: 'COMPLETED', watchdogJobId: jobIds.watchdog(batchId, 1, 0, 0) });
    expect(second).toMatchObject({ code: 'TIMEOUT', source: 'watchdog', watchdogJobId: jobIds.watchdog(batchId, 1, 0, 1) });
    expect(third).toMatchObject({ code: 'COMPLETED', watchdogJobId: jobIds.watchdog(batchId, 1, 0, 2) });
    // Run 1's watchdog ran while the second call was out and not yet due: it did not wait for it (no snooze).
    const watchdogs = await watchdogsOf(fx);
    expect(watchdogs.map((j) => [j.id, j.state, j.snoozes])).toEqual([
      [jobIds.watchdog(batchId, 1, 0, 0), 'completed', 0],
      [jobIds.watchdog(batchId, 1, 0, 1), 'completed', 0],
      [jobIds.watchdog(batchId, 1, 0, 2), 'completed', 0],
    ]);
    const firstDone = Date.parse(watchdogs[0]!.finalizedAt!);
    expect(firstDone).toBeLessThan(Date.parse(second!.dialledAt!) + 600_000);
    expect(Date.parse(second!.completedAt!) - Date.parse(second!.dialledAt!)).toBeGreaterThanOrEqual(600_000);
  });

  it('AWatchdogOfOneCallEnqueuedBeforeRunsHadOne_StillEndsItsCallWithTimeout_AndIsANoOpOnceItEnded', async () => {
    const fx = await callsFixture({ script: () => 'lostWebhook', callTimeoutSeconds: 7200, workers: false });
    fixtures.push(fx);
    const run = async (id: string) => {
      const job = await fx.jobs.store.mustGet(id);
      fx.clock.set(Math.max(fx.clock.now(), Date.parse(job.scheduledAt)));
      return (await fx.execute({ jobId: id, seq: job.seq })).result;
    };
    const [contact] = numbers(1);
    const batchId = await fx.createBatch({ numbers: [contact!], maxAttempts: 1 });
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    const call = fx.simulator.calls[0]!;
    // The shape the dialer enqueued before: one job per call, naming it.
    const legacy = jobIds.callWatchdog(batchId, contact!, 1);
    await fx.jobs.client.enqueue(watchdogKind, { batchId, contactNumber: contact!, round: 1, callId: call.callId }, { id: legacy, at: fx.clock.now() + 7_200_000 });
    expect(await run(legacy)).toBe('completed');
    expect(await fx.store.getContact(batchId, contact!)).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog' });
    // The run's own watchdog finds it ended.
    expect(await run(jobIds.watchdog(batchId, 1, 0, 0))).toBe('completed');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts.byCode).toEqual({ TIMEOUT: 1 });
  });

  it('ARunStillDiallingWhenItsWatchdogIsDue_DialsOnUnderANewWatchdog_SoACallPlacedAfterTheFirstLookedIsTimedOutToo', async () => {
    // Every result is lost: only watchdogs end these calls. The placer holds the second call, so the run is
    // still going (it has the third contact to dial: one contact a dial) when its watchdog's due time comes.
    const contacts = numbers(3);
    const gate = await placerGate();
    gates.push(gate);
    const fx = await callsFixture({ script: () => 'lostWebhook', callTimeoutSeconds: 600, placerUrl: gate.placerUrl, dialGroup: 1 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 10 });
    (await gate.next()).release();
    const second = await gate.next();
    expect(second.contactNumber).toBe(contacts[1]);

    const first = await fx.jobs.store.mustGet(jobIds.watchdog(batchId, 1, 0, 0));
    fx.clock.set(Date.parse(first.scheduledAt));
    await vi.waitFor(async () => expect((await fx.jobs.store.mustGet(first.id)).state).toBe('completed'), { timeout: 20_000, interval: 50 });
    // It ended the two calls placed so far; the third contact was not dialled when it looked.
    expect(await fx.store.getContact(batchId, contacts[2]!)).toBeUndefined();

    second.release();
    const third = await gate.next();
    expect(third.contactNumber).toBe(contacts[2]);
    third.release();
    await fx.settle();

    const [a, b, c] = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
    expect(a).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog', watchdogJobId: first.id });
    expect(b).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog', watchdogJobId: first.id });
    // The call placed after the first watchdog had looked names a watchdog that had not: it still ends.
    expect(c).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog', watchdogJobId: jobIds.watchdog(batchId, 1, 0, 2) });
    expect(Date.parse(c!.completedAt!) - Date.parse(c!.dialledAt!)).toBeGreaterThanOrEqual(600_000);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { TIMEOUT: 3 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
  });

  it('AGroupDialledTogether_WhoseWatchdogEndedACallBeforeItWasPlaced_NeverPlacesThatCall_AndEachCallEndsOnce', async () => {
    // One transaction dials all three contacts (a group); the placer holds the second call while the
    // watchdog's due time comes. The third call was dialled with the group, so the watchdog ends it with
    // TIMEOUT before it was placed; the run, released, does not place it (its result would be ignored).
    const contacts = numbers(3);
    const gate = await placerGate();
    gates.push(gate);
    const fx = await callsFixture({ script: () => 'lostWebhook', callTimeoutSeconds: 600, placerUrl: gate.placerUrl, dialGroup: 10 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 10 });
    (await gate.next()).release();
    const second = await gate.next();
    expect(second.contactNumber).toBe(contacts[1]);
    // The group's three contacts were all Calling before the second call was placed.
    expect((await fx.store.getContact(batchId, contacts[2]!))?.status).toBe('Calling');

    const first = await fx.jobs.store.mustGet(jobIds.watchdog(batchId, 1, 0, 0));
    fx.clock.set(Date.parse(first.scheduledAt));
    await vi.waitFor(async () => expect((await fx.jobs.store.mustGet(first.id)).state).toBe('completed'), { timeout: 20_000, interval: 50 });
    second.release();
    await fx.settle();

    expect(gate.pending()).toBe(0);
    const ended = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
    for (const contact of ended) expect(contact).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog', watchdogJobId: first.id, attempts: 1 });
    expect((await watchdogsOf(fx)).map((j) => j.id)).toEqual([first.id]);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { TIMEOUT: 3 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
  });

  it('AWatchdogEndingTheRoundsLastCalls_PlansTheLastOneAsTheLastCall_NoTransactionCancelled', async () => {
    // Every result is lost: the run's watchdog ends all three calls, the third the round's last.
    const fx = await callsFixture({ script: () => 'lostWebhook', callTimeoutSeconds: 600, workers: false });
    fixtures.push(fx);
    const run = async (id: string) => {
      const job = await fx.jobs.store.mustGet(id);
      fx.clock.set(Math.max(fx.clock.now(), Date.parse(job.scheduledAt)));
      return (await fx.execute({ jobId: id, seq: job.seq })).result;
    };
    const contacts = numbers(3);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1 });
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    await fx.simulator.idle();
    fx.counter.reset();
    expect(await run(jobIds.watchdog(batchId, 1, 0, 0))).toBe('completed');
    // Three completions, three transactions: the last one enqueued the finaliser at its first try.
    expect(fx.counter.toJSON()['DynamoDB.TransactWriteItems']).toBe(3);
    expect(await fx.store.getBatch(batchId)).toMatchObject({ nCalling: 0, byCode: { TIMEOUT: 3 } });
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { TIMEOUT: 3 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
  });
});
