import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
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
import { route } from '../../functions/platform/http.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

const until = async (done: () => boolean): Promise<void> => {
  const deadline = Date.now() + 10_000;
  while (!done() && Date.now() < deadline) await sleep(10);
};

/**
 * The local host with the options the fault simulation (sim/host.ts) builds on: a wrapped transport, a
 * wrapper around each invocation, and a rescuer timed by the host clock.
 */
async function seamedHost(): Promise<{ host: LocalHost; clock: ManualClock; sends: string[]; boundaries: string[] }> {
  const prefix = `g${randomBytes(5).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(dynamoEndpoint(), Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials });
  const sink = await startSmtpSink();
  const clock = new ManualClock();
  const mail = parseMailConfig({ MAIL_DOMAIN: 'test.redial', PUBLIC_BASE_URL: 'http://127.0.0.1:9', MAIL_TRANSPORT: 'smtp', SMTP_URL: sink.url });
  const sends: string[] = [];
  const boundaries: string[] = [];
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng: seededRng(5),
    workers: ['ops'],
    wrapTransport: (local) => ({
      sendMessage: (queue, body, delaySeconds) => {
        sends.push(queue);
        return local.sendMessage(queue, body, delaySeconds);
      },
      createSchedule: (name, at, queue, body) => local.createSchedule(name, at, queue, body),
      deleteSchedule: (name) => local.deleteSchedule(name),
    }),
    boundaries: {
      batch: async (queue, event, run) => {
        boundaries.push(`batch ${queue} ${event.Records.length}`);
        const parts = await Promise.all(event.Records.map(run));
        return { batchItemFailures: parts.flatMap((p) => p.batchItemFailures) };
      },
      request: (route, run) => {
        boundaries.push(`request ${route}`);
        return run();
      },
      rescuerPass: (run) => {
        boundaries.push('rescuer');
        return run();
      },
    },
    contexts: {
      calls: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', callTimeoutSeconds: 600 },
      mail: { config: mail, transport: transportFor(mail.transport, clients) },
    },
    rescuer: { intervalMs: 60_000, rescueAfterMs: 180_000, onClock: true },
    serve: { port: 0 },
  });
  stops.push(async () => {
    await host.stop();
    await sink.stop();
    clients.dynamo.destroy();
  });
  return { host, clock, sends, boundaries };
}

describe("the local host's seams for the fault simulation", () => {
  it('SendsWakeUpsThroughTheWrappedTransportAndRunsEachBatchAndRequestInsideItsBoundary', { timeout: 60_000 }, async () => {
    const { host, sends, boundaries } = await seamedHost();
    const { id } = await host.jobs.client.enqueue(probeKind, { failTimes: 0 });
    await host.idle();
    expect(sends).toContain('ops');
    expect(boundaries).toContain('batch ops 1');
    expect((await host.jobs.store.get(id))?.state).toBe('completed');

    const answer = await fetch(`${host.url}/v1/tenants/acme`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2 }) });
    expect(answer.status).toBe(200);
    expect(boundaries).toContain('request PUT /v1/tenants/{tenantId}');
  });

  it('RunsTheRescuerWhenTheHostClockReachesItsPeriodAndNotBefore', { timeout: 60_000 }, async () => {
    const { host, clock, boundaries } = await seamedHost();
    await sleep(200);
    expect(host.rescuerPasses()).toBe(0);
    clock.advance(59_999);
    await sleep(200);
    expect(host.rescuerPasses()).toBe(0);
    clock.advance(1);
    await until(() => host.rescuerPasses() === 1);
    expect(host.rescuerPasses()).toBe(1);
    expect(boundaries.filter((b) => b === 'rescuer')).toHaveLength(1);
    clock.advance(60_000);
    await until(() => host.rescuerPasses() === 2);
    expect(host.rescuerPasses()).toBe(2);
  });
});

describe("the local host's admission (the capacity day's)", () => {
  it('ServesAtMostItsConcurrencyOfRequestsAtOnce_TheOthersWaitTheirTurn_AndEveryOneIsAnswered', { timeout: 60_000 }, async () => {
    const prefix = `a${randomBytes(5).toString('hex')}`;
    const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
    await ensureTables(dynamoEndpoint(), Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
    const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials });
    let serving = 0;
    let most = 0;
    const slow = route({
      method: 'GET',
      path: '/v1/test/slow',
      auth: 'none',
      summary: 'takes 50 ms',
      responses: { 200: { description: 'done', schema: z.object({ ok: z.boolean() }) } },
      handler: async () => {
        most = Math.max(most, ++serving);
        await sleep(50);
        serving--;
        return { status: 200, body: { ok: true } };
      },
    });
    const host = await createLocalHost({ db: clients.dynamo, tableNames, clock: new ManualClock(), rng: seededRng(5), workers: [], serve: { port: 0, concurrency: 2, extraRoutes: () => [slow] } });
    stops.push(async () => {
      await host.stop();
      clients.dynamo.destroy();
    });
    const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${host.url}/v1/test/slow`)));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 8 }, () => 200));
    expect(most).toBe(2);
  });
});
