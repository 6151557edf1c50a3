import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobContext } from '../../functions/jobs/index.ts';
import { policy, schedule } from '../../functions/jobs/index.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { deliveryJobId, discardMarkerKey } from '../../functions/webhooks/endpoint.ts';
import { PAGES_PER_RUN, recoveredJobId } from '../../functions/webhooks/recover.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';
import type { Answer } from '../support/webhooks.ts';
import { webhooksApi } from '../support/webhooks-api.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const hours = 3600_000;

async function setup(script: Answer[] = [{ status: 200 }], options: { eventTypes?: ('call.completed' | 'batch.finalised')[] } = {}) {
  const receiver = await Receiver.start(script);
  const fx = await webhooksFixture();
  const api = await webhooksApi(fx);
  closers.push(() => receiver.close(), fx.close, api.close);
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url(), ...(options.eventTypes ? { eventTypes: options.eventTypes } : {}) });
  return { receiver, fx, api, endpointId };
}

type Fx = Awaited<ReturnType<typeof setup>>;

/** Starts a recovery through the API, runs every job until nothing is due, and returns the recovery as the API shows it. */
async function recover(s: Fx, body: Record<string, unknown>): Promise<any> {
  const started = await s.api.call('t', 'POST', `/v1/endpoints/${s.endpointId}/recover`, body);
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  expect(started.body.recoveryId).toMatch(/^rcv_[0-9a-f]{24}$/);
  await s.fx.drain();
  const shown = await s.api.call('t', 'GET', `/v1/endpoints/${s.endpointId}/recoveries/${started.body.recoveryId}`);
  expect(shown.status).toBe(200);
  return shown.body;
}

const webhookIds = (receiver: Receiver) => receiver.requests.map((r) => r.headers['webhook-id']);

describe('recovering what an endpoint did not receive', { timeout: 120_000 }, () => {
  it('EventsPublishedWhileItWasDisabled_AreSentOnce_WithTheirOwnWebhookId; WhatItReceived_IsNot', async () => {
    const s = await setup();
    const { fx, endpointId, receiver } = s;
    const since = fx.clock.now();
    fx.clock.advance(1000);
    const before = [await fx.recordEvent('t', 'call.completed', { n: 1 })];
    await fx.drain();
    await fx.webhooks.deps.store.disable(endpointId, 'gone', fx.clock.now());
    const missed = [];
    for (let i = 0; i < 3; i++) {
      fx.clock.advance(60_000);
      missed.push(await fx.recordEvent('t', 'call.completed', { i }));
    }
    await fx.drain();
    expect(webhookIds(receiver)).toEqual([before[0]!.id]);

    // Disabled: enable it first.
    const refused = await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/recover`, { since: new Date(since).toISOString() });
    expect(refused.status).toBe(409);
    await fx.webhooks.endpoints.enable(operatorScope('t'), endpointId);
    fx.clock.advance(1000);

    const recovery = await recover(s, { since: new Date(since).toISOString() });
    expect(recovery).toMatchObject({ status: 'completed', matched: 3, requeued: 3, inFlight: 0, dryRun: false, endpointId });
    expect(webhookIds(receiver).slice(1).sort()).toEqual(missed.map((e) => e.id).sort());
    // Each through a delivery job of its own, named for the recovery.
    for (const event of missed) expect((await fx.job(recoveredJobId(event.id, endpointId, recovery.recoveryId))).state).toBe('completed');

    // Everything has been received now: a second recovery of the same window finds nothing.
    const again = await recover(s, { since: new Date(since).toISOString() });
    expect(again).toMatchObject({ status: 'completed', matched: 0, requeued: 0 });
    expect(receiver.requests).toHaveLength(4);
  });

  it('ADryRun_CountsAndRequeuesNothing; TypesItDoesNotSubscribeTo_AndEventsBeforeTheWindow_AreLeftOut', async () => {
    const s = await setup([{ status: 200 }], { eventTypes: ['call.completed'] });
    const { fx, endpointId, receiver } = s;
    await fx.webhooks.deps.store.disable(endpointId, 'gone', fx.clock.now());
    fx.clock.advance(1000);
    const early = await fx.recordEvent('t', 'call.completed');
    fx.clock.advance(1000);
    const since = fx.clock.now();
    await fx.recordEvent('t', 'batch.finalised');
    const wanted = await fx.recordEvent('t', 'call.completed');
    await fx.webhooks.endpoints.enable(operatorScope('t'), endpointId);
    fx.clock.advance(1000);

    const dry = await recover(s, { since: new Date(since).toISOString(), dryRun: true });
    expect(dry).toMatchObject({ status: 'completed', matched: 1, requeued: 0, dryRun: true });
    expect(receiver.requests).toHaveLength(0);

    const real = await recover(s, { since: new Date(since).toISOString() });
    expect(real).toMatchObject({ matched: 1, requeued: 1 });
    expect(webhookIds(receiver)).toEqual([wanted.id]);
    expect(webhookIds(receiver)).not.toContain(early.id);
  });

  it('ADiscardedDelivery_IsRecovered_AndItsDiscardMarkerDropped_SoRedeliverDoesNotSendItASecondTime; OneStillPending_IsLeftToItself', async () => {
    const s = await setup([{ status: 400 }]);
    const { fx, endpointId, receiver } = s;
    const since = fx.clock.now();
    fx.clock.advance(1000);
    const discarded = await fx.recordEvent('t');
    await fx.drain();
    expect((await fx.job(deliveryJobId(discarded.id, endpointId))).state).toBe('discarded');
    // The next one fails and waits for its retry: in flight, not the recovery's.
    receiver.reply([{ status: 503 }]);
    fx.clock.advance(1000);
    const pending = await fx.recordEvent('t');
    await fx.run(deliveryJobId(pending.id, endpointId));
    expect((await fx.job(deliveryJobId(pending.id, endpointId))).state).toBe('retryable');
    receiver.reply([{ status: 200 }]);
    fx.clock.advance(1000);

    const started = await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/recover`, { since: new Date(since).toISOString() });
    expect(started.status).toBe(202);
    await fx.run(`webhook.recover:${started.body.recoveryId}`);
    const shown = (await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/${started.body.recoveryId}`)).body;
    expect(shown).toMatchObject({ status: 'completed', matched: 1, requeued: 1, inFlight: 1 });
    const markers = (await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.webhooks, ConsistentRead: true }))).Items ?? [];
    expect(markers.filter((m) => m['sk'] === discardMarkerKey(endpointId, deliveryJobId(discarded.id, endpointId)).sk)).toEqual([]);
    expect((await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/redeliver`)).body).toEqual({ requeued: 0 });
  });

  it('AWindowLongerThanOneRun_GoesOnAcrossRuns_FromItsPosition_AndRequeuesEachEventOnce', async () => {
    const s = await setup();
    const { fx, endpointId, receiver } = s;
    await fx.webhooks.deps.store.disable(endpointId, 'gone', fx.clock.now());
    const since = fx.clock.now();
    // One event an hour: each a page of its own (the empty shards and hours between commit nothing), so the
    // window is more pages than one run commits.
    const hoursOfEvents = PAGES_PER_RUN + 3;
    const events = [];
    for (let h = 0; h < hoursOfEvents; h++) {
      fx.clock.advance(hours);
      events.push(await fx.recordEvent('t', 'call.completed', { h }));
    }
    await fx.webhooks.endpoints.enable(operatorScope('t'), endpointId);
    fx.clock.advance(1000);
    const started = await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/recover`, { since: new Date(since).toISOString() });
    const jobId = `webhook.recover:${started.body.recoveryId}`;
    expect((await fx.run(jobId)).result).toBe('snoozed');
    const midway = (await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/${started.body.recoveryId}`)).body;
    expect(midway.status).toBe('running');
    expect(midway.requeued).toBeGreaterThan(0);
    expect(midway.requeued).toBeLessThan(events.length);
    await fx.drain();
    const done = (await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/${started.body.recoveryId}`)).body;
    expect(done).toMatchObject({ status: 'completed', matched: events.length, requeued: events.length });
    expect(webhookIds(receiver).sort()).toEqual(events.map((e) => e.id).sort());
    // Snoozes spend no attempt.
    expect((await fx.job(jobId)).attempt).toBe(1);
  });

  it('TwoRunsOfOneRecoveryAtOnce_CommitEachPageOnce_SoNoEventIsRequeuedTwice', async () => {
    const s = await setup();
    const { fx, endpointId } = s;
    await fx.webhooks.deps.store.disable(endpointId, 'gone', fx.clock.now());
    const since = fx.clock.now();
    const events = [];
    for (let i = 0; i < 5; i++) {
      fx.clock.advance(1000);
      events.push(await fx.recordEvent('t', 'call.completed', { i }));
    }
    await fx.webhooks.endpoints.enable(operatorScope('t'), endpointId);
    fx.clock.advance(1000);
    const started = await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/recover`, { since: new Date(since).toISOString(), dryRun: false });
    const recoveryId = started.body.recoveryId as string;
    // Two runs of the job at once (a run thought lost and its rescue): each reads the same position.
    const ctx = (): JobContext => ({
      id: `webhook.recover:${recoveryId}`,
      kind: 'webhook.recover',
      attempt: 1,
      maxAttempts: 10,
      policy: policy({ maxAttempts: 10, backoff: schedule([1]), onExhausted: 'discard' }),
      isLastAttempt: false,
      createdAt: new Date(fx.clock.now()).toISOString(),
      signal: new AbortController().signal,
      logger: createLogger('test'),
      now: () => fx.clock.now(),
      runNext: () => Promise.resolve('declined'),
    });
    const runs = await Promise.allSettled([fx.webhooks.recoveries.run({ endpointId, recoveryId }, ctx()), fx.webhooks.recoveries.run({ endpointId, recoveryId }, ctx())]);
    // One commits each page; the other stops (or fails, and its retry finds the recovery finished).
    expect(runs.some((r) => r.status === 'fulfilled')).toBe(true);
    for (const run of runs) if (run.status === 'rejected') await fx.webhooks.recoveries.run({ endpointId, recoveryId }, ctx());
    const shown = (await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/${recoveryId}`)).body;
    expect(shown).toMatchObject({ status: 'completed', matched: 5, requeued: 5 });
    const jobs = await Promise.all(events.map((e) => fx.jobs.store.get(recoveredJobId(e.id, endpointId, recoveryId))));
    expect(jobs.every((j) => j !== undefined)).toBe(true);
    await fx.drain();
    expect(s.receiver.requests).toHaveLength(5);
  });

  it('RefusesAWindowOutsideTheKeptEvents_AnUnknownRecovery_AndBadBodies_WithFieldPaths_AndWritesNothing', async () => {
    const s = await setup();
    const { fx, endpointId } = s;
    fx.clock.advance(40 * 86400_000);
    const scan = async () => ((await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.webhooks, ConsistentRead: true }))).Items ?? []).length;
    const jobsScan = async () => ((await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.jobs, ConsistentRead: true }))).Items ?? []).length;
    const before = [await scan(), await jobsScan()];
    const now = fx.clock.now();
    for (const [body, path] of [
      [{ since: new Date(now - 31 * 86400_000).toISOString() }, 'body.since'],
      [{ since: new Date(now - 3600_000).toISOString(), until: new Date(now - 7200_000).toISOString() }, 'body.until'],
      [{ since: new Date(now + 3600_000).toISOString() }, 'body.since'],
      [{ since: 'last tuesday' }, 'body.since'],
      [{ since: new Date(now - 3600_000).toISOString(), dryRun: 'yes' }, 'body.dryRun'],
      [{ since: new Date(now - 3600_000).toISOString(), tenant: 'x' }, 'body.tenant'],
      [{}, 'body.since'],
    ] as const) {
      const answer = await s.api.call('t', 'POST', `/v1/endpoints/${endpointId}/recover`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.issues.map((i: any) => i.path), JSON.stringify(body)).toContain(path);
    }
    expect([await scan(), await jobsScan()]).toEqual(before);
    expect((await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/rcv_${'0'.repeat(24)}`)).status).toBe(404);
    expect((await s.api.call('t', 'GET', `/v1/endpoints/${endpointId}/recoveries/nope`)).status).toBe(400);
    expect((await s.api.call('t', 'POST', `/v1/endpoints/ep_t.${'0'.repeat(32)}/recover`, { since: new Date(now - 3600_000).toISOString() })).status).toBe(404);
  });
});
