import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_PAUSE_MS } from '../../../functions/calls/control/batch-control.ts';
import { contactKey, jobIds } from '../../../functions/calls/model.ts';
import { callsFixture, numbers, scriptByNumber } from '../../support/calls.ts';
import type { CallsFixture, CallsFixtureOptions } from '../../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function fixture(options: CallsFixtureOptions = {}): Promise<CallsFixture> {
  const fx = await callsFixture(options);
  fixtures.push(fx);
  return fx;
}

const batchOf = async (fx: CallsFixture, batchId: string) => (await fx.api('GET', `/v1/batches/${batchId}`)).body;
/** Calls the placer was asked for, of this batch. */
const callsOf = (fx: CallsFixture, batchId: string) => fx.simulator.calls.filter((c) => c.batchId === batchId);

/**
 * Rejects the next `count` TransactWriteItems whose request matches `match` as DynamoDB does when another
 * transaction held an item (DynamoDB Local never does), or runs `before` first and then sends it.
 */
function intercept(fx: CallsFixture, match: (json: string) => boolean, action: { conflict: true } | { before: () => Promise<void> }) {
  const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
  let armed = true;
  (fx.clients.dynamo as { send: unknown }).send = async (command: unknown, ...rest: unknown[]) => {
    if (armed && command instanceof TransactWriteCommand && match(JSON.stringify(command.input))) {
      armed = false;
      if ('conflict' in action) {
        const reasons = command.input.TransactItems!.map((_, i) => ({ Code: i === 0 ? 'TransactionConflict' : 'None' }));
        throw new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: reasons });
      }
      await action.before();
    }
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  };
}

describe('startAt: a Scheduled batch starts at its startAt, not before', () => {
  it('DialsNothingBeforeStartAtAndStartsExactlyThen', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const startAt = fx.clock.now() + 2 * HOUR;
    const batchId = await fx.createBatch({ numbers: numbers(3), maxAttempts: 1, startAt: new Date(startAt).toISOString() });
    expect(await batchOf(fx, batchId)).toMatchObject({ status: 'Scheduled', startAt: new Date(startAt).toISOString() });

    await fx.settle(2 * HOUR - 1);
    expect(callsOf(fx, batchId)).toEqual([]);
    expect((await batchOf(fx, batchId)).status).toBe('Scheduled');

    await fx.settle();
    const calls = callsOf(fx, batchId);
    expect(calls).toHaveLength(3);
    for (const call of calls) expect(Date.parse(call.placedAt!)).toBeGreaterThanOrEqual(startAt);
    expect(Math.min(...calls.map((c) => Date.parse(c.placedAt!)))).toBe(startAt);
    expect((await batchOf(fx, batchId)).status).toBe('Finalised');
  });

  it('RefusesAStartAtMoreThan30DaysAheadNamingTheField', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 5 });
    const tooFar = new Date(fx.clock.now() + 30 * DAY + 1000).toISOString();
    const refused = await fx.api('POST', '/v1/batches', { tenantId: 'acme', contacts: [{ number: numbers(1)[0] }], maxAttempts: 1, startAt: tooFar });
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toEqual([expect.objectContaining({ path: 'body.startAt' })]);
    const overLimit = await fx.api('POST', '/v1/batches', { tenantId: 'acme', contacts: [{ number: numbers(1)[0] }], maxAttempts: 1, maxConcurrentCalls: 6 });
    expect(overLimit.status).toBe(400);
    expect(overLimit.body.issues).toEqual([expect.objectContaining({ path: 'body.maxConcurrentCalls' })]);
    const stored = await fx.callsItems();
    expect(stored.filter((i) => i['sk'] === 'BATCH')).toEqual([]);
  });

  it('ACsvBatchTakesTheControlSettingsAsQueryParameters', async () => {
    const fx = await fixture();
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 4 });
    const key = await fx.keyOf('acme');
    const post = (query: Record<string, string>) =>
      fetch(`${fx.url}/v1/batches/csv?${new URLSearchParams({ maxAttempts: '2', ...query }).toString()}`, {
        method: 'POST',
        headers: { 'content-type': 'text/csv; charset=utf-8', authorization: `Bearer ${key}` },
        body: `number\r\n${numbers(2).join('\r\n')}\r\n`,
      }).then(async (r) => ({ status: r.status, body: JSON.parse(await r.text()) }));
    const startAt = new Date(fx.clock.now() + HOUR).toISOString();
    const created = await post({ startAt, maxConcurrentCalls: '3', retryOn: 'NO_PICKUP,TIMEOUT' });
    expect(created.status).toBe(201);
    expect(await batchOf(fx, created.body.batchId)).toMatchObject({ status: 'Scheduled', startAt, maxConcurrentCalls: 3, retryOn: ['NO_PICKUP', 'TIMEOUT'] });
    const over = await post({ maxConcurrentCalls: '5' });
    expect(over.status).toBe(400);
    expect(over.body.issues).toEqual([expect.objectContaining({ path: 'query.maxConcurrentCalls' })]);
  });

  it('ADeletedScheduledBatchIsNotStartedByItsStartJob', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, startAt: new Date(fx.clock.now() + HOUR).toISOString() });
    expect((await fx.api('DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
    await fx.settle();
    expect(callsOf(fx, batchId)).toEqual([]);
    expect((await batchOf(fx, batchId)).status).toBe('Deleted');
    const start = await fx.jobs.store.get(jobIds.start(batchId, 1));
    expect(start?.state).toBe('cancelled');
  });
});

describe('pause and resume', () => {
  it('APauseStopsNewDialsLetsCallsInFlightFinishAndResumeWakesTheDialer', async () => {
    // One slot: one call at a time, each taking a minute.
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    const batchId = await fx.createBatch({ numbers: numbers(4), maxAttempts: 1, concurrencyLimit: 1 });
    await fx.quiesce();
    expect(callsOf(fx, batchId)).toHaveLength(1);

    const paused = await fx.api('POST', `/v1/batches/${batchId}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'Paused', pausedFrom: 'InProgress' });

    // A day passes: the call in flight ends and its result applies; nothing more is dialled.
    await fx.settle(DAY);
    expect(callsOf(fx, batchId)).toHaveLength(1);
    const during = await batchOf(fx, batchId);
    expect(during).toMatchObject({ status: 'Paused', counts: { byStatus: { Completed: 1, Calling: 0, Queued: 3 } } });
    const stored = await fx.store.getBatch(batchId);
    expect({ dialPage: stored!.dialPage, dialPos: stored!.dialPos }).toEqual({ dialPage: 0, dialPos: 1 });

    const resumed = await fx.api('POST', `/v1/batches/${batchId}/resume`);
    expect(resumed.body).toMatchObject({ status: 'InProgress', pausedFrom: null });
    await fx.settle();
    expect(callsOf(fx, batchId).map((c) => c.contactNumber)).toEqual(numbers(4));
    expect(await batchOf(fx, batchId)).toMatchObject({ status: 'Finalised', counts: { byStatus: { Completed: 4 } } });
  });

  it('PauseAndResumeAreIdempotentAnd409OnAFinishedBatch', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, startAt: new Date(fx.clock.now() + HOUR).toISOString() });
    const first = await fx.api('POST', `/v1/batches/${batchId}/pause`);
    fx.clock.set(fx.clock.now() + 1000);
    const again = await fx.api('POST', `/v1/batches/${batchId}/pause`);
    expect(first.body).toMatchObject({ status: 'Paused', pausedFrom: 'Scheduled' });
    expect(again.body).toEqual(first.body);
    // Only one pause: one expiry job.
    expect((await fx.allJobs()).filter((j) => j.kind === 'calls.pause_expiry')).toHaveLength(1);

    // Its start passes while it is paused: resume takes it to Pending, and it dials.
    await fx.settle(2 * HOUR);
    expect(callsOf(fx, batchId)).toEqual([]);
    expect((await batchOf(fx, batchId)).pausedFrom).toBe('Pending');
    const resumed = await fx.api('POST', `/v1/batches/${batchId}/resume`);
    expect(resumed.body.status).toBe('Pending');
    const resumedAgain = await fx.api('POST', `/v1/batches/${batchId}/resume`);
    expect(resumedAgain.status).toBe(200);
    await fx.settle();
    expect(callsOf(fx, batchId)).toHaveLength(2);
    expect((await batchOf(fx, batchId)).status).toBe('Finalised');

    for (const action of ['pause', 'resume']) {
      const refused = await fx.api('POST', `/v1/batches/${batchId}/${action}`);
      expect(refused.status, action).toBe(409);
    }
    expect((await fx.api('DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).status).toBe(409);
  });

  it('APausedBatchWhoseContactsAllEndFinalisesAndResumeIsThen409', async () => {
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, concurrencyLimit: 2 });
    await fx.quiesce();
    expect(callsOf(fx, batchId)).toHaveLength(2);
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).body.status).toBe('Paused');
    await fx.settle(DAY);
    const batch = await batchOf(fx, batchId);
    expect(batch).toMatchObject({ status: 'Finalised', pausedFrom: null, counts: { byStatus: { Completed: 2 } } });
    expect((await fx.allEvents()).filter((e) => e.type === 'batch.finalised')).toHaveLength(1);
    expect((await fx.api('POST', `/v1/batches/${batchId}/resume`)).status).toBe(409);
  });

  it('ARoundWhoseBackoffEndsWhilePausedWaitsForTheResume', async () => {
    const fx = await fixture({ script: ({ round }) => (round === 1 ? 'noPickup' : 'completed'), resultDelayMs: () => 60_000 });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 2, concurrencyLimit: 2, retry: { baseSeconds: 600, capSeconds: 600 } });
    await fx.quiesce();
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).body.status).toBe('Paused');
    // Round 1's results come, the round re-arms (round 2 due 10 minutes on), and the backoff ends while paused.
    await fx.settle(5 * DAY);
    expect(await batchOf(fx, batchId)).toMatchObject({ status: 'Paused', round: 2, pausedFrom: 'InProgress' });
    expect(callsOf(fx, batchId).filter((c) => c.round === 2)).toEqual([]);
    const resumedAt = fx.clock.now();
    expect((await fx.api('POST', `/v1/batches/${batchId}/resume`)).body.status).toBe('InProgress');
    await fx.settle();
    const round2 = callsOf(fx, batchId).filter((c) => c.round === 2);
    expect(round2).toHaveLength(2);
    for (const call of round2) expect(Date.parse(call.placedAt!)).toBeGreaterThanOrEqual(resumedAt);
    expect((await batchOf(fx, batchId)).status).toBe('Finalised');
    // One dialer dialled round 2: the round's own (completed, finding the batch paused) and the resume's wake.
    const dials = (await fx.allJobs()).filter((j) => j.kind === 'calls.dial' && (j.args as { round: number }).round === 2);
    expect(dials.map((j) => j.id).sort()).toEqual([jobIds.dial(batchId, 2), jobIds.dialWake(batchId, 2, 1)].sort());
  });

  it('APauseOf30DaysCancelsTheBatchWithBatchCancelledUnlessItWasResumed', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const kept = await fx.createBatch({ numbers: numbers(1, '+1415666'), maxAttempts: 1, startAt: new Date(fx.clock.now() + 10 * DAY).toISOString() });
    const cancelled = await fx.createBatch({ numbers: numbers(1), maxAttempts: 1, startAt: new Date(fx.clock.now() + DAY).toISOString() });
    const pausedAt = fx.clock.now();
    await fx.api('POST', `/v1/batches/${cancelled}/pause`);
    await fx.api('POST', `/v1/batches/${kept}/pause`);
    // (settle stops at the last timer within its reach; the clock is moved on by hand to the times that matter.)
    await fx.settle(20 * DAY);
    fx.clock.set(pausedAt + 20 * DAY);
    await fx.api('POST', `/v1/batches/${kept}/resume`);
    await fx.settle(DAY);
    fx.clock.set(pausedAt + MAX_PAUSE_MS - 1);
    await fx.settle(0);
    expect((await batchOf(fx, cancelled)).status).toBe('Paused');
    fx.clock.set(pausedAt + MAX_PAUSE_MS);
    await fx.settle(DAY);
    expect(await batchOf(fx, cancelled)).toMatchObject({ status: 'Cancelled', pausedFrom: null });
    const events = (await fx.allEvents()).filter((e) => e.type === 'batch.cancelled');
    expect(events.map((e) => e.data['batchId'])).toEqual([cancelled]);
    expect(Date.parse(events[0]!.timestamp)).toBe(pausedAt + MAX_PAUSE_MS);
    expect(callsOf(fx, cancelled)).toEqual([]);
    expect((await batchOf(fx, kept)).status).toBe('Finalised');
    expect((await fx.api('POST', `/v1/batches/${cancelled}/resume`)).status).toBe(409);
  });
});

describe('PATCH /v1/batches/{id}', () => {
  it('ReschedulesAScheduledBatchTheOldStartDoesNothing', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, startAt: new Date(fx.clock.now() + HOUR).toISOString() });
    const later = fx.clock.now() + 5 * HOUR;
    const patched = await fx.api('PATCH', `/v1/batches/${batchId}`, { startAt: new Date(later).toISOString(), maxConcurrentCalls: 3 });
    expect(patched.body).toMatchObject({ status: 'Scheduled', startAt: new Date(later).toISOString(), maxConcurrentCalls: 3 });
    await fx.settle(5 * HOUR - 1);
    expect(callsOf(fx, batchId)).toEqual([]);
    expect((await fx.jobs.store.get(jobIds.start(batchId, 1)))?.state).toBe('completed');
    await fx.settle();
    expect(Math.min(...callsOf(fx, batchId).map((c) => Date.parse(c.placedAt!)))).toBe(later);

    // Started: a new startAt is a 409; finished, any PATCH is.
    expect((await fx.api('PATCH', `/v1/batches/${batchId}`, { maxConcurrentCalls: 2 })).status).toBe(409);
  });

  it('BringsAStartForwardAndRefusesOutOfRangeFields', async () => {
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 600_000 });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, concurrencyLimit: 4, startAt: new Date(fx.clock.now() + DAY).toISOString() });
    const over = await fx.api('PATCH', `/v1/batches/${batchId}`, { maxConcurrentCalls: 5 });
    expect(over.status).toBe(400);
    expect(over.body.issues).toEqual([expect.objectContaining({ path: 'body.maxConcurrentCalls' })]);
    const far = await fx.api('PATCH', `/v1/batches/${batchId}`, { startAt: new Date(fx.clock.now() + 31 * DAY).toISOString() });
    expect(far.body.issues).toEqual([expect.objectContaining({ path: 'body.startAt' })]);
    expect((await fx.api('PATCH', `/v1/batches/${batchId}`, {})).status).toBe(400);

    const now = fx.clock.now();
    expect((await fx.api('PATCH', `/v1/batches/${batchId}`, { startAt: new Date(now).toISOString() })).body.status).toBe('Pending');
    await fx.quiesce();
    expect(callsOf(fx, batchId).map((c) => Date.parse(c.placedAt!))).toEqual([now, now]);
    const started = await fx.api('PATCH', `/v1/batches/${batchId}`, { startAt: new Date(now + HOUR).toISOString() });
    expect(started.status).toBe(409);
  });

  it('ANewStartForAPausedBatchMovesWhereResumeReturnsIt', async () => {
    const fx = await fixture({ script: () => 'completed' });
    const created = fx.clock.now();
    const batchId = await fx.createBatch({ numbers: numbers(1), maxAttempts: 1, startAt: new Date(created + HOUR).toISOString() });
    await fx.api('POST', `/v1/batches/${batchId}/pause`);
    const later = new Date(created + 3 * HOUR).toISOString();
    expect((await fx.api('PATCH', `/v1/batches/${batchId}`, { startAt: later })).body).toMatchObject({ status: 'Paused', pausedFrom: 'Scheduled', startAt: later });
    // The first start finds another schedule: nothing; the second, paused, moves pausedFrom only.
    await fx.settle(2 * HOUR);
    expect(await batchOf(fx, batchId)).toMatchObject({ status: 'Paused', pausedFrom: 'Scheduled' });
    fx.clock.set(created + 3 * HOUR);
    await fx.settle(0);
    expect(await batchOf(fx, batchId)).toMatchObject({ status: 'Paused', pausedFrom: 'Pending' });
    expect(callsOf(fx, batchId)).toEqual([]);
    expect((await fx.api('POST', `/v1/batches/${batchId}/resume`)).body.status).toBe('Pending');
    await fx.settle();
    expect(callsOf(fx, batchId)).toHaveLength(1);
  });

  it('ANewCallingWindowWakesADialerAsleepUntilTheOldOneOpened', async () => {
    // Monday 09:00 UTC: a window of 20:00–21:00 UTC is closed; one of 08:00–18:00 is open.
    const fx = await fixture({ script: () => 'completed' });
    const closed = { timezone: 'UTC', weekdays: [1, 2, 3, 4, 5], start: '20:00', end: '21:00', perContact: false };
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, callingWindow: closed });
    await fx.quiesce();
    expect(callsOf(fx, batchId)).toEqual([]);
    const now = fx.clock.now();
    const patched = await fx.api('PATCH', `/v1/batches/${batchId}`, { callingWindow: { ...closed, start: '08:00', end: '18:00' } });
    expect(patched.status).toBe(200);
    await fx.quiesce();
    expect(callsOf(fx, batchId).map((c) => Date.parse(c.placedAt!))).toEqual([now, now]);
    await fx.settle();
    // The old dialer, asleep until 20:00, was asked to stop: only the wake dialled.
    expect((await fx.jobs.store.get(jobIds.dial(batchId, 1)))?.state).toBe('cancelled');
    expect(callsOf(fx, batchId)).toHaveLength(2);
  });
});

describe('retryOn', () => {
  it('TheBatchsRetryOnDecidesTheRetryableAnswerAndThePromotion', async () => {
    const fx = await fixture({ script: () => 'noPickup' });
    const narrow = await fx.createBatch({ numbers: numbers(2), maxAttempts: 2, retryOn: ['TIMEOUT'] });
    const wide = await fx.createBatch({ numbers: numbers(2, '+1415666'), maxAttempts: 2 });
    await fx.settle();
    expect(await batchOf(fx, narrow)).toMatchObject({ status: 'Finalised', round: 1, retryOn: ['TIMEOUT'] });
    expect(callsOf(fx, narrow).map((c) => c.round)).toEqual([1, 1]);
    const attempts = await fx.api('GET', `/v1/batches/${narrow}/contacts/${encodeURIComponent(numbers(2)[0]!)}/attempts`);
    expect(attempts.body.attempts).toEqual([expect.objectContaining({ code: 'NO_PICKUP', retryable: false })]);

    expect(await batchOf(fx, wide)).toMatchObject({ status: 'Finalised', round: 2 });
    expect(callsOf(fx, wide).map((c) => c.round)).toEqual([1, 1, 2, 2]);
    const wideAttempts = await fx.api('GET', `/v1/batches/${wide}/contacts/${encodeURIComponent(numbers(2, '+1415666')[0]!)}/attempts`);
    expect(wideAttempts.body.attempts[0]).toMatchObject({ code: 'NO_PICKUP', retryable: true });

    const refused = await fx.api('POST', '/v1/batches', { tenantId: 'acme', contacts: [{ number: numbers(1)[0] }], maxAttempts: 2, retryOn: ['NO_PICKUP', 'COMPLETED'] });
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toEqual([expect.objectContaining({ path: 'body.retryOn.1' })]);
  });
});

describe('rerun', () => {
  it('ANewBatchOfTheContactsWithTheCodesTheirDataCarriedNeverASuppressedOne', async () => {
    const all = numbers(4);
    const fx = await fixture({ script: scriptByNumber({ [all[0]!]: ['noPickup'], [all[1]!]: ['completed'], [all[2]!]: ['noPickup'] }, 'completed') });
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 5 });
    const created = await fx.api('POST', '/v1/batches', {
      tenantId: 'acme',
      maxAttempts: 1,
      maxConcurrentCalls: 2,
      contacts: all.map((number, i) => ({ number, externalId: `x${i}`, variables: { name: `n${i}` } })),
    });
    const parentId = created.body.batchId as string;
    expect((await fx.api('POST', `/v1/batches/${parentId}/rerun`, {})).status).toBe(409); // not finished yet
    await fx.settle();
    expect((await batchOf(fx, parentId)).status).toBe('Finalised');
    // The fourth contact ended suppressed (the compliance outcome): never re-run, whatever the codes.
    await fx.clients.dynamo.send(
      new PutCommand({
        TableName: fx.tableNames.calls,
        Item: { ...(await fx.store.getContact(parentId, all[3]!)), ...contactKey(parentId, all[3]!), code: 'SUPPRESSED', retryable: false },
      }),
    );

    const rerun = await fx.api('POST', `/v1/batches/${parentId}/rerun`, {}, { 'idempotency-key': 'rerun-1' });
    expect(rerun.status).toBe(201);
    const childId = rerun.body.batchId as string;
    expect(await fx.api('POST', `/v1/batches/${parentId}/rerun`, {}, { 'idempotency-key': 'rerun-1' })).toEqual({ status: 200, body: { batchId: childId } });
    expect((await fx.api('POST', `/v1/batches/${parentId}/rerun`, { codes: ['COMPLETED'] }, { 'idempotency-key': 'rerun-1' })).status).toBe(422);

    const child = await batchOf(fx, childId);
    expect(child).toMatchObject({ parentBatchId: parentId, maxAttempts: 1, maxConcurrentCalls: 2, startAt: null, contactCount: 2 });
    const contacts = (await fx.api('GET', `/v1/batches/${childId}/contacts`)).body.contacts;
    expect(contacts.map((c: { contactNumber: string; externalId: string; variables: unknown }) => [c.contactNumber, c.externalId, c.variables])).toEqual([
      [all[0], 'x0', { name: 'n0' }],
      [all[2], 'x2', { name: 'n2' }],
    ]);
    await fx.settle();
    expect(callsOf(fx, childId).map((c) => [c.contactNumber, c.externalId])).toEqual([
      [all[0], 'x0'],
      [all[2], 'x2'],
    ]);

    const completed = await fx.api('POST', `/v1/batches/${parentId}/rerun`, { codes: ['COMPLETED', 'SUPPRESSED'] });
    expect((await batchOf(fx, completed.body.batchId)).contactCount).toBe(1);
    expect((await fx.api('GET', `/v1/batches/${completed.body.batchId}/contacts`)).body.contacts.map((c: { contactNumber: string }) => c.contactNumber)).toEqual([all[1]]);
  });
});

describe('races: pause against dial', () => {
  it('ADialThatCommitsAfterThePauseIsRefusedAndPlacesNoCall', async () => {
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 60_000, dialGroup: 1 });
    const batchId = await fx.createBatch({ numbers: numbers(3), maxAttempts: 1, concurrencyLimit: 3 });
    let dials = 0;
    // The run's second dial is about to be sent: the pause commits first.
    intercept(fx, (json) => json.includes('"dialPos"') && json.includes('openWatchdog') && ++dials === 2, {
      before: async () => {
        const paused = await fx.api('POST', `/v1/batches/${batchId}/pause`);
        expect(paused.body.status).toBe('Paused');
      },
    });
    await fx.settle(DAY);
    expect(callsOf(fx, batchId)).toHaveLength(1);
    const stored = await fx.store.getBatch(batchId);
    expect(stored).toMatchObject({ status: 'Paused', dialPos: 1, nCalling: 0, nCompleted: 1 });
    expect((await fx.jobs.store.get(jobIds.dial(batchId, 1)))?.state).toBe('completed');

    await fx.api('POST', `/v1/batches/${batchId}/resume`);
    await fx.settle();
    expect(callsOf(fx, batchId).map((c) => c.contactNumber)).toEqual(numbers(3));
  });

  it('AResumeThatMeetsAConflictWakesNoDialerAndWritesNothing', async () => {
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, concurrencyLimit: 1 });
    await fx.quiesce();
    await fx.api('POST', `/v1/batches/${batchId}/pause`);
    await fx.settle(DAY);
    intercept(fx, (json) => json.includes('dialWakes'), { conflict: true });
    const before = await fx.store.getBatch(batchId);
    expect((await fx.api('POST', `/v1/batches/${batchId}/resume`)).status).toBe(503);
    expect(await fx.store.getBatch(batchId)).toEqual(before);
    expect(await fx.jobs.store.get(jobIds.dialWake(batchId, 1, 1))).toBeUndefined();
    expect((await fx.api('POST', `/v1/batches/${batchId}/resume`)).body.status).toBe('InProgress');
    await fx.settle();
    expect(callsOf(fx, batchId)).toHaveLength(2);
  });

  it('APauseThatMeetsAConflictWritesNothingAnd503sThenPausesOnTheNextAsk', async () => {
    const fx = await fixture({ script: () => 'completed', resultDelayMs: () => 60_000 });
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1, concurrencyLimit: 1 });
    await fx.quiesce();
    intercept(fx, (json) => json.includes('pausedFrom'), { conflict: true });
    const before = await fx.store.getBatch(batchId);
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).status).toBe(503);
    expect(await fx.store.getBatch(batchId)).toEqual(before);
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).body.status).toBe('Paused');
    await fx.settle(DAY);
    expect(callsOf(fx, batchId)).toHaveLength(1);
  });
});
