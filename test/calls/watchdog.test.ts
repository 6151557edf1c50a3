import { afterEach, describe, expect, it, vi } from 'vitest';
import { jobIds, slotOfCall } from '../../functions/calls/model.ts';
import { callsFixture, numbers, placerGate, runByHand, scriptByNumber } from '../support/calls.ts';
import type { CallsFixture, PlacerGate } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
const gates: PlacerGate[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

const watchdogsOf = async (fx: CallsFixture) => (await fx.allJobs()).filter((j) => j.kind === 'calls.watchdog').sort((a, b) => (a.args as { seq: number }).seq - (b.args as { seq: number }).seq);
/** When the placer took a contact's (only) call: no earlier than its dial. */
const placedAt = (fx: CallsFixture, contactNumber: string) => fx.simulator.calls.find((c) => c.contactNumber === contactNumber)!.acceptedAt;

describe('watchdog: one per dial run, ending only its own lost calls', () => {
  it('TwentyFiveCallsDialledInTwoRuns_HaveTwoWatchdogs_WhichEndExactlyTheLostCallsWithTimeout', async () => {
    const contacts = numbers(25);
    const lost = [contacts[3]!, contacts[17]!, contacts[22]!];
    const fx = await callsFixture({ script: scriptByNumber(Object.fromEntries(lost.map((n) => [n, ['lostWebhook']]))), resultDelayMs: () => 60_000, callTimeoutSeconds: 600 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 100 });
    await fx.settle();

    // dialsPerRun is 20: the runs start at positions 0 and 20, the round's first and second watchdogs, each
    // with a slot shard that had the most room when it opened (a limit of 100 is three shards).
    const watchdogs = await watchdogsOf(fx);
    expect(watchdogs.map((j) => [j.id, j.state, j.args])).toEqual([
      [jobIds.watchdog(batchId, 1, 1), 'completed', { batchId, round: 1, seq: 1, page: 0, pos: 0, count: 20, shard: expect.any(Number) }],
      [jobIds.watchdog(batchId, 1, 2), 'completed', { batchId, round: 1, seq: 2, page: 0, pos: 20, count: 5, shard: expect.any(Number), prevDialAt: expect.any(String) }],
    ]);
    expect(watchdogs.every((j) => j.cancelRequestedAt === undefined)).toBe(true);
    // The first run took 20 slots of its shard: the second took another, which had more room.
    expect((watchdogs[1]!.args as { shard: number }).shard).not.toBe((watchdogs[0]!.args as { shard: number }).shard);
    for (const n of contacts) {
      const contact = await fx.store.getContact(batchId, n);
      expect(contact, n).toMatchObject(lost.includes(n) ? { status: 'Completed', code: 'TIMEOUT', source: 'watchdog' } : { status: 'Completed', code: 'COMPLETED', source: 'webhook' });
    }
    // Each lost call ended no earlier than its own timeout (counted from when the placer took it, after its dial).
    for (const n of lost) {
      const contact = (await fx.store.getContact(batchId, n))!;
      expect(Date.parse(contact.completedAt!) - placedAt(fx, n)).toBeGreaterThanOrEqual(600_000);
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
    expect(first).toMatchObject({ code: 'COMPLETED' });
    expect(second).toMatchObject({ code: 'TIMEOUT', source: 'watchdog' });
    expect(third).toMatchObject({ code: 'COMPLETED' });
    // Run 1's watchdog ran while the second call was out and not yet due: it did not wait for it (no snooze),
    // since the next watchdog opened at that position (run 2's): its own run dialled only the first.
    const watchdogs = await watchdogsOf(fx);
    expect(watchdogs.map((j) => [j.id, (j.args as { pos: number }).pos, j.state, j.snoozes])).toEqual([
      [jobIds.watchdog(batchId, 1, 1), 0, 'completed', 0],
      [jobIds.watchdog(batchId, 1, 2), 1, 'completed', 0],
      [jobIds.watchdog(batchId, 1, 3), 2, 'completed', 0],
    ]);
    const firstDone = Date.parse(watchdogs[0]!.finalizedAt!);
    expect(firstDone).toBeLessThan(placedAt(fx, contacts[1]!) + 600_000);
    expect(Date.parse(second!.completedAt!) - placedAt(fx, contacts[1]!)).toBeGreaterThanOrEqual(600_000);
  });

  it('AWatchdogDueWhileALaterRunsCallInItsBlockIsAsOldAsTheTimeout_LeavesThatCallToTheLaterRunsWatchdog', async () => {
    // A limit of one, jobs by hand. Run 1 dials the first contact (its result comes 5 s later) and waits
    // for a slot; run 2 dials the second (lost) under the round's second watchdog, within a few seconds.
    // Run 1's watchdog, due at 620 s, covers both positions, and the second call is over 600 s old by
    // then: still not its run's call, so it leaves it. The second watchdog ends it.
    const contacts = numbers(2);
    const fx = await callsFixture({ script: scriptByNumber({ [contacts[1]!]: ['lostWebhook'] }), resultDelayMs: () => 2_000, callTimeoutSeconds: 600, workers: false });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 1 });
    expect(await runByHand(fx, jobIds.dial(batchId, 1))).toBe('snoozed');
    fx.clock.advance(5_000 + 3_000);
    await fx.simulator.idle();
    expect(await fx.contactView(batchId, contacts[0]!)).toMatchObject({ status: 'Completed', code: 'COMPLETED' });
    expect(await runByHand(fx, jobIds.dial(batchId, 1))).toBe('completed');
    expect(await fx.store.getBatch(batchId)).toMatchObject({ watchdogs: 2, openWatchdog: jobIds.watchdog(batchId, 1, 2), dialComplete: true });

    const [first, second] = await watchdogsOf(fx);
    expect(first!.args).toMatchObject({ seq: 1, pos: 0, count: 2 });
    expect(await runByHand(fx, first!.id)).toBe('completed');
    expect(fx.clock.now() - placedAt(fx, contacts[1]!)).toBeGreaterThanOrEqual(600_000);
    expect(await fx.contactView(batchId, contacts[1]!)).toMatchObject({ status: 'Calling', attempts: 1 });
    expect(await fx.store.getContact(batchId, contacts[1]!)).toBeUndefined();

    expect(await runByHand(fx, second!.id)).toBe('completed');
    expect(await fx.store.getContact(batchId, contacts[1]!)).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog' });
    expect((await fx.allEvents()).filter((e) => e.data['source'] === 'watchdog').map((e) => e.data['contactNumber'])).toEqual([contacts[1]]);
  });

  it('ARunWhoseSlotShardFills_DialsOnFromAnotherUnderAWatchdogOfItsOwn_AndEveryTimeoutReleasesTheShardItsCallHolds', async () => {
    // A limit of 64 is two slot shards of 32. Every result is lost: the watchdogs end all 64 calls, each
    // releasing a slot of the shard its call took (the shard is its watchdog's), so both shards end at 0.
    const contacts = numbers(64);
    const fx = await callsFixture({ script: () => 'lostWebhook', callTimeoutSeconds: 600 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 64 });
    await fx.settle();
    const watchdogs = await watchdogsOf(fx);
    const shards = watchdogs.map((j) => (j.args as { shard: number }).shard);
    expect(new Set(shards)).toEqual(new Set([0, 1]));
    // Every call's slot suffix is its watchdog's shard: the watchdog covering its position (the last opened at or before it).
    for (const call of fx.simulator.calls) {
      const pos = Number(/\.p0\.(\d+)/.exec(call.callId)![1]);
      const owner = watchdogs.filter((j) => (j.args as { pos: number }).pos <= pos).at(-1)!;
      expect(slotOfCall(call.callId), call.callId).toBe((owner.args as { shard: number }).shard);
    }
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { TIMEOUT: 64 } } });
    expect((await fx.store.getSlots('acme')).map((s) => [s.shard, s.active])).toEqual([...Array(8).keys()].map((k) => [k, 0]));
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

    const first = await fx.jobs.store.mustGet(jobIds.watchdog(batchId, 1, 1));
    fx.clock.set(Date.parse(first.scheduledAt));
    await vi.waitFor(async () => expect((await fx.jobs.store.mustGet(first.id)).state).toBe('completed'), { timeout: 20_000, interval: 50 });
    // It ended the two calls placed so far; the third contact was not dialled when it looked.
    expect((await fx.contactViews(batchId)).get(contacts[2]!)).toMatchObject({ status: 'Queued' });
    expect(await fx.store.getContact(batchId, contacts[2]!)).toBeUndefined();

    second.release();
    const third = await gate.next();
    expect(third.contactNumber).toBe(contacts[2]);
    third.release();
    await fx.settle();

    const [a, b, c] = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
    expect(a).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog' });
    expect(b).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog' });
    // The call dialled after the first watchdog had closed itself is under a watchdog that had not: it still ends.
    expect((await watchdogsOf(fx)).map((j) => [j.id, (j.args as { pos: number }).pos])).toEqual([
      [first.id, 0],
      [jobIds.watchdog(batchId, 1, 2), 2],
    ]);
    expect(c).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog' });
    expect(Date.parse(c!.completedAt!) - placedAt(fx, contacts[2]!)).toBeGreaterThanOrEqual(600_000);
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
    expect((await fx.contactView(batchId, contacts[2]!))?.status).toBe('Calling');

    const first = await fx.jobs.store.mustGet(jobIds.watchdog(batchId, 1, 1));
    fx.clock.set(Date.parse(first.scheduledAt));
    await vi.waitFor(async () => expect((await fx.jobs.store.mustGet(first.id)).state).toBe('completed'), { timeout: 20_000, interval: 50 });
    second.release();
    await fx.settle();

    expect(gate.pending()).toBe(0);
    const ended = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
    for (const contact of ended) expect(contact).toMatchObject({ status: 'Completed', code: 'TIMEOUT', source: 'watchdog', attempts: 1 });
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
    expect(await run(jobIds.watchdog(batchId, 1, 1))).toBe('completed');
    // Three completions, three transactions: the last one enqueued the finaliser at its first try.
    expect(fx.counter.toJSON()['DynamoDB.TransactWriteItems']).toBe(3);
    expect(await fx.store.getBatch(batchId)).toMatchObject({ nCalling: 0, byCode: { TIMEOUT: 3 } });
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { TIMEOUT: 3 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
  });
});
