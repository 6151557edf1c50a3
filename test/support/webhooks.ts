import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { vi } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { Clock } from '../../functions/platform/clock.ts';
import type { SecretKey } from '../../functions/platform/secret-key.ts';
import type { Resolver } from '../../functions/platform/vetted-http.ts';
import type { JobRow } from '../../functions/jobs/index.ts';
import type { WebhooksContext } from '../../functions/webhooks/context.ts';
import { deliveryJobId, endpointIds } from '../../functions/webhooks/endpoint.ts';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import type { TenantScope } from '../../functions/platform/tenancy.ts';
import { EventType, newEvent } from '../../functions/webhooks/events.ts';
import { webhookDeliverKind } from '../../functions/webhooks/kinds.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { freshTables } from './dynamo.ts';
import type { WebhookEvent } from '../../functions/webhooks/events.ts';
import { RecordingTransport, settler } from './jobs.ts';

/** One request a receiver got. */
export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Real time it arrived (performance.now()). */
  at: number;
}

/** What a receiver answers: a status, headers, a body; `hang` never answers. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/**
 * A real HTTP server on 127.0.0.1 that answers from a script (one answer per request, the last one
 * repeating) and records every request, the most it ever had in flight at once included. A scripting
 * function may return a promise: the request stays unanswered (in flight) until it settles, so a test can
 * run something to its end while a sender waits for its response, instead of racing it against a delay.
 */
export class Receiver {
  readonly requests: Received[] = [];
  maxInFlight = 0;
  private inFlight = 0;
  private readonly server: Server;
  private script: Answer[];
  private answer: ((request: Received, index: number) => Answer | Promise<Answer>) | undefined;

  private constructor(script: Answer[]) {
    this.script = script;
    this.server = createServer((req, res) => this.handle(req, res));
  }

  static async start(script: Answer[] = [{ status: 200 }]): Promise<Receiver> {
    const receiver = new Receiver(script);
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Answers from now on with `script` (or a function of the request, answering when its promise settles). */
  reply(script: Answer[] | ((request: Received, index: number) => Answer | Promise<Answer>)): void {
    if (typeof script === 'function') this.answer = script;
    else {
      this.answer = undefined;
      this.script = script;
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const received: Received = { method: req.method ?? '', path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() };
      const index = this.requests.length;
      this.requests.push(received);
      const answer = this.answer ? this.answer(received, index) : (this.script[Math.min(index, this.script.length - 1)] ?? { status: 200 });
      if (answer instanceof Promise) {
        // A scripting function that failed answers 500, and its error stays unhandled: vitest fails the run with it.
        void answer.then(
          (settled) => this.respond(res, settled),
          (error: unknown) => {
            this.respond(res, { status: 500 });
            throw error;
          },
        );
      } else this.respond(res, answer);
    });
  }

  private respond(res: ServerResponse, answer: Answer): void {
    if (answer === 'hang') {
      res.on('close', () => this.inFlight--);
      return;
    }
    const send = () => {
      this.inFlight--;
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  }
}

/**
 * Verifies a received request with the `standardwebhooks` verifier, judging its timestamp against `now`
 * (the test's manual clock) instead of the wall clock the package reads.
 */
export function verify(secret: string, request: Received, now: number): unknown {
  const spy = vi.spyOn(Date, 'now').mockReturnValue(now);
  try {
    return new Webhook(secret).verify(request.body, request.headers);
  } finally {
    spy.mockRestore();
  }
}

/**
 * The webhooks context on the job-layer fixture (DynamoDB Local, manual clock, seeded RNG), with loopback
 * receivers allowed unless said otherwise.
 */
export async function webhooksFixture(
  options: { transport?: 'recording' | 'local'; allowLoopback?: boolean; resolve?: Resolver; requestTimeoutMs?: number; drainBudgetMs?: number; seed?: number; wallClock?: Clock; secretKey?: SecretKey; clock?: ManualClock } = {},
) {
  const { clients, tableNames, counter } = await freshTables();
  const clock = options.clock ?? new ManualClock();
  const rng = seededRng(options.seed ?? 42);
  const metrics = new MemoryMetrics();
  const logger = createLogger('test');
  const recording = new RecordingTransport();
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng,
    logger,
    metrics,
    ...((options.transport ?? 'recording') === 'local' ? {} : { transport: recording }),
    workers: ['webhooks', 'deliveries'],
    ...(options.secretKey ? { secretKey: options.secretKey } : {}),
    contexts: {
      ...(options.wallClock ? { wallClock: options.wallClock } : {}),
      webhooks: {
        allowLoopback: options.allowLoopback ?? true,
        ...(options.resolve ? { resolve: options.resolve } : {}),
        requestTimeoutMs: options.requestTimeoutMs ?? 2_000,
        ...(options.drainBudgetMs !== undefined ? { drainBudgetMs: options.drainBudgetMs } : {}),
      },
    },
  });
  const ctx: WebhooksContext = host.system.webhooks;
  // Both of the context's queues: webhook.deliver runs on `deliveries`, the rest on `webhooks`.
  const handlers = [...host.system.handlers('webhooks'), ...host.system.handlers('deliveries')];
  const fx = { clients, tableNames, counter, clock, rng, metrics, logger, recording, jobs: host.jobs, localQueues: host.queues, transport: host.transport, handlers, settle: settler(clock, () => host.idle()), idle: () => host.idle(), host };
  const executors = { webhooks: fx.jobs.executor('webhooks', host.system.handlers('webhooks')), deliveries: fx.jobs.executor('deliveries', host.system.handlers('deliveries')) };
  /** Runs a wake-up on the executor of its kind's queue (a job id starts with its kind), as the deployed workers do. */
  const executor = {
    execute(message: { jobId: string; seq: number }) {
      const queue = handlers.find((h) => message.jobId.startsWith(`${h.kind.kind}:`))?.kind.queue === 'deliveries' ? 'deliveries' : 'webhooks';
      return executors[queue].execute(message);
    },
  };

  /** Publishes an event as a domain does (its deliveries in one transaction: publish.ts) and returns it. */
  async function recordEvent(tenantId: string, type: EventType = EventType.callCompleted, data: Record<string, unknown> = { n: 1 }): Promise<WebhookEvent> {
    const published = await ctx.publisher.prepare({ tenantId, type, data }, fx.clock.now());
    if (published.items.length > 0) {
      const result = await ctx.deps.store.transact(published.items);
      if (!result.committed) {
        await published.abandon();
        throw result.error;
      }
    }
    await published.afterCommit();
    return published.event;
  }

  /**
   * An event and its webhook.deliver job to one endpoint, as a publisher writes it for a free endpoint,
   * but without taking the lease for it: for tests of deliveries that race each other for the lease (several
   * published before any took it). Returns the event and the delivery's job id.
   */
  async function enqueueDelivery(tenantId: string, endpointId: string, data: Record<string, unknown> = { n: 1 }, type: EventType = EventType.callCompleted): Promise<{ event: WebhookEvent; id: string }> {
    const event = newEvent({ tenantId, type, data }, fx.clock.now());
    const id = deliveryJobId(event.id, endpointId);
    await fx.jobs.client.enqueue(webhookDeliverKind, { eventId: event.id, endpointId, event }, { id });
    return { event, id };
  }

  /** Runs a job's current wake-up through the executor (recording transport). */
  async function run(jobId: string) {
    const row = await fx.jobs.store.mustGet(jobId);
    return executor.execute({ jobId, seq: row.seq });
  }

  /** Moves the clock to a job's due time and runs it. */
  async function runWhenDue(jobId: string) {
    const row = await fx.jobs.store.mustGet(jobId);
    const due = Date.parse(row.scheduledAt);
    if (due > fx.clock.now()) fx.clock.set(due);
    return executor.execute({ jobId, seq: row.seq });
  }

  const job = (id: string): Promise<JobRow> => fx.jobs.store.mustGet(id);

  /**
   * The job rows of the deliveries of `events` to an endpoint that have one: a delivery sent within another
   * delivery's run and delivered leaves none (functions/webhooks/delivery.ts, the drain).
   */
  async function deliveryRows(events: readonly { id: string }[], endpointId: string): Promise<JobRow[]> {
    const rows = await Promise.all(events.map((e) => fx.jobs.store.get(deliveryJobId(e.id, endpointId))));
    return rows.filter((r): r is JobRow => r !== undefined);
  }

  /**
   * With the recording transport: runs every pending job that is due, all at once, again and again,
   * moving the clock to the next due time when none is, until nothing is due within `horizonMs`.
   */
  async function drain(horizonMs = 60_000): Promise<void> {
    const limit = fx.clock.now() + horizonMs;
    for (let round = 0; round < 1000; round++) {
      const pending = (await Promise.all((['available', 'scheduled', 'retryable', 'snoozed'] as const).map((state) => fx.jobs.client.list({ state, limit: 200 })))).flatMap((p) => p.jobs);
      const due = pending.filter((r) => Date.parse(r.scheduledAt) <= fx.clock.now());
      if (due.length > 0) {
        await Promise.all(due.map((r) => executor.execute({ jobId: r.id, seq: r.seq })));
        continue;
      }
      const next = Math.min(...pending.map((r) => Date.parse(r.scheduledAt)));
      if (!Number.isFinite(next) || next > limit) return;
      fx.clock.set(next);
    }
  }

  return { ...fx, webhooks: ctx, executor, recordEvent, enqueueDelivery, run, runWhenDue, job, deliveryRows, drain, close: () => host.stop() };
}

/** The scope of the tenant an endpoint id names, as an operator acting for it (tests call the Endpoints methods directly). */
export const ownerOf = (endpointId: string): TenantScope => {
  const owner = endpointIds.parse(endpointId);
  if (!owner) throw new Error(`not an endpoint id: ${endpointId}`);
  return operatorScope(owner.tenantId);
};
