import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { webhookFanoutKind } from '../../functions/webhooks/events.ts';
import { fanout } from '../../functions/webhooks/fanout.ts';
import { DIRECT_MAX_ENDPOINTS } from '../../functions/webhooks/publish.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

let fx: Awaited<ReturnType<typeof webhooksFixture>>;
let receiver: Receiver;
beforeAll(async () => {
  fx = await webhooksFixture();
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver.close();
  await fx.close();
});

const ctx = () => ({ logger: fx.logger, now: () => fx.clock.now() }) as never;

/** The deliver jobs that exist for an event, by endpoint. */
async function deliveriesOf(eventId: string, endpointIds: string[]): Promise<string[]> {
  const found = await Promise.all(endpointIds.map((id) => fx.jobs.store.get(deliveryJobId(eventId, id)).then((row) => (row ? id : undefined))));
  return found.filter((id): id is string => id !== undefined);
}

/** The endpoints an event has a delivery to: a job, or an entry waiting in the endpoint's list. */
async function targetsOf(eventId: string, endpointIds: string[]): Promise<string[]> {
  const found = await Promise.all(
    endpointIds.map(async (id) => {
      if (await fx.jobs.store.get(deliveryJobId(eventId, id))) return id;
      return (await fx.webhooks.deps.store.waitListHead(id, 50)).some((e) => e.jobId === deliveryJobId(eventId, id)) ? id : undefined;
    }),
  );
  return found.filter((id): id is string => id !== undefined);
}

/** `n` endpoints of one tenant. */
const register = (tenantId: string, n: number) => Promise.all(Array.from({ length: n }, (_, i) => fx.webhooks.endpoints.register(operatorScope(tenantId), { url: receiver.url(`/${tenantId}/${i}`) })));

describe('publishing an event', () => {
  it('puts one delivery per enabled endpoint of the events tenant that subscribes to its type in the transaction itself, and none elsewhere', async () => {
    const all = await fx.webhooks.endpoints.register(operatorScope('acme'), { url: receiver.url('/all') });
    const finals = await fx.webhooks.endpoints.register(operatorScope('acme'), { url: receiver.url('/finals'), eventTypes: ['batch.finalised'] });
    const both = await fx.webhooks.endpoints.register(operatorScope('acme'), { url: receiver.url('/both'), eventTypes: ['call.completed', 'batch.finalised'] });
    const off = await fx.webhooks.endpoints.register(operatorScope('acme'), { url: receiver.url('/off') });
    expect(await fx.webhooks.deps.store.disable(off.endpointId, 'gone', fx.clock.now())).toBeDefined();
    const other = await fx.webhooks.endpoints.register(operatorScope('globex'), { url: receiver.url('/other') });
    const ids = [all, finals, both, off, other].map((e) => e.endpointId);

    const call = await fx.recordEvent('acme', 'call.completed');
    expect((await deliveriesOf(call.id, ids)).sort()).toEqual([all.endpointId, both.endpointId].sort());
    expect(await fx.jobs.store.get(`webhook.fanout:${call.id}`)).toBeUndefined();
    // Each delivery carries its event: nothing else is stored for it.
    expect((await fx.job(deliveryJobId(call.id, all.endpointId))).args).toEqual({ eventId: call.id, endpointId: all.endpointId, event: call });
    // The publisher took the free endpoints' leases for their new deliveries.
    expect((await fx.webhooks.deps.store.getEndpoint(all.endpointId))?.holder).toBe(deliveryJobId(call.id, all.endpointId));

    // The next events find those two busy: their deliveries there wait in the lists, with their events.
    const finalised = await fx.recordEvent('acme', 'batch.finalised');
    expect((await targetsOf(finalised.id, ids)).sort()).toEqual([all.endpointId, finals.endpointId, both.endpointId].sort());
    expect(await deliveriesOf(finalised.id, ids)).toEqual([finals.endpointId]);

    const round = await fx.recordEvent('acme', 'batch.round_scheduled');
    expect(await targetsOf(round.id, ids)).toEqual([all.endpointId]);
    expect((await fx.webhooks.deps.store.waitListHead(all.endpointId, 10)).find((e) => e.jobId === deliveryJobId(round.id, all.endpointId))?.event).toEqual(round);
  });

  it('takes a free endpoints lease before the commit, and gives it back (and restarts its list) when the transaction does not commit', async () => {
    const endpoint = await fx.webhooks.endpoints.register(operatorScope('undone'), { url: receiver.url('/undone') });
    const published = await fx.webhooks.publisher.prepare({ tenantId: 'undone', type: 'call.completed', data: {} }, fx.clock.now());
    const id = deliveryJobId(published.event.id, endpoint.endpointId);
    // Taken for the delivery before its transaction commits: what is published meanwhile waits behind it.
    expect((await fx.webhooks.deps.store.getEndpoint(endpoint.endpointId))?.holder).toBe(id);
    // The domain's transaction is refused (a duplicate result): nothing committed, the lease goes back.
    const refused = await fx.webhooks.deps.store.transact([...published.items, { name: 'domain', ConditionCheck: { TableName: fx.tableNames.webhooks, Key: { pk: 'NOPE', sk: 'NOPE' }, ConditionExpression: 'attribute_exists(pk)' } }]);
    expect(refused.committed).toBe(false);
    await published.abandon();
    expect((await fx.webhooks.deps.store.getEndpoint(endpoint.endpointId))?.holder).toBeUndefined();
    expect(await fx.jobs.store.get(id)).toBeUndefined();
    expect(await fx.job(`webhook.restart:${endpoint.endpointId}:${published.event.id}`)).toMatchObject({ state: 'available' });
  });

  it('of ten events published at once to a free endpoint, makes one its job and holder, and puts the other nine in its list', async () => {
    const endpoint = await fx.webhooks.endpoints.register(operatorScope('rush'), { url: receiver.url('/rush') });
    const events = await Promise.all(Array.from({ length: 10 }, (_, n) => fx.recordEvent('rush', 'call.completed', { n })));
    const withJob = (await Promise.all(events.map((e) => deliveriesOf(e.id, [endpoint.endpointId]).then((found) => (found.length > 0 ? e.id : undefined))))).filter(Boolean);
    expect(withJob).toHaveLength(1);
    expect((await fx.webhooks.deps.store.getEndpoint(endpoint.endpointId))?.holder).toBe(deliveryJobId(withJob[0]!, endpoint.endpointId));
    const waiting = (await fx.webhooks.deps.store.waitListHead(endpoint.endpointId, 20)).map((e) => e.jobId).sort();
    expect(waiting).toEqual(events.filter((e) => e.id !== withJob[0]).map((e) => deliveryJobId(e.id, endpoint.endpointId)).sort());
  });

  it('writes nothing at all for a tenant with no subscribed endpoint', async () => {
    const published = await fx.webhooks.publisher.prepare({ tenantId: 'nobody', type: 'call.completed', data: {} }, fx.clock.now());
    expect(published.items).toEqual([]);
    expect(published.items).toHaveLength(0);
  });

  it(`for a tenant with more than ${DIRECT_MAX_ENDPOINTS} subscribed endpoints, puts one webhook.fanout job instead, carrying the event`, async () => {
    const endpoints = await register('wide', DIRECT_MAX_ENDPOINTS + 1);
    const event = await fx.recordEvent('wide');
    const ids = endpoints.map((e) => e.endpointId);
    expect(await deliveriesOf(event.id, ids)).toEqual([]);
    expect((await fx.job(`webhook.fanout:${event.id}`)).args).toEqual({ eventId: event.id, event });
    expect((await fx.run(`webhook.fanout:${event.id}`)).result).toBe('completed');
    expect((await deliveriesOf(event.id, ids)).sort()).toEqual([...ids].sort());
  });
});

describe('webhook.fanout', () => {
  it('creates no duplicate when it runs again, or ten times at once', async () => {
    const endpoints = await register('dup', DIRECT_MAX_ENDPOINTS + 1);
    const event = await fx.recordEvent('dup');
    const n = endpoints.length;
    expect(await fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: event.id, event }, ctx())).toEqual({ created: n, parked: 0 });
    expect(await fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: event.id, event }, ctx())).toEqual({ created: 0, parked: 0 });

    const racing = await fx.recordEvent('dup');
    const results = await Promise.all(Array.from({ length: 10 }, () => fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: racing.id, event: racing }, ctx())));
    expect(results.reduce((sum, r) => sum + r.created, 0)).toBe(n);
    expect((await deliveriesOf(racing.id, endpoints.map((e) => e.endpointId))).length).toBe(n);
  });

  it('puts a delivery to a busy endpoint in its wait list with the event, and no job', async () => {
    const endpoints = await register('busy', DIRECT_MAX_ENDPOINTS + 1);
    const busy = endpoints[0]!.endpointId;
    await fx.webhooks.deps.store.acquire(busy, 'webhook.deliver:someone', fx.clock.now(), fx.clock.now() + 60_000);
    const event = await fx.recordEvent('busy');
    expect(await fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: event.id, event }, ctx())).toEqual({ created: endpoints.length - 1, parked: 1 });
    expect(await fx.jobs.store.get(deliveryJobId(event.id, busy))).toBeUndefined();
    expect((await fx.webhooks.deps.store.waitListHead(busy, 5)).map((e) => [e.jobId, e.event])).toEqual([[deliveryJobId(event.id, busy), event]]);
  });

  it('that fails half-way is retried by the job layer and then enqueues only what is missing', async () => {
    const endpoints = await register('half', DIRECT_MAX_ENDPOINTS + 1);
    const event = await fx.recordEvent('half');
    const enqueue = fx.jobs.client.enqueue.bind(fx.jobs.client);
    let calls = 0;
    const spy = vi.spyOn(fx.jobs.client, 'enqueue').mockImplementation((kind, args, options) => {
      if (++calls === 2) return Promise.reject(new Error('ProvisionedThroughputExceededException (injected)'));
      return enqueue(kind, args, options);
    });
    expect((await fx.run(`webhook.fanout:${event.id}`)).result).toBe('retryable');
    spy.mockRestore();
    expect((await fx.runWhenDue(`webhook.fanout:${event.id}`)).result).toBe('completed');
    const ids = endpoints.map((e) => e.endpointId);
    expect((await deliveriesOf(event.id, ids)).sort()).toEqual([...ids].sort());
  });

  it('of an event that no longer exists is discarded as not_found', async () => {
    const prepared = await fx.jobs.client.enqueue(webhookFanoutKind, { eventId: 'evt_pruned' }, { id: 'webhook.fanout:evt_pruned' });
    expect((await fx.run(prepared.id)).result).toBe('discarded');
    expect((await fx.job(prepared.id)).discardReason).toBe('not_found');
  });
});
