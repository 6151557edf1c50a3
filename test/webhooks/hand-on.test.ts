import { afterEach, describe, expect, it, vi } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { LEASE_MS } from '../../functions/webhooks/lease.ts';
import { isPending } from '../../functions/webhooks/store.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import type { Answer } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0)) await close();
});

async function setup(options: { drainBudgetMs?: number; answers?: Answer[] } = {}) {
  const receiver = await Receiver.start(options.answers ?? [{ status: 200 }]);
  const fx = await webhooksFixture(options.drainBudgetMs !== undefined ? { drainBudgetMs: options.drainBudgetMs } : {});
  closers.push(() => receiver.close(), fx.close);
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
  const store = fx.webhooks.deps.store;
  /** Publishes an event; the id its delivery has (or will have, if it ever needs a job). */
  const announce = async (i: number) => {
    fx.clock.advance(1);
    const event = await fx.recordEvent('t', 'call.completed', { i });
    return { event, id: deliveryJobId(event.id, endpointId) };
  };
  /** What the recording transport sent for one job. */
  const sentFor = (jobId: string) => fx.recording.sent.filter((s) => s.body.jobId === jobId);
  /** The first delivery, published to the free endpoint, holding the lease as if its request were out; then `n` more. */
  const busyWith = async (n: number) => {
    const first = await announce(0);
    await store.acquire(endpointId, first.id, fx.clock.now(), fx.clock.now() + LEASE_MS);
    const waiting = [];
    for (let i = 1; i <= n; i++) waiting.push(await announce(i));
    return { first, waiting };
  };
  return { receiver, fx, endpointId, store, announce, sentFor, busyWith };
}

describe('deliveries behind a busy endpoint: in the wait list with their event, sent by the holder', () => {
  it('AnEventPublishedToABusyEndpoint_WaitsInTheListWithNoJob_AndTheHolderSendsItWithinItsOwnRun_WithNoMessageAndNoJobRow', async () => {
    const { receiver, fx, endpointId, store, sentFor, busyWith } = await setup();
    const { first, waiting } = await busyWith(3);
    // The endpoint was free for the first: its delivery is a job, due at once.
    expect(await fx.job(first.id)).toMatchObject({ state: 'available' });
    expect(sentFor(first.id)).toHaveLength(1);
    // The others wait in the list, each carrying its event, with no job and no message.
    const list = await store.waitListHead(endpointId, 10);
    expect(list.map((e) => [e.jobId, e.event?.id])).toEqual(waiting.map((w) => [w.id, w.event.id]));
    for (const w of waiting) {
      expect(await fx.jobs.store.get(w.id), w.id).toBeUndefined();
      expect(sentFor(w.id), w.id).toEqual([]);
    }

    // The first delivery runs, then sends the three within its own run, one at a time, in order.
    fx.counter.reset();
    expect((await fx.run(first.id)).result).toBe('completed');
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([0, 1, 2, 3]);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([first.event.id, ...waiting.map((w) => w.event.id)]);
    expect(receiver.maxInFlight).toBe(1);
    expect(await fx.job(first.id)).toMatchObject({ state: 'completed', attempt: 1 });
    for (const w of waiting) expect(await fx.jobs.store.get(w.id), w.id).toBeUndefined();
    expect(fx.recording.sent.filter((s) => s.kind === 'schedule')).toEqual([]);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
    const endpoint = await store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBeUndefined();
    expect(endpoint?.delivered).toBe(4);
    // The three cost their entries' removal and their attempt rows, nothing else: the job layer wrote the
    // first's claim and completion; the webhooks table three deletes, four attempt rows (one PutItem per
    // attempt: the first's and the three sent from the list) and the lease's release (with the count).
    const counts = fx.counter.toJSON();
    expect(counts['DynamoDB.DeleteItem']).toBe(3);
    expect(counts['DynamoDB.PutItem'] ?? 0).toBe(4);
    expect(counts['DynamoDB.TransactWriteItems'] ?? 0).toBe(0);
  });

  it('AWaitingDeliveryThatFails_BecomesAJobWithThatAttemptAsItsFirst_AndTakesTheProbeRole_TheOthersStillWaitWithNoJob', async () => {
    const { receiver, fx, endpointId, store, busyWith } = await setup({ answers: [{ status: 200 }, { status: 503 }, { status: 200 }] });
    const { first, waiting } = await busyWith(3);
    expect((await fx.run(first.id)).result).toBe('completed');
    // The first sent its own (200), then the first waiting one, which got a 503 without Retry-After.
    expect(receiver.requests).toHaveLength(2);
    const failed = await fx.job(waiting[0]!.id);
    expect(failed).toMatchObject({ state: 'retryable', attempt: 1, kind: 'webhook.deliver' });
    expect(failed.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'retryable', error: 'HTTP 503 without Retry-After' })]);
    expect((failed.args as { event: { id: string } }).event.id).toBe(waiting[0]!.event.id);
    // A young failure: the failing delivery keeps the probe role (the lease), as its own job now.
    const endpoint = await store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBe(waiting[0]!.id);
    expect(endpoint?.failingSince).toBeDefined();
    expect(endpoint?.delivered).toBe(1);
    // The other two still wait with their events and no job.
    const list = await store.waitListHead(endpointId, 10);
    expect(list.map((e) => e.jobId)).toEqual([waiting[1]!.id, waiting[2]!.id]);
    expect(list.every(isPending)).toBe(true);

    // Its retry, when due, succeeds and sends the rest.
    expect((await fx.runWhenDue(waiting[0]!.id)).result).toBe('completed');
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([0, 1, 1, 2, 3]);
    expect((await fx.job(waiting[0]!.id)).attempts.map((a) => a.outcome)).toEqual(['retryable', 'completed']);
    expect((await store.getEndpoint(endpointId))?.failingSince).toBeUndefined();
    expect((await store.getEndpoint(endpointId))?.delivered).toBe(4);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('AWaitingDeliveryRefusedWith4xx_IsDiscardedAsAJobRedeliverFinds_AndTheHolderGoesOnWithTheNext', async () => {
    const { receiver, fx, endpointId, store, busyWith } = await setup({ answers: [{ status: 200 }, { status: 422 }, { status: 200 }] });
    const { first, waiting } = await busyWith(2);
    expect((await fx.run(first.id)).result).toBe('completed');
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([0, 1, 2]);
    expect(await fx.job(waiting[0]!.id)).toMatchObject({ state: 'discarded', discardReason: 'http_4xx', attempt: 1 });
    expect(await fx.jobs.store.get(waiting[1]!.id)).toBeUndefined();
    expect((await store.discardMarkers(endpointId)).markers.map((m) => m.jobId)).toEqual([waiting[0]!.id]);
    expect((await fx.jobs.client.list({ state: 'discarded', kind: 'webhook.deliver', reason: 'http_4xx' })).jobs.map((j) => j.id)).toEqual([waiting[0]!.id]);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
    expect((await store.getEndpoint(endpointId))?.holder).toBeUndefined();
  });

  it('A410WhileDraining_DisablesTheEndpoint_AndEveryDeliveryStillWaiting_IsDiscardedAsAJob_EndpointDisabled_WithoutBeingSent', async () => {
    const { receiver, fx, endpointId, store, busyWith } = await setup({ answers: [{ status: 200 }, { status: 410 }] });
    const { first, waiting } = await busyWith(4);
    expect((await fx.run(first.id)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(2);
    expect(await fx.job(waiting[0]!.id)).toMatchObject({ state: 'discarded', discardReason: 'gone' });
    for (const w of waiting.slice(1)) expect(await fx.job(w.id), w.id).toMatchObject({ state: 'discarded', discardReason: 'endpoint_disabled', attempt: 0, attempts: [] });
    expect(await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).toMatchObject({ disabled: true, disabledReason: 'gone' });
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
    expect((await store.discardMarkers(endpointId)).markers.map((m) => m.jobId).sort()).toEqual(waiting.map((w) => w.id).sort());
  });

  it('WithNoTimeToDrain_TheHeadIsGivenItsJobAndHandedTheLease_AndEachRunsNextInTheSameWorker', async () => {
    const { receiver, fx, endpointId, store, sentFor, busyWith } = await setup({ drainBudgetMs: 0 });
    const { first, waiting } = await busyWith(3);
    expect((await fx.run(first.id)).result).toBe('completed');
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([0, 1, 2, 3]);
    expect(receiver.maxInFlight).toBe(1);
    // Each waiting delivery became a job, was handed the lease and ran next in the same worker: no message.
    for (const w of waiting) {
      expect(await fx.job(w.id), w.id).toMatchObject({ state: 'completed', attempt: 1 });
      expect(sentFor(w.id), w.id).toEqual([]);
    }
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
    expect((await store.getEndpoint(endpointId))?.delivered).toBe(4);
  });

  it('AnEntryTheHolderCouldNotRemoveAfterSendingIt_EndsTheDrain_AndIsSentAgainLater_NothingIsLost', async () => {
    const { receiver, fx, endpointId, store, busyWith } = await setup();
    const { first, waiting } = await busyWith(3);
    // DynamoDB refuses the removal of the first waiting delivery's entry once (throttled).
    const unpark = store.unpark.bind(store);
    let refused = 0;
    vi.spyOn(store, 'unpark').mockImplementation(async (key) => {
      if (key.sk.endsWith(waiting[0]!.id) && refused++ === 0) throw Object.assign(new Error('ThrottlingException (injected)'), { name: 'ThrottlingException' });
      return unpark(key);
    });
    expect((await fx.run(first.id)).result).toBe('completed');
    await fx.drain(60_000);
    // Every event arrived; the one whose entry stayed arrived twice, with the same webhook-id (at least once).
    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(new Set(ids)).toEqual(new Set([first.event.id, ...waiting.map((w) => w.event.id)]));
    expect(ids.filter((id) => id === waiting[0]!.event.id).length).toBeGreaterThanOrEqual(1);
    expect(ids.length).toBeLessThanOrEqual(5);
    expect(receiver.maxInFlight).toBe(1);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('AHolderThatLetsGoBetweenThePublishersReadAndItsCommit_IsCaughtByThePublishersSecondLook', async () => {
    const { receiver, fx, endpointId, store, announce } = await setup();
    const first = await announce(0);
    await store.acquire(endpointId, first.id, fx.clock.now(), fx.clock.now() + LEASE_MS);
    // Force the interleaving: the holder finishes (nobody waiting: it lets go) right before the entry commits.
    const transact = store.transact.bind(store);
    vi.spyOn(store, 'transact').mockImplementationOnce(async (items) => {
      await store.settle(endpointId, first.id, undefined, { type: 'release' }, fx.clock.now());
      return transact(items);
    });
    const second = await announce(1);
    // The entry waits; the publisher's second look saw the lease free and asked for a restart.
    const restart = `webhook.restart:${endpointId}:${second.event.id}`;
    expect(await fx.job(restart)).toMatchObject({ state: 'available' });
    expect((await fx.run(restart)).result).toBe('completed');
    // The restart gave the waiting delivery its job and the lease, and woke it.
    expect((await store.getEndpoint(endpointId))?.holder).toBe(second.id);
    expect((await fx.run(second.id)).result).toBe('completed');
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([1]);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('ADeliveryWaitingBehindAHolderThatVanished_IsStartedByTheSweepOnceTheLeaseHasExpired', async () => {
    const { receiver, fx, endpointId, store, announce } = await setup();
    await store.acquire(endpointId, 'webhook.deliver:vanished', fx.clock.now(), fx.clock.now() + LEASE_MS);
    const waiting = await announce(0);
    expect(await fx.jobs.store.get(waiting.id)).toBeUndefined();
    // Not before the lease has expired…
    expect((await fx.webhooks.sweep(fx.clock.now())).restarted).toBe(0);
    fx.clock.advance(LEASE_MS + 1);
    expect((await fx.webhooks.sweep(fx.clock.now())).restarted).toBe(1);
    expect((await store.getEndpoint(endpointId))?.holder).toBe(waiting.id);
    expect((await fx.run(waiting.id)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });
});
