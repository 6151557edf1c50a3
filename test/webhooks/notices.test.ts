import { afterEach, describe, expect, it } from 'vitest';
import { createLocalHost } from '../../functions/local/host.ts';
import type { LocalHost } from '../../functions/local/host.ts';
import type { MailConfig } from '../../functions/mail/config.ts';
import { SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { ownerNotifyKind } from '../../functions/mail/kinds.ts';
import { EventType } from '../../functions/webhooks/events.ts';
import { DisabledReason } from '../../functions/webhooks/endpoint.ts';
import { noticeEventId } from '../../functions/webhooks/notices.ts';
import { freshTables } from '../support/dynamo.ts';
import { settler } from '../support/jobs.ts';
import { Receiver } from '../support/webhooks.ts';

/**
 * When redial disables an endpoint, the tenant's owner gets a mail (through a real SMTP server, exempt from
 * the owner-notify burst cap) and the tenant's other subscribed endpoints get `endpoint.disabled`; enabling
 * it sends `endpoint.enabled` to the others. The whole system on DynamoDB Local, its workers on the
 * in-process queues, a manual clock.
 */

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup() {
  const sink = await startSmtpSink({});
  const { clients, tableNames } = await freshTables();
  const clock = new ManualClock();
  const metrics = new MemoryMetrics();
  const config: MailConfig = { domain: 'test.redial', from: 'redial <no-reply@test.redial>', publicBaseUrl: 'http://127.0.0.1:9', transport: { type: 'smtp', url: sink.url } };
  const transport = new SmtpMailTransport(createSmtpClient({ url: sink.url, connectionTimeoutMs: 2000, greetingTimeoutMs: 2000, socketTimeoutMs: 5000 }));
  const host: LocalHost = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng: seededRng(11),
    logger: createLogger('test'),
    metrics,
    workers: ['webhooks', 'deliveries', 'mail'],
    contexts: { mail: { config, transport }, webhooks: { allowLoopback: true, requestTimeoutMs: 2000 } },
  });
  closers.push(() => sink.stop(), () => host.stop());
  const webhooks = host.system.webhooks;
  // Each queue's idle is its own: work one queue's job hands to another (a delivery's notice, the notice's
  // mail) is awaited by settling again, until a pass finds nothing left.
  const once = settler(clock, () => host.idle());
  const settle = async (untilMs: number) => {
    for (let i = 0; i < 4; i++) await once(untilMs);
  };
  const receiver = async (answer: number) => {
    const r = await Receiver.start([{ status: answer }]);
    closers.push(() => r.close());
    return r;
  };
  const publish = async (tenantId: string, type: EventType = EventType.callCompleted) => {
    const published = await webhooks.publisher.prepare({ tenantId, type, data: { n: 1 } }, clock.now());
    const result = await webhooks.deps.store.transact(published.items);
    if (!result.committed) throw result.error;
    await published.afterCommit();
    return published.event;
  };
  await host.system.mail.store.putConfirmedContact('t', 'owner@t.test', clock.now());
  return { sink, clock, metrics, host, webhooks, settle, receiver, publish };
}

const eventsOf = (r: Receiver) => r.requests.map((q) => JSON.parse(q.body) as { type: string; data: Record<string, unknown> });

describe('notices when redial disables an endpoint, and when it is enabled again', () => {
  it('A410_MailsTheOwnerPastTheBurstCap_AndSendsEndpointDisabledToTheOtherSubscribedEndpointsOnly_EnableSendsEndpointEnabledToTheOthers', async () => {
    const { sink, clock, webhooks, settle, receiver, publish, host } = await setup();
    const gone = await receiver(410);
    const watcher = await receiver(200);
    const callsOnly = await receiver(200);
    const scope = operatorScope('t');
    const { endpointId: goneId } = await webhooks.endpoints.register(scope, { url: gone.url(), eventTypes: [EventType.callCompleted] });
    const { endpointId: watcherId } = await webhooks.endpoints.register(scope, { url: watcher.url(), eventTypes: [EventType.endpointDisabled, EventType.endpointEnabled] });
    await webhooks.endpoints.register(scope, { url: callsOnly.url(), eventTypes: [EventType.callCompleted] });
    // The owner's burst cap (5 an hour) is spent first: the disable's mail goes out all the same.
    for (let i = 0; i < 6; i++) await host.jobs.client.enqueue(ownerNotifyKind, { tenantId: 't', eventId: `evt_burst${i}`, template: 'batch.finalised', data: { batchId: `b${i}`, byCode: { COMPLETED: 1 } } });
    await settle(1000);
    expect(sink.messages()).toHaveLength(5);

    await publish('t');
    await settle(60_000);
    const row = await webhooks.deps.store.getEndpoint(goneId);
    expect(row).toMatchObject({ disabled: true, disabledReason: DisabledReason.gone, noticedAt: row?.disabledAt });
    const eventId = noticeEventId(goneId, 'disabled', row!.disabledAt!);
    // The owner's mail, past the burst cap.
    const mails = sink.messages().filter((m) => m.messageId === `<${eventId}@test.redial>`);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toBe(`Webhook endpoint ${goneId} disabled: it answered 410 Gone`);
    expect(mails[0]!.text).toContain(gone.url());
    expect(await host.system.mail.store.getNotice('t', eventId)).toMatchObject({ status: 'sent', recipient: 'owner@t.test' });
    // endpoint.disabled to the endpoint subscribed to it, with the webhook-id of the notice's event; not to the others.
    expect(eventsOf(watcher)).toEqual([{ type: 'endpoint.disabled', timestamp: expect.any(String), data: { endpointId: goneId, url: gone.url(), reason: 'gone', disabledAt: row!.disabledAt } }]);
    expect(watcher.requests[0]!.headers['webhook-id']).toBe(eventId);
    expect(eventsOf(callsOnly).map((e) => e.type)).toEqual(['call.completed']);
    expect(gone.requests).toHaveLength(1);

    // The sweep finds the disable noticed: nothing more.
    await webhooks.sweep(clock.now());
    await settle(60_000);
    expect(sink.messages().filter((m) => m.messageId === `<${eventId}@test.redial>`)).toHaveLength(1);
    expect(watcher.requests).toHaveLength(1);

    // Enabled again: the others hear of it; the endpoint itself does not.
    gone.reply([{ status: 200 }]);
    clock.advance(1000);
    await webhooks.endpoints.enable(scope, goneId);
    await settle(60_000);
    expect(eventsOf(watcher).map((e) => [e.type, e.data['endpointId']])).toEqual([
      ['endpoint.disabled', goneId],
      ['endpoint.enabled', goneId],
    ]);
    expect(gone.requests).toHaveLength(1);
    expect(watcherId).not.toBe(goneId);
  });

  it('ADisableWhoseNoticeWasLost_IsNoticedByTheSweep_Once', async () => {
    const { sink, clock, webhooks, settle, receiver } = await setup();
    const watcher = await receiver(200);
    const scope = operatorScope('t');
    const { endpointId: failingId } = await webhooks.endpoints.register(scope, { url: 'http://127.0.0.1:9/failing', eventTypes: [EventType.callCompleted] });
    await webhooks.endpoints.register(scope, { url: watcher.url(), eventTypes: [EventType.endpointDisabled] });
    // Disabled as the sweep's 5-day rule does, with no notice enqueued (as if its enqueue was lost).
    const disabled = await webhooks.deps.store.disable(failingId, DisabledReason.failing, clock.now());
    expect(disabled?.noticedAt).toBeUndefined();
    await webhooks.sweep(clock.now());
    await settle(60_000);
    await webhooks.sweep(clock.now());
    await settle(60_000);
    expect(eventsOf(watcher).map((e) => [e.type, e.data['reason']])).toEqual([['endpoint.disabled', 'failing']]);
    const subjects = sink.messages().map((m) => m.subject);
    expect(subjects).toEqual([`Webhook endpoint ${failingId} disabled: every delivery to it failed for 5 days`]);
  });
});
