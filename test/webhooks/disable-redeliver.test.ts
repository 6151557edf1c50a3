import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { deliveryJobId, endpointKey } from '../../functions/webhooks/endpoint.ts';
import { watchValue } from '../../functions/webhooks/store.ts';
import { EndpointDisabledError } from '../../functions/webhooks/errors.ts';
import { DISABLE_AFTER_MS } from '../../functions/webhooks/lease.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import type { Answer } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const minutes = 60_000;

/**
 * An endpoint answering `answer`, and `n` deliveries to it enqueued as jobs, a millisecond apart (as
 * deliveries published before any took the lease are: publish.ts).
 */
async function setup(answer: Answer, n: number) {
  const receiver = await Receiver.start([answer]);
  const fx = await webhooksFixture();
  closers.push(() => receiver.close(), fx.close);
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
  const ids: string[] = [];
  const eventIds: string[] = [];
  for (let i = 0; i < n; i++) {
    fx.clock.advance(1);
    const { event, id } = await fx.enqueueDelivery('t', endpointId, { i });
    ids.push(id);
    eventIds.push(event.id);
  }
  return { receiver, fx, endpointId, ids, eventIds };
}

describe('the 5-day rule, 410, enable and redeliver (manual clock)', () => {
  it('AnEndpointStillFailingFiveDaysAfterFailingSince_IsDisabledByItsProbe_AndEveryWaitingDeliveryIsDiscarded', async () => {
    const { receiver, fx, endpointId, ids } = await setup({ status: 500 }, 4);
    const [probe, ...waiting] = ids as [string, ...string[]];
    const failingFrom = fx.clock.now();
    expect((await fx.run(probe)).result).toBe('retryable');
    for (const id of waiting) expect((await fx.run(id)).result).toBe('snoozed');
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).failingSince).toBe(new Date(failingFrom).toISOString());

    // Just short of five days the probe's failure is an ordinary failure.
    fx.clock.set(failingFrom + DISABLE_AFTER_MS - minutes);
    expect((await fx.runWhenDue(probe)).result).toBe('retryable');
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).disabled).toBe(false);

    // The probe role has passed to the oldest waiting delivery, armed for one cooldown later: its failure
    // comes after the five days are up.
    await fx.drain(10 * minutes);
    const endpoint = await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId);
    expect(endpoint).toMatchObject({ disabled: true, disabledReason: 'failing', failingSince: new Date(failingFrom).toISOString() });
    const rows = await Promise.all(ids.map((id) => fx.job(id)));
    expect(rows.map((r) => [r.state, r.discardReason])).toEqual(ids.map(() => ['discarded', 'endpoint_disabled']));
    // Three requests in five days: the first delivery twice, then the next probe, past the limit. The
    // other two never reached the endpoint.
    expect(receiver.requests).toHaveLength(3);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(2);
    expect(rows.filter((r) => r.attempts.some((a) => a.outcome === 'retryable'))).toHaveLength(1);
    expect(fx.metrics.total('WebhookEndpointDisabled', { reason: 'failing' })).toBe(1);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('AnEndpointStillFailingFiveDaysOn_DiscardsTheDeliveriesWaitingWithNoJobAsJobs_EndpointDisabled_AndRedeliverBringsThemBack', async () => {
    const receiver = await Receiver.start([{ status: 500 }]);
    const fx = await webhooksFixture();
    closers.push(() => receiver.close(), fx.close);
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
    // Published: the first is a job (the lease is taken for it), the other three wait in the list with no job.
    const events = [];
    for (let i = 0; i < 4; i++) {
      fx.clock.advance(1);
      events.push(await fx.recordEvent('t', 'call.completed', { i }));
    }
    const [probe, ...waiting] = events.map((e) => deliveryJobId(e.id, endpointId)) as [string, ...string[]];
    for (const id of waiting) await expect(fx.job(id)).rejects.toThrow(/not found/);
    const failingFrom = fx.clock.now();
    expect((await fx.run(probe)).result).toBe('retryable');
    // Five days of probes later the endpoint is disabled; what still waits is discarded, each a job of its own.
    fx.clock.set(failingFrom + DISABLE_AFTER_MS - minutes);
    await fx.drain(10 * minutes);
    expect(await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: true, disabledReason: 'failing' });
    const rows = await Promise.all([probe, ...waiting].map((id) => fx.job(id)));
    expect(rows.every((r) => r.state === 'discarded')).toBe(true);
    expect(new Set(rows.map((r) => r.discardReason))).toEqual(new Set(['endpoint_disabled']));
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
    expect((await fx.webhooks.deps.store.discardMarkers(endpointId)).markers).toHaveLength(4);
    // Back up: enabled and redelivered, each arrives once.
    receiver.reply([{ status: 200 }]);
    await fx.webhooks.endpoints.enable(ownerOf(endpointId), endpointId);
    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 4 });
    await fx.drain(minutes);
    expect((await Promise.all([probe, ...waiting].map((id) => fx.job(id)))).every((r) => r.state === 'completed')).toBe(true);
    const ok = receiver.requests.filter((_, i) => receiver.requests.length - i <= 4).map((r) => r.headers['webhook-id']);
    expect(ok.sort()).toEqual(events.map((e) => e.id).sort());
  });

  it('TheSweepDisablesAnEndpointFailingForFiveDays_EvenWhenNoDeliveryRuns', async () => {
    const { fx, endpointId, ids } = await setup({ status: 400 }, 1);
    const failingFrom = fx.clock.now();
    expect((await fx.run(ids[0]!)).result).toBe('discarded');
    fx.clock.set(failingFrom + DISABLE_AFTER_MS - minutes);
    expect((await fx.webhooks.sweep(fx.clock.now())).disabled).toBe(0);
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).disabled).toBe(false);
    fx.clock.set(failingFrom + DISABLE_AFTER_MS);
    expect((await fx.webhooks.sweep(fx.clock.now())).disabled).toBe(1);
    expect(await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: true, disabledReason: 'failing' });
  });

  it('TheSweepFindsFailingEndpointsInEveryByWatchShard_AndOnesStillCarryingTheUnshardedValue', async () => {
    const receiver = await Receiver.start([{ status: 400 }]);
    const fx = await webhooksFixture();
    closers.push(() => receiver.close(), fx.close);
    const endpoints: string[] = [];
    for (let i = 0; i < 24; i++) endpoints.push((await fx.webhooks.endpoints.register(operatorScope(`t${i}`), { url: receiver.url() })).endpointId);
    const failingFrom = fx.clock.now();
    for (const [i, endpointId] of endpoints.entries()) {
      const event = await fx.recordEvent(`t${i}`, 'call.completed', { i });
      expect((await fx.run(deliveryJobId(event.id, endpointId))).result).toBe('discarded');
    }
    // Failing endpoints spread over the shards: more than one partition of the index holds them.
    const shards = new Set(endpoints.map((id) => watchValue(id)));
    expect(shards.size).toBeGreaterThan(4);
    for (const id of endpoints) expect((await fx.webhooks.deps.store.getEndpoint(id))?.watch).toBe(watchValue(id));
    // A row written before the index was sharded carries the one old value; the sweep still reads it.
    await fx.clients.dynamo.send(new UpdateCommand({ TableName: fx.tableNames.webhooks, Key: endpointKey(endpoints[0]!), UpdateExpression: 'SET #w = :w', ExpressionAttributeNames: { '#w': 'watch' }, ExpressionAttributeValues: { ':w': 'endpoint' } }));
    fx.clock.set(failingFrom + DISABLE_AFTER_MS);
    expect(await fx.webhooks.sweep(fx.clock.now())).toMatchObject({ looked: 24, disabled: 24 });
    for (const id of endpoints) expect(await fx.webhooks.endpoints.get(ownerOf(id), id), id).toMatchObject({ disabled: true, disabledReason: 'failing' });
    // Disabled and idle, each left the index, the one that carried the old value too.
    for (const id of endpoints) expect((await fx.webhooks.deps.store.getEndpoint(id))?.watch, id).toBeUndefined();
  });

  it('TheSweepsThresholdIsFiveDaysOf24Hours_432000000MsAfterFailingSince_NotAMillisecondSooner', async () => {
    const { fx, endpointId, ids } = await setup({ status: 400 }, 1);
    const failingFrom = fx.clock.now();
    expect((await fx.run(ids[0]!)).result).toBe('discarded');
    fx.clock.set(failingFrom + 432_000_000 - 1);
    expect((await fx.webhooks.sweep(fx.clock.now())).disabled).toBe(0);
    fx.clock.set(failingFrom + 432_000_000);
    expect((await fx.webhooks.sweep(fx.clock.now())).disabled).toBe(1);
    expect(await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: true, disabledReason: 'failing' });
  });

  it('TheSweepKindRunsAsAPeriodicJob_EnqueuedByTheRescuer', async () => {
    const { fx, endpointId, ids } = await setup({ status: 400 }, 1);
    await fx.run(ids[0]!);
    fx.clock.advance(DISABLE_AFTER_MS);
    const report = await fx.jobs.rescuer(fx.handlers, 60_000).run();
    expect(report.periodic).toBe(1);
    const sweeps = await fx.jobs.client.list({ kind: 'webhook.sweep' });
    expect(sweeps.jobs).toHaveLength(1);
    expect((await fx.run(sweeps.jobs[0]!.id)).result).toBe('completed');
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).disabled).toBe(true);
  });

  it('A410DisablesTheEndpoint_DiscardsItsWaitingDeliveriesWithoutSendingThem_AndNewEventsAreNotFannedOutToIt', async () => {
    const { receiver, fx, endpointId, ids } = await setup({ status: 410 }, 3);
    const [gone, ...waiting] = ids as [string, ...string[]];
    await fx.webhooks.deps.store.acquire(endpointId, gone, fx.clock.now(), fx.clock.now() + 60_000);
    for (const id of waiting) expect((await fx.run(id)).result).toBe('snoozed');
    expect((await fx.run(gone)).result).toBe('discarded');
    expect((await fx.job(gone)).discardReason).toBe('gone');
    expect(await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: true, disabledReason: 'gone' });
    await fx.drain(minutes);
    // Each waiting delivery ran once more, to be discarded, and sent nothing.
    for (const id of waiting) expect(await fx.job(id)).toMatchObject({ state: 'discarded', discardReason: 'endpoint_disabled', attempt: 1 });
    expect(receiver.requests).toHaveLength(1);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);

    const later = await fx.recordEvent('t');
    await expect(fx.job(deliveryJobId(later.id, endpointId))).rejects.toThrow(/not found/);
  });

  it('EnableThenRedeliver_BringsEveryDiscardedDeliveryBack_AndEachArrivesOnce', async () => {
    const { receiver, fx, endpointId, ids } = await setup({ status: 410 }, 3);
    const [first, ...rest] = ids as [string, ...string[]];
    expect((await fx.run(first)).result).toBe('discarded');
    for (const id of rest) expect((await fx.run(id)).result).toBe('discarded');
    expect((await Promise.all(ids.map((id) => fx.job(id)))).map((r) => r.discardReason)).toEqual(['gone', 'endpoint_disabled', 'endpoint_disabled']);

    await expect(fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).rejects.toBeInstanceOf(EndpointDisabledError);
    receiver.reply([{ status: 200 }]);
    expect(await fx.webhooks.endpoints.enable(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: false, disabledReason: null, failingSince: null });
    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 3 });
    await fx.drain(minutes);
    const rows = await Promise.all(ids.map((id) => fx.job(id)));
    expect(rows.every((r) => r.state === 'completed')).toBe(true);
    const delivered = receiver.requests.filter((_, i) => i >= 1).map((r) => r.headers['webhook-id']);
    expect(delivered.sort()).toEqual(rows.map((r) => (r.args as { eventId: string }).eventId).sort());
    // Nothing is left to redeliver.
    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 0 });
  });

  it('ADeliveryLostBetweenItsDiscardMarkerAndItsDiscard_LosesNothing_TheRescuerRunsItAgainAndRedeliverFindsIt', async () => {
    const { receiver, fx, endpointId, ids } = await setup({ status: 410 }, 1);
    const [gone] = ids as [string];
    // The worker dies between the discard hook's marker and the discard itself: the discard write never lands.
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let lost = 0;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof UpdateCommand && command.input.TableName === fx.tableNames.jobs && JSON.stringify(command.input).includes('"discardReason"') && lost++ === 0) {
        return Promise.reject(Object.assign(new Error('connection reset (injected)'), { name: 'TimeoutError', $metadata: {} }));
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    await expect(fx.run(gone)).rejects.toThrow(/injected/);
    expect(await fx.job(gone)).toMatchObject({ state: 'running', attempt: 1 });
    expect((await fx.webhooks.deps.store.discardMarkers(endpointId)).markers.map((m) => [m.jobId, m.reason])).toEqual([[gone, 'gone']]);
    // The marker of a delivery that is not (yet) discarded is kept, and nothing is requeued.
    await fx.webhooks.endpoints.enable(ownerOf(endpointId), endpointId);
    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 0 });
    expect((await fx.webhooks.deps.store.discardMarkers(endpointId)).markers).toHaveLength(1);

    // Its lease runs out: the rescuer counts the attempt lost and runs it again; the endpoint still answers 410.
    fx.clock.advance(10 * minutes);
    expect((await fx.jobs.rescuer(fx.handlers, 60_000).run()).expired).toBe(1);
    expect((await fx.runWhenDue(gone)).result).toBe('discarded');
    expect(await fx.job(gone)).toMatchObject({ state: 'discarded', discardReason: 'gone', attempt: 2 });
    expect((await fx.webhooks.deps.store.discardMarkers(endpointId)).markers.map((m) => m.jobId)).toEqual([gone]);

    // Once the endpoint is back, redeliver finds it and it arrives.
    receiver.reply([{ status: 200 }]);
    await fx.webhooks.endpoints.enable(ownerOf(endpointId), endpointId);
    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 1 });
    await fx.drain(minutes);
    expect(await fx.job(gone)).toMatchObject({ state: 'completed', attempt: 3 });
    expect(receiver.requests).toHaveLength(3);
  });

  it('RedeliverFindsADeliveryWhoseAttemptsRanOut_AndLeavesOneThatSucceededOnItsLastAttempt', async () => {
    const { receiver, fx, endpointId, ids } = await setup({ status: 500 }, 2);
    // Both deliveries have used 17 of their 18 attempts (as if five days of probes had failed).
    for (const id of ids) {
      await fx.clients.dynamo.send(new UpdateCommand({ TableName: fx.tableNames.jobs, Key: { id }, UpdateExpression: 'SET attempt = :a', ExpressionAttributeValues: { ':a': 17 } }));
    }
    const [exhausted, lucky] = ids as [string, string];
    expect((await fx.run(exhausted)).result).toBe('discarded');
    expect(await fx.job(exhausted)).toMatchObject({ discardReason: 'exhausted', attempt: 18 });
    receiver.reply([{ status: 200 }]);
    // The next probe is the other delivery, one cooldown later, on its last attempt.
    await fx.drain(10 * minutes);
    expect(await fx.job(lucky)).toMatchObject({ state: 'completed', attempt: 18 });

    expect(await fx.webhooks.endpoints.redeliver(ownerOf(endpointId), endpointId)).toEqual({ requeued: 1 });
    await fx.drain(minutes);
    expect(await fx.job(exhausted)).toMatchObject({ state: 'completed', attempt: 19 });
    expect(receiver.requests.filter((r) => r.headers['webhook-id'] === receiver.requests[0]!.headers['webhook-id'])).toHaveLength(2);
  });
});
