import { randomBytes } from 'node:crypto';
import { callsDefaults, DEFAULT_CALL_TIMEOUT_SECONDS } from '../../functions/calls/config.ts';
import { DEV_WEBHOOK_SECRET } from '../../functions/calls/local/config.ts';
import { CallPlacerSimulator } from '../../functions/calls/local/simulator.ts';
import { DAY_SUMMARY_BYTES } from './kinds.ts';
import type { JobRuntime } from '../../functions/jobs/runtime.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import type { LocalHost } from '../../functions/local/host.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { transportFor } from '../../functions/mail/smtp-transport.ts';
import { allKinds, httpFunctionsByRoute, tables } from '../../functions/app/system.ts';
import type { System, TableNames } from '../../functions/app/system.ts';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import type { AwsClients } from '../../functions/platform/aws.ts';
import { ScaledClock, systemClock } from '../../functions/platform/clock.ts';
import type { TimerClock } from '../../functions/platform/clock.ts';
import { ensureTables, freePort } from '../../functions/platform/local/dynamodb-local.ts';
import type { LocalQueue } from '../../functions/platform/local/queues.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import type { SmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { Logger } from '@aws-lambda-powertools/logger';
import type { Server } from 'node:http';
import { MemoryMetrics, powertoolsMetrics } from '../../functions/platform/metrics.ts';
import type { MetricsSink } from '../../functions/platform/metrics.ts';
import { RequestRecorder, SentRequestLog } from '../../functions/platform/recorder.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { LocalSecretKey } from '../../functions/platform/secret-key.ts';

/** How the capacity run's host is set up. */
export interface CapacityHostOptions {
  /** A running DynamoDB Local; the host creates fresh tables in it. */
  dynamoEndpoint: string;
  /** Job time per real time: 0.03 makes a 10-minute watchdog wait 18 s. */
  timeScale: number;
  seed: number;
  /** How often the rescuer runs, real ms (on AWS: once a minute). */
  rescueIntervalMs: number;
  /** Requests the API serves at once (the rest wait, untimed). @default no limit */
  apiConcurrency?: number;
  /** Batches each queue's worker runs at once. @default the context's */
  queueConcurrency?: number;
  /** Log every AWS request by the deployed function that sends it, for the IAM check (test/infra/iam). @default false */
  logRequests?: boolean;
}

/** The local stack under the recorder, and what the run needs to drive and observe it. */
export interface CapacityHost {
  url: string;
  recorder: RequestRecorder;
  clock: TimerClock;
  system: System;
  jobs: JobRuntime;
  simulator: CallPlacerSimulator;
  smtpSink: SmtpSink;
  localQueues: LocalQueue[];
  /** Clients that are not recorded, for the run to watch progress without adding to what it measures. */
  observer: { clients: AwsClients; tableNames: TableNames };
  /** Every AWS request sent, by deployed function (with `logRequests`). */
  sentRequests: SentRequestLog | undefined;
  /** Rescuer passes run so far. */
  rescuerPasses(): number;
  /** Bytes the call placer received (request lines, headers and bodies) since the host started. */
  placerBytes(): number;
  /** Fires every schedule still waiting, now (see LocalTransport.firePending); returns how many. */
  firePendingSchedules(): number;
  stop(): Promise<void>;
}

/**
 * The local host the capacity run measures: the shared local host (functions/local/host.ts) with a request
 * recorder on every boundary — the AWS clients (DynamoDB), the in-process transport (SQS sends, Scheduler
 * schedules and firings), each queue worker's batch and each record in it (Lambda invocations and
 * per-record durations), each API request (API Gateway and the function that serves its route), each
 * rescuer pass and each mail sent (SES). Fresh tables in a shared DynamoDB Local, the built-in call placer
 * simulator, the SMTP sink, the rescuer on its interval, the API on a free port.
 */
export async function startCapacityHost(options: CapacityHostOptions): Promise<CapacityHost> {
  // The level the deployed functions log at: the template sets no LOG_LEVEL, so createLogger's default.
  const logger = new Logger({ serviceName: 'redial', logLevel: DEPLOYED_LOG_LEVEL });
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
    stops.push(captureLogs(recorder));
    const local = { region: 'local', endpoints: { dynamodb: options.dynamoEndpoint }, credentials: localCredentials };
    const mailDomain = 'capacity.redial.local';
    // Attributed through the recorder's scope: a worker's batch or record, the request's route, the rescuer.
    let routes: Record<string, string> | undefined;
    const sent = options.logRequests
      ? new SentRequestLog(() => functionOfSource(recorder.source(), (route) => (routes ??= httpFunctionsByRoute(host.system))[route]), {
          ...Object.fromEntries(Object.entries(tableNames).map(([key, name]) => [name, `table:${key}`])),
          [mailDomain]: 'identity:mail',
        })
      : undefined;
    const clients = createAwsClients({ ...local, recorder, ...(sent ? { interceptor: sent } : {}) });
    // Clients that are not recorded, for the run to watch progress without adding to what it measures.
    const observer = createAwsClients(local);
    stops.push(() => {
      clients.dynamo.destroy();
      observer.dynamo.destroy();
    });

    const smtpSink = await startSmtpSink();
    stops.push(() => smtpSink.stop());
    const clock = new ScaledClock(options.timeScale);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const simulator = await CallPlacerSimulator.start({ clock, signingClock: systemClock, rng: seededRng(options.seed + 1), secret: DEV_WEBHOOK_SECRET, summaryBytes: DAY_SUMMARY_BYTES });
    stops.push(() => simulator.close());
    const placerBytes = countBytesReceived((simulator as unknown as { server: Server }).server);
    const mail = parseMailConfig({ MAIL_DOMAIN: mailDomain, PUBLIC_BASE_URL: url, MAIL_TRANSPORT: 'smtp', SMTP_URL: smtpSink.url });
    const mailTransport = transportFor(mail.transport, clients);

    const host: LocalHost = await createLocalHost({
      db: clients.dynamo,
      tableNames,
      clock,
      speed: clock.speed,
      rng: seededRng(options.seed),
      logger,
      metrics: bothMetrics(new MemoryMetrics(), powertoolsMetrics('redial')),
      recorder,
      contexts: {
        wallClock: systemClock,
        calls: { ...callsDefaults, placerUrl: simulator.url, callbackUrl: `${url}/v1/calls/webhook`, webhookSecret: DEV_WEBHOOK_SECRET, callTimeoutSeconds: DEFAULT_CALL_TIMEOUT_SECONDS },
        mail: { config: mail, transport: sent ? sent.mail(mailTransport) : mailTransport },
        webhooks: { allowLoopback: true },
      },
      ...(sent ? { wrapTransport: (inner) => sent.dispatch(inner), secretKey: sent.key(LocalSecretKey.generate()) } : {}),
      rescuer: { intervalMs: options.rescueIntervalMs, rescueAfterMs: 30_000 * clock.speed },
      serve: { port, ...(options.apiConcurrency ? { concurrency: options.apiConcurrency } : {}) },
      ...(options.queueConcurrency ? { queueConcurrency: options.queueConcurrency } : {}),
    });
    stops.push(() => host.stop());

    return {
      url: host.url!,
      recorder,
      clock,
      system: host.system,
      jobs: host.jobs,
      simulator,
      smtpSink,
      localQueues: host.queues,
      observer: { clients: observer, tableNames },
      sentRequests: sent,
      rescuerPasses: () => host.rescuerPasses(),
      placerBytes,
      firePendingSchedules: () => host.firePendingSchedules(),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The deployed function a recorder scope (its source) is part of, as lib/redial-stack.ts names them: a job's
 * kind or a batch is its queue's worker's, a request the function serving its route's
 * (`functionOfRoute`), the rescuer's own; undefined for anything else (Scheduler firing a schedule).
 */
function functionOfSource(source: string, functionOfRoute: (route: string) => string | undefined): string | undefined {
  if (source.startsWith('job:')) {
    const kind = allKinds.find((k) => k.kind === source.slice('job:'.length));
    return kind ? `${kind.queue}Worker` : undefined;
  }
  if (source.startsWith('worker:')) return `${source.slice('worker:'.length)}Worker`;
  if (source.startsWith('api:')) return functionOfRoute(source.slice('api:'.length)) ?? 'api';
  return source === 'rescuer' ? 'rescuer' : undefined;
}

/** The application log level the deployed functions run at: lib/ sets no LOG_LEVEL, so functions/platform/logger.ts's default. */
export const DEPLOYED_LOG_LEVEL = 'INFO';

/** Counts as the deployed functions do (EMF lines through Powertools, captured by {@link captureLogs}) and in memory. */
const bothMetrics = (memory: MetricsSink, emf: MetricsSink): MetricsSink => ({
  count(name, dimensions, value) {
    memory.count(name, dimensions, value);
    emf.count(name, dimensions, value);
  },
});

/**
 * What the functions write to stdout and stderr (Powertools' log lines at the deployed level, EMF metric
 * lines), recorded as the CloudWatch Logs bytes it is on AWS and kept off the terminal: a line written
 * inside a recorder scope (a job, an API request, a worker batch, the rescuer) is the function's; anything
 * else (the bench's own progress lines) passes through. Returns the restore.
 */
function captureLogs(recorder: RequestRecorder): () => void {
  const streams = [process.stdout, process.stderr] as const;
  const originals = streams.map((stream) => stream.write.bind(stream));
  streams.forEach((stream, i) => {
    (stream as unknown as { write: unknown }).write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
      const source = recorder.source();
      if (source === 'unscoped') return (originals[i] as (...a: unknown[]) => boolean)(chunk, ...rest);
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      for (const line of text.split('\n')) {
        if (line.length === 0) continue;
        const emf = emfMetric(line);
        recorder.record({ service: 'CloudWatchLogs', operation: emf ? 'EMF' : 'Log', bytes: Buffer.byteLength(line) + 1, ...(emf ? { detail: emf } : {}) });
      }
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  });
  return () => streams.forEach((stream, i) => ((stream as unknown as { write: unknown }).write = originals[i]));
}

/** An EMF line's metric identity (namespace, name, dimension names and values), or undefined for a plain log line. */
function emfMetric(line: string): string | undefined {
  if (!line.includes('"_aws"')) return undefined;
  try {
    const parsed = JSON.parse(line) as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] } };
    return parsed._aws.CloudWatchMetrics.flatMap((d) => d.Metrics.map((m) => `${d.Namespace}/${m.Name}{${(d.Dimensions[0] ?? []).map((k) => `${k}=${String(parsed[k])}`).join(',')}}`)).join(';');
  } catch {
    return undefined;
  }
}

/** Bytes a server's sockets received (request lines, headers, bodies), counted as each socket closes or when asked. */
function countBytesReceived(server: Server): () => number {
  let closed = 0;
  const open = new Set<import('node:net').Socket>();
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => {
      closed += socket.bytesRead;
      open.delete(socket);
    });
  });
  return () => closed + [...open].reduce((n, s) => n + s.bytesRead, 0);
}
