import { randomBytes } from 'node:crypto';
import type { SQSEvent } from 'aws-lambda';
import { callsDefaults, DEFAULT_CALL_TIMEOUT_SECONDS } from '../../functions/calls/config.ts';
import { DEV_WEBHOOK_SECRET } from '../../functions/calls/local/config.ts';
import { CallPlacerSimulator } from '../../functions/calls/local/simulator.ts';
import { queueNames, queues } from '../../functions/jobs/queues.ts';
import type { QueueName } from '../../functions/jobs/queues.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';
import type { JobRuntime } from '../../functions/jobs/runtime.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { transportFor } from '../../functions/mail/transport.ts';
import type { MailTransport } from '../../functions/mail/transport.ts';
import { allKinds, allRoutes, handlersByQueue, httpFunctionsByRoute, tables } from '../../functions/ops/system.ts';
import type { HttpFunction, SystemDeps, TableNames } from '../../functions/ops/system.ts';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import type { AwsClients } from '../../functions/platform/aws.ts';
import { ScaledClock, systemClock } from '../../functions/platform/clock.ts';
import type { TimerClock } from '../../functions/platform/clock.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { ensureTables, freePort } from '../../functions/platform/local/dynamodb-local.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { ApiHandler } from '../../functions/platform/local/http-server.ts';
import { LocalQueue, LocalTransport } from '../../functions/platform/local/queues.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import type { SmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { RequestRecorder } from '../../functions/platform/recorder.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { webhooksContext } from '../../functions/webhooks/context.ts';

/** How the capacity run's host is set up. */
export interface CapacityHostOptions {
  /** A running DynamoDB Local; the host creates fresh tables in it. */
  dynamoEndpoint: string;
  /** Job time per real time: 0.03 makes a 10-minute watchdog wait 18 s. */
  timeScale: number;
  seed: number;
  /** How often the rescuer runs, real ms (on AWS: once a minute). */
  rescueIntervalMs: number;
}

/** The local stack under the recorder, and what the run needs to drive and observe it. */
export interface CapacityHost {
  url: string;
  recorder: RequestRecorder;
  clock: TimerClock;
  deps: SystemDeps;
  jobs: JobRuntime;
  simulator: CallPlacerSimulator;
  smtpSink: SmtpSink;
  localQueues: LocalQueue[];
  /** Clients that are not recorded, for the run to watch progress without adding to what it measures. */
  observer: { clients: AwsClients; tableNames: TableNames };
  /** Rescuer passes run so far. */
  rescuerPasses(): number;
  /** Fires every schedule still waiting, now (see LocalTransport.firePending); returns how many. */
  firePendingSchedules(): number;
  stop(): Promise<void>;
}

/** The job id's kind: ids are `<kind>:…` or, for periodic jobs, `<kind>@<period>`. */
const kindOfMessage = (body: string): string => {
  try {
    const { jobId } = JSON.parse(body) as { jobId?: unknown };
    return typeof jobId === 'string' ? (jobId.split(/[:@]/)[0] ?? 'unknown') : 'unknown';
  } catch {
    return 'unknown';
  }
};

/**
 * Which route a request is, and which deployed function serves it (the intake, the mail links, or the IAM
 * API: httpFunctionsByRoute in functions/ops/system.ts).
 */
function routeResolver(deps: SystemDeps): (method: string, path: string) => { route: string; fn: HttpFunction } {
  const routes = Object.entries(httpFunctionsByRoute(deps)).map(([key, fn]) => {
    const [method, pattern] = key.split(' ') as [string, string];
    const regex = new RegExp(`^${pattern.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    return { method, pattern, regex, fn };
  });
  return (method, path) => {
    const found = routes.find((r) => r.method === method && r.regex.test(path));
    return found ? { route: `${method} ${found.pattern}`, fn: found.fn } : { route: `${method} ${path}`, fn: 'api' };
  };
}

/**
 * The local host the capacity run measures, assembled in this one function (as the local runtime,
 * functions/ops/local.ts, assembles it) with a request recorder on every boundary: the AWS clients
 * (DynamoDB), the local transport (SQS sends, Scheduler schedules and firings), each queue worker's batch
 * and each record in it (Lambda invocations and per-record durations), each API request (API Gateway and
 * the API function) and each mail sent (SES). Fresh tables in a shared DynamoDB Local, the built-in call
 * placer simulator, the SMTP sink, the rescuer on its interval, the API on a free port.
 *
 * A shared host builder can replace this function if it takes a `RequestRecorder` (for createAwsClients and
 * the LocalTransport), runs each queue batch, each record in it, each API request and each rescuer pass
 * under `recorder.measure` with the records below, records each mail its transport accepted, and exposes
 * the transport's `firePending` and a set of unrecorded clients: everything else here is the local runtime.
 */
export async function startCapacityHost(options: CapacityHostOptions): Promise<CapacityHost> {
  const logger = createLogger('capacity');
  const stops: (() => Promise<void> | void)[] = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse()) await fn();
  };
  try {
    const prefix = `c${randomBytes(4).toString('hex')}`;
    const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
    await ensureTables(options.dynamoEndpoint, Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
    const recorder = new RequestRecorder({
      tables: Object.fromEntries(Object.entries(tables).map(([key, definition]) => [tableNames[key as keyof TableNames], definition])),
      complete: true,
    });
    const local = { region: 'local', endpoints: { dynamodb: options.dynamoEndpoint }, credentials: localCredentials };
    const clients = createAwsClients({ ...local, recorder });
    const observer = createAwsClients(local);
    stops.push(() => {
      clients.dynamo.destroy();
      observer.dynamo.destroy();
    });

    const smtpSink = await startSmtpSink();
    stops.push(() => smtpSink.stop());
    const clock = new ScaledClock(options.timeScale);
    const localQueues = queueNames.map(
      (name) =>
        new LocalQueue({
          name,
          clock,
          batchSize: queues[name].batchSize,
          maxConcurrency: queues[name].maxConcurrency,
          visibilityMs: 6 * queues[name].timeoutSeconds * 1000 * clock.speed,
          onError: (error) => logger.error('worker threw', { error: String(error) }),
        }),
    );
    const transport = new LocalTransport(localQueues, clock, recorder);
    stops.push(async () => {
      transport.stop();
      await Promise.all(localQueues.map((q) => q.stop()));
    });
    const metrics = new MemoryMetrics();
    const jobs = createJobRuntime({ db: clients.dynamo, jobsTable: tableNames.jobs, transport, clock, rng: seededRng(options.seed), logger, metrics });

    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const simulator = await CallPlacerSimulator.start({ clock, signingClock: systemClock, rng: seededRng(options.seed + 1), secret: DEV_WEBHOOK_SECRET });
    stops.push(() => simulator.close());
    const mail = parseMailConfig({ MAIL_DOMAIN: 'capacity.redial.local', PUBLIC_BASE_URL: url, MAIL_TRANSPORT: 'smtp', SMTP_URL: smtpSink.url });
    const smtp = transportFor(mail.transport, clients);
    // SES's place: every message the transport accepted is one SES send.
    const mailTransport: MailTransport = {
      name: smtp.name,
      send: async (message, signal) => {
        const sent = await smtp.send(message, signal);
        recorder.record({ service: 'SES', operation: 'SendEmail', bytes: message.raw.length });
        return sent;
      },
    };
    const deps: SystemDeps = {
      jobs,
      db: clients.dynamo,
      tableNames,
      clock,
      wallClock: systemClock,
      rng: seededRng(options.seed + 2),
      logger,
      metrics,
      calls: { ...callsDefaults, placerUrl: simulator.url, callbackUrl: `${url}/v1/calls/webhook`, webhookSecret: DEV_WEBHOOK_SECRET, callTimeoutSeconds: DEFAULT_CALL_TIMEOUT_SECONDS },
      mail: { config: mail, transport: mailTransport },
      webhooks: { allowLoopback: true },
    };
    stops.push(() => webhooksContext(deps).close());

    // Each queue's worker, as its Lambda: one invocation per batch, each record run (and timed) on its own.
    const handlers = handlersByQueue(deps);
    for (const queue of localQueues) {
      const name = queue.name as QueueName;
      const fn = `worker:${name}`;
      const worker = jobs.worker(name, handlers[name]);
      queue.consume(async (event: SQSEvent) => {
        const batch = await recorder.measure(
          fn,
          async () => {
            const parts = await Promise.all(
              event.Records.map(async (record) => {
                const kind = kindOfMessage(record.body);
                const run = await recorder.measure(`job:${kind}`, () => worker({ Records: [record] }, {} as never));
                recorder.record({ service: 'Lambda', operation: 'Record', function: fn, kind, durationMs: run.durationMs });
                return run.value;
              }),
            );
            return { batchItemFailures: parts.flatMap((p) => p.batchItemFailures) };
          },
          { root: true },
        );
        recorder.record({ service: 'Lambda', operation: 'Invoke', function: fn, records: event.Records.length, durationMs: batch.durationMs, bytes: 0, source: fn });
        return batch.value;
      });
    }

    // The rescuer, as its Lambda on its schedule.
    const rescuer = jobs.rescuer(allKinds, 30_000 * clock.speed);
    let passes = 0;
    let running: Promise<void> | undefined;
    const interval = setInterval(() => {
      if (running) return;
      running = recorder
        .measure('rescuer', () => rescuer.run(), { root: true })
        .then((pass) => {
          passes++;
          recorder.record({ service: 'Lambda', operation: 'Invoke', function: 'rescuer', records: 1, durationMs: pass.durationMs, bytes: 0, source: 'rescuer' });
        })
        .catch((error: unknown) => logger.error('rescuer pass failed', { error: String(error) }))
        .finally(() => (running = undefined));
    }, options.rescueIntervalMs);
    stops.push(async () => {
      clearInterval(interval);
      await running;
    });

    // The API, as API Gateway and the function that serves each route: one invocation per request.
    const api = createApiHandler(allRoutes(deps), logger);
    const resolve = routeResolver(deps);
    const handler: ApiHandler = async (event, context) => {
      const { route, fn } = resolve(event.requestContext.http.method, event.rawPath);
      const source = `api:${route}`;
      const call = await recorder.measure(source, () => api(event, context), { root: true });
      const bytes = Buffer.byteLength(event.body ?? '') + Buffer.byteLength(call.value.body ?? '');
      recorder.record({ service: 'Lambda', operation: 'Invoke', function: fn, records: 1, durationMs: call.durationMs, bytes, source });
      return call.value;
    };
    const server = await startHttpServer({ port, handler });
    stops.push(() => server.close());

    return {
      url: server.url,
      recorder,
      clock,
      deps,
      jobs,
      simulator,
      smtpSink,
      localQueues,
      observer: { clients: observer, tableNames },
      rescuerPasses: () => passes,
      firePendingSchedules: () => transport.firePending(),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
