// Webhook delivery benchmarks: a dead endpoint (what it is spared) and a backlog (what one-in-flight costs).
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAwsClients, localCredentials, RequestCounter } from '../functions/platform/aws.ts';
import { systemClock } from '../functions/platform/clock.ts';
import type { TimerClock } from '../functions/platform/clock.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { retrySchedule } from '../functions/jobs/index.ts';
import type { JobRow } from '../functions/jobs/index.ts';
import { JobStore } from '../functions/jobs/store.ts';
import { createLocalHost } from '../functions/local/host.ts';
import { deliveryJobId } from '../functions/webhooks/endpoint.ts';
import { webhookDeliverKind } from '../functions/webhooks/kinds.ts';
import { COOLDOWN_MS, LEASE_MS } from '../functions/webhooks/lease.ts';
import { operatorScope } from '../functions/platform/tenancy.ts';
import { benchTables, fmt, percentile } from './support.ts';

const minute = 60_000;
const hour = 60 * minute;

/**
 * Real time while anything runs; a jump to the next timer when nothing does. Work (DynamoDB, HTTP,
 * queue hops) takes the real time it takes, and an hour of waiting for backoffs costs nothing.
 */
class SkipIdleClock implements TimerClock {
  private offset = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];
  private seq = 0;
  private real: NodeJS.Timeout | undefined;

  now(): number {
    return Date.now() + this.offset;
  }

  setTimer(atMs: number, fn: () => void): () => void {
    const timer = { at: atMs, seq: this.seq++, fn };
    this.timers.push(timer);
    this.arm();
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
      this.arm();
    };
  }

  /** Moves time to the earliest timer and fires what is due. */
  jump(): number | undefined {
    const next = this.nextAt();
    if (next === undefined) return undefined;
    if (next > this.now()) this.offset += next - this.now();
    this.fireDue();
    return next;
  }

  nextAt(): number | undefined {
    return this.timers.reduce<number | undefined>((min, t) => (min === undefined || t.at < min ? t.at : min), undefined);
  }

  stop(): void {
    clearTimeout(this.real);
    this.timers = [];
  }

  private fireDue(): void {
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.now()).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      due.fn();
    }
    this.arm();
  }

  private arm(): void {
    clearTimeout(this.real);
    const next = this.nextAt();
    if (next === undefined) return;
    this.real = setTimeout(() => this.fireDue(), Math.max(0, Math.min(next - this.now(), 2 ** 31 - 1)));
  }
}

/** A receiver on 127.0.0.1 that answers with `answer()` after `delayMs`, and records when and what it got. */
async function receiver(answer: () => number, delayMs: number, clock: TimerClock) {
  const requests: { at: number; webhookId: string; status: number }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server: Server = createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const status = answer();
    requests.push({ at: clock.now(), webhookId: String(req.headers['webhook-id']), status });
    req.resume();
    setTimeout(() => {
      inFlight--;
      res.writeHead(status).end();
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests,
    maxInFlight: () => maxInFlight,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The local host with only the webhooks queue's worker, on a clock, with separate request counters for the
 * job layer's client and the webhooks context's. The worker starts when `start()` is called.
 */
async function webhookSystem(endpoint: string, clock: TimerClock) {
  const { clients, tableNames } = await benchTables(endpoint);
  const jobCounter = new RequestCounter();
  const hookCounter = new RequestCounter();
  const jobClients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials, requestCounter: jobCounter });
  const hookClients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials, requestCounter: hookCounter });
  const host = await createLocalHost({
    db: hookClients.dynamo,
    jobsDb: jobClients.dynamo,
    tableNames,
    clock,
    rng: seededRng(7),
    logger: createLogger('bench'),
    metrics: new MemoryMetrics(),
    contexts: { webhooks: { allowLoopback: true } },
    // No worker yet: the benches write their backlog before any delivery runs, then start() attaches it.
    workers: [],
  });
  const webhooks = host.system.webhooks;
  /** Stops the queue and the transport's schedule timers (a parked delivery's 6 h wake-up), closes every client. */
  const stop = async () => {
    await host.stop();
    for (const c of [clients, jobClients, hookClients]) c.dynamo.destroy();
  };
  // Deliveries run on their own queue; fanout and wake-ups on `webhooks`. Idle when both are at once.
  const queues = (['webhooks', 'deliveries'] as const).map((name) => host.queue(name));
  const queue = {
    idle: async () => {
      do for (const q of queues) await q.idle();
      while (queues.some((q) => !q.isIdle()));
    },
  };
  const start = () => {
    for (const name of ['webhooks', 'deliveries'] as const) {
      const worker = host.jobs.worker(name, host.system.handlers(name));
      host.queue(name).consume((event) => worker(event, {} as never));
    }
  };
  return { clients, tableNames, jobCounter, hookCounter, queue, transport: host.local!, jobs: host.jobs, webhooks, stop, start };
}

/**
 * Every delivery job row of an endpoint's events that has one, read through the uncounted client (a
 * delivery sent within another's run, and delivered, has none).
 */
async function deliveryRows(sys: Awaited<ReturnType<typeof webhookSystem>>, eventIds: string[], endpointId: string): Promise<JobRow[]> {
  const store = new JobStore(sys.clients.dynamo, sys.tableNames.jobs);
  const rows: JobRow[] = [];
  for (let i = 0; i < eventIds.length; i += 50) rows.push(...(await Promise.all(eventIds.slice(i, i + 50).map((id) => store.get(deliveryJobId(id, endpointId))))).filter((r): r is JobRow => r !== undefined));
  return rows;
}

/** Publishes an event as a domain does (its deliveries in one transaction: functions/webhooks/publish.ts); its id. */
async function publish(sys: Awaited<ReturnType<typeof webhookSystem>>, data: Record<string, unknown>, now: number): Promise<string> {
  const published = await sys.webhooks.publisher.prepare({ tenantId: 'bench', type: 'call.completed', data }, now);
  if (published.items.length > 0) {
    const result = await sys.webhooks.deps.store.transact(published.items);
    if (!result.committed) {
      await published.abandon();
      throw result.error;
    }
  }
  await published.afterCommit();
  return published.event.id;
}

/** Resolves once `count()` reaches `target` and the queue is idle, checking every 100 ms (real time). */
async function until(queue: { idle(): Promise<void> }, count: () => number, target: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (count() < target && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await queue.idle();
}

export interface DeadEndpointResult {
  lines: string[];
  requestsDuringOutage: number;
  perMessageRequests: number;
  recoveryToLastMs: number;
  discarded: number;
}

/**
 * 1,000 events to an endpoint that answers 503 for one hour, then 200. Counts requests during the outage
 * and the time from recovery to the last delivery; the per-message retry count (Svix, Convoy) is computed
 * from the same delivery creation times and the deliver kind's schedule.
 */
export async function benchDeadEndpoint(endpoint: string, n = 1000, outageMs = hour): Promise<DeadEndpointResult> {
  const clock = new SkipIdleClock();
  const sys = await webhookSystem(endpoint, clock);
  let down = true;
  const hook = await receiver(() => (down ? 503 : 200), 0, clock);
  const { endpointId } = await sys.webhooks.endpoints.register(operatorScope('bench'), { url: hook.url });
  const started = clock.now();
  sys.start();
  const eventIds: string[] = [];
  const publishedAt = new Map<string, number>();
  for (let i = 0; i < n; i += 8) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(8, n - i) }, async (_, j) => {
        const at = clock.now();
        const id = await publish(sys, { i: i + j }, at);
        publishedAt.set(id, at);
        return id;
      }),
    );
    eventIds.push(...batch);
  }
  const recoveredAt = started + outageMs;
  // Run until the outage is over: real time while work runs, a jump to the next timer when none does.
  for (;;) {
    await sys.queue.idle();
    const next = clock.nextAt();
    if (next === undefined || next >= recoveredAt) break;
    clock.jump();
  }
  // Nothing is due before the recovery time, so turning the endpoint on now is turning it on then.
  const duringOutage = hook.requests.length;
  down = false;
  const horizon = recoveredAt + 12 * hour;
  const answered = () => new Set(hook.requests.slice(duringOutage).map((r) => r.webhookId)).size;
  while (answered() < n) {
    await sys.queue.idle();
    if (answered() >= n) break;
    const next = clock.nextAt();
    if (next === undefined || next > horizon) break;
    clock.jump();
  }
  await sys.queue.idle();
  const rows = await deliveryRows(sys, eventIds, endpointId);
  // Delivered: answered 2xx (a delivery sent within another's run leaves no job row to tell it by).
  const ok = hook.requests.filter((r) => r.status >= 200 && r.status < 300);
  const lastDelivered = ok.length > 0 ? Math.max(...ok.map((r) => r.at)) : horizon;
  const discarded = rows.filter((r) => r.state === 'discarded').length;
  const undelivered = n - new Set(ok.map((r) => r.webhookId)).size;

  // Per-message retry: each message on its own schedule, from its own creation time.
  const offsets = [0, ...retrySchedule(webhookDeliverKind.policy).map((r) => r.cumulativeMs)];
  let perMessage = 0;
  let perMessageLast = 0;
  for (const id of eventIds) {
    const created = publishedAt.get(id)!;
    perMessage += offsets.filter((o) => created + o < recoveredAt).length;
    perMessageLast = Math.max(perMessageLast, created + (offsets.find((o) => created + o >= recoveredAt) ?? Infinity));
  }
  clock.stop();
  await sys.stop();
  await hook.close();

  const recoveryToLastMs = lastDelivered - recoveredAt;
  const lines = [
    `dead endpoint             ${n} events, endpoint answers 503 for ${fmt(outageMs / minute)} min (skip-idle clock), then 200`,
    `  requests during outage  ${duringOutage} (probe: one delivery at a time, one cooldown of ${fmt(COOLDOWN_MS / minute)} min apart once failing)`,
    `  per-message retry       ${fmt(perMessage)} requests (each message on 5 s, 5 min, 30 min, 2 h… from its creation: Svix/Convoy)`,
    `  ratio                   ${fmt(perMessage / Math.max(1, duringOutage), 0)}× fewer requests to the dead endpoint`,
    `  recovery → last         ${fmt(recoveryToLastMs / 1000, 1)} s to deliver all ${n} (one cooldown = ${fmt(COOLDOWN_MS / 1000)} s); per-message retry: ${fmt((perMessageLast - recoveredAt) / minute)} min`,
    `  discarded               ${discarded}; undelivered ${undelivered}; most requests at once ${hook.maxInFlight()}`,
  ];
  return { lines, requestsDuringOutage: duringOutage, perMessageRequests: perMessage, recoveryToLastMs, discarded };
}

export interface BacklogResult {
  lines: string[];
  drainMs: number;
  ratio: number;
  webhookWritesPerDelivery: number;
  jobWritesPerDelivery: number;
}

const WRITE_OPS = ['DynamoDB.PutItem', 'DynamoDB.UpdateItem', 'DynamoDB.DeleteItem', 'DynamoDB.TransactWriteItems', 'DynamoDB.BatchWriteItem'];
const perOp = (counter: RequestCounter, n: number, ops?: string[]) =>
  Object.entries(counter.toJSON())
    .filter(([op]) => !ops || ops.includes(op))
    .map(([op, count]) => `${op.replace('DynamoDB.', '')} ${fmt(count / n, 2)}`)
    .join(', ');
const writes = (counter: RequestCounter) => Object.entries(counter.toJSON()).reduce((sum, [op, count]) => sum + (WRITE_OPS.includes(op) ? count : 0), 0);

/**
 * 1,000 deliveries to one endpoint that answers in 50 ms, on the real clock: drain time against
 * 1,000 × 50 ms, and store writes per delivery, the webhooks table's apart from the job layer's.
 */
export async function benchBacklog(endpoint: string, n = 1000, answerMs = 50): Promise<BacklogResult> {
  const clock = systemClock;
  const sys = await webhookSystem(endpoint, clock);
  const hook = await receiver(() => 200, answerMs, clock);
  const { endpointId } = await sys.webhooks.endpoints.register(operatorScope('bench'), { url: hook.url });
  // The backlog: n events published while a first delivery holds the endpoint's lease (as if in flight),
  // before any worker runs: the first is a job, the rest wait behind it in the list, as they do behind a
  // busy endpoint. The first delivery then sends its own and drains the list.
  const first = await publish(sys, { i: 0 }, clock.now());
  const head = deliveryJobId(first, endpointId);
  if (!(await sys.webhooks.deps.store.acquire(endpointId, head, clock.now(), clock.now() + LEASE_MS))) throw new Error('the backlog bench could not take the lease for its first delivery');
  const eventIds: string[] = [first];
  for (let i = 1; i < n; i += 16) {
    eventIds.push(...(await Promise.all(Array.from({ length: Math.min(16, n - i) }, (_, j) => publish(sys, { i: i + j }, clock.now())))));
  }
  sys.jobCounter.reset();
  sys.hookCounter.reset();
  const started = performance.now();
  sys.start();
  await until(sys.queue, () => hook.requests.length, n, 20 * minute);
  // The last completions land just after the last answer.
  await new Promise((r) => setTimeout(r, 500));
  await sys.queue.idle();
  const rows = await deliveryRows(sys, eventIds, endpointId);
  const completed = new Set(hook.requests.filter((r) => r.status >= 200 && r.status < 300).map((r) => r.webhookId)).size;
  const firstAt = Math.min(...hook.requests.map((r) => r.at));
  const lastAt = Math.max(...hook.requests.map((r) => r.at));
  const gaps = hook.requests
    .map((r) => r.at)
    .sort((a, b) => a - b)
    .slice(1)
    .map((at, i, all) => at - (i === 0 ? firstAt : all[i - 1]!));
  await sys.stop();
  const hookWrites = writes(sys.hookCounter) / n;
  const jobWrites = writes(sys.jobCounter) / n;
  const wall = lastAt + answerMs - firstAt;
  const total = (performance.now() - started) / 1000;
  await hook.close();
  const ideal = n * answerMs;
  const lines = [
    `backlog                   ${n} deliveries to one endpoint answering in ${answerMs} ms, real clock`,
    `  drain                   ${fmt(wall / 1000, 1)} s from first request to last answer (${fmt(total, 1)} s from worker start); ideal ${fmt(ideal / 1000)} s → ${fmt(wall / ideal, 2)}×`,
    `  between requests        p50 ${fmt(percentile(gaps, 50))} ms, p90 ${fmt(percentile(gaps, 90))} ms (the endpoint's ${answerMs} ms + the hand-off)`,
    `  delivered               ${completed}/${n}; ${hook.requests.length} requests; most at once ${hook.maxInFlight()}; ${rows.length} deliveries with a job row (the rest sent within another's run)`,
    `  webhooks-table writes   ${fmt(hookWrites, 2)} per delivery (${perOp(sys.hookCounter, n, WRITE_OPS)})`,
    `  job-layer writes        ${fmt(jobWrites, 2)} per delivery (${perOp(sys.jobCounter, n, WRITE_OPS)})`,
    `  reads per delivery      webhooks ${perOp(sys.hookCounter, n, ['DynamoDB.GetItem', 'DynamoDB.BatchGetItem', 'DynamoDB.Query']) || 'none'}; jobs ${perOp(sys.jobCounter, n, ['DynamoDB.GetItem', 'DynamoDB.Query']) || 'none'}`,
  ];
  return { lines, drainMs: wall, ratio: wall / ideal, webhookWritesPerDelivery: hookWrites, jobWritesPerDelivery: jobWrites };
}
