import { afterEach, describe, expect, it, vi } from 'vitest';
import { callsDefaults } from '../../functions/calls/config.ts';
import { baseCallId, callIdFor, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers, placerGate, runByHand } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A fixture whose jobs run by hand (no worker), results held back for an hour: the dials alone are observed. */
async function handRun() {
  const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
  fixtures.push(fx);
  const run = (id: string) => runByHand(fx, id);
  return { fx, run };
}

describe('dialer: a group of contacts in one transaction', () => {
  it('ARunOfTwentyContactsDialsThemInFourTransactions_EachWritingTheSlotShardAndTheBatchRowOnce_AndNoContact_InListOrder', async () => {
    const { fx, run } = await handRun();
    const contacts = numbers(20);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 100 });
    const written = vi.spyOn(fx.deps.store, 'transact');
    fx.counter.reset();
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');
    // Four groups of five (callsDefaults.dialGroup): one transaction each, the run's watchdog in the first.
    expect(callsDefaults.dialGroup).toBe(5);
    expect(fx.counter.toJSON()['DynamoDB.TransactWriteItems']).toBe(4);
    // Each writes the slot shard and the batch row (and the first the watchdog job), and per call its
    // number's cap slot and a check that the number is not suppressed: no contact item.
    const items = written.mock.calls.map(([transaction]) => transaction.map((item) => item.name));
    const perCall = (group: string[]) => group.flatMap((n) => [`cap:${n}`, `supp:${n}`]);
    expect(items).toEqual([
      ['tenant', 'batch', ...perCall(contacts.slice(0, 5)), `job ${jobIds.watchdog(batchId, 1, 1)}`],
      ['tenant', 'batch', ...perCall(contacts.slice(5, 10))],
      ['tenant', 'batch', ...perCall(contacts.slice(10, 15))],
      ['tenant', 'batch', ...perCall(contacts.slice(15, 20))],
    ]);
    expect((await fx.callsItems()).filter((item) => String(item['sk']).startsWith('CONTACT#'))).toEqual([]);
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual(contacts);
    // Each call id names its round and list position.
    expect(fx.simulator.calls.map((c) => baseCallId(c.callId))).toEqual(contacts.map((n, pos) => callIdFor(batchId, n, { round: 1, page: 0, pos })));
    const batch = (await fx.store.getBatch(batchId))!;
    expect(batch).toMatchObject({ nCalling: 20, nQueued: 0, dialComplete: true, watchdogs: 1, openWatchdog: jobIds.watchdog(batchId, 1, 1) });
    const slots = await fx.store.getSlots('acme');
    expect(slots.reduce((n, s) => n + s.active, 0)).toBe(20);
    // The batch's per-shard counts match the shards' (what a delete gives back).
    for (const slot of slots) expect(batch[`s${slot.shard}`] ?? 0).toBe(slot.active);
    // The API shows them Calling: their positions are behind the dial cursor.
    for (const view of (await fx.contactViews(batchId)).values()) expect(view).toMatchObject({ status: 'Calling', attempts: 1, code: null });
  });

  it('AGroupNeverTakesMoreSlotsThanItsShardHasFree_TheRestWaitForResults', async () => {
    // A limit of 4 (one shard): a run dials four, then snoozes for a free slot; each result frees one.
    const { fx, run } = await handRun();
    const contacts = numbers(10);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 4 });
    expect(await run(jobIds.dial(batchId, 1))).toBe('snoozed');
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual(contacts.slice(0, 4));
    expect(await fx.store.getTenant('acme')).toMatchObject({ active: 4 });
    expect(await fx.store.getBatch(batchId)).toMatchObject({ nCalling: 4, dialPos: 4 });
  });

  it('ARunOutOfTimeToPlaceItsGroupsCalls_CompletesTheRestWithInternalErrorWithoutAskingThePlacer', async () => {
    // The placer holds the group's first call past the run's placing budget (300 ms real here).
    const gate = await placerGate();
    const fx = await callsFixture({ script: () => 'completed', placerUrl: gate.placerUrl, placeBudgetMs: 300 });
    fixtures.push(fx);
    try {
      const contacts = numbers(3);
      const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1 });
      const first = await gate.next();
      expect(first.contactNumber).toBe(contacts[0]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      first.release();
      await fx.settle();
      expect(gate.pending()).toBe(0);
      expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual([contacts[0]]);
      const states = await fx.store.getContacts(batchId, contacts);
      expect(states.get(contacts[0]!)).toMatchObject({ status: 'Completed', code: 'COMPLETED', source: 'webhook' });
      for (const n of contacts.slice(1)) expect(states.get(n)).toMatchObject({ status: 'Completed', code: 'INTERNAL_ERROR', source: 'placer', attempts: 1 });
      expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 1, INTERNAL_ERROR: 2 } } });
      expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    } finally {
      await gate.close();
    }
  });
});
