import { afterEach, describe, expect, it } from 'vitest';
import { callIdFor, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers, runByHand } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/**
 * One contact, called in several rounds, with the jobs run by hand: the simulator accepts every call and
 * never answers (its results are an hour away), so every result below is one the test sends itself.
 */
async function oneContact(maxAttempts: number) {
  const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
  fixtures.push(fx);
  const run = (id: string) => runByHand(fx, id);
  const [contact] = numbers(1);
  const batchId = await fx.createBatch({ numbers: [contact!], maxAttempts, retry: { baseSeconds: 10, capSeconds: 60 } });
  /** The call the placer was asked for in `round`, as the AI call handler knows it. */
  const placed = (round: number) => {
    const call = fx.simulator.calls.find((c) => c.batchId === batchId && c.contactNumber === contact && c.round === round);
    if (!call) throw new Error(`no call placed in round ${round}`);
    return call;
  };
  const result = (round: number, code = 'NO_PICKUP') => ({
    batchId,
    contactNumber: contact!,
    callId: placed(round).callId,
    code,
    emptyTranscription: code === 'NO_PICKUP',
    durationSeconds: code === 'NO_PICKUP' ? 0 : 60,
  });
  const snapshot = async () => ({ calls: await fx.callsItems(), jobs: await fx.allJobs(), events: await fx.allEvents() });
  return { fx, run, contact: contact!, batchId, placed, result, snapshot };
}

describe('a call result belongs to the call that was placed', () => {
  it('AReSentRoundOneResultWhileRoundTwoIsCallingIsIgnoredAndEveryRoundKeepsItsOwnOutcome', async () => {
    const { fx, run, contact, batchId, placed, result, snapshot } = await oneContact(3);

    // Round 1: NO_PICKUP applies; the finaliser re-arms; round 2 dials the contact again.
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    const sentAt = Math.floor(fx.clock.now() / 1000);
    expect((await fx.webhook(result(1), { id: 'msg_round1', timestampSeconds: sentAt })).body).toEqual({ outcome: 'applied', code: 'NO_PICKUP', retryable: true });
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect(await run(jobIds.dial(batchId, 2))).toBe('completed');
    expect(await fx.contactView(batchId, contact)).toMatchObject({ status: 'Calling', attempts: 2, code: null });
    // The dial wrote no contact: its item is still round 1's completion.
    expect(await fx.store.getContact(batchId, contact)).toMatchObject({ status: 'Completed', round: 1, attempts: 1, callId: placed(1).callId });
    expect(placed(2).callId).not.toBe(placed(1).callId);

    // The AI call handler re-sends round 1's result: the same webhook-id and signature, inside the 5-minute window.
    expect(Math.floor(fx.clock.now() / 1000) - sentAt).toBeLessThan(300);
    const before = await snapshot();
    expect(await fx.webhook(result(1), { id: 'msg_round1', timestampSeconds: sentAt })).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await snapshot()).toEqual(before);

    // Round 2's real result applies to round 2's call, and round 3 dials.
    expect((await fx.webhook(result(2), { id: 'msg_round2' })).body).toEqual({ outcome: 'applied', code: 'NO_PICKUP', retryable: true });
    expect(await fx.store.getContact(batchId, contact)).toMatchObject({ status: 'Completed', round: 2, code: 'NO_PICKUP' });
    expect(await run(jobIds.finalise(batchId, 2))).toBe('completed');
    expect(await run(jobIds.dial(batchId, 3))).toBe('completed');

    // While round 3 is out, late copies of both earlier results change nothing.
    const during = await snapshot();
    expect((await fx.webhook(result(1), { id: 'msg_round1' })).body).toEqual({ outcome: 'ignored' });
    expect((await fx.webhook(result(2), { id: 'msg_round2' })).body).toEqual({ outcome: 'ignored' });
    expect(await snapshot()).toEqual(during);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'InProgress', round: 3, counts: { byStatus: { Calling: 1 } } });

    // Round 3's real result is the one that ends the batch: no call is out when it is Finalised.
    expect((await fx.webhook(result(3, 'COMPLETED'), { id: 'msg_round3' })).body).toEqual({ outcome: 'applied', code: 'COMPLETED', retryable: false });
    expect(await run(jobIds.finalise(batchId, 3))).toBe('completed');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({
      status: 'Finalised',
      round: 3,
      counts: { byStatus: { Calling: 0, Completed: 1 }, byCode: { COMPLETED: 1 } },
    });
    expect(await fx.store.getContact(batchId, contact)).toMatchObject({ status: 'Completed', round: 3, attempts: 3, code: 'COMPLETED', callId: placed(3).callId });
    // One call.completed per call, each naming its own call.
    const completed = (await fx.allEvents()).filter((e) => e.type === 'call.completed').map((e) => [e.data['round'], e.data['callId'], e.data['code']]);
    expect(completed).toEqual([
      [1, placed(1).callId, 'NO_PICKUP'],
      [2, placed(2).callId, 'NO_PICKUP'],
      [3, placed(3).callId, 'COMPLETED'],
    ]);
  });

  it('AWatchdogOfAnEarlierRoundCannotEndALaterCall', async () => {
    const { fx, run, contact, batchId, result, snapshot } = await oneContact(2);
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    expect((await fx.webhook(result(1))).body.outcome).toBe('applied');
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect(await run(jobIds.dial(batchId, 2))).toBe('completed');

    // Round 1's watchdog runs when it is due, while round 2's call is out (and just as old): it changes nothing.
    const watchdogs = () => fx.allJobs().then((jobs) => jobs.filter((j) => j.kind === 'calls.watchdog').map((j) => j.id).sort());
    expect(await watchdogs()).toEqual([jobIds.watchdog(batchId, 1, 1), jobIds.watchdog(batchId, 2, 1)]);
    const before = await snapshot();
    expect(await run(jobIds.watchdog(batchId, 1, 1))).toBe('completed');
    expect(await fx.contactView(batchId, contact)).toMatchObject({ status: 'Calling', attempts: 2 });
    expect((await snapshot()).calls).toEqual(before.calls);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts.byStatus).toMatchObject({ Calling: 1, Completed: 0 });

    // Round 2's own watchdog does end it, with TIMEOUT.
    expect(await run(jobIds.watchdog(batchId, 2, 1))).toBe('completed');
    expect(await fx.store.getContact(batchId, contact)).toMatchObject({ status: 'Completed', round: 2, code: 'TIMEOUT', source: 'watchdog' });
  });

  it('ARoundOneCallEndedByItsWatchdog_WhoseRealResultArrivesWhileRoundTwoIsCalling_IsIgnored', async () => {
    const { fx, run, contact, batchId, placed, result, snapshot } = await oneContact(2);
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    // No result within the call timeout: round 1's watchdog ends the call with TIMEOUT (retryable).
    expect(await run(jobIds.watchdog(batchId, 1, 1))).toBe('completed');
    expect(await fx.store.getContact(batchId, contact)).toMatchObject({ round: 1, code: 'TIMEOUT', source: 'watchdog', callId: placed(1).callId });
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect(await run(jobIds.dial(batchId, 2))).toBe('completed');
    expect(await fx.contactView(batchId, contact)).toMatchObject({ status: 'Calling', attempts: 2 });

    // Round 1's real result comes at last, its first delivery: it is not round 2's call's, and changes nothing.
    const before = await snapshot();
    expect(await fx.webhook(result(1, 'COMPLETED'))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await snapshot()).toEqual(before);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts.byStatus).toMatchObject({ Calling: 1, Completed: 0 });
    expect((await fx.webhook(result(2, 'COMPLETED'))).body).toEqual({ outcome: 'applied', code: 'COMPLETED', retryable: false });
  });

  it('AResultWithoutItsCallIdIs400NamingTheFieldAndWritesNothing', async () => {
    const { fx, run, batchId, result, snapshot } = await oneContact(1);
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    const before = await snapshot();
    const { callId: _dropped, ...withoutCallId } = result(1);
    const response = await fx.webhook(withoutCallId);
    expect(response.status).toBe(400);
    expect(response.body.issues.map((i: { path: string }) => i.path)).toEqual(['body.callId']);
    expect(await snapshot()).toEqual(before);
    // An unknown call id of the right shape is a result for no call in progress: ignored, nothing written.
    expect(await fx.webhook({ ...result(1), callId: 'call_not_one_we_placed' })).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await snapshot()).toEqual(before);
  });

  it('ACallIdWithAnAlteredRoundOrPosition_OrAnotherContactsCallId_IsIgnoredAndWritesNothing', async () => {
    // Two contacts, both dialled: each call id names its round and list position, bound by its hash.
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
    fixtures.push(fx);
    const contacts = numbers(3);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2 });
    expect(await runByHand(fx, jobIds.dial(batchId, 1))).toBe('completed');
    const [first, second] = fx.simulator.calls;
    expect(first!.callId).toMatch(/^call_[A-Za-z0-9_-]{22}\.r1\.p0\.0$/);
    expect(second!.callId).toMatch(/\.r1\.p0\.1$/);
    const body = (callId: string, contactNumber = contacts[0]!) => ({ batchId, contactNumber, callId, code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 });
    const before = { calls: await fx.callsItems(), events: await fx.allEvents() };
    for (const forged of [
      first!.callId.replace('.r1.', '.r2.'), // another round
      first!.callId.replace(/\.0$/, '.1'), // another (dialled) position
      first!.callId.replace(/\.0$/, '.2'), // a position not dialled
      second!.callId, // another contact's call
    ]) {
      expect(await fx.webhook(body(forged)), forged).toEqual({ status: 200, body: { outcome: 'ignored' } });
    }
    // Another contact's number with the first contact's call id.
    expect(await fx.webhook(body(first!.callId, contacts[1]))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect({ calls: await fx.callsItems(), events: await fx.allEvents() }).toEqual(before);
    // The call's own id applies.
    expect((await fx.webhook(body(first!.callId))).body).toEqual({ outcome: 'applied', code: 'COMPLETED', retryable: false });
  });

  it('APositionTheDialHasNotReached_IsRefusedByTheBatchRow_EvenWithAWellFormedIdForIt', async () => {
    // A limit of one: the first contact is dialled, the second waits. A result for the second contact's
    // round-1 position, with the id it will get (hash and all), comes before its dial: the batch refuses it.
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
    fixtures.push(fx);
    const contacts = numbers(2);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 1 });
    expect(await runByHand(fx, jobIds.dial(batchId, 1))).toBe('snoozed');
    const early = callIdFor(batchId, contacts[1]!, { round: 1, page: 0, pos: 1 });
    const before = { calls: await fx.callsItems(), events: await fx.allEvents() };
    expect(await fx.webhook({ batchId, contactNumber: contacts[1]!, callId: early, code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 })).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect({ calls: await fx.callsItems(), events: await fx.allEvents() }).toEqual(before);
    expect(await fx.contactView(batchId, contacts[1]!)).toMatchObject({ status: 'Queued', attempts: 0 });
  });
});
