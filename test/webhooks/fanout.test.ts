import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { webhookFanoutKind } from '../../functions/webhooks/events.ts';
import { fanout } from '../../functions/webhooks/fanout.ts';
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

describe('webhook.fanout', () => {
  it('enqueues one delivery per enabled endpoint of the events tenant that subscribes to its type, and none elsewhere', async () => {
    const all = await fx.webhooks.endpoints.register({ tenantId: 'acme', url: receiver.url('/all') });
    const finals = await fx.webhooks.endpoints.register({ tenantId: 'acme', url: receiver.url('/finals'), eventTypes: ['batch.finalised'] });
    const both = await fx.webhooks.endpoints.register({ tenantId: 'acme', url: receiver.url('/both'), eventTypes: ['call.completed', 'batch.finalised'] });
    const off = await fx.webhooks.endpoints.register({ tenantId: 'acme', url: receiver.url('/off') });
    expect(await fx.webhooks.deps.store.disable(off.endpointId, 'gone', fx.clock.now())).toBeDefined();
    const other = await fx.webhooks.endpoints.register({ tenantId: 'globex', url: receiver.url('/other') });
    const ids = [all, finals, both, off, other].map((e) => e.endpointId);

    const call = await fx.recordEvent('acme', 'call.completed');
    expect((await fx.run(`webhook.fanout:${call.id}`)).result).toBe('completed');
    expect((await deliveriesOf(call.id, ids)).sort()).toEqual([all.endpointId, both.endpointId].sort());

    const finalised = await fx.recordEvent('acme', 'batch.finalised');
    await fx.run(`webhook.fanout:${finalised.id}`);
    expect((await deliveriesOf(finalised.id, ids)).sort()).toEqual([all.endpointId, finals.endpointId, both.endpointId].sort());

    const round = await fx.recordEvent('acme', 'batch.round_scheduled');
    await fx.run(`webhook.fanout:${round.id}`);
    expect(await deliveriesOf(round.id, ids)).toEqual([all.endpointId]);
  });

  it('creates no duplicate when it runs again, or ten times at once', async () => {
    const endpoints = await Promise.all(['/a', '/b', '/c'].map((path) => fx.webhooks.endpoints.register({ tenantId: 'dup', url: receiver.url(path) })));
    const event = await fx.recordEvent('dup');
    expect(await fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: event.id }, ctx())).toEqual({ created: 3, existing: 0, parked: 0 });
    expect(await fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: event.id }, ctx())).toEqual({ created: 0, existing: 3, parked: 0 });

    const racing = await fx.recordEvent('dup');
    const results = await Promise.all(Array.from({ length: 10 }, () => fanout(fx.webhooks.deps, fx.webhooks.waitList, { eventId: racing.id }, ctx())));
    expect(results.reduce((sum, r) => sum + r.created, 0)).toBe(3);
    expect(results.every((r) => r.created + r.existing === 3)).toBe(true);
    expect((await deliveriesOf(racing.id, endpoints.map((e) => e.endpointId))).length).toBe(3);
  });

  it('that fails half-way is retried by the job layer and then enqueues only what is missing', async () => {
    const endpoints = await Promise.all(['/x', '/y', '/z'].map((path) => fx.webhooks.endpoints.register({ tenantId: 'half', url: receiver.url(path) })));
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
