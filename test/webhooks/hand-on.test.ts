import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { LEASE_MS, PARK_MS } from '../../functions/webhooks/lease.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0)) await close();
});

async function setup() {
  const receiver = await Receiver.start([{ status: 200 }]);
  const fx = await webhooksFixture();
  closers.push(() => receiver.close(), fx.close);
  const { endpointId } = await fx.webhooks.endpoints.register({ tenantId: 't', url: receiver.url() });
  const store = fx.webhooks.deps.store;
  /** Records an event and runs its fanout; the delivery's job id. */
  const announce = async (i: number) => {
    fx.clock.advance(1);
    const event = await fx.recordEvent('t', 'call.completed', { i });
    expect((await fx.run(`webhook.fanout:${event.id}`)).result).toBe('completed');
    return deliveryJobId(event.id, endpointId);
  };
  /** What the recording transport sent for one job. */
  const sentFor = (jobId: string) => fx.recording.sent.filter((s) => s.body.jobId === jobId);
  return { receiver, fx, endpointId, store, announce, sentFor };
}

describe('deliveries behind a busy endpoint: parked at fanout, run by the holder', () => {
  it('ADeliveryFannedOutToABusyEndpoint_IsParkedDormant_AndTheHolderRunsItNext_WithNoMessageNoScheduleNoPark', async () => {
    const { receiver, fx, endpointId, store, announce, sentFor } = await setup();
    const first = await announce(0);
    // The endpoint is free: the first delivery is enqueued to run at once.
    expect(await fx.job(first)).toMatchObject({ state: 'available' });
    expect(sentFor(first)).toHaveLength(1);
    // It takes the lease and is mid-request when three more events are fanned out.
    await store.acquire(endpointId, first, fx.clock.now(), fx.clock.now() + LEASE_MS);
    const parked = [await announce(1), await announce(2), await announce(3)];
    for (const id of parked) {
      expect(await fx.job(id), id).toMatchObject({ state: 'scheduled', attempt: 0 });
      expect(Date.parse((await fx.job(id)).scheduledAt)).toBe(Date.parse((await fx.job(id)).createdAt) + PARK_MS);
      expect(sentFor(id), id).toEqual([]);
    }
    expect((await store.waitListHead(endpointId, 5)).map((e) => [e.jobId, e.eventId])).toEqual(parked.map((id) => [id, id.split(':')[1]]));

    // The first delivery runs; each one, done, runs the next in the same worker, one at a time.
    fx.counter.reset();
    expect((await fx.run(first)).result).toBe('completed');
    for (const id of [first, ...parked]) expect(await fx.job(id), id).toMatchObject({ state: 'completed', attempt: 1, snoozes: 0 });
    expect(receiver.requests.map((r) => JSON.parse(r.body).data.i)).toEqual([0, 1, 2, 3]);
    expect(receiver.maxInFlight).toBe(1);
    for (const id of parked) expect(sentFor(id), id).toEqual([]);
    expect(fx.recording.sent.filter((s) => s.kind === 'schedule')).toEqual([]);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
    expect((await store.getEndpoint(endpointId))?.holder).toBeUndefined();
    // A parked delivery cost the job layer a claim and a completion, and read nothing but its event ahead:
    // four claims and four completions, the first's BatchGet, three look-aheads, the wait-list queries.
    expect(fx.counter.toJSON()).toMatchObject({ 'DynamoDB.BatchGetItem': 1 });
  });

  it('AHolderThatLetsGoBetweenTheFanoutsReadAndItsEntry_IsCaughtByTheFanoutsSecondLook', async () => {
    const { receiver, fx, endpointId, store, announce, sentFor } = await setup();
    const first = await announce(0);
    await store.acquire(endpointId, first, fx.clock.now(), fx.clock.now() + LEASE_MS);
    // Force the interleaving: the holder finishes (nobody waiting: it lets go) right before the entry is written.
    const park = store.park.bind(store);
    vi.spyOn(store, 'park').mockImplementationOnce(async (...args) => {
      await store.settle(endpointId, first, undefined, { type: 'release' }, fx.clock.now());
      return park(...args);
    });
    const second = await announce(1);
    // The fanout saw the lease free on its second look: the parked delivery holds it and was woken.
    expect((await store.getEndpoint(endpointId))?.holder).toBe(second);
    expect(await fx.job(second)).toMatchObject({ state: 'available' });
    expect(sentFor(second)).toHaveLength(1);
    expect((await fx.run(second)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect(await store.waitListHead(endpointId, 5)).toEqual([]);
  });

  it('AParkedDeliveryNobodyHandsTheLeaseTo_IsWokenByTheRescuerOnceItsParkingRunsOut', async () => {
    const { receiver, fx, endpointId, store, announce } = await setup();
    await store.acquire(endpointId, 'webhook.deliver:vanished', fx.clock.now(), fx.clock.now() + LEASE_MS);
    const parked = await announce(0);
    expect(await fx.job(parked)).toMatchObject({ state: 'scheduled' });
    // The rescuer looks at a waiting job a lease (65 s on the deliveries queue) after it is due (docs/job-layer.md, "The jobs table").
    fx.clock.advance(PARK_MS + 65_001);
    expect((await fx.jobs.rescuer(fx.handlers, 60_000).run()).rewoken).toBe(1);
    // The vanished holder's lease expired long ago: the delivery takes it and sends.
    expect((await fx.run(parked)).result).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
  });
});
