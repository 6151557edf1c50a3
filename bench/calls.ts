import { randomUUID } from 'node:crypto';
import { PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { callsDefaults } from '../functions/calls/config.ts';
import { attemptKey, batchIds, batchKey, callIdFor, contactKey, LIST_PAGE_SIZE, slotKey, tenantKey } from '../functions/calls/model.ts';
import type { BatchRow, CallPosition, SlotRow, TenantRow } from '../functions/calls/model.ts';
import { signCallWebhook } from '../functions/calls/signature.ts';
import { endpointIds, endpointKey, tenantEndpointKey, waitKey } from '../functions/webhooks/endpoint.ts';
import type { EndpointRow } from '../functions/webhooks/endpoint.ts';
import type { JobClient } from '../functions/jobs/index.ts';
import { parseMailConfig } from '../functions/mail/config.ts';
import { transportFor } from '../functions/mail/smtp-transport.ts';
import type { TableNames } from '../functions/app/system.ts';
import { createLocalHost } from '../functions/local/host.ts';
import { systemClock } from '../functions/platform/clock.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { benchTables, fmt, percentile, pool } from './support.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** The bench tenant's one webhook endpoint. */
const BENCH_ENDPOINT = endpointIds.make('bench', 'b'.repeat(32));
const CONCURRENCY = 16;

export interface CallsBenchResult {
  lines: string[];
  webhooksPerSecond: number;
  rawTransactionsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  requestsPerWebhook: Record<string, number>;
}

/** Where the bench writes its seed state directly. */
interface SeedTarget {
  db: DynamoDBDocumentClient;
  tableNames: TableNames;
  jobs: JobClient;
}

const numberOf = (i: number) => `+1415${String(1_000_000 + i)}`;
/** Contact i's place in round 1's list (upload order, pages of LIST_PAGE_SIZE). */
const positionOf = (i: number): CallPosition => ({ round: 1, page: Math.floor(i / LIST_PAGE_SIZE), pos: i % LIST_PAGE_SIZE });
const callOf = (batchId: string, i: number) => callIdFor(batchId, numberOf(i), positionOf(i));

/**
 * One tenant and one batch with `n` contacts Calling in round 1 (their dial run's watchdog not yet due):
 * the state results arrive in. The dial writes no contact: the batch's cursor past every position is what
 * makes them Calling.
 */
async function seedCalling(deps: SeedTarget, n: number): Promise<string> {
  const batchId = batchIds.make('bench', randomUUID().replaceAll('-', ''));
  const now = systemClock.now();
  const at = new Date(now).toISOString();
  const tenant: TenantRow = { ...tenantKey('bench'), tenantId: 'bench', concurrencyLimit: 100_000, active: 0, createdAt: at, updatedAt: at };
  const batch: BatchRow = {
    ...batchKey(batchId), batchId, tenantId: 'bench', status: 'InProgress', round: 1, maxAttempts: 3, retry: { baseSeconds: 30, capSeconds: 3600 },
    minConversationDurationSeconds: 10, contactCount: n, createdAt: at, updatedAt: at, listPages: Math.ceil(n / LIST_PAGE_SIZE), roundSize: n, dialPage: Math.ceil(n / LIST_PAGE_SIZE), dialPos: 0,
    // Not fully dialled, so no result is "the last call": every one takes the common path.
    dialComplete: false, nQueued: 0, nCalling: n, nCompleted: 0, nRetryEligible: 0, byCode: {}, finPage: 0, finPos: 0, nextPages: 0, nextSize: 0,
  };
  const put = (table: string, item: object) => deps.db.send(new PutCommand({ TableName: table, Item: item })).then(() => undefined);
  await put(deps.tableNames.calls, tenant);
  // One slot shard holding every call (callIdFor's ids name shard 0), as `PUT /v1/tenants` would leave it.
  const slot: SlotRow = { ...slotKey('bench', 0), tenantId: 'bench', shard: 0, active: n, limit: 100_000 };
  await put(deps.tableNames.calls, slot);
  await put(deps.tableNames.calls, batch);
  // The tenant's one webhook endpoint, busy (another delivery holds its lease, as in a campaign under way):
  // each result's call.completed waits in its list, written in the result's transaction.
  const endpoint: EndpointRow = { ...endpointKey(BENCH_ENDPOINT), endpointId: BENCH_ENDPOINT, tenantId: 'bench', url: 'https://hooks.example.com/bench', createdAt: at, disabled: false, secretCiphertext: 'unused', holder: 'webhook.deliver:elsewhere', busyUntil: new Date(now + 86_400_000).toISOString() };
  await put(deps.tableNames.webhooks, endpoint);
  await put(deps.tableNames.webhooks, { ...tenantEndpointKey('bench', at, BENCH_ENDPOINT), endpointId: BENCH_ENDPOINT });
  return batchId;
}

/**
 * The raw DynamoDB Local rate of the intake's transaction shape, in the same run: five items on the same
 * hot tenant and batch (the contact's completion of round 1, only if it has none; tenant − 1; batch
 * counters, only if its cursor passed the call's position; the call's attempt item; the event's entry in the busy endpoint's wait
 * list), `CONCURRENCY` in flight, no HTTP, no classification, no reads, no job layer.
 */
async function rawIntakeShapeRate(deps: SeedTarget, batchId: string, n: number): Promise<number> {
  const started = performance.now();
  await pool(n, CONCURRENCY, async (i) => {
    const now = new Date().toISOString();
    const eventId = `evt_raw${i}${randomUUID().slice(0, 8)}`;
    await deps.db.send(
      new TransactWriteCommand({
        TransactItems: [
          { Update: { TableName: deps.tableNames.calls, Key: contactKey(batchId, numberOf(i)), UpdateExpression: 'SET #s = :done, #c = :code, #r = :round, #call = :call, #u = :now', ConditionExpression: 'attribute_not_exists(pk) OR #r < :round', ExpressionAttributeNames: { '#s': 'status', '#c': 'code', '#u': 'updatedAt', '#r': 'round', '#call': 'callId' }, ExpressionAttributeValues: { ':done': 'Completed', ':code': 'NO_PICKUP', ':now': now, ':round': 1, ':call': callOf(batchId, i) } } },
          { Update: { TableName: deps.tableNames.calls, Key: slotKey('bench', 0), UpdateExpression: 'SET #a = #a - :one', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeNames: { '#a': 'active' }, ExpressionAttributeValues: { ':one': 1 } } },
          { Update: { TableName: deps.tableNames.calls, Key: batchKey(batchId), UpdateExpression: 'SET #bc.#k = if_not_exists(#bc.#k, :zero) + :one, #nc = #nc - :one, #nd = #nd + :one', ConditionExpression: '#s = :ip AND #r = :round AND (#dp > :page OR (#dp = :page AND #dq > :pos)) AND NOT (#dc = :t AND #nc = :one)', ExpressionAttributeNames: { '#bc': 'byCode', '#k': 'NO_PICKUP', '#nc': 'nCalling', '#nd': 'nCompleted', '#s': 'status', '#r': 'round', '#dc': 'dialComplete', '#dp': 'dialPage', '#dq': 'dialPos' }, ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':ip': 'InProgress', ':round': 1, ':t': true, ':page': positionOf(i).page, ':pos': positionOf(i).pos } } },
          // The call's attempt item (issue 26), put in the same transaction.
          { Put: { TableName: deps.tableNames.calls, Item: { ...attemptKey(batchId, numberOf(i), 1), batchId, contactNumber: numberOf(i), round: 1, callId: callOf(batchId, i), code: 'NO_PICKUP', retryable: true, source: 'webhook', completedAt: now } } },
          { Put: { TableName: deps.tableNames.webhooks, Item: { ...waitKey(BENCH_ENDPOINT, now, `webhook.deliver:${eventId}:${BENCH_ENDPOINT}`), jobId: `webhook.deliver:${eventId}:${BENCH_ENDPOINT}`, event: { id: eventId, tenantId: 'bench', type: 'call.completed', timestamp: now, data: { batchId, contactNumber: numberOf(i) } }, parkedAt: now } } },
        ],
      }),
    );
  });
  return n / ((performance.now() - started) / 1000);
}

/** The local host's intake (real clock): routes, job layer and in-process queues; no worker consumes the queues. */
async function localIntake(endpoint: string) {
  const { clients, tableNames, counter } = await benchTables(endpoint);
  // Nothing consumes the mail queue here: configured, never sends.
  const mailConfig = parseMailConfig({ MAIL_DOMAIN: 'bench.redial', PUBLIC_BASE_URL: 'http://127.0.0.1:9', MAIL_TRANSPORT: 'smtp', SMTP_URL: 'smtp://127.0.0.1:9' });
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock: systemClock,
    rng: seededRng(2),
    logger: createLogger('bench'),
    metrics: new MemoryMetrics(),
    workers: [],
    contexts: {
      calls: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: SECRET, callTimeoutSeconds: 600 },
      mail: { config: mailConfig, transport: transportFor(mailConfig.transport, clients) },
    },
    serve: { port: 0 },
  });
  const seed: SeedTarget = { db: clients.dynamo, tableNames, jobs: host.jobs.client };
  return { seed, counter, transport: host.local!, url: host.url!, stop: () => host.stop() };
}

/** Intake throughput and latency over HTTP (signed, `CONCURRENCY` in flight) next to the raw rate of its transaction shape, and AWS requests per applied result. */
export async function benchCalls(endpoint: string, n = 1500): Promise<CallsBenchResult> {
  const lines: string[] = [];
  // The raw shape before and after the intake run, on tables of their own: DynamoDB Local warms up, and
  // the ratio should not favour either side.
  const rawRate = async () => {
    const raw = await localIntake(endpoint);
    const batch = await seedCalling(raw.seed, n);
    const rate = await rawIntakeShapeRate(raw.seed, batch, n);
    await raw.stop();
    return rate;
  };
  // Warm DynamoDB Local's JIT on this shape first (not measured).
  {
    const warm = await localIntake(endpoint);
    await rawIntakeShapeRate(warm.seed, await seedCalling(warm.seed, 300), 300);
    await warm.stop();
  }
  const rawBefore = await rawRate();

  const intake = await localIntake(endpoint);
  const batchId = await seedCalling(intake.seed, n + 1);
  // Signed up front: signing is the caller's work, not the intake's.
  const requests = Array.from({ length: n + 1 }, (_, i) => {
    const body = JSON.stringify({ batchId, contactNumber: numberOf(i), callId: callOf(batchId, i), code: 'NO_PICKUP', emptyTranscription: true, durationSeconds: 0 });
    return { body, headers: { 'content-type': 'application/json', ...signCallWebhook(SECRET, `msg_${randomUUID()}`, Math.floor(Date.now() / 1000), body) } };
  });
  const post = async (i: number) => {
    const started = performance.now();
    const response = await fetch(`${intake.url}/v1/calls/webhook`, { method: 'POST', ...requests[i]! });
    const answer = (await response.json()) as { outcome?: string };
    if (response.status !== 200 || answer.outcome !== 'applied') throw new Error(`result ${i}: ${response.status} ${JSON.stringify(answer)}`);
    return performance.now() - started;
  };
  // One result first: it reads the batch's settings into the per-container cache, as a warm Lambda has.
  await post(n);
  intake.counter.reset();
  const sends = intake.transport.counts.sendMessage;
  const latencies: number[] = [];
  const started = performance.now();
  await pool(n, CONCURRENCY, async (i) => {
    latencies.push(await post(i));
  });
  const webhooksPerSecond = n / ((performance.now() - started) / 1000);
  const requestsPerWebhook: Record<string, number> = {};
  for (const [op, count] of Object.entries(intake.counter.toJSON())) requestsPerWebhook[op] = count / n;
  requestsPerWebhook['SQS.SendMessage'] = (intake.transport.counts.sendMessage - sends) / n;
  await intake.stop();

  const rawAfter = await rawRate();
  const rawTransactionsPerSecond = (rawBefore + rawAfter) / 2;
  const latencyP50 = percentile(latencies, 50);
  const latencyP99 = percentile(latencies, 99);
  lines.push(`intake throughput         ${fmt(webhooksPerSecond)} results/s (${n} signed results over HTTP, ${CONCURRENCY} in flight, one batch and tenant)`);
  lines.push(`intake latency            p50 ${fmt(latencyP50, 1)} ms, p99 ${fmt(latencyP99, 1)} ms, max ${fmt(Math.max(...latencies), 1)} ms`);
  lines.push(`raw transaction shape     ${fmt(rawTransactionsPerSecond)} TransactWriteItems/s (before ${fmt(rawBefore)}, after ${fmt(rawAfter)}; the same 5 items, same hot tenant and batch, ${CONCURRENCY} in flight)`);
  lines.push(`ratio                     ${fmt(webhooksPerSecond / rawTransactionsPerSecond, 2)} of the raw rate`);
  lines.push(`requests per result       ${Object.entries(requestsPerWebhook).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')} (warm cache; the Query and BatchGetItem read the tenant's endpoint to publish the result, the GetItem is the second look at its lease; it is busy, so nothing is sent)`);
  return { lines, webhooksPerSecond, rawTransactionsPerSecond, latencyP50, latencyP99, requestsPerWebhook };
}
