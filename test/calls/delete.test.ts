import { UpdateCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { batchKey, callIdFor, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

// The result of the contact's round-1 call at list position `pos` (the id the dialer derived and sent the placer).
const result = (batchId: string, contactNumber: string, pos: number) => ({
  batchId,
  contactNumber,
  callId: callIdFor(batchId, contactNumber, { round: 1, page: 0, pos }),
  code: 'COMPLETED',
  emptyTranscription: false,
  durationSeconds: 50,
});

describe('DELETE a batch: it stops, its results are ignored, its slots go back', () => {
  it('ReleasesTheSlotsOfItsCallsIgnoresTheirResultsAndStopsDialling', async () => {
    // Results come after an hour; watchdogs after two.
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, noSlotSnoozeMs: 60_000 });
    fixtures.push(fx);
    const doomed = numbers(6, '+3312345');
    const kept = numbers(2, '+3312346');
    const a = await fx.createBatch({ numbers: doomed, maxAttempts: 2, concurrencyLimit: 6 });
    await fx.quiesce();
    const b = await fx.createBatch({ numbers: kept, maxAttempts: 1, concurrencyLimit: 6 });
    await fx.quiesce();
    // Batch a took every slot: b's dialer waits.
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(6);
    expect(fx.simulator.calls.map((c) => c.batchId)).toEqual(Array(6).fill(a));

    const deleted = await fx.api('DELETE', `/v1/batches/${a}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ batchId: a, status: 'Deleted' });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);

    // A result for the deleted batch is ignored and changes nothing; DELETE again changes nothing either.
    const before = await fx.callsItems();
    expect(await fx.webhook(result(a, doomed[0]!, 0))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect((await fx.api('DELETE', `/v1/batches/${a}`)).body.status).toBe('Deleted');
    expect(await fx.callsItems()).toEqual(before);

    // Everything else runs out: a's results and watchdogs are ignored, b dials in the freed slots and ends.
    await fx.settle();
    expect((await fx.api('GET', `/v1/batches/${a}`)).body).toMatchObject({ status: 'Deleted', round: 1 });
    expect((await fx.api('GET', `/v1/batches/${b}`)).body).toMatchObject({ status: 'Finalised', counts: { byCode: { COMPLETED: 2 } } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    expect(fx.simulator.calls.filter((c) => c.batchId === a)).toHaveLength(6);
    const aResults = fx.simulator.calls.filter((c) => c.batchId === a).flatMap((c) => c.responses.map((r) => JSON.parse(r.body).outcome));
    expect(aResults.every((o) => o === 'ignored')).toBe(true);
    // No event, no finaliser for the deleted batch; its watchdogs ran and changed nothing.
    const events = await fx.allEvents();
    expect(events.filter((e) => e.data['batchId'] === a)).toEqual([]);
    expect(await fx.jobs.store.get(jobIds.finalise(a, 1))).toBeUndefined();
    expect((await fx.allJobs()).filter((j) => j.kind === 'calls.watchdog' && (j.args as { batchId: string }).batchId === a).map((j) => j.state)).toEqual(['completed']);
    // Its calls were not hung up: their contacts stay Calling in the deleted batch, with no completion written.
    expect([...(await fx.contactViews(a)).values()].map((c) => c.status)).toEqual(Array(6).fill('Calling'));
    expect(await fx.store.getContact(a, doomed[0]!)).toBeUndefined();
  });

  it('APendingDialerOfADeletedBatchDialsNothingMore', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 600_000, noSlotSnoozeMs: 30_000 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: numbers(5), maxAttempts: 1, concurrencyLimit: 2 });
    await fx.quiesce();
    expect(fx.simulator.calls).toHaveLength(2);
    expect((await fx.api('DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
    await fx.settle();
    expect(fx.simulator.calls).toHaveLength(2);
    expect((await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts.map((c: any) => c.status)).toEqual(['Calling', 'Calling', 'Queued', 'Queued', 'Queued']);
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    expect((await fx.jobs.store.mustGet(jobIds.dial(batchId, 1))).state).toBe('cancelled');
  });

  it('ADialThatLandsDuringTheDeleteMakesItAnswer503WithNothingWritten', async () => {
    const fx = await callsFixture({ script: () => 'completed', resultDelayMs: () => 600_000 });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: numbers(2), maxAttempts: 1 });
    await fx.quiesce();
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let raced = false;
    (fx.clients.dynamo as { send: unknown }).send = async (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand && !raced && JSON.stringify(command.input).includes('"Deleted"')) {
        raced = true;
        // Between DELETE's read and its write, a call's count changes (as a dial or a result would).
        await send(new UpdateCommand({ TableName: fx.tableNames.calls, Key: batchKey(batchId), UpdateExpression: 'SET nCalling = nCalling + :one', ExpressionAttributeValues: { ':one': 1 } }));
      }
      return (send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
    };
    const before = (await fx.callsItems()).filter((i) => i['sk'] !== 'BATCH');
    const response = await fx.api('DELETE', `/v1/batches/${batchId}`);
    expect(response.status).toBe(503);
    expect((await fx.store.getBatch(batchId))?.status).toBe('InProgress');
    expect((await fx.callsItems()).filter((i) => i['sk'] !== 'BATCH')).toEqual(before);
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(2);
  });
});
