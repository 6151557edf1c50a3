import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { tables } from '../../functions/app/system.ts';
import type { TableNames } from '../../functions/app/system.ts';
import { callsDefaults } from '../../functions/calls/config.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import type { LocalHost } from '../../functions/local/host.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { transportFor } from '../../functions/mail/smtp-transport.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import type { SmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { RequestRecorder } from '../../functions/platform/recorder.ts';
import type { InvocationRecord, Recorded, RunRecord } from '../../functions/platform/recorder.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** The local host with a recorder on every boundary, as the capacity benchmark builds it. */
async function recordedHost(): Promise<{ host: LocalHost; recorder: RequestRecorder; clock: ManualClock; sink: SmtpSink }> {
  const prefix = `h${randomBytes(5).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(dynamoEndpoint(), Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
  const recorder = new RequestRecorder({ tables: Object.fromEntries(Object.entries(tables).map(([key, d]) => [tableNames[key as keyof TableNames], d])), complete: true });
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials, recorder });
  const sink = await startSmtpSink();
  const clock = new ManualClock();
  const mail = parseMailConfig({ MAIL_DOMAIN: 'test.redial', PUBLIC_BASE_URL: 'http://127.0.0.1:9', MAIL_TRANSPORT: 'smtp', SMTP_URL: sink.url });
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng: seededRng(3),
    recorder,
    workers: ['mail'],
    contexts: {
      calls: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', callTimeoutSeconds: 600 },
      mail: { config: mail, transport: transportFor(mail.transport, clients) },
    },
    rescuer: { intervalMs: 20, rescueAfterMs: 60_000 },
    serve: { port: 0 },
  });
  stops.push(async () => {
    await host.stop();
    await sink.stop();
    clients.dynamo.destroy();
  });
  return { host, recorder, clock, sink };
}

const invocations = (records: readonly Recorded[], fn: string) => records.filter((r): r is InvocationRecord => r.service === 'Lambda' && r.operation === 'Invoke' && (r as InvocationRecord).function === fn);

describe('the local host under a request recorder (the capacity benchmark\'s host)', () => {
  it('RecordsEachApiRequestByTheFunctionServingItsRoute_EachWorkerBatchAndRecord_EachMailAndEachRescuerPass', { timeout: 60_000 }, async () => {
    const { host, recorder, sink } = await recordedHost();
    const body = JSON.stringify({ concurrencyLimit: 2, ownerEmail: 'owner@acme.test' });
    const put = await fetch(`${host.url}/v1/tenants/acme`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    expect(put.status).toBe(200);
    const unsigned = await fetch(`${host.url}/v1/calls/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unsigned.status).toBe(401);

    // The owner address's confirmation mail runs on the mail worker and reaches the sink.
    await host.idle();
    expect(sink.messages()).toHaveLength(1);
    const deadline = Date.now() + 10_000;
    while (host.rescuerPasses() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));

    const records = [...recorder.records];
    const [tenantPut] = invocations(records, 'api');
    expect(tenantPut).toMatchObject({ source: 'api:PUT /v1/tenants/{tenantId}', records: 1 });
    // Request and response bytes: the body as sent (before middy parses it) and the answer.
    expect(tenantPut!.bytes).toBeGreaterThan(Buffer.byteLength(body));
    expect(invocations(records, 'intake')).toMatchObject([{ source: 'api:POST /v1/calls/webhook' }]);
    expect(records.filter((r) => r.source === 'api:PUT /v1/tenants/{tenantId}' && r.service === 'DynamoDB').length).toBeGreaterThan(0);
    expect(invocations(records, 'worker:mail')).toMatchObject([{ records: 1 }]);
    expect(records.filter((r): r is RunRecord => r.service === 'Lambda' && r.operation === 'Record')).toMatchObject([{ function: 'worker:mail', kind: 'owner.email_confirmation' }]);
    expect(records.filter((r) => r.service === 'SES' && r.operation === 'SendEmail')).toHaveLength(1);
    expect(records.filter((r) => r.service === 'SQS' && r.operation === 'SendMessage').length).toBeGreaterThan(0);
    expect(host.rescuerPasses()).toBeGreaterThan(0);
    expect(invocations(records, 'rescuer').length).toBe(host.rescuerPasses());
  });

  it('FiresTheSchedulesStillWaiting_OnRequest', async () => {
    const { host, recorder } = await recordedHost();
    await host.jobs.client.enqueue(probeKind, { failTimes: 0 }, { delayMs: 3600_000 });
    expect(recorder.records.filter((r) => r.service === 'Scheduler' && r.operation === 'CreateSchedule')).toHaveLength(1);
    expect(host.firePendingSchedules()).toBe(1);
    expect(recorder.records.filter((r) => r.service === 'Scheduler' && r.operation === 'Invoke')).toHaveLength(1);
    expect(host.firePendingSchedules()).toBe(0);
  });
});
