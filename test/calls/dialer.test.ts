import { afterEach, describe, expect, it } from 'vitest';
import { CAP_SLOT_TTL_MS } from '../../functions/calls/compliance/cap.ts';
import { batchIdOfPartition, callsExpiry, jobIds, slotOfCall, slotShardsFor } from '../../functions/calls/model.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

describe('dialer: the tenant limit, the calling window, in order', () => {
  it('WithALimitOfThreeAndThirtyContactsThePlacerNeverSeesMoreThanThreeCallsAtOnce', async () => {
    // Calls of different lengths, so slots free up in a different order than they were taken.
    // (The dialer looks for a free slot every 10 s here instead of 3 s: fewer steps, the same property.)
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: ({ contactNumber }) => 20_000 + (Number(contactNumber.slice(-2)) % 7) * 9_000, noSlotSnoozeMs: 10_000 });
    fixtures.push(fx);
    const contacts = numbers(30);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 3 });
    const seen = { calling: 0, active: 0 };
    await fx.settle(undefined, async () => {
      const batch = await fx.store.getBatch(batchId);
      const tenant = await fx.store.getTenant('acme');
      seen.calling = Math.max(seen.calling, batch!.nCalling);
      seen.active = Math.max(seen.active, tenant!.active);
    });
    // Measured at the placer: calls accepted and not yet answered by the intake.
    expect(fx.simulator.maxInProgress).toBe(3);
    expect(fx.simulator.calls).toHaveLength(30);
    expect(seen).toEqual({ calling: 3, active: 3 });
    // In upload order, each once.
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual(contacts);
    const batch = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(batch).toMatchObject({ status: 'Finalised', counts: { byStatus: { Completed: 30, Calling: 0 }, byCode: { COMPLETED: 30 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    // Waiting for a slot spent no attempt of the dialer's budget.
    const dial = await fx.jobs.store.mustGet(jobIds.dial(batchId, 1));
    expect(dial).toMatchObject({ state: 'completed', attempt: 1 });
    expect(dial.snoozes).toBeGreaterThan(0);
  });

  it('ALimitSplitOverSlotShards_IsNeverExceededByRacingDialRunsOfThreeBatches_AndEveryShardIsUsedAndGivenBack', async () => {
    // 64 slots over two shards of 32. Three batches dial at once (their runs race on the shards in
    // DynamoDB Local), with calls of different lengths, so slots free up on either shard in any order.
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: ({ contactNumber }) => 20_000 + (Number(contactNumber.slice(-2)) % 5) * 7_000, noSlotSnoozeMs: 10_000 });
    fixtures.push(fx);
    expect(slotShardsFor(64)).toBe(2);
    const contacts = [numbers(35, '+3361234'), numbers(35, '+3361235'), numbers(35, '+3361236')];
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 64 });
    const batches = await Promise.all(contacts.map((list) => fx.createBatch({ numbers: list, maxAttempts: 1, concurrencyLimit: 64 })));
    let most = 0;
    await fx.settle(undefined, async () => {
      const slots = await fx.store.getSlots('acme');
      for (const slot of slots) expect(slot.active, `shard ${slot.shard}`).toBeLessThanOrEqual(slot.limit);
      most = Math.max(most, slots.reduce((n, slot) => n + slot.active, 0));
    });
    // Measured at the placer: never more than the tenant's limit at once, and the limit was reached.
    expect(fx.simulator.maxInProgress).toBe(64);
    expect(most).toBe(64);
    expect(fx.simulator.calls).toHaveLength(105);
    // Both shards held calls (a call of shard 1 names it), and every slot came back.
    expect(new Set(fx.simulator.calls.map((c) => slotOfCall(c.callId)))).toEqual(new Set([0, 1]));
    expect((await fx.store.getSlots('acme')).map((s) => [s.shard, s.active, s.limit])).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((k) => [k, 0, k < 2 ? 32 : 0]));
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    for (const id of batches) expect((await fx.api('GET', `/v1/batches/${id}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 35 } } });
  });

  it('EveryRowOfABatchExpires90DaysAfterItsLastWrite_TheTenantAndItsSlotsNever', async () => {
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 30_000 });
    fixtures.push(fx);
    const created = fx.clock.now();
    await fx.createBatch({ numbers: numbers(3), maxAttempts: 2 });
    await fx.settle();
    const items = await fx.callsItems();
    const batchRows = items.filter((i) => batchIdOfPartition(String(i['pk'])) !== undefined);
    // The batch, its two rounds' list pages and outcomes, its three contacts and their six calls.
    expect(batchRows.map((i) => String(i['sk']).split('#')[0]).sort()).toEqual(['ATTEMPT', 'ATTEMPT', 'ATTEMPT', 'ATTEMPT', 'ATTEMPT', 'ATTEMPT', 'BATCH', 'CONTACT', 'CONTACT', 'CONTACT', 'LIST', 'LIST', 'ROUND', 'ROUND']);
    for (const row of batchRows) {
      expect(row['expiresAt'], String(row['sk'])).toBeGreaterThanOrEqual(callsExpiry(created));
      expect(row['expiresAt'], String(row['sk'])).toBeLessThanOrEqual(callsExpiry(fx.clock.now()));
    }
    // Finalised after round 2: the batch row's expiry moved with it.
    expect(batchRows.find((i) => i['sk'] === 'BATCH')!['expiresAt']).toBe(callsExpiry(Date.parse(String(batchRows.find((i) => i['sk'] === 'BATCH')!['finalisedAt']))));
    // The tenant's rows never expire, but for its numbers' cap slots: each a day and an hour after its call.
    for (const row of items.filter((i) => batchIdOfPartition(String(i['pk'])) === undefined)) {
      if (String(row['pk']).startsWith('TENANT#acme#CAP#')) expect(row['expiresAt'], String(row['pk'])).toBe(Math.floor((Number(row['at']) + CAP_SLOT_TTL_MS) / 1000));
      else expect(row, String(row['pk'])).not.toHaveProperty('expiresAt');
    }
  });

  it('TheLimitIsPerTenantAcrossItsBatches', async () => {
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 30_000, noSlotSnoozeMs: 10_000 });
    fixtures.push(fx);
    const a = await fx.createBatch({ numbers: numbers(6, '+3361234'), maxAttempts: 1, concurrencyLimit: 2 });
    const b = await fx.createBatch({ numbers: numbers(6, '+3361235'), maxAttempts: 1, concurrencyLimit: 2 });
    await fx.settle();
    expect(fx.simulator.maxInProgress).toBe(2);
    for (const id of [a, b]) expect((await fx.api('GET', `/v1/batches/${id}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { NO_PICKUP: 6 } } });
  });

  it('ABatchCreatedOutsideItsWindowDialsNothingUntilItOpensAcrossTheSpringForwardAndSpendsNoAttempt', async () => {
    // Saturday 2026-03-28, 18:30 in Berlin; the clocks go forward that night. 09:00 on Sunday is 07:00Z (CEST).
    const fx = await callsFixture({
      start: Date.parse('2026-03-28T17:30:00Z'),
      script: () => 'completed',
      // Five hours and a minute: a result never lands at the same instant as one of the dialer's looks
      // (every 15 min), where which of the two runs first would be a race.
      resultDelayMs: () => 5 * 3600_000 + 60_000,
      callTimeoutSeconds: 6 * 3600,
      noSlotSnoozeMs: 15 * 60_000,
    });
    fixtures.push(fx);
    const contacts = numbers(3, '+4930123');
    const batchId = await fx.createBatch({
      numbers: contacts,
      maxAttempts: 1,
      concurrencyLimit: 1,
      callingWindow: { timezone: 'Europe/Berlin', start: '09:00', end: '17:00', perContact: false },
    });
    await fx.settle(Date.parse('2026-03-29T06:59:59Z') - fx.clock.now());
    expect(fx.simulator.calls).toEqual([]);
    const waiting = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(waiting).toMatchObject({ status: 'Pending', round: 1, counts: { byStatus: { Queued: 3, Calling: 0 } } });
    expect((await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts.map((c: any) => c.attempts)).toEqual([0, 0, 0]);
    const dial = await fx.jobs.store.mustGet(jobIds.dial(batchId, 1));
    expect(dial).toMatchObject({ state: 'snoozed', attempt: 0, attempts: [], lastSnooze: { until: '2026-03-29T07:00:00.000Z', reason: 'outside the calling window' } });

    await fx.settle();
    // One call at a time, five hours each: the first at 09:00 CEST sharp; the second once the slot is free
    // at 14:01 CEST (the dialer looks every 15 min here); the third's slot frees after 19:00 CEST, when the
    // window is shut: it waits for Monday 09:00.
    const [first, second, third] = fx.simulator.calls;
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual(contacts);
    expect(new Date(first!.acceptedAt).toISOString()).toBe('2026-03-29T07:00:00.000Z');
    expect(second!.acceptedAt).toBeGreaterThanOrEqual(Date.parse('2026-03-29T12:01:00Z'));
    expect(second!.acceptedAt).toBeLessThan(Date.parse('2026-03-29T12:16:00Z'));
    expect(new Date(third!.acceptedAt).toISOString()).toBe('2026-03-30T07:00:00.000Z');
    const done = await fx.jobs.store.mustGet(jobIds.dial(batchId, 1));
    expect(done).toMatchObject({ state: 'completed', attempt: 1 });
    expect((await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts.map((c: any) => c.attempts)).toEqual([1, 1, 1]);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.status).toBe('Finalised');
  });

  it('APlacerThatRefusesACallCompletesItWithInternalErrorThroughTheSamePath', async () => {
    const fx = await callsFixture({ script: ({ contactNumber }) => (contactNumber.endsWith('1001') ? 'placerRefuses' : 'completed') });
    fixtures.push(fx);
    const contacts = numbers(2);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1 });
    await fx.settle();
    expect(await fx.store.getContact(batchId, contacts[1]!)).toMatchObject({ status: 'Completed', code: 'INTERNAL_ERROR', retryable: true, source: 'placer' });
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 1, INTERNAL_ERROR: 1 } } });
    // The run's one watchdog covered both calls, found them Completed and changed nothing.
    const watchdogs = (await fx.allJobs()).filter((j) => j.kind === 'calls.watchdog');
    expect(watchdogs.map((j) => [j.id, j.state])).toEqual([[jobIds.watchdog(batchId, 1, 1), 'completed']]);
    expect((await fx.allEvents()).filter((e) => e.type === 'call.completed').map((e) => e.data['code']).sort()).toEqual(['COMPLETED', 'INTERNAL_ERROR']);
  });

  it('ALargeRoundIsDialledOverSeveralBoundedRuns', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: numbers(45), maxAttempts: 1, concurrencyLimit: 100 });
    await fx.quiesce();
    // dialsPerRun is 20: three runs, each continuing from the cursor on the batch, none spending an attempt.
    const dial = await fx.jobs.store.mustGet(jobIds.dial(batchId, 1));
    expect(dial).toMatchObject({ state: 'completed', attempt: 1, snoozes: 2 });
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual(numbers(45));
    expect(await fx.store.getBatch(batchId)).toMatchObject({ nCalling: 45, dialComplete: true, dialPage: 1, dialPos: 0 });
  });
});
