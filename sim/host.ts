import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { callsDefaults } from '../functions/calls/config.ts';
import type { CallsStore } from '../functions/calls/store.ts';
import type { JobClient } from '../functions/jobs/client.ts';
import type { Dispatcher } from '../functions/jobs/dispatch.ts';
import { queueNames, queues } from '../functions/jobs/queues.ts';
import type { QueueName } from '../functions/jobs/queues.ts';
import { createJobRuntime } from '../functions/jobs/runtime.ts';
import type { JobRuntime } from '../functions/jobs/runtime.ts';
import type { JobStore } from '../functions/jobs/store.ts';
import { parseMailConfig } from '../functions/mail/config.ts';
import type { MailTransport } from '../functions/mail/transport.ts';
import { transportFor } from '../functions/mail/transport.ts';
import { allKinds, allRoutes, handlersByQueue, tables } from '../functions/ops/system.ts';
import type { SystemDeps, TableNames } from '../functions/ops/system.ts';
import { createAwsClients, localCredentials } from '../functions/platform/aws.ts';
import type { AwsClients } from '../functions/platform/aws.ts';
import { systemClock } from '../functions/platform/clock.ts';
import type { Clock } from '../functions/platform/clock.ts';
import { createApiHandler } from '../functions/platform/http.ts';
import { ensureTables } from '../functions/platform/local/dynamodb-local.ts';
import { startHttpServer } from '../functions/platform/local/http-server.ts';
import type { ApiHandler, LocalHttpServer } from '../functions/platform/local/http-server.ts';
import { LocalQueue, LocalTransport } from '../functions/platform/local/queues.ts';
import { createLogger } from '../functions/platform/logger.ts';
import type { Logger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import type { MetricsSink } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { webhooksContext } from '../functions/webhooks/context.ts';
import type { WebhookHttp } from '../functions/webhooks/deps.ts';
import { SimClock } from './clock.ts';
import { FaultInjector } from './faults.ts';
import type { Plan } from './plan.ts';
import { Activity, Scopes } from './scope.ts';
import type { Invocation } from './scope.ts';
import { SimReceivers } from './world/endpoints.ts';
import { CallLedger } from './world/ledger.ts';
import { SimPlacer } from './world/placer.ts';
import { SimSmtp } from './world/smtp.ts';
import type { ReceivedMail } from './world/smtp.ts';

/** The intake's signing secret in the simulation (the Standard Webhooks spec's example key). */
export const SIM_WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Monday 2026-01-05 09:00 UTC: where every seed's clock starts. */
export const SIM_START = Date.parse('2026-01-05T09:00:00.000Z');

/** The rescuer's period and threshold, as deployed (lib/redial-stack.ts: every minute; functions/jobs/aws.ts: 180 s). */
export const RESCUER_PERIOD_MS = 60_000;
export const RESCUE_AFTER_MS = 180_000;

/**
 * How long the dialer waits for the placer, real ms: long enough that a loaded machine does not time
 * out an answer sent at once, short enough that a placer.timeout fault costs little.
 */
export const PLACER_TIMEOUT_MS = 1_500;

/** A call with no result after this long is timed out by its watchdog (short, so seeds end soon). */
export const SIM_CALL_TIMEOUT_SECONDS = 120;

/**
 * Other implementations of redial's parts, passed in by a test to put a bug back (test/sim/bugs.test.ts):
 * each replaces one part through the seam the host already has for it, never through a branch in
 * functions/.
 */
export interface Alterations {
  /** The job client the contexts enqueue with (built over the runtime's store and dispatcher). */
  jobClient?: (parts: { store: JobStore; dispatcher: Dispatcher; clock: Clock; logger: Logger; db: DynamoDBDocumentClient }) => JobClient;
  /** The metrics sink the rescuer counts its discards in (the executor keeps the host's). */
  rescuerMetrics?: (metrics: MetricsSink) => MetricsSink;
  /** The mail transport (wrapped around the SMTP one). */
  mailTransport?: (inner: MailTransport) => MailTransport;
  /** The calls context's store (built over the host's client and table). */
  callsStore?: (db: DynamoDBDocumentClient, tableName: string) => CallsStore;
  /** The HTTP client webhook deliveries send with (wrapped around the vetted one). */
  webhookHttp?: (inner: WebhookHttp) => WebhookHttp;
}

export interface SimHostOptions {
  /** A running DynamoDB Local; the host creates fresh tables in it and deletes them when it stops. */
  dynamoEndpoint: string;
  plan: Plan;
  alterations?: Alterations;
}

/** redial on one machine under a fault plan, and the world around it. */
export interface SimHost {
  url: string;
  clock: SimClock;
  faults: FaultInjector;
  metrics: MemoryMetrics;
  deps: SystemDeps;
  jobs: JobRuntime;
  placer: SimPlacer;
  /** The calls the placer has out, for the concurrency invariant. */
  ledger: CallLedger;
  receivers: SimReceivers;
  smtp: SimSmtp;
  activity: Activity;
  queues: LocalQueue[];
  transport: LocalTransport;
  /** Clients without faults, for the invariants to read the tables with. */
  observer: { clients: AwsClients; tableNames: TableNames };
  /** Called with each mail the SMTP server takes (the driver follows the owner's confirmation link). */
  onMail(listener: (mail: ReceivedMail) => void): void;
  /** Resolves when nothing is in flight: no batch, request, rescuer pass or result being sent. */
  quiesce(): Promise<void>;
  /** Moves the clock to the next timer (firing it); false if none waits. */
  advance(): boolean;
  /** Rescuer passes so far. */
  rescuerPasses(): number;
  stop(): Promise<void>;
}

/** The job id in a wake-up message's body, and its kind (ids are `<kind>:…` or `<kind>@<period>`). */
function jobOf(record: SQSRecord): { jobId?: string; kind: string } {
  try {
    const { jobId } = JSON.parse(record.body) as { jobId?: unknown };
    if (typeof jobId === 'string') return { jobId, kind: jobId.split(/[:@]/)[0] ?? 'unknown' };
  } catch {
    // a malformed message: the worker drops it
  }
  return { kind: 'unknown' };
}

/** Which route a request is (`POST /v1/batches/{id}`), from the routes' own patterns. */
function routeNamer(routes: readonly { method: string; path: string }[]): (method: string, path: string) => string {
  const compiled = routes.map((r) => ({ name: `${r.method} ${r.path}`, method: r.method, regex: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
  return (method, path) => compiled.find((r) => r.method === method && r.regex.test(path))?.name ?? `${method} ${path}`;
}

/** Races a run against its invocation's death: a dead invocation answers at once (its runs hang on). */
async function untilDeath<T>(invocation: Invocation, run: Promise<T>, onDeath: () => T): Promise<T> {
  return Promise.race([run, invocation.died.then(onDeath)]);
}

/**
 * Assembles redial for one seed, in this one function (as functions/ops/local.ts assembles the local
 * runtime, and bench/capacity/host.ts the capacity run's): fresh tables in a shared DynamoDB Local,
 * AWS clients with the plan's {@link FaultInjector} as their interceptor, the in-process queues and
 * transport (SQS and Scheduler) behind the injector's transport decorator, the composition root's
 * handlers and routes, the rescuer on the simulation clock, the API on 127.0.0.1, and the world: the
 * call placer, the webhook receivers and the SMTP server.
 *
 * Every worker batch, each record in it, each API request and each rescuer pass runs under a scope
 * (scope.ts) the injector reads, so a crash kills exactly one invocation. A shared host builder can
 * replace this function if it takes the interceptor for createAwsClients, a decorator for the dispatch
 * transport and the mail transport, the clock, and a wrapper around each queue batch, API request and
 * rescuer pass (docs/simulation.md).
 */
export async function startSimHost(options: SimHostOptions): Promise<SimHost> {
  const { plan, alterations = {} } = options;
  const stops: (() => Promise<void> | void)[] = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse()) {
      try {
        await fn();
      } catch {
        // keep stopping the rest
      }
    }
  };
  try {
    const prefix = `s${plan.seed}x${randomBytes(3).toString('hex')}`;
    const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
    await ensureTables(options.dynamoEndpoint, Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
    stops.push(async () => {
      const admin = new DynamoDBClient({ endpoint: options.dynamoEndpoint, region: 'local', credentials: localCredentials, maxAttempts: 1 });
      try {
        for (const name of Object.values(tableNames)) await admin.send(new DeleteTableCommand({ TableName: name }));
      } finally {
        admin.destroy();
      }
    });

    const clock = new SimClock(SIM_START);
    const scopes = new Scopes();
    const activity = new Activity();
    const faultRng = seededRng(plan.seed * 7 + 3);
    const faults = new FaultInjector({ faults: plan.faults, scopes, clock, draw: () => faultRng.float() });
    const local = { region: 'local', endpoints: { dynamodb: options.dynamoEndpoint }, credentials: localCredentials };
    const clients = createAwsClients({ ...local, interceptor: faults });
    const observer = createAwsClients(local);
    stops.push(() => {
      clients.dynamo.destroy();
      observer.dynamo.destroy();
    });

    const logger = createLogger('simulate');
    const localQueues = queueNames.map(
      (name) =>
        new LocalQueue({
          name,
          clock,
          batchSize: queues[name].batchSize,
          maxConcurrency: queues[name].maxConcurrency,
          visibilityMs: 6 * queues[name].timeoutSeconds * 1000,
          onError: () => undefined,
        }),
    );
    const localTransport = new LocalTransport(localQueues, clock);
    stops.push(async () => {
      localTransport.stop();
      await Promise.all(localQueues.map((q) => q.stop()));
    });
    const transport = faults.transport({
      sendMessage: (queue, body, delaySeconds) => localTransport.sendMessage(queue, body, delaySeconds),
      createSchedule: (name, at, queue, body) => localTransport.createSchedule(name, at, queue, body),
      deliverNow: (queue, body) => localQueues.find((q) => q.name === queue)?.send(body, 0),
    });
    const metrics = new MemoryMetrics();
    const rng = seededRng(plan.seed * 7 + 1);
    const runtime = createJobRuntime({ db: clients.dynamo, jobsTable: tableNames.jobs, transport, clock, rng, logger, metrics });
    const jobs: JobRuntime = alterations.jobClient
      ? { ...runtime, client: alterations.jobClient({ store: runtime.store, dispatcher: runtime.dispatcher, clock, logger, db: clients.dynamo }) }
      : runtime;

    // The API first: the placer's callbackUrl and the mails' links need its address (its handler is set below).
    let serve: ApiHandler = () => Promise.resolve({ statusCode: 503, body: '{"message":"starting"}' });
    const server: LocalHttpServer = await startHttpServer({ port: 0, handler: (event, context) => serve(event, context) });
    stops.push(() => server.close());
    const url = server.url;

    // The world.
    const mailListeners: ((mail: ReceivedMail) => void)[] = [];
    const ledger = new CallLedger();
    faults.onApplied((service, operation, input) => {
      if (service === 'DynamoDB' && operation === 'TransactWriteItems') ledger.applied(input);
    });
    const placer = new SimPlacer({
      onAccepted: (callId, batchId) => ledger.accepted(callId, batchId),
      clock,
      activity,
      scopes,
      faults,
      seed: plan.seed,
      secret: SIM_WEBHOOK_SECRET,
      placerTimeoutMs: PLACER_TIMEOUT_MS,
      callTimeoutMs: SIM_CALL_TIMEOUT_SECONDS * 1000,
    });
    await placer.start();
    stops.push(() => placer.close());
    const requestTimeoutMs = 400;
    const receivers = new SimReceivers({ clock, scopes, faults, planFaults: plan.faults, stallMs: requestTimeoutMs * 3 });
    await receivers.start();
    stops.push(() => receivers.close());
    const smtp = new SimSmtp({ clock, faults, onMail: (mail) => mailListeners.forEach((l) => l(mail)) });
    await smtp.start();
    stops.push(() => smtp.close());

    const mail = parseMailConfig({ MAIL_DOMAIN: 'sim.redial.test', PUBLIC_BASE_URL: url, MAIL_TRANSPORT: 'smtp', SMTP_URL: smtp.url });
    const smtpTransport = transportFor(mail.transport, clients);
    const deps: SystemDeps = {
      jobs,
      db: clients.dynamo,
      tableNames,
      clock,
      // Signatures are stamped and checked with the wall clock, as the AI handler and receivers do.
      wallClock: systemClock,
      rng,
      logger,
      metrics,
      calls: {
        ...callsDefaults,
        placerUrl: placer.url,
        callbackUrl: `${url}/v1/calls/webhook`,
        webhookSecret: SIM_WEBHOOK_SECRET,
        callTimeoutSeconds: SIM_CALL_TIMEOUT_SECONDS,
        placerTimeoutMs: PLACER_TIMEOUT_MS,
      },
      mail: { config: mail, transport: faults.mail(alterations.mailTransport ? alterations.mailTransport(smtpTransport) : smtpTransport) },
      webhooks: { allowLoopback: true, requestTimeoutMs, ...(alterations.webhookHttp ? { wrapHttp: alterations.webhookHttp } : {}) },
      ...(alterations.callsStore ? { callsStore: alterations.callsStore(clients.dynamo, tableNames.calls) } : {}),
    };
    stops.push(() => webhooksContext(deps).close());

    // Each queue's worker, as its Lambda: one invocation per batch; each record is a run of its own.
    const handlers = handlersByQueue(deps);
    for (const queue of localQueues) {
      const name = queue.name as QueueName;
      const worker = jobs.worker(name, handlers[name]);
      queue.consume((event: SQSEvent) =>
        activity.track(async () => {
          const invocation = scopes.invocation(`worker:${name}`);
          const run = Promise.all(
            event.Records.map((record) => {
              const { jobId, kind } = jobOf(record);
              return scopes.run({ where: 'job', name: kind, ...(jobId ? { jobId } : {}), invocation }, () => worker({ Records: [record] }, {} as never));
            }),
          ).then((parts) => ({ batchItemFailures: parts.flatMap((p) => p.batchItemFailures) }));
          return untilDeath(invocation, run, () => {
            // The invocation died: SQS sees a failed invocation, and every message of the batch comes back.
            throw new Error(`worker:${name} died (${invocation.cause ?? 'crash'})`);
          });
        }),
      );
    }

    // The rescuer, as its Lambda on its schedule: every minute of simulated time.
    const rescuer = jobs.rescuer(allKinds, RESCUE_AFTER_MS);
    const rescuerRuntime = alterations.rescuerMetrics
      ? createJobRuntime({ db: clients.dynamo, jobsTable: tableNames.jobs, transport, clock, rng, logger, metrics: alterations.rescuerMetrics(metrics) }).rescuer(allKinds, RESCUE_AFTER_MS)
      : rescuer;
    let passes = 0;
    let stopped = false;
    const tick = () => {
      if (stopped) return;
      clock.setTimer(clock.now() + RESCUER_PERIOD_MS, tick, 'rescuer');
      void activity.track(async () => {
        const invocation = scopes.invocation('rescuer');
        const pass = scopes.run({ where: 'rescuer', name: 'rescuer', invocation }, () => rescuerRuntime.run()).then(
          () => undefined,
          () => undefined,
        );
        await untilDeath(invocation, pass, () => undefined);
        passes++;
      });
    };
    clock.setTimer(SIM_START + RESCUER_PERIOD_MS, tick, 'rescuer');
    stops.push(() => {
      stopped = true;
    });

    // The API, as API Gateway and its functions: one invocation per request.
    const routes = allRoutes(deps);
    const api = createApiHandler(routes, logger);
    const nameOf = routeNamer(routes);
    const handler: ApiHandler = (event, context) =>
      activity.track(async () => {
        const invocation = scopes.invocation('api');
        const name = nameOf(event.requestContext.http.method, event.rawPath);
        const run = scopes.run({ where: 'api', name, invocation }, () => api(event, context));
        // API Gateway answers 502 for a function that died.
        return untilDeath(invocation, run, () => ({ statusCode: 502, headers: { 'content-type': 'application/json' }, body: '{"message":"Internal Server Error"}' }));
      });
    serve = handler;

    const quiesce = async () => {
      for (;;) {
        const before = activity.generation;
        await activity.idle();
        await Promise.all(localQueues.map((q) => q.idle()));
        await nextTurn();
        await nextTurn();
        if (activity.inFlight === 0 && activity.generation === before) return;
      }
    };

    return {
      url: server.url,
      clock,
      faults,
      metrics,
      deps,
      jobs,
      placer,
      ledger,
      receivers,
      smtp,
      activity,
      queues: localQueues,
      transport: localTransport,
      observer: { clients: observer, tableNames },
      onMail: (listener) => mailListeners.push(listener),
      quiesce,
      advance: () => {
        const next = clock.nextTimerAt();
        if (next === undefined) return false;
        clock.set(Math.max(next, clock.now()));
        return true;
      },
      rescuerPasses: () => passes,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
