import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { allKinds, httpFunctionsByRoute, tables } from '../functions/app/system.ts';
import type { TableNames } from '../functions/app/system.ts';
import { callsDefaults } from '../functions/calls/config.ts';
import type { BookingStore } from '../functions/calendar/booking-store.ts';
import type { CalendarProvider } from '../functions/calendar/port.ts';
import type { CallsStore } from '../functions/calls/store.ts';
import { createLocalHost } from '../functions/local/host.ts';
import type { LocalHost } from '../functions/local/host.ts';
import { parseMailConfig } from '../functions/mail/config.ts';
import type { MailTransport } from '../functions/mail/transport.ts';
import { transportFor } from '../functions/mail/smtp-transport.ts';
import { createAwsClients, localCredentials } from '../functions/platform/aws.ts';
import type { AwsClients } from '../functions/platform/aws.ts';
import { clockMs, systemClock } from '../functions/platform/clock.ts';
import { ensureTables, freePort } from '../functions/platform/local/dynamodb-local.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import type { MetricsSink } from '../functions/platform/metrics.ts';
import { SentRequestLog } from '../functions/platform/recorder.ts';
import { seededRng } from '../functions/platform/rng.ts';
import type { WebhookOptions } from '../functions/webhooks/context.ts';
import { LocalSecretKey } from '../functions/platform/secret-key.ts';
import type { WebhookHttp } from '../functions/webhooks/deps.ts';
import type { WebhookStore } from '../functions/webhooks/store.ts';
import { SWEEP_EVERY_SECONDS } from '../functions/webhooks/kinds.ts';
import { leaseMs } from '../functions/jobs/queues.ts';
import { leaseTerms } from '../functions/webhooks/lease.ts';
import { webhooksQueues } from '../functions/webhooks/queues.ts';
import { SimClock } from './clock.ts';
import { FaultInjector } from './faults.ts';
import { SLOW_SEND_TIMEOUT_MS } from './plan.ts';
import type { Plan } from './plan.ts';
import { Activity, Scopes } from './scope.ts';
import type { Invocation, RunScope } from './scope.ts';
import { SimReceivers } from './world/endpoints.ts';
import { SimCalendar } from './world/calendar-agent.ts';
import { CallLedger } from './world/ledger.ts';
import { AppliedWrites } from './world/writes.ts';
import { SimPlacer } from './world/placer.ts';
import { SimSmtp } from './world/smtp.ts';
import type { ReceivedMail } from './world/smtp.ts';

/** The intake's signing secret in the simulation (the Standard Webhooks spec's example key). */
export const SIM_WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The mail domain of the simulation's messages (their From and Message-IDs). */
export const SIM_MAIL_DOMAIN = 'sim.redial.test';

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
 * Other implementations of redial's parts, passed in by a test to put a bug back (sim/bugs.ts): each
 * replaces one part through a seam the local host already has for it, never through a branch in
 * functions/.
 */
export interface Alterations {
  /** The calls context's store (built over the host's client and tables). */
  callsStore?: (db: DynamoDBDocumentClient, tableNames: TableNames) => CallsStore;
  /** The metrics sink the rescuer counts in (on AWS a function of its own); the workers keep the host's. */
  rescuerMetrics?: (metrics: MetricsSink) => MetricsSink;
  /** The mail transport (wrapped around the SMTP one). */
  mailTransport?: (inner: MailTransport) => MailTransport;
  /** The HTTP client webhook deliveries send with (wrapped around the vetted one). */
  webhookHttp?: (inner: WebhookHttp) => WebhookHttp;
  /** The webhooks context's store (built over the host's client and tables), the intake's publisher's too. */
  webhookStore?: (db: DynamoDBDocumentClient, tableNames: TableNames) => WebhookStore;
  /** Webhook options that differ from the simulation's (their request timeout, the lease's terms). */
  webhookOptions?: (defaults: { requestTimeoutMs: number; speed: number }) => Partial<WebhookOptions>;
  /** The booking's store (built over the host's client and the `calendar` table): the tools' and the settle job's. */
  bookingStore?: (db: DynamoDBDocumentClient, table: string) => BookingStore;
  /** The calendar provider the booking sends with (wrapped around the one over the built-in calendar). */
  calendarProvider?: (inner: CalendarProvider) => CalendarProvider;
}

export interface SimHostOptions {
  /** A running DynamoDB Local; the host creates fresh tables in it and deletes them when it stops. */
  dynamoEndpoint: string;
  plan: Plan;
  alterations?: Alterations;
  /** Run every rescuer pass, even one that would find nothing to do (`--every-pass`). @default false */
  everyPass?: boolean;
  /** Log every AWS request redial sends, with the deployed function that sends it (test/infra/iam). @default false */
  logRequests?: boolean;
}

/** redial on one machine under a fault plan, and the world around it. */
export interface SimHost {
  url: string;
  clock: SimClock;
  faults: FaultInjector;
  metrics: MemoryMetrics;
  /** The local host the simulation runs redial on (functions/local/host.ts). */
  local: LocalHost;
  placer: SimPlacer;
  /** The calls the placer has out, for the concurrency invariant. */
  ledger: CallLedger;
  /** What the applied writes said: completions, the events deliveries were written for, finalisations. */
  writes: AppliedWrites;
  receivers: SimReceivers;
  smtp: SimSmtp;
  /** The built-in calendar and the agent's calendar tools, in a plan with calendars (sim/calendar-plan.ts). */
  calendar: SimCalendar | undefined;
  activity: Activity;
  /** Clients without faults, for the invariants to read the tables with. */
  observer: { clients: AwsClients; tableNames: TableNames };
  /**
   * How long a delivery waiting in a list may wait behind a lease nobody works under (its holder crashed, or
   * never committed): the lease's length on this plan's clock, then the sweep's period and the rescuer's
   * (which starts the sweep). docs/webhooks.md, "Races, crashes, nothing stranded".
   */
  strandedWithinMs: number;
  /**
   * A webhook.deliver run's claim on this plan's clock (its queue's timeout and margin, real time): a run
   * whose worker was lost, or whose outcome was not recorded, stays `running` that long before the rescuer
   * may move it on, and a lease handed to it meanwhile waits for that (the stranded bound starts after it).
   */
  deliveryClaimMs: number;
  /**
   * The clock's jumps while a slow send was out (`endpoint.slow`), in order: a timer that fell due inside
   * one (the sweep that restarts a stalled list, say) runs at its end, so a wait that spans a jump is
   * longer by it than anything redial did.
   */
  slowSendJumps: { from: number; to: number }[];
  /** Every AWS request redial sent, by deployed function (with `logRequests`). */
  sentRequests: SentRequestLog | undefined;
  /** Called with each mail the SMTP server takes (the driver follows the owner's confirmation link). */
  onMail(listener: (mail: ReceivedMail) => void): void;
  /** Resolves when nothing is in flight: no batch, request, rescuer pass or result being sent. */
  quiesce(): Promise<void>;
  /** Moves the clock to the next timer (firing it); false if none waits. */
  advance(): boolean;
  /** Rescuer passes so far (those left out as idle included). */
  rescuerPasses(): number;
  /** Rescuer passes left out because they would have found nothing to do ({@link idlePass}). */
  passesLeftOut(): number;
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

const PERIODIC_KINDS = allKinds.filter((k) => k.periodic);

/**
 * Whether a rescuer pass at `now` would find nothing to do, read in one Scan of the jobs table (with the
 * observer's client, which no fault touches): no byCheck entry ahead of its partition's watermark has come
 * due (the pass's walk, functions/jobs/rescuer.ts, reads from the watermark to now and acts only on what it
 * finds), and every periodic kind's job for the current period exists (the pass's other write). Such a
 * pass writes nothing and changes nothing, so leaving it out leaves the run as it was; most of a seed's
 * simulated time is spent waiting (a mail cap's hour, a Retry-After), and a pass reads every one of the 32
 * byCheck partitions, so a run that took every pass spent most of its requests there. A pass that finds
 * something runs whole, under its scope, and the plan's faults aim at it as before.
 */
async function idlePass(db: DynamoDBDocumentClient, table: string, now: number): Promise<boolean> {
  const due = `${new Date(now).toISOString()}#\uffff`;
  const marks = new Map<string, string>();
  const entries: { shard: string; at: string }[] = [];
  const ids = new Set<string>();
  const pages = paginateScan(
    { client: db },
    { TableName: table, ConsistentRead: true, ProjectionExpression: 'id, checkShard, checkAt, checkedTo' },
  );
  for await (const page of pages) {
    for (const item of page.Items ?? []) {
      const id = String(item['id']);
      ids.add(id);
      if (typeof item['checkedTo'] === 'string' && id.startsWith('rescuer#')) marks.set(id.slice('rescuer#'.length), item['checkedTo']);
      if (typeof item['checkShard'] === 'string' && typeof item['checkAt'] === 'string') entries.push({ shard: item['checkShard'], at: item['checkAt'] });
    }
  }
  if (entries.some((e) => e.at <= due && e.at > (marks.get(e.shard) ?? ''))) return false;
  return PERIODIC_KINDS.every((kind) => {
    const period = kind.periodic!.everySeconds * 1000;
    return ids.has(`${kind.kind}@${new Date(Math.floor(now / period) * period).toISOString()}`);
  });
}

/**
 * Real ms a slow send answers before the client's request timeout: it holds its answer for what the clock's
 * jump set off to run beside it (a rescuer pass, a sweep, a result published, a delivery either starts) at
 * most until then, so the send itself still succeeds.
 */
const SLOW_SEND_MARGIN_MS = 500;

/**
 * Resolves once what runs beside a held request has settled: no more in flight than `beside` (what was,
 * the request's own invocation included) and nothing started or ended for a few turns; or after `limitMs`.
 */
async function settledBeside(activity: Activity, beside: number, limitMs: number): Promise<void> {
  const started = performance.now();
  let generation = -1;
  let quiet = 0;
  while (performance.now() - started < limitMs) {
    await sleep(5);
    quiet = activity.inFlight <= beside && activity.generation === generation ? quiet + 1 : 0;
    if (quiet >= 3) return;
    generation = activity.generation;
  }
}

/**
 * The deployed function a run is part of, as lib/redial-stack.ts names them: a queue's worker, the function
 * serving the request's route (`functionOfRoute`), or the rescuer; undefined outside any run.
 */
function deployedFunction(scope: RunScope | undefined, functionOfRoute: (route: string) => string | undefined): string | undefined {
  if (!scope) return undefined;
  switch (scope.where) {
    case 'job':
      return `${scope.invocation.fn.replace(/^worker:/, '')}Worker`;
    case 'api':
      return functionOfRoute(scope.name) ?? 'api';
    case 'rescuer':
      return 'rescuer';
  }
}

/** A key of the seed's own, KMS's place, so that every use of it can be logged. */
const simSecretKey = (): LocalSecretKey => LocalSecretKey.generate();

/** Races a run against its invocation's death: a dead invocation answers at once (its runs hang on). */
async function untilDeath<T>(invocation: Invocation, run: Promise<T>, onDeath: () => T): Promise<T> {
  return Promise.race([run, invocation.died.then(onDeath)]);
}

/**
 * Redial for one seed, on the local host (functions/local/host.ts `createLocalHost`, which `npm start`,
 * the test fixtures and the benchmarks build on too), with what the simulation adds through its options:
 * fresh tables in a shared DynamoDB Local; AWS clients with the plan's {@link FaultInjector} as their
 * interceptor; the in-process queues and schedules behind the injector's transport decorator
 * (`wrapTransport`); the mail transport behind its mail decorator; the simulation clock, with the rescuer
 * timed by it (`rescuer.onClock`); every worker batch, each record in it, each API request and each
 * rescuer pass run under a scope (scope.ts) the injector reads, so a crash kills exactly one invocation
 * (`boundaries`); and the world around redial: the call placer, the webhook receivers, the SMTP server.
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

    const clock = new SimClock(SIM_START, plan.speed ?? 1);
    const scopes = new Scopes();
    const activity = new Activity();
    const faultRng = seededRng(plan.seed * 7 + 3);
    const faults = new FaultInjector({ faults: plan.faults, scopes, clock, draw: () => faultRng.float() });
    const dynamoLocal = { region: 'local', endpoints: { dynamodb: options.dynamoEndpoint }, credentials: localCredentials };
    // Attributed through the run's scope: which worker's batch, which route's request, or the rescuer.
    let routes: Record<string, string> | undefined;
    const sent = options.logRequests
      ? new SentRequestLog(() => deployedFunction(scopes.current(), (route) => (routes ??= httpFunctionsByRoute(local.system))[route]), {
          ...Object.fromEntries(Object.entries(tableNames).map(([key, name]) => [name, `table:${key}`])),
          [SIM_MAIL_DOMAIN]: 'identity:mail',
        })
      : undefined;
    // The log first: it sees every request the code sends, those a fault then refuses included.
    const clients = createAwsClients({ ...dynamoLocal, interceptor: sent ? { instrument: (client, service) => (sent.instrument(client, service), faults.instrument(client, service)) } : faults });
    const observer = createAwsClients(dynamoLocal);
    stops.push(() => {
      clients.dynamo.destroy();
      observer.dynamo.destroy();
    });

    let passesLeftOut = 0;
    const logger = createLogger('simulate');
    const metrics = new MemoryMetrics();
    const rng = seededRng(plan.seed * 7 + 1);

    // The world, first: its servers hold their ports before the API's is picked.
    const mailListeners: ((mail: ReceivedMail) => void)[] = [];
    const ledger = new CallLedger();
    const writes = new AppliedWrites(tableNames, () => clock.now());
    faults.onApplied((service, operation, input) => {
      if (service === 'DynamoDB' && operation === 'TransactWriteItems') ledger.applied(input);
      if (service === 'DynamoDB') writes.applied(operation, input);
    });
    const calendar = plan.campaign.tenants.some((t) => t.calendars?.length)
      ? await SimCalendar.start({ clock, activity, scopes, faults, planFaults: plan.faults, seed: plan.seed, secret: SIM_WEBHOOK_SECRET })
      : undefined;
    if (calendar) stops.push(() => calendar.close());
    const placer = new SimPlacer({
      onAccepted: (callId, batchId) => ledger.accepted(callId, batchId),
      ...(calendar ? { duringCall: (call) => calendar.duringCall(call) } : {}),
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
    const requestTimeoutMs = plan.speed !== undefined ? SLOW_SEND_TIMEOUT_MS : 400;
    const slowSendJumps: { from: number; to: number }[] = [];
    const receivers = new SimReceivers({
      clock,
      scopes,
      faults,
      planFaults: plan.faults,
      stallMs: requestTimeoutMs * 3,
      slowSend: async (fraction) => {
        const beside = activity.inFlight;
        const from = clock.now();
        const to = from + Math.floor(fraction * requestTimeoutMs * clock.speed);
        slowSendJumps.push({ from, to });
        clock.set(to);
        await settledBeside(activity, beside, requestTimeoutMs - SLOW_SEND_MARGIN_MS);
      },
    });
    await receivers.start();
    stops.push(() => receivers.close());
    const smtp = new SimSmtp({ clock, faults, onMail: (mail) => mailListeners.forEach((l) => l(mail)) });
    await smtp.start();
    stops.push(() => smtp.close());

    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const mail = parseMailConfig({ MAIL_DOMAIN: SIM_MAIL_DOMAIN, PUBLIC_BASE_URL: url, MAIL_TRANSPORT: 'smtp', SMTP_URL: smtp.url });
    const smtpTransport = transportFor(mail.transport, clients);
    const injected = faults.mail(alterations.mailTransport ? alterations.mailTransport(smtpTransport) : smtpTransport);
    const local: LocalHost = await createLocalHost({
      db: clients.dynamo,
      tableNames,
      clock,
      speed: clock.speed,
      rng,
      logger,
      metrics,
      wrapTransport: (inner, queues) => {
        const transport = faults.transport({
          sendMessage: (queue, body, delaySeconds) => inner.sendMessage(queue, body, delaySeconds),
          createSchedule: (name, at, queue, body) => inner.createSchedule(name, at, queue, body),
          deleteSchedule: (name) => inner.deleteSchedule(name),
          deliverNow: (queue, body) => queues.find((q) => q.name === queue)?.send(body, 0),
        });
        return sent ? sent.dispatch(transport) : transport;
      },
      // KMS's place: the process's key, its every use logged as the KMS request it is on AWS.
      ...(sent ? { secretKey: sent.key(simSecretKey()) } : {}),
      contexts: {
        calls: {
          ...callsDefaults,
          placerUrl: placer.url,
          callbackUrl: `${url}/v1/calls/webhook`,
          webhookSecret: SIM_WEBHOOK_SECRET,
          callTimeoutSeconds: SIM_CALL_TIMEOUT_SECONDS,
          placerTimeoutMs: PLACER_TIMEOUT_MS,
        },
        mail: { config: mail, transport: sent ? sent.mail(injected) : injected },
        webhooks: {
          allowLoopback: true,
          requestTimeoutMs,
          ...(alterations.webhookHttp ? { wrapHttp: alterations.webhookHttp } : {}),
          ...(alterations.webhookOptions ? alterations.webhookOptions({ requestTimeoutMs, speed: clock.speed }) : {}),
        },
        // The provider talks to the built-in calendar; the tools are signed with the intake's secret.
        ...(calendar
          ? {
              calendar: {
                ...calendar.config(),
                ...(alterations.bookingStore ? { bookingStore: alterations.bookingStore } : {}),
                ...(alterations.calendarProvider ? { wrapProvider: alterations.calendarProvider } : {}),
              },
            }
          : {}),
        // Signatures are stamped and checked with the wall clock, as the AI handler and receivers do.
        wallClock: systemClock,
        ...(alterations.callsStore ? { callsStore: alterations.callsStore(clients.dynamo, tableNames) } : {}),
        ...(alterations.webhookStore ? { webhookStore: alterations.webhookStore(clients.dynamo, tableNames) } : {}),
      },
      rescuer: {
        intervalMs: RESCUER_PERIOD_MS,
        rescueAfterMs: RESCUE_AFTER_MS,
        onClock: true,
        // The tables are new: nothing waits in them to be woken at start (recover() would read every byCheck
        // partition for each waiting state, some 130 requests in turn, to find nothing).
        recover: false,
        ...(alterations.rescuerMetrics ? { metrics: alterations.rescuerMetrics(metrics) } : {}),
      },
      boundaries: {
        // A queue worker's batch, as its Lambda: one invocation; each record a run of its own.
        batch: (queue, event, run) =>
          activity.track(async () => {
            const invocation = scopes.invocation(`worker:${queue}`);
            const runs = Promise.all(
              event.Records.map((record) => {
                const { jobId, kind } = jobOf(record);
                return scopes.run({ where: 'job', name: kind, ...(jobId ? { jobId } : {}), invocation }, () => run(record));
              }),
            ).then((parts) => ({ batchItemFailures: parts.flatMap((p) => p.batchItemFailures) }));
            return untilDeath(invocation, runs, () => {
              // The invocation died: SQS sees a failed invocation, and every message of the batch comes back.
              throw new Error(`worker:${queue} died (${invocation.cause ?? 'crash'})`);
            });
          }),
        // An API request, as API Gateway and its function: a dead function is a 502.
        request: (route, run) =>
          activity.track(async () => {
            const invocation = scopes.invocation('api');
            return untilDeath(invocation, scopes.run({ where: 'api', name: route, invocation }, run), () => ({
              statusCode: 502,
              headers: { 'content-type': 'application/json' },
              body: '{"message":"Internal Server Error"}',
            }));
          }),
        // A rescuer pass, as its scheduled Lambda; one that would find nothing to do is left out (see idlePass).
        rescuerPass: (run) =>
          activity.track(async () => {
            if (!options.everyPass && (await idlePass(observer.dynamo, tableNames.jobs, clock.now()))) {
              passesLeftOut++;
              return;
            }
            const invocation = scopes.invocation('rescuer');
            await untilDeath(invocation, scopes.run({ where: 'rescuer', name: 'rescuer', invocation }, run), () => undefined);
          }),
      },
      serve: { port },
    });
    stops.push(() => local.stop());

    const quiesce = async () => {
      for (;;) {
        const before = activity.generation;
        await activity.idle();
        await local.idle();
        await nextTurn();
        await nextTurn();
        if (activity.inFlight === 0 && activity.generation === before) return;
      }
    };

    return {
      url,
      clock,
      faults,
      metrics,
      local,
      placer,
      ledger,
      writes,
      receivers,
      smtp,
      calendar,
      activity,
      observer: { clients: observer, tableNames },
      strandedWithinMs: leaseTerms(requestTimeoutMs, clock.speed).leaseMs + SWEEP_EVERY_SECONDS * 1000 + RESCUER_PERIOD_MS,
      deliveryClaimMs: clockMs(clock, leaseMs(webhooksQueues.deliveries)),
      slowSendJumps,
      sentRequests: sent,
      onMail: (listener) => mailListeners.push(listener),
      quiesce,
      advance: () => {
        const next = clock.nextTimerAt();
        if (next === undefined) return false;
        clock.set(Math.max(next, clock.now()));
        return true;
      },
      rescuerPasses: () => local.rescuerPasses(),
      passesLeftOut: () => passesLeftOut,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
