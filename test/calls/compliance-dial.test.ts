import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CAP_WINDOW_MS, capPartition } from '../../functions/calls/compliance/cap.ts';
import { suppressionKey } from '../../functions/calls/compliance/suppression.ts';
import { baseCallId, batchKey, callIdFor, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, runByHand } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

/**
 * The compliance rules as every dial's commit decides them (docs/calls.md, "Campaign control and
 * compliance"): recipient-local hours with a deferred list beside the cursor, the per-number cap, the
 * suppression check, the batch's own concurrency limit. DynamoDB Local, the real dialer, the placer
 * simulator; races by running two dials at once and by injecting what DynamoDB Local never answers.
 */

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

// Monday 2026-01-05, 14:30Z: 09:30 in New York, 06:30 in Los Angeles.
const MONDAY_1430Z = Date.parse('2026-01-05T14:30:00Z');
const NEW_YORK = '+12125550100';
const LOS_ANGELES = '+13105550100';

async function tenant(fx: CallsFixture, body: Record<string, unknown> = {}) {
  const put = await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 10, ...body });
  expect(put.status).toBe(200);
  return put.body;
}

async function batch(fx: CallsFixture, numbers: string[], rest: Record<string, unknown> = {}): Promise<string> {
  const created = await fx.api('POST', '/v1/batches', { tenantId: 'acme', contacts: numbers.map((number) => ({ number })), maxAttempts: 1, ...rest });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.batchId as string;
}

const suppress = (fx: CallsFixture, number: string) =>
  fx.clients.dynamo.send(new PutCommand({ TableName: fx.tableNames.calls, Item: { ...suppressionKey('acme', number), number, source: 'api', createdAt: new Date(fx.clock.now()).toISOString() } }));

describe('recipient-local hours: each contact in its own zone', () => {
  it('ANationwideListCallsNewYorkAtOnceAndLosAngelesWhenItsWindowOpens_SameCallIdentity_NoAttemptSpentWaiting', async () => {
    const fx = await callsFixture({ start: MONDAY_1430Z, script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await tenant(fx);
    const batchId = await batch(fx, [NEW_YORK, LOS_ANGELES], { callingWindow: { timezone: 'America/New_York', start: '09:00', end: '17:00' } });
    await fx.settle(Date.parse('2026-01-05T16:59:00Z') - fx.clock.now());
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual([NEW_YORK]);
    const waiting = await fx.api('GET', `/v1/batches/${batchId}/contacts`);
    const la = waiting.body.contacts.find((c: { contactNumber: string }) => c.contactNumber === LOS_ANGELES);
    expect(la).toMatchObject({ status: 'Queued', attempts: 0, deferred: { until: '2026-01-05T17:00:00.000Z', reason: 'window' }, callingZones: { zones: ['America/Los_Angeles'], source: 'areaCode' } });
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts).toMatchObject({ deferred: 1, byStatus: { Queued: 1, Completed: 1, Calling: 0 } });

    await fx.settle();
    const [ny, laCall] = fx.simulator.calls;
    expect(new Date(ny!.acceptedAt).toISOString()).toBe('2026-01-05T14:30:00.000Z');
    // 09:00 in Los Angeles, to the millisecond: the dialer slept until the deferral's time, it did not poll.
    expect(new Date(laCall!.acceptedAt).toISOString()).toBe('2026-01-05T17:00:00.000Z');
    // The deferred contact kept its list position, so its call is the one its position names.
    expect(baseCallId(laCall!.callId)).toBe(callIdFor(batchId, LOS_ANGELES, { round: 1, page: 0, pos: 1 }));
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { deferred: 0, byCode: { COMPLETED: 2 } } });
    expect([...(await fx.contactViews(batchId)).values()].map((c) => [c.contactNumber, c.status, c.attempts])).toEqual([
      [NEW_YORK, 'Completed', 1],
      [LOS_ANGELES, 'Completed', 1],
    ]);
  });

  it('PerContactFalseKeepsTheBatchsOneZone_AndAWindowThatNeverOpensInAllARegionsZonesEndsTheContactWithNoAttempt', async () => {
    const fx = await callsFixture({ start: MONDAY_1430Z, script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await tenant(fx);
    // One zone for the batch: at 09:30 in New York, Los Angeles is called at once.
    const oneZone = await batch(fx, [LOS_ANGELES], { callingWindow: { timezone: 'America/New_York', start: '09:00', end: '17:00', perContact: false } });
    // A Russian mobile number: 11 clocks from Kaliningrad (UTC+2) to Kamchatka (UTC+12); 09:00–11:00 is never open in all.
    const russian = '+79161234567';
    const never = await batch(fx, [russian, NEW_YORK], { callingWindow: { timezone: 'America/New_York', start: '09:00', end: '11:00' } });
    await fx.settle();
    expect(fx.simulator.calls.filter((c) => c.batchId === oneZone).map((c) => new Date(c.acceptedAt).toISOString())).toEqual(['2026-01-05T14:30:00.000Z']);
    expect(fx.simulator.calls.filter((c) => c.batchId === never).map((c) => c.contactNumber)).toEqual([NEW_YORK]);
    const ru = (await fx.contactViews(never)).get(russian);
    expect(ru).toMatchObject({ status: 'Completed', code: 'NO_CALLING_WINDOW', attempts: 0 });
    expect((await fx.api('GET', `/v1/batches/${never}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { NO_CALLING_WINDOW: 1, COMPLETED: 1 } } });
  });
});

describe('the per-number cap: at most maxCallsPerNumberPer24h calls to a number in any 24 h, across batches', () => {
  it('ASecondBatchsCallToTheSameNumberWaitsUntilTheFirstIs24HoursOld_AndTheSlotItemsSayWhy', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    expect(await tenant(fx, { maxCallsPerNumberPer24h: 1 })).toMatchObject({ maxCallsPerNumberPer24h: 1 });
    const first = await batch(fx, [NEW_YORK]);
    const start = fx.clock.now();
    const second = await batch(fx, [NEW_YORK, LOS_ANGELES]);
    await fx.settle(3_600_000);
    expect(fx.simulator.calls.map((c) => [c.batchId, c.contactNumber])).toEqual([
      [first, NEW_YORK],
      [second, LOS_ANGELES],
    ]);
    expect((await fx.contactViews(second)).get(NEW_YORK)).toMatchObject({ status: 'Queued', deferred: { until: new Date(start + CAP_WINDOW_MS).toISOString(), reason: 'cap' } });
    await fx.settle();
    const again = fx.simulator.calls.filter((c) => c.contactNumber === NEW_YORK);
    expect(again.map((c) => c.acceptedAt - start)).toEqual([0, CAP_WINDOW_MS]);
    const slots = await fx.clients.dynamo.send(new QueryCommand({ TableName: fx.tableNames.calls, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': capPartition('acme', NEW_YORK) } }));
    // One slot (the cap), claimed twice: the second claim found the first call 24 h old.
    expect(slots.Items!.map((s) => [s['sk'], s['at'] - start, s['batchId']])).toEqual([['SLOT#00', CAP_WINDOW_MS, second]]);
  });

  it('TwoBatchesDiallingOneNumberAtOnceAtTheCap_OneWins_TheOtherDefers_AndAConflictDialsNothing', async () => {
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
    fixtures.push(fx);
    await tenant(fx, { maxCallsPerNumberPer24h: 1 });
    const a = await batch(fx, [NEW_YORK]);
    const b = await batch(fx, [NEW_YORK]);
    // What DynamoDB answers when another transaction holds an item (DynamoDB Local serialises and never does):
    // the first dial transaction is refused with a conflict; nothing is written and the run sleeps briefly.
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let conflicts = 1;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand && conflicts-- > 0) {
        const reasons = command.input.TransactItems!.map((_, i) => ({ Code: i === 2 ? 'TransactionConflict' : 'None' }));
        return Promise.reject(new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: reasons }));
      }
      return (send as (...x: unknown[]) => unknown)(command, ...rest);
    };
    expect(await runByHand(fx, jobIds.dial(a, 1))).toBe('snoozed');
    expect(fx.simulator.calls).toEqual([]);
    expect((await fx.store.getBatch(a))!.dialPos).toBe(0);
    // Both dials read the number's one slot free; the claims race; one commits, the other is refused on the
    // slot (its reason returns the slot as stored) and defers the contact until the winner's call is 24 h old.
    const [ra, rb] = await Promise.all([runByHand(fx, jobIds.dial(a, 1)), runByHand(fx, jobIds.dial(b, 1))]);
    expect(fx.simulator.calls).toHaveLength(1);
    const winner = fx.simulator.calls[0]!.batchId;
    const loser = winner === a ? b : a;
    expect([ra, rb].sort()).toEqual(['completed', 'snoozed']);
    const stored = (await fx.store.getBatch(loser))!;
    expect(stored).toMatchObject({ status: 'InProgress', nDeferred: 1, nCalling: 0, dialPage: 1, dialPos: 0, dialComplete: false });
    const loserAt = Date.parse(String((await fx.jobs.store.mustGet(jobIds.dial(loser, 1))).scheduledAt));
    // It sleeps until the number frees: the winner's call (dialled at the clock's now) turns 24 h old.
    expect(loserAt - fx.clock.now()).toBe(CAP_WINDOW_MS);
  });

  it('APlacerThatRefusesTheCallStillSpendsTheSlot', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000, placerUrl: () => 'http://127.0.0.1:9/refuses' });
    fixtures.push(fx);
    await tenant(fx, { maxCallsPerNumberPer24h: 1 });
    const first = await batch(fx, [NEW_YORK]);
    await fx.settle(60_000);
    expect((await fx.contactViews(first)).get(NEW_YORK)).toMatchObject({ code: 'INTERNAL_ERROR', attempts: 1 });
    const second = await batch(fx, [NEW_YORK]);
    await fx.settle(60_000);
    expect((await fx.contactViews(second)).get(NEW_YORK)).toMatchObject({ status: 'Queued', deferred: { reason: 'cap' } });
  });
});

describe('suppression: checked inside the commit that claims the call', () => {
  it('ASuppressedNumberIsNeverDialled_ItsContactEndsSuppressedWithNoAttempt_AndTheBatchFinalises', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await tenant(fx);
    await suppress(fx, LOS_ANGELES);
    const batchId = await batch(fx, [NEW_YORK, LOS_ANGELES, '+14155550100']);
    await fx.settle();
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual([NEW_YORK, '+14155550100']);
    expect((await fx.contactViews(batchId)).get(LOS_ANGELES)).toMatchObject({ status: 'Suppressed', code: 'SUPPRESSED', attempts: 0 });
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byStatus: { Suppressed: 1, Completed: 2, Queued: 0 }, byCode: { COMPLETED: 2 } } });
  });

  it('ANumberSuppressedAfterTheDialReadEverythingButBeforeItCommits_IsNotCalled', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await tenant(fx);
    // The suppression lands between the dial's reads (its cap slots) and its transaction: only a check in
    // the transaction itself can see it.
    const capSlots = fx.deps.store.capSlots.bind(fx.deps.store);
    let landed = false;
    vi.spyOn(fx.deps.store, 'capSlots').mockImplementation(async (tenantId, numbers) => {
      const read = await capSlots(tenantId, numbers);
      if (!landed && numbers.includes(LOS_ANGELES)) {
        landed = true;
        await suppress(fx, LOS_ANGELES);
      }
      return read;
    });
    const batchId = await batch(fx, [NEW_YORK, LOS_ANGELES]);
    await fx.settle();
    expect(landed).toBe(true);
    expect(fx.simulator.calls.map((c) => c.contactNumber)).toEqual([NEW_YORK]);
    expect((await fx.contactViews(batchId)).get(LOS_ANGELES)).toMatchObject({ status: 'Suppressed', code: 'SUPPRESSED', attempts: 0 });
  });
});

describe('the round ends without the calls it never made', () => {
  it('ABatchWhoseEveryNumberIsSuppressedFinalisesWithNoCall', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await tenant(fx);
    await suppress(fx, NEW_YORK);
    await suppress(fx, LOS_ANGELES);
    const batchId = await batch(fx, [NEW_YORK, LOS_ANGELES], { maxAttempts: 3 });
    await fx.settle();
    expect(fx.simulator.calls).toEqual([]);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', round: 1, counts: { byStatus: { Suppressed: 2, Queued: 0, Calling: 0 } } });
  });

  it('ADeferredCallWhoseResultNeverComesIsEndedByItsGroupsWatchdog_AndRetriedInTheNextRound', async () => {
    const fx = await callsFixture({ start: MONDAY_1430Z, script: ({ round }) => (round === 1 ? 'lostWebhook' : 'completed'), resultDelayMs: () => 60_000, callTimeoutSeconds: 600 });
    fixtures.push(fx);
    await tenant(fx);
    const batchId = await batch(fx, [NEW_YORK, LOS_ANGELES], { maxAttempts: 2, callingWindow: { timezone: 'America/New_York', start: '09:00', end: '17:00' } });
    await fx.settle();
    const la = fx.simulator.calls.filter((c) => c.contactNumber === LOS_ANGELES);
    expect(la.map((c) => [c.round, new Date(c.acceptedAt).toISOString()])[0]).toEqual([1, '2026-01-05T17:00:00.000Z']);
    expect(la.map((c) => c.round)).toEqual([1, 2]);
    const attempts = (await fx.api('GET', `/v1/batches/${batchId}/contacts/${encodeURIComponent(LOS_ANGELES)}/attempts`)).body.attempts;
    expect(attempts.map((a: { round: number; code: string; source: string }) => [a.round, a.code, a.source])).toEqual([
      [1, 'TIMEOUT', 'watchdog'],
      [2, 'COMPLETED', 'webhook'],
    ]);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.status).toBe('Finalised');
  });
});

describe("the batch's own concurrency limit", () => {
  it('ABatchLimitedToTwoCallsNeverHasMoreThanTwoOut_UnderATenantLimitOfTen', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 60_000, noSlotSnoozeMs: 5_000 });
    fixtures.push(fx);
    await tenant(fx);
    const numbers = Array.from({ length: 6 }, (_, i) => `+1212555${String(100 + i).padStart(4, '0')}`);
    // A window that opens at 10:00Z (the fixture starts at 09:00Z), so nothing is dialled before the limit is set.
    const batchId = await batch(fx, numbers, { callingWindow: { timezone: 'Etc/UTC', start: '10:00', end: '17:00', perContact: false } });
    // (Until the PATCH route: the limit written as it stores it.)
    await fx.clients.dynamo.send(new UpdateCommand({ TableName: fx.tableNames.calls, Key: batchKey(batchId), UpdateExpression: 'SET maxConcurrentCalls = :m', ExpressionAttributeValues: { ':m': 2 } }));
    await fx.settle();
    const calls = fx.simulator.calls.map((c) => c.acceptedAt).sort((x, y) => x - y);
    expect(calls).toHaveLength(6);
    // Each call lasts a minute: at no instant were three out.
    for (const at of calls) expect(calls.filter((other) => other <= at && other + 60_000 > at).length).toBeLessThanOrEqual(2);
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 6 } } });
  });
});
