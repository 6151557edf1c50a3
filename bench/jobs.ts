import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { systemClock } from '../functions/platform/clock.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { defaultPolicy, defineKind, handle } from '../functions/jobs/index.ts';
import type { JobHandler } from '../functions/jobs/index.ts';
import { createLocalHost } from '../functions/local/host.ts';
import { opsModule } from '../functions/ops/module.ts';
import { benchTables, fmt, percentile, pool } from './support.ts';

const noopKind = defineKind({ kind: 'bench.noop', queue: 'ops', policy: defaultPolicy, args: z.object({ i: z.number() }), description: 'does nothing' });
const opsQueue = opsModule.queues.ops;

/** The job layer on the local host's queues, on the real clock, against DynamoDB Local: only the ops queue's worker runs, with a no-op kind. */
async function localJobs(endpoint: string, onRun: (id: string) => void = () => undefined) {
  const { clients, tableNames, counter } = await benchTables(endpoint);
  const handler = handle(noopKind, async (_args, ctx) => onRun(ctx.id)) as unknown as JobHandler<unknown>;
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock: systemClock,
    rng: seededRng(1),
    logger: createLogger('bench'),
    metrics: new MemoryMetrics(),
    workers: ['ops'],
    handlers: () => [handler],
  });
  return { clients, tableNames, counter, jobs: host.jobs, queue: host.queue('ops'), transport: host.local!, stop: () => host.stop() };
}

/**
 * Raw DynamoDB Local rate of the job layer's write shape: a conditional UpdateItem of a row that has a
 * byCheck entry and leaves it where it is (a claim or an outcome writes no index entry), `concurrency` in flight.
 */
async function rawConditionalUpdateRate(endpoint: string, n: number, concurrency: number): Promise<number> {
  const { clients, tableNames } = await benchTables(endpoint);
  await pool(n, concurrency, (i) => clients.dynamo.send(new PutCommand({ TableName: tableNames.jobs, Item: { id: `raw-${i}`, state: 'available', seq: 1, checkShard: `c${i % 32}`, checkAt: `x#${i}` } })).then(() => undefined));
  const started = performance.now();
  await pool(n, concurrency, async (i) => {
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: tableNames.jobs,
        Key: { id: `raw-${i}` },
        // The job layer's write shape: a conditional state change that leaves the index key as it is.
        UpdateExpression: 'SET #s = :running, #seq = #seq + :one',
        ConditionExpression: '#s = :available AND #seq = :seq',
        ExpressionAttributeNames: { '#s': 'state', '#seq': 'seq' },
        ExpressionAttributeValues: { ':running': 'running', ':available': 'available', ':one': 1, ':seq': 1 },
      }),
    );
  });
  return n / ((performance.now() - started) / 1000);
}

export interface JobsBenchResult {
  lines: string[];
  jobsPerSecond: number;
  rawUpdatesPerSecond: number;
  requestsPerJob: Record<string, number>;
  latenessP50: number;
  latenessP99: number;
}

/** Throughput against the raw rate, requests per job by operation, and timer lateness with 1,000 jobs due at once. */
export async function benchJobs(endpoint: string, n = 2000): Promise<JobsBenchResult> {
  const inFlight = opsQueue.batchSize * opsQueue.maxConcurrency;
  const lines: string[] = [];

  // 1. Throughput: n no-op jobs enqueued (16 at a time, as API requests would) and run to completion, between
  // two measurements of the raw rate, after one untimed to warm DynamoDB Local's JVM up (cold, it ran at
  // half its warm rate, and the first thing measured in a run paid for that).
  await rawConditionalUpdateRate(endpoint, n, inFlight);
  const rawBefore = await rawConditionalUpdateRate(endpoint, n, inFlight);
  let done = 0;
  let resolveAll: () => void = () => undefined;
  const allDone = new Promise<void>((resolve) => (resolveAll = resolve));
  const a = await localJobs(endpoint, () => {
    if (++done === n) resolveAll();
  });
  const started = performance.now();
  await pool(n, 16, async (i) => {
    await a.jobs.client.enqueue(noopKind, { i });
  });
  await allDone;
  await a.queue.idle();
  const seconds = (performance.now() - started) / 1000;
  const jobsPerSecond = n / seconds;
  const rawAfter = await rawConditionalUpdateRate(endpoint, n, inFlight);
  // Against the faster of the two: DynamoDB Local is still warming up after the untimed pass, and the
  // slower figure would flatter the job layer.
  const rawUpdatesPerSecond = Math.max(rawBefore, rawAfter);
  const requestsPerJob: Record<string, number> = {};
  for (const [op, count] of Object.entries(a.counter.toJSON())) requestsPerJob[op] = count / n;
  requestsPerJob['SQS.SendMessage'] = a.transport.counts.sendMessage / n;
  requestsPerJob['Scheduler.CreateSchedule'] = a.transport.counts.createSchedule / n;
  await a.stop();

  lines.push(`job throughput            ${fmt(jobsPerSecond)} jobs/s (${n} no-op jobs, enqueue → completed)`);
  lines.push(`raw conditional updates   ${fmt(rawUpdatesPerSecond)} UpdateItem/s (the faster of before ${fmt(rawBefore)} and after ${fmt(rawAfter)}, one untimed pass first; same run, same shape: a conditional state change that writes no index entry, ${inFlight} in flight)`);
  lines.push(`ratio                     ${fmt(jobsPerSecond / rawUpdatesPerSecond, 2)} jobs per raw update; a job is 3 writes (enqueue, claim, complete), so ${fmt((3 * jobsPerSecond) / rawUpdatesPerSecond, 2)} of the write-bound rate`);
  lines.push(`requests per job          ${Object.entries(requestsPerJob).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')}`);

  // 2. Timer lateness: 1,000 jobs due at the same instant; lateness = claim time − due time.
  const late: number[] = [];
  const b = await localJobs(endpoint);
  const dueAt = Date.now() + 5_000;
  await pool(1000, 16, async (i) => {
    await b.jobs.client.enqueue(noopKind, { i }, { at: dueAt });
  });
  while (Date.now() < dueAt) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 100));
  await b.queue.idle();
  for (let page = await b.jobs.client.list({ state: 'completed', limit: 200 }); ; ) {
    for (const row of page.jobs) late.push(Date.parse(row.attemptedAt!) - Date.parse(row.scheduledAt));
    if (!page.cursor) break;
    page = await b.jobs.client.list({ state: 'completed', limit: 200, cursor: page.cursor });
  }
  await b.stop();
  const latenessP50 = percentile(late, 50);
  const latenessP99 = percentile(late, 99);
  lines.push(`timer lateness            p50 ${fmt(latenessP50)} ms, p99 ${fmt(latenessP99)} ms, max ${fmt(Math.max(...late))} ms (${late.length} jobs due at once, ${inFlight} run at a time)`);
  return { lines, jobsPerSecond, rawUpdatesPerSecond, requestsPerJob, latenessP50, latenessP99 };
}
