import { afterEach, describe, expect, it, vi } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { leaseMs } from '../../functions/jobs/queues.ts';
import { webhooksModule } from '../../functions/webhooks/module.ts';
import { LEASE_MS } from '../../functions/webhooks/lease.ts';
import { watchValue } from '../../functions/webhooks/store.ts';
import { UNWATCH_IDLE_MS } from '../../functions/webhooks/sweep.ts';
import type { EndpointChange } from '../../functions/webhooks/lease.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0)) await close();
});

const healthy: EndpointChange = { health: 'healthy', nextProbeAt: null, lease: { type: 'pass', armedUntil: null } };

/**
 * An endpoint with a receiver, and `n` deliveries to it enqueued as jobs, none run: deliveries published
 * before any of them took the lease (each is a job: publish.ts), which then race each other for it.
 */
async function setup(n: number) {
  const receiver = await Receiver.start([{ status: 200 }]);
  const fx = await webhooksFixture();
  closers.push(() => receiver.close(), fx.close);
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    // A millisecond apart, so the wait list (ordered by enqueue time) is in this order.
    fx.clock.advance(1);
    ids.push((await fx.enqueueDelivery('t', endpointId, { i })).id);
  }
  const store = fx.webhooks.deps.store;
  /** Gives the lease to `jobId` as if it had taken it. */
  const hold = async (jobId: string) => {
    const now = fx.clock.now();
    expect(await store.acquire(endpointId, jobId, now, now + LEASE_MS)).toBeDefined();
  };
  return { receiver, fx, endpointId, ids, store, hold };
}

describe('the lease and the wait list under races', () => {
  it('AParkerWhoseHolderLetsGoBetweenItsReadAndItsEntry_SeesTheLeaseFreeOnItsSecondLookAndSends', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(2);
    const [holder, parker] = ids as [string, string];
    await hold(holder);
    // The holder finishes right after the parker read "busy" and before its wait-list entry is written:
    // the holder's own look at the list finds nobody.
    const park = store.park.bind(store);
    vi.spyOn(store, 'park').mockImplementationOnce(async (...args) => {
      await fx.webhooks.waitList.finish(endpointId, holder, healthy, [], fx.clock.now());
      return park(...args);
    });
    expect((await fx.run(parker)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('AHolderThatLetsGoAfterTheParkersSecondLook_FindsItOnItsOwnLastLookAndWakesIt', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(2);
    const [holder, parker] = ids as [string, string];
    await hold(holder);
    expect((await fx.run(parker)).result).toBe('snoozed');
    expect((await fx.job(parker)).attempt).toBe(0);
    // The holder had read the list before the parker joined it (an empty prefetch): its last look after
    // letting go finds the parker, gives it the lease and wakes it.
    await fx.webhooks.waitList.finish(endpointId, holder, healthy, [], fx.clock.now());
    expect((await store.getEndpoint(endpointId))?.holder).toBe(parker);
    expect((await fx.job(parker)).state).toBe('available');
    expect((await fx.run(parker)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
  });

  it('AParkerHandedTheLeaseWhileStillRunning_IsWokenOnceItSleeps_ByAWebhookWakeJob', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(2);
    const [holder, parker] = ids as [string, string];
    await hold(holder);
    // The parker's second look still sees the holder; the holder then lets go and hands it the lease
    // while it is running (about to snooze), so jobs.client.retry cannot wake it yet.
    const get = store.getEndpoint.bind(store);
    vi.spyOn(store, 'getEndpoint').mockImplementationOnce(async (id) => {
      const seen = await get(id);
      await fx.webhooks.waitList.finish(endpointId, holder, healthy, [], fx.clock.now());
      return seen;
    });
    expect((await fx.run(parker)).result).toBe('snoozed');
    expect((await store.getEndpoint(endpointId))?.holder).toBe(parker);
    const wakes = await fx.jobs.client.list({ kind: 'webhook.wake' });
    expect(wakes.jobs).toHaveLength(1);
    expect((await fx.run(wakes.jobs[0]!.id)).result).toBe('completed');
    expect((await fx.job(parker)).state).toBe('available');
    expect((await fx.run(parker)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
  });

  it('AParkerHandedTheLeaseAfterItsRunWasLost_IsWokenOnceTheRescuerMovesItOn_TheWakeWaitingOutTheClaimWithoutSpendingAttempts', async () => {
    // Seed 443: a parked delivery's rerun lost its outcome write, so its job stayed `running` for its whole
    // claim; handed the lease then, its wake ran out of attempts on a scaled clock long before the claim
    // ended, and the list behind it waited for the endpoint lease to expire again.
    const { receiver, fx, endpointId, ids, store, hold } = await setup(2);
    const [holder, parker] = ids as [string, string];
    await hold(holder);
    expect((await fx.run(parker)).result).toBe('snoozed');
    // The parker is woken and claimed, and its worker is lost before anything is recorded.
    await fx.jobs.client.wake(parker);
    const claimMs = leaseMs(webhooksModule.queues.deliveries);
    const claimed = await fx.jobs.store.claim(parker, (await fx.job(parker)).seq, fx.clock.now(), claimMs);
    const claimUntil = Date.parse(claimed.leaseUntil);
    await fx.webhooks.waitList.finish(endpointId, holder, healthy, await store.waitListHead(endpointId, 3), fx.clock.now());
    expect((await store.getEndpoint(endpointId))?.holder).toBe(parker);
    const [wake] = (await fx.jobs.client.list({ kind: 'webhook.wake' })).jobs;
    // While the claim lasts, the wake looks again at doubling gaps, never past the claim's end, spending nothing.
    const looks: number[] = [];
    for (;;) {
      expect((await fx.runWhenDue(wake!.id)).result).toBe('snoozed');
      const row = await fx.job(wake!.id);
      expect(row.attempt).toBe(0);
      looks.push(Date.parse(row.scheduledAt));
      if (Date.parse(row.scheduledAt) > claimUntil) break;
    }
    expect(looks.at(-1)).toBe(claimUntil + 1);
    expect(looks.length).toBeLessThan(12);
    for (let i = 2; i < looks.length - 1; i++) expect(looks[i]! - looks[i - 1]!).toBeGreaterThan(looks[i - 1]! - looks[i - 2]!);
    // The claim over, the rescuer moves the lost run on; the wake's next look wakes it, and it delivers.
    fx.clock.set(claimUntil + 1);
    expect((await fx.jobs.rescuer(fx.handlers, 60_000).run()).expired).toBe(1);
    expect((await fx.runWhenDue(wake!.id)).result).toBe('completed');
    expect(await fx.job(parker)).toMatchObject({ state: 'available', attempts: [{ outcome: 'lost' }] });
    expect((await fx.run(parker)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect((await store.getEndpoint(endpointId))?.holder).toBeUndefined();
  });

  it('AHolderThatVanished_StrandsNothing_TheSweepGivesItsExpiredLeaseToTheOldestWaiter', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(3);
    await hold('webhook.deliver:crashed');
    for (const id of ids) expect((await fx.run(id)).result).toBe('snoozed');
    // Before the lease expires the sweep leaves it alone.
    expect((await fx.webhooks.sweep(fx.clock.now())).restarted).toBe(0);
    fx.clock.advance(LEASE_MS + 1);
    expect(await fx.webhooks.sweep(fx.clock.now())).toMatchObject({ restarted: 1 });
    // The oldest waiter was woken; it delivers, then runs the next in its own worker, and that one the last.
    expect((await fx.job(ids[0]!)).state).toBe('available');
    expect((await fx.job(ids[1]!)).state).toBe('snoozed');
    expect((await fx.run(ids[0]!)).result).toBe('completed');
    for (const id of ids) expect(await fx.job(id), id).toMatchObject({ state: 'completed', attempt: 1 });
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toHaveLength(3);
    expect(receiver.maxInFlight).toBe(1);
    const endpoint = await store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBeUndefined();
    // Healthy and just used, it stays in the sweep's index (its next lease writes nothing to the index);
    // idle for UNWATCH_IDLE_MS past its last lease, the sweep drops it.
    await fx.webhooks.sweep(fx.clock.now());
    expect((await store.watched(watchValue(endpointId))).endpointIds).toContain(endpointId);
    fx.clock.advance(LEASE_MS + UNWATCH_IDLE_MS);
    await fx.webhooks.sweep(fx.clock.now());
    expect((await store.watched(watchValue(endpointId))).endpointIds).not.toContain(endpointId);
  });

  it('AHolderWhoseWorkerDiedMidDelivery_IsRunAgainByTheRescuer_StillHoldsTheLease_AndPassesItOn', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(2);
    const [crashed, parked] = ids as [string, string];
    // A worker claimed the delivery and took the endpoint's lease, then died before recording anything.
    const row = await fx.job(crashed);
    await fx.jobs.store.claim(crashed, row.seq, fx.clock.now(), leaseMs(webhooksModule.queues.webhooks));
    await hold(crashed);
    expect((await fx.run(parked)).result).toBe('snoozed');
    fx.clock.advance(leaseMs(webhooksModule.queues.webhooks) + 1);
    expect((await fx.jobs.rescuer(fx.handlers, 60_000).run()).expired).toBe(1);
    expect(await fx.job(crashed)).toMatchObject({ state: 'retryable', attempts: [{ outcome: 'lost' }] });
    // Its retry finds the lease still its own, delivers, hands the lease to the parked delivery and runs it next.
    expect((await fx.runWhenDue(crashed)).result).toBe('completed');
    expect(await fx.job(parked)).toMatchObject({ state: 'completed', attempt: 1 });
    expect((await store.getEndpoint(endpointId))?.holder).toBeUndefined();
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.maxInFlight).toBe(1);
  });

  it('ADeliveryCancelledByOpsWhileParked_IsSkippedWhenItsTurnComes_AndTheNextOneIsWoken', async () => {
    const { receiver, fx, endpointId, ids, store, hold } = await setup(3);
    const [holder, cancelled, next] = ids as [string, string, string];
    await hold(holder);
    expect((await fx.run(cancelled)).result).toBe('snoozed');
    expect((await fx.run(next)).result).toBe('snoozed');
    await fx.jobs.client.cancel(cancelled);
    await fx.webhooks.waitList.finish(endpointId, holder, healthy, await store.waitListHead(endpointId, 3), fx.clock.now());
    expect((await store.getEndpoint(endpointId))?.holder).toBe(next);
    expect((await store.waitListHead(endpointId, 5)).map((e) => e.jobId)).toEqual([next]);
    expect((await fx.run(next)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
  });

  it('TenDuplicateWakeUpsOfOneDelivery_SendItOnce', async () => {
    const { receiver, fx, ids } = await setup(1);
    const row = await fx.job(ids[0]!);
    const results = await Promise.all(Array.from({ length: 10 }, () => fx.executor.execute({ jobId: row.id, seq: row.seq })));
    expect(results.filter((r) => r.result === 'completed')).toHaveLength(1);
    expect(receiver.requests).toHaveLength(1);
  });

  it('TwentyDeliveriesFirstRunningAtOnceOnAnIdleEndpoint_OneSends_TheOthersWaitWithoutSpendingAnAttempt', async () => {
    const { receiver, fx, endpointId, ids } = await setup(20);
    const rows = await Promise.all(ids.map((id) => fx.job(id)));
    const results = await Promise.all(rows.map((r) => fx.executor.execute({ jobId: r.id, seq: r.seq })));
    // Some may go one after another (one finishes, the lease is free, a later reader takes it), never two at
    // once; a holder also runs parked ones next in its own worker, so more may have been delivered.
    const completed = results.filter((r) => r.result === 'completed').length;
    expect(completed).toBeGreaterThanOrEqual(1);
    expect(results.filter((r) => r.result === 'snoozed')).toHaveLength(20 - completed);
    expect(receiver.requests.length).toBeGreaterThanOrEqual(completed);
    expect(receiver.maxInFlight).toBe(1);
    const after = await Promise.all(ids.map((id) => fx.job(id)));
    expect(after.filter((r) => r.state === 'snoozed').every((r) => r.attempt === 0)).toBe(true);
    // Whoever lost a race for the free lease parked, or snoozed a second to look again: none is lost,
    // and within a minute (no 6 h backstop) every one has been delivered, once.
    await fx.drain(60_000);
    const done = await Promise.all(ids.map((id) => fx.job(id)));
    expect(done.every((r) => r.state === 'completed' && r.attempt === 1)).toBe(true);
    expect(receiver.requests).toHaveLength(20);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(20);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
  });
});
