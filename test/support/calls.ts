import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { callsDefaults } from '../../functions/calls/config.ts';
import { CallPlacerSimulator } from '../../functions/calls/local/simulator.ts';
import type { SimulatedOutcome, SimulatorOptions } from '../../functions/calls/local/simulator.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { batchIds } from '../../functions/calls/model.ts';
import { endpointIds } from '../../functions/webhooks/endpoint.ts';
import { signCallWebhook } from '../../functions/calls/signature.ts';
import type { JobRow } from '../../functions/jobs/row.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import type { Clock } from '../../functions/platform/clock.ts';
import { freePort } from '../../functions/platform/local/dynamodb-local.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import type { WebhookEvent } from '../../functions/webhooks/events.ts';
import type { WebhookOptions } from '../../functions/webhooks/context.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { transportFor } from '../../functions/mail/smtp-transport.ts';
import { freshTables } from './dynamo.ts';

/** The intake secret tests sign with (the Standard Webhooks spec's example key). */
export const TEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface CallsFixtureOptions {
  /** The ManualClock's start (default: Monday 2026-01-05 09:00 UTC). */
  start?: number;
  seed?: number;
  /** Scripts each call's outcome at the placer (default: the simulator's seeded mix). */
  script?: SimulatorOptions['script'];
  resultDelayMs?: SimulatorOptions['resultDelayMs'];
  callTimeoutSeconds?: number;
  /** Contacts per dial transaction (default: the production group, `callsDefaults.dialGroup`). */
  dialGroup?: number;
  /** Real time after which a dial run places no call (default: the production 35 s). */
  placeBudgetMs?: number;
  /** How long the dialer waits for a free slot (default: the production 3 s). */
  noSlotSnoozeMs?: number;
  /** The outside world's clock, where it differs from job time (default: the ManualClock). */
  wallClock?: Clock;
  /** Whether the calls queue's worker runs (false: tests drive the handlers by hand). */
  workers?: boolean;
  /** Where the dialer asks for calls, given the simulator's URL (default: the simulator itself); a test puts a gate in front of it. */
  placerUrl?: (simulatorUrl: string) => string;
  /** The webhooks context's settings (default: production's; `allowLoopback` lets endpoints on 127.0.0.1 register). */
  webhooks?: WebhookOptions;
}

/**
 * The local stack on DynamoDB Local with a ManualClock: the real composition root (tables, kinds,
 * handlers, routes), the calls queue's worker on an in-process queue, the API on a real HTTP server on
 * 127.0.0.1, and the call-placer simulator (a real HTTP server) as the placer. `settle()` moves the
 * clock timer by timer until nothing is left to run. The webhooks and mail queues have no consumer, so
 * the jobs the calls pipeline leaves for them stay where tests can read them.
 */
export async function callsFixture(options: CallsFixtureOptions = {}) {
  const { clients, tableNames, counter } = await freshTables();
  const clock = new ManualClock(options.start);
  const rng = seededRng(options.seed ?? 7);
  const metrics = new MemoryMetrics();
  const logger = createLogger('test');
  const simulator = await CallPlacerSimulator.start({
    clock,
    rng: seededRng((options.seed ?? 7) + 1),
    secret: TEST_SECRET,
    ...(options.script ? { script: options.script } : {}),
    ...(options.resultDelayMs ? { resultDelayMs: options.resultDelayMs } : {}),
  });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // The mail queue has no consumer here: configured, never sends.
  const mailConfig = parseMailConfig({ MAIL_DOMAIN: 'test.redial', PUBLIC_BASE_URL: url, MAIL_TRANSPORT: 'smtp', SMTP_URL: 'smtp://127.0.0.1:9' });
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng,
    logger,
    metrics,
    workers: options.workers === false ? [] : ['dial', 'calls'],
    contexts: {
      ...(options.wallClock ? { wallClock: options.wallClock } : {}),
      calls: {
        ...callsDefaults,
        placerUrl: options.placerUrl ? options.placerUrl(simulator.url) : simulator.url,
        callbackUrl: `${url}/v1/calls/webhook`,
        webhookSecret: TEST_SECRET,
        callTimeoutSeconds: options.callTimeoutSeconds ?? 600,
        ...(options.noSlotSnoozeMs ? { noSlotSnoozeMs: options.noSlotSnoozeMs } : {}),
        ...(options.dialGroup ? { dialGroup: options.dialGroup } : {}),
        ...(options.placeBudgetMs !== undefined ? { placeBudgetMs: options.placeBudgetMs } : {}),
      },
      mail: { config: mailConfig, transport: transportFor(mailConfig.transport, clients) },
      ...(options.webhooks ? { webhooks: options.webhooks } : {}),
    },
    serve: { port },
  });
  const { jobs, system } = host;
  // The in-process transport: tests read what it sent.
  const transport = host.local ?? assertLocal();
  const deps = system.calls;
  const published: WebhookEvent[] = [];
  const publish = deps.ports.events.prepare.bind(deps.ports.events);
  deps.ports.events.prepare = async (input, now) => {
    const prepared = await publish(input, now);
    const event: WebhookEvent = { id: prepared.eventId, tenantId: input.tenantId, type: input.type, timestamp: new Date(now).toISOString(), data: input.data };
    return { ...prepared, afterCommit: async () => (published.push(event), prepared.afterCommit()) };
  };
  // Both of the context's queues: calls.dial runs on `dial`, watchdogs and finalisers on `calls`.
  const handlers = [...system.handlers('dial'), ...system.handlers('calls')];
  const store = new CallsStore(clients.dynamo, tableNames.calls);
  const callsQueues = [host.queue('dial'), host.queue('calls')];

  /** Waits until the calls queue and the simulator are both idle (each can wake the other). */
  async function quiesce(): Promise<void> {
    do {
      await simulator.idle();
      // The dial and calls queues wake each other: idle only when both are at once.
      for (const queue of callsQueues) await queue.idle();
    } while (simulator.sending > 0 || callsQueues.some((q) => !q.isIdle()));
  }

  /** Runs every timer and message until nothing is due, up to `untilMs` ahead (default: 30 days); `onStep` runs after each. */
  async function settle(untilMs = 30 * 86400_000, onStep?: () => Promise<void> | void): Promise<void> {
    const limit = clock.now() + untilMs;
    await quiesce();
    await onStep?.();
    for (let i = 0; i < 100_000; i++) {
      const next = clock.nextTimerAt();
      if (next === undefined || next > limit) break;
      clock.set(Math.max(next, clock.now()));
      await quiesce();
      await onStep?.();
    }
  }

  /** One request as sent: the headers given, nothing added. */
  async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  const keys = new Map<string, string>();
  let lastTenant = 'acme';
  /** A tenant's API key, issued through the operator route the first time it is asked for (undefined: no such tenant). */
  async function keyOf(tenantId: string): Promise<string | undefined> {
    if (!keys.has(tenantId)) {
      const issued = await send('POST', `/v1/tenants/${encodeURIComponent(tenantId)}/keys`);
      if (issued.status !== 201) return undefined;
      const key = issued.body.key as string;
      // Used once at once: its lastUsedAt is written now (at most once a minute after), not in a test's request.
      const used = await send('GET', `/v1/tenants/${encodeURIComponent(tenantId)}`, undefined, { authorization: `Bearer ${key}` });
      if (used.status !== 200) throw new Error(`a new key of ${tenantId} was refused: ${used.status}`);
      keys.set(tenantId, key);
    }
    return keys.get(tenantId);
  }

  /**
   * A request to the API. On a tenant route without an Authorization header of the test's own, it goes as
   * the tenant it names (the body's tenantId, the tenant in the path's batch or endpoint id, else the
   * tenant of the fixture's last such request), with an API key the fixture issued to that tenant through
   * the operator route when the tenant was created (`PUT /v1/tenants/{tenantId}` through here): the real
   * path, key check included.
   */
  async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
    const tenantId = Object.keys(headers).some((h) => h.toLowerCase() === 'authorization') ? undefined : tenantNamed(method, path, body, lastTenant);
    if (tenantId === undefined) {
      const response = await send(method, path, body, headers);
      // A tenant created is issued its key at once, so a test's snapshot of the table after it holds the key.
      const created = method === 'PUT' && response.status === 200 ? /^\/v1\/tenants\/([^/?]+)$/.exec(path) : null;
      if (created) await keyOf(decodeURIComponent(created[1]!));
      return response;
    }
    lastTenant = tenantId;
    const key = await keyOf(tenantId);
    return send(method, path, body, key ? { authorization: `Bearer ${key}`, ...headers } : headers);
  }

  /** POSTs a call result signed with `secret` (default: the intake's) at `timestampSeconds` (default: now). */
  async function webhook(
    body: unknown,
    sign: { secret?: string; timestampSeconds?: number; id?: string; headers?: (h: Record<string, string>) => Record<string, string> } = {},
  ): Promise<{ status: number; body: any }> {
    const raw = typeof body === 'string' ? body : JSON.stringify(body);
    const wall = options.wallClock ?? clock;
    let headers = signCallWebhook(sign.secret ?? TEST_SECRET, sign.id ?? `msg_${randomUUID()}`, sign.timestampSeconds ?? Math.floor(wall.now() / 1000), raw);
    if (sign.headers) headers = sign.headers(headers);
    const response = await fetch(`${url}/v1/calls/webhook`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  /** Creates a tenant and a batch through the API. */
  async function createBatch(input: { tenantId?: string; concurrencyLimit?: number; ownerEmail?: string; numbers: string[]; maxAttempts: number; [k: string]: unknown }) {
    const { tenantId = 'acme', concurrencyLimit = 10, ownerEmail, numbers, ...rest } = input;
    const tenant = await api('PUT', `/v1/tenants/${tenantId}`, { concurrencyLimit, ...(ownerEmail ? { ownerEmail } : {}) });
    if (tenant.status !== 200) throw new Error(`tenant: ${tenant.status} ${JSON.stringify(tenant.body)}`);
    const created = await api('POST', '/v1/batches', { tenantId, contacts: numbers.map((number) => ({ number })), ...rest });
    if (created.status !== 201) throw new Error(`batch: ${created.status} ${JSON.stringify(created.body)}`);
    return created.body.batchId as string;
  }

  /** Every job row (a scan: tests only). */
  async function allJobs(): Promise<JobRow[]> {
    const result = await clients.dynamo.send(new ScanCommand({ TableName: tableNames.jobs, ConsistentRead: true }));
    return ((result.Items ?? []) as JobRow[]).filter((row) => 'state' in row);
  }

  /**
   * Every event the calls context published and committed, in order: what its events port was asked for,
   * once the transaction it joined committed (the port's afterCommit). The tenants here have no endpoints,
   * so publishing writes nothing (functions/webhooks/publish.ts); what reaches endpoints is the webhooks
   * tests' to show.
   */
  async function allEvents(): Promise<WebhookEvent[]> {
    return Promise.resolve([...published].sort((a, b) => a.timestamp.localeCompare(b.timestamp)));
  }

  /**
   * Every item of the calls table (a scan: tests only), for before/after comparisons: the tenants' API keys
   * left out, whose `lastUsedAt` the key check writes (at most once a minute) whatever the request
   * (test/calls/keys.test.ts is about those).
   */
  async function callsItems(): Promise<Record<string, unknown>[]> {
    const result = await clients.dynamo.send(new ScanCommand({ TableName: tableNames.calls, ConsistentRead: true }));
    return ((result.Items ?? []) as Record<string, unknown>[]).filter((i) => !String(i['pk']).endsWith('#KEYS')).sort((a, b) => `${String(a['pk'])}|${String(a['sk'])}`.localeCompare(`${String(b['pk'])}|${String(b['sk'])}`));
  }

  /** Each contact of a batch as `GET /v1/batches/{id}/contacts` shows it (status derived: calls/status.ts), by number. */
  async function contactViews(batchId: string): Promise<Map<string, { contactNumber: string; status: string; code: string | null; attempts: number }>> {
    const response = await api('GET', `/v1/batches/${batchId}/contacts`);
    if (response.status !== 200) throw new Error(`contacts: ${response.status} ${JSON.stringify(response.body)}`);
    return new Map((response.body.contacts as { contactNumber: string; status: string; code: string | null; attempts: number }[]).map((c) => [c.contactNumber, c]));
  }

  /** One contact as the API shows it. */
  async function contactView(batchId: string, contactNumber: string) {
    return (await contactViews(batchId)).get(contactNumber);
  }

  async function stop(): Promise<void> {
    await host.stop();
    await simulator.close();
  }

  const executors = { dial: jobs.executor('dial', system.handlers('dial')), calls: jobs.executor('calls', system.handlers('calls')) };
  /** Runs a job's wake-up on the executor of its queue, as the deployed workers do. */
  const execute = async (message: { jobId: string; seq: number }) => executors[(await jobs.store.mustGet(message.jobId)).queue as 'dial' | 'calls'].execute(message);
  const queues = { dial: callsQueues[0]!, calls: callsQueues[1]! };
  return { clients, tableNames, counter, clock, rng, metrics, jobs, system, deps, handlers, execute, store, simulator, transport, url, api, send, keyOf, webhook, createBatch, settle, quiesce, queues, allJobs, allEvents, callsItems, contactViews, contactView, stop };
}

export type CallsFixture = Awaited<ReturnType<typeof callsFixture>>;

/** Runs a job by hand (a fixture with `workers: false`): the clock moves to its due time, then one execution; its result. */
export async function runByHand(fx: CallsFixture, id: string) {
  const job = await fx.jobs.store.mustGet(id);
  fx.clock.set(Math.max(fx.clock.now(), Date.parse(job.scheduledAt)));
  return (await fx.execute({ jobId: id, seq: job.seq })).result;
}

/** A script that gives each listed number its outcome per round (round 1 first), and `fallback` otherwise. */
export function scriptByNumber(plan: Record<string, SimulatedOutcome[]>, fallback: SimulatedOutcome = 'completed'): NonNullable<SimulatorOptions['script']> {
  return ({ contactNumber, round }) => plan[contactNumber]?.[round - 1] ?? fallback;
}

/** `count` distinct E.164 numbers. */
/** `count` numbers after `prefix`, each 11 digits in all (+1 and ten, as a NANP number has), so that libphonenumber finds them possible. */
export const numbers = (count: number, prefix = '+1415555'): string[] => Array.from({ length: count }, (_, i) => `${prefix}${String(1000 + i).padStart(12 - prefix.length, '0')}`);

/** The tenant a request to a tenant route names, if it is one (see the fixture's `api`). */
export function tenantNamed(method: string, path: string, body: unknown, fallback: string): string | undefined {
  const route = path.split('?')[0]!;
  const own = /^\/v1\/tenants\/([^/]+)$/.exec(route);
  if (!(/^\/v1\/(batches|endpoints)(\/|$)/.test(route) || (method === 'GET' && own))) return undefined;
  const named = (body as { tenantId?: unknown } | undefined)?.tenantId;
  if (typeof named === 'string') return named;
  if (own) return decodeURIComponent(own[1]!);
  const id = /^\/v1\/(?:batches|endpoints)\/([^/]+)/.exec(route)?.[1];
  if (id) return batchIds.parse(decodeURIComponent(id))?.tenantId ?? endpointIds.parse(decodeURIComponent(id))?.tenantId ?? fallback;
  return fallback;
}

function assertLocal(): never {
  throw new Error('the calls fixture runs on the in-process queues');
}

/** One placer request held at a {@link placerGate}: which call, and how to let it through to the simulator. */
export interface HeldPlacement {
  contactNumber: string;
  round: number;
  release: () => void;
}

/**
 * A real HTTP placer in front of the simulator that holds each request until the test releases it, so a
 * test decides what happens between one dial's commit and the run's next dial (a dial run asks the placer
 * after each commit, and waits for its answer). `next()` resolves with the next request to arrive.
 */
export async function placerGate() {
  let target = '';
  const waiting: HeldPlacement[] = [];
  const takers: ((held: HeldPlacement) => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const parsed = JSON.parse(body) as { contactNumber: string; round: number };
      const held: HeldPlacement = {
        contactNumber: parsed.contactNumber,
        round: parsed.round,
        release: () => {
          void fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
            async (answer) => res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text()),
            () => res.writeHead(502).end(),
          );
        },
      };
      const taker = takers.shift();
      if (taker) taker(held);
      else waiting.push(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/calls`;
  return {
    /** The URL to give the fixture, pointing at `simulatorUrl`. */
    placerUrl: (simulatorUrl: string) => ((target = simulatorUrl), url),
    next: (): Promise<HeldPlacement> => {
      const held = waiting.shift();
      return held ? Promise.resolve(held) : new Promise((resolve) => takers.push(resolve));
    },
    /** Requests arrived and not yet taken by `next()`. */
    pending: () => waiting.length,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type PlacerGate = Awaited<ReturnType<typeof placerGate>>;
