import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { errorClassOf } from '../../functions/webhooks/attempts.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { EVENT_RETENTION_SECONDS } from '../../functions/webhooks/events.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import type { Answer } from '../support/webhooks.ts';
import { webhooksApi } from '../support/webhooks-api.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(script: Answer[], tenantId = 't') {
  const receiver = await Receiver.start(script);
  const fx = await webhooksFixture();
  closers.push(() => receiver.close(), fx.close);
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope(tenantId), { url: receiver.url() });
  return { receiver, fx, endpointId };
}

/** Every item of the webhooks table whose sort key starts with `AT#` (attempt rows). */
async function attemptItems(fx: Awaited<ReturnType<typeof webhooksFixture>>): Promise<Record<string, any>[]> {
  const items = (await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.webhooks, ConsistentRead: true }))).Items ?? [];
  return items.filter((i) => String(i['sk']).startsWith('AT#'));
}

describe('the attempt log', () => {
  it('AJobsOwnAttemptAndEachSendFromTheWaitList_WriteOneRowEach_UnderTheTenantsKey_KeptThirtyDays_NewestFirst', async () => {
    const { fx, endpointId, receiver } = await setup([{ status: 200 }]);
    const events = [];
    for (let i = 0; i < 3; i++) {
      fx.clock.advance(1000);
      events.push(await fx.recordEvent('t', 'call.completed', { i }));
    }
    await fx.drain();
    expect(receiver.requests).toHaveLength(3);
    // Only the first delivery has a job; the other two were sent from the wait list within its run.
    expect(await fx.deliveryRows(events, endpointId)).toHaveLength(1);
    const page = await fx.webhooks.deps.attemptLog.list(endpointId, {}, 50);
    // All three at one instant of the manual clock: the log orders them by event id then.
    const byEvent = new Map(page.attempts.map((a) => [a.eventId, [a.attempt, a.result, a.status, a.source, a.nextRetryAt]]));
    expect(byEvent).toEqual(
      new Map([
        [events[0]!.id, [1, 'delivered', 200, 'job', undefined]],
        [events[1]!.id, [1, 'delivered', 200, 'wait_list', undefined]],
        [events[2]!.id, [1, 'delivered', 200, 'wait_list', undefined]],
      ]),
    );
    expect(page.attempts.map((a) => a.sk)).toEqual(page.attempts.map((a) => a.sk).sort().reverse());
    const items = await attemptItems(fx);
    expect(items).toHaveLength(3);
    for (const item of items) {
      expect(item['pk']).toMatch(/^TENANT#t#ATTEMPTS#[0-9a-f]{32}$/);
      expect(item['expiresAt']).toBe(Math.floor(Date.parse(item['at']) / 1000) + EVENT_RETENTION_SECONDS);
      // Delivered: the byReceived index's keys ride on the same item.
      expect(item['receivedBy']).toMatch(/^TENANT#t#RECEIVED#[0-9a-f]{32}$/);
      expect(item['receivedEvent']).toBe(item['eventId']);
    }
    expect(await fx.webhooks.deps.attemptLog.received(endpointId, events.map((e) => e.id))).toEqual(new Set(events.map((e) => e.id)));
  });

  it('AFailedAttempt_RecordsItsStatus_AndTheNominalNextRetry; ARetryThatDelivers_IsAttemptTwo', async () => {
    const { fx, endpointId } = await setup([{ status: 503 }, { status: 200 }]);
    const event = await fx.recordEvent('t');
    const started = fx.clock.now();
    await fx.run(deliveryJobId(event.id, endpointId));
    await fx.runWhenDue(deliveryJobId(event.id, endpointId));
    const { attempts } = await fx.webhooks.deps.attemptLog.list(endpointId, {}, 50);
    expect(attempts.map((a) => [a.attempt, a.result, a.status ?? null, a.errorClass ?? null, a.source])).toEqual([
      [2, 'delivered', 200, null, 'job'],
      [1, 'failed', 503, null, 'job'],
    ]);
    // webhook.deliver's first backoff is 5 s; the log states it un-jittered.
    expect(attempts[1]!.at).toBe(new Date(started).toISOString());
    expect(attempts[1]!.nextRetryAt).toBe(new Date(started + 5000).toISOString());
    expect(attempts[1]!.error).toContain('HTTP 503');
    expect(attempts[1]!.receivedBy).toBeUndefined();
  });

  it('AnAttemptThatGotNoAnswer_NamesItsErrorClass; A429WithRetryAfter_NamesTheSnoozeAsItsNextTry', async () => {
    const { fx, endpointId, receiver } = await setup([{ status: 429, headers: { 'retry-after': '120' } }]);
    const first = await fx.recordEvent('t');
    const at = fx.clock.now();
    await fx.run(deliveryJobId(first.id, endpointId));
    await receiver.close();
    // Nothing listens on the port any more: the connection is refused.
    await fx.runWhenDue(deliveryJobId(first.id, endpointId));
    const { attempts } = await fx.webhooks.deps.attemptLog.list(endpointId, {}, 50);
    expect(attempts.map((a) => [a.result, a.status ?? null, a.errorClass ?? null])).toEqual([
      ['failed', null, 'connection_refused'],
      ['throttled', 429, null],
    ]);
    expect(attempts[1]!.nextRetryAt).toBe(new Date(at + 120_000).toISOString());
  });
});

describe('GET /v1/endpoints/{id}/attempts', () => {
  it('PagesThroughEveryAttempt_WithACursor_FiltersByStatusEventTypeAndTime_AndRefusesBadInputWithFieldPaths', async () => {
    const { fx, endpointId, receiver } = await setup([{ status: 200 }], 'pager');
    const api = await webhooksApi(fx);
    closers.push(api.close);
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      fx.clock.advance(60_000);
      times.push(fx.clock.now());
      // Every third answer is a 400: that delivery is discarded, and its row says why.
      receiver.reply([{ status: i % 3 === 2 ? 400 : 200 }]);
      const event = await fx.recordEvent('pager', i % 2 === 0 ? 'call.completed' : 'batch.finalised', { i });
      await fx.run(deliveryJobId(event.id, endpointId));
    }
    const all: any[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      all.push(...page.body.attempts);
      cursor = page.body.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(all).toHaveLength(7);
    expect(all.map((a) => a.at)).toEqual([...times].reverse().map((t) => new Date(t).toISOString()));
    expect(all[0]).toEqual({
      eventId: expect.stringMatching(/^evt_/),
      eventType: 'call.completed',
      attempt: 1,
      at: new Date(times[6]!).toISOString(),
      result: 'delivered',
      status: 200,
      errorClass: null,
      error: null,
      durationMs: expect.any(Number),
      nextRetryAt: null,
      source: 'job',
    });

    const rejected = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?status=rejected`);
    expect(rejected.body.attempts.map((a: any) => a.status)).toEqual([400, 400]);
    expect((await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?status=400`)).body.attempts).toHaveLength(2);
    expect((await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?status=503`)).body.attempts).toHaveLength(0);
    const finalised = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?eventType=batch.finalised`);
    expect(finalised.body.attempts.map((a: any) => a.eventType)).toEqual(['batch.finalised', 'batch.finalised', 'batch.finalised']);
    const window = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?since=${new Date(times[2]!).toISOString()}&until=${new Date(times[4]!).toISOString()}`);
    expect(window.body.attempts.map((a: any) => a.at)).toEqual([times[3], times[2]].map((t) => new Date(t!).toISOString()));

    for (const [query, path] of [
      ['status=bogus', 'query.status'],
      ['eventType=call.nope', 'query.eventType'],
      ['since=yesterday', 'query.since'],
      [`since=${new Date(times[4]!).toISOString()}&until=${new Date(times[2]!).toISOString()}`, 'query.until'],
      ['limit=0', 'query.limit'],
      ['cursor=not-a-cursor', 'query.cursor'],
    ] as const) {
      const answer = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?${query}`);
      expect(answer.status, query).toBe(400);
      expect(answer.body.issues.map((i: any) => i.path), query).toContain(path);
    }
    // A cursor of the whole log, used on a window it lies outside of: not this listing's.
    const first = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?limit=1`);
    const outside = await api.call('pager', 'GET', `/v1/endpoints/${endpointId}/attempts?until=${new Date(times[1]!).toISOString()}&cursor=${first.body.cursor}`);
    expect(outside.status).toBe(400);
    expect((await api.call('pager', 'GET', `/v1/endpoints/ep_pager.${'0'.repeat(32)}/attempts`)).status).toBe(404);
  });
});

describe('an attempt without an answer: its error class, from the delivery’s description of the error', () => {
  it('NamesTheClientsDeadlineATimeout_AndAPeersResetMidBodyAReset', () => {
    // As the delivery describes them (name, code, message) for what VettedHttpClient rejects with.
    expect(errorClassOf({ type: 'failed', error: 'TimeoutError: The operation was aborted due to timeout' })).toBe('timeout');
    expect(errorClassOf({ type: 'failed', error: 'Error ECONNRESET: aborted' })).toBe('connection_reset');
    expect(errorClassOf({ type: 'failed', error: 'Error ECONNREFUSED: connect ECONNREFUSED 127.0.0.2:9' })).toBe('connection_refused');
    expect(errorClassOf({ type: 'failed', status: 503, error: 'Service Unavailable' })).toBeUndefined();
    expect(errorClassOf({ type: 'blocked', error: 'private address' })).toBe('ssrf_blocked');
  });
});
