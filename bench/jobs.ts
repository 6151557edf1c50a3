import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { systemClock } from '../functions/platform/clock.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { LocalQueue, LocalTransport } from '../functions/platform/local/queues.ts';
import { defineKind, handle, policies } from '../functions/jobs/index.ts';
import type { JobHandler } from '../functions/jobs/index.ts';
import { queues } from '../functions/jobs/queues.ts';
import { createJobRuntime } from '../functions/jobs/runtime.ts';
import { benchTables, fmt, percentile, pool } from './support.ts';

const noopKind = defineKind({ kind: 'bench.noop', queue: 'ops', policy: policies['ops.probe'], args: z.object({ i: z.number() }), description: 'does nothing' });

/** The job layer on the local runtime's queues, on the real clock, against DynamoDB Local. */
async function localJobs(endpoint: string, onRun: (id: string) => void = () => undefined) {
  const { clients, tableNames, counter } = await benchTables(endpoint);
  const spec = queues.ops;
  const queue = new LocalQueue({ name: 'ops', clock: systemClock, batchSize: spec.batchSize, maxConcurrency: spec.maxConcurrency, visibilityMs: 6 * spec.timeoutSeconds * 1000 });
  const transport = new LocalTransport([queue], systemClock);
  const jobs = createJobRuntime({
    db: clients.dynamo,
    jobsTable: tableNames.jobs,
    transport,
    clock: systemClock,
    rng: seededRng(1),
    logger: createLogger('bench'),
    metrics: new MemoryMetrics(),
  });
  const handler = handle(noopKind, async (_args, ctx) => onRun(ctx.id)) as unknown as JobHandler<never>;
  const worker = jobs.worker('ops', [handler]);
  queue.consume((event) => worker(event, {} as never));
  return { clients, tableNames, counter, jobs, queue, transport };
}

/** Raw DynamoDB Local rate of the job layer's write shape: a conditional UpdateItem that moves the item in the byState index, `concurrency` in flight. */
async function rawConditionalUpdateRate(endpoint: string, n: number, concurrency: number): Promise<number> {
  const { clients, tableNames } = await benchTables(endpoint);
  await pool(n, concurrency, (i) => clients.dynamo.send(new PutCommand({ TableName: tableNames.jobs, Item: { id: `raw-${i}`, state: 'available', seq: 1, stateOrder: `x#${i}` } })).then(() => undefined));
  const started = performance.now();
  await pool(n, concurrency, async (i) => {
    await clients.dynamo.send(
      new UpdateCommand({
        TableName: tableNames.jobs,
        Key: { id: `raw-${i}` },
        // The job layer's write shape: a conditional state change that moves the item in the byState index.
        UpdateExpression: 'SET #s = :running, #seq = #seq + :one, #order = :order',
        ConditionExpression: '#s = :available AND #seq = :seq',
        ExpressionAttributeNames: { '#s': 'state', '#seq': 'seq', '#order': 'stateOrder' },
        ExpressionAttributeValues: { ':running': 'running', ':available': 'available', ':one': 1, ':seq': 1, ':order': `y#${i}` },
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
  const inFlight = queues.ops.batchSize * queues.ops.maxConcurrency;
  const lines: string[] = [];

  // 1. Throughput: n no-op jobs enqueued (16 at a time, as API requests would) and run to completion.
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
  const rawUpdatesPerSecond = await rawConditionalUpdateRate(endpoint, n, inFlight);
  const requestsPerJob: Record<string, number> = {};
  for (const [op, count] of Object.entries(a.counter.toJSON())) requestsPerJob[op] = count / n;
  requestsPerJob['SQS.SendMessage'] = a.transport.counts.sendMessage / n;
  requestsPerJob['Scheduler.CreateSchedule'] = a.transport.counts.createSchedule / n;
  await a.queue.stop();

  lines.push(`job throughput            ${fmt(jobsPerSecond)} jobs/s (${n} no-op jobs, enqueue → completed)`);
  lines.push(`raw conditional updates   ${fmt(rawUpdatesPerSecond)} UpdateItem/s (same run, same shape: a state change that moves the item in the index, ${inFlight} in flight)`);
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
  for (let page = await b.jobs.store.list({ state: 'completed', limit: 200 }); ; ) {
    for (const row of page.jobs) late.push(Date.parse(row.attemptedAt!) - Date.parse(row.scheduledAt));
    if (!page.cursor) break;
    page = await b.jobs.store.list({ state: 'completed', limit: 200, cursor: page.cursor });
  }
  await b.queue.stop();
  const latenessP50 = percentile(late, 50);
  const latenessP99 = percentile(late, 99);
  lines.push(`timer lateness            p50 ${fmt(latenessP50)} ms, p99 ${fmt(latenessP99)} ms, max ${fmt(Math.max(...late))} ms (${late.length} jobs due at once, ${inFlight} run at a time)`);
  return { lines, jobsPerSecond, rawUpdatesPerSecond, requestsPerJob, latenessP50, latenessP99 };
}
