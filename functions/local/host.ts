import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { TimerClock } from '../platform/clock.ts';
import { createApiHandler } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { createLogger } from '../platform/logger.ts';
import type { Logger } from '../platform/logger.ts';
import { MemoryMetrics } from '../platform/metrics.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { RequestRecorder } from '../platform/recorder.ts';
import type { Rng } from '../platform/rng.ts';
import { LocalSecretKey } from '../platform/secret-key.ts';
import type { SecretKey } from '../platform/secret-key.ts';
import { noTracing } from '../platform/tracing.ts';
import type { Tracing } from '../platform/tracing.ts';
import { startHttpServer } from '../platform/local/http-server.ts';
import type { ApiHandler, LocalHttpServer } from '../platform/local/http-server.ts';
import { LocalQueue, LocalTransport } from '../platform/local/queues.ts';
import { sameOriginOnly } from '../platform/local/same-origin.ts';
import type { JobHandler } from '../jobs/index.ts';
import type { RecordHook } from '../jobs/worker.ts';
import type { DispatchTransport } from '../jobs/dispatch.ts';
import { visibilitySeconds } from '../jobs/queues.ts';
import { createJobRuntime } from '../jobs/runtime.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import type { MailTransport } from '../mail/transport.ts';
import { localUploads } from './uploads.ts';
import { httpFunctionsByRoute, queueNames, queues, System } from '../app/system.ts';
import type { HttpFunction, QueueName, SystemHost, TableNames } from '../app/system.ts';

/** How to assemble redial on one machine, over tables that exist already. */
export interface LocalHostOptions {
  db: DynamoDBDocumentClient;
  /** The job layer's own client, when it must differ from the contexts' (a benchmark counting its requests apart). @default db */
  jobsDb?: DynamoDBDocumentClient;
  tableNames: TableNames;
  clock: TimerClock;
  rng: Rng;
  logger?: Logger;
  metrics?: MetricsSink;
  /**
   * How many job-time milliseconds pass per real millisecond (a scaled clock's speed): a queue's
   * visibility timeout is stretched by it, so it stays six worker timeouts of real time. @default 1
   */
  speed?: number;
  /** Where wake-ups go. @default the in-process queues */
  transport?: DispatchTransport;
  /**
   * The key webhook endpoint secrets are encrypted with, KMS's place (functions/platform/secret-key.ts).
   * @default one random key per process: endpoints outlive a host stopped and started again in it, not the process
   */
  secretKey?: SecretKey;
  /** Where the job layer's spans go (X-Ray's place). @default noTracing: nothing is traced, nothing is spent */
  tracing?: Tracing;
  /**
   * Wraps the in-process transport before the job layer gets it (the fault simulator, sim/, loses, delays
   * and repeats messages there). Ignored with a `transport` of the caller's. @default none
   */
  wrapTransport?: (local: LocalTransport, queues: readonly LocalQueue[]) => DispatchTransport;
  /** The contexts' settings (the calls and mail configuration, webhook options, the calendar provider's URLs, the wall clock, another calls or webhooks store). */
  contexts?: Pick<SystemHost, 'calls' | 'mail' | 'webhooks' | 'wallClock' | 'callsStore' | 'webhookStore' | 'uploads' | 'calendar'>;
  /** Where uploaded contacts files are kept (S3's place: functions/local/uploads.ts), unless `contexts.uploads` names a store. @default a new temporary folder */
  uploadsDir?: string;
  /** The queues whose workers run. @default every queue */
  workers?: readonly QueueName[];
  /** What the workers run. @default each queue's context's handlers */
  handlers?: (host: { jobs: JobRuntime; system: System }) => readonly JobHandler<unknown>[];
  /**
   * Run the rescuer on a timer (real ms; a pass still running when the next is due is not overlapped).
   * It first sends a wake-up for every pending job: in-process queues and timers do not survive a stop.
   * `onClock`: the interval is the host clock's, timed by its timers (a simulation's clock, which moves
   * only when told). `metrics`: where the rescuer counts, when it is not the host's (on AWS the rescuer is
   * a function of its own). `recover: false` skips the start-up wake-ups, for a host over tables it has
   * just created (nothing waits in them, and the listing that finds so reads every byCheck partition once
   * per waiting state).
   */
  rescuer?: { intervalMs: number; rescueAfterMs: number; onClock?: boolean; metrics?: MetricsSink; recover?: boolean };
  /**
   * Wraps what each Lambda invocation stands for here: a queue worker's batch, an API request, a rescuer
   * pass (the fault simulator runs each under a scope of its own, and ends one as a crash would). @default none
   */
  boundaries?: HostBoundaries;
  /**
   * How long after its due time a job nobody claimed is taken for a lost wake-up: where the store puts a
   * job's first rescuer check. @default the rescuer's `rescueAfterMs`, else 180 s
   */
  rescueAfterMs?: number;
  /** How long discarded jobs stay (DISCARDED_RETENTION_DAYS). @default 30 days */
  discardedRetentionSeconds?: number;
  /**
   * Records what each boundary costs, as on AWS (the capacity benchmark): the in-process transport's sends,
   * schedules and firings, each queue worker's batch and each record in it, each API request with the
   * function that serves its route, each rescuer pass, each mail the transport accepted (SES's place), and
   * each use of the endpoint-secrets key (KMS's place).
   * The AWS clients are the caller's: build `db` with the same recorder (platform/aws.ts).
   */
  recorder?: RequestRecorder;
  /**
   * Serve the API on 127.0.0.1 (`port` 0: any free port), with `extraRoutes` beside it; only `origins` may
   * POST from a browser; `wrap` puts a check of the caller's own in front of it (a test's SigV4 check).
   */
  serve?: {
    port: number;
    extraRoutes?: (host: { jobs: JobRuntime; system: System }) => readonly ApiRoute[];
    origins?: readonly string[];
    wrap?: (handler: ApiHandler) => ApiHandler;
    /**
     * At most this many requests are served at once; the others wait for their turn before they are served
     * (and, with a recorder, before they are timed). @default no limit
     */
    concurrency?: number;
  };
  /** Each queue's worker runs at most this many batches at once, whatever its context declares. @default the context's */
  queueConcurrency?: number;
}

/** What a host wraps around each invocation (see {@link LocalHostOptions.boundaries}). */
export interface HostBoundaries {
  /** One worker invocation, a queue's batch; `run` runs one record of it through the worker. */
  batch?: (queue: QueueName, event: SQSEvent, run: (record: SQSRecord) => Promise<SQSBatchResponse>) => Promise<SQSBatchResponse>;
  /** One API request; `route` is the route it matched (`POST /v1/batches`), or its method and path. */
  request?: (route: string, run: () => Promise<APIGatewayProxyStructuredResultV2>) => Promise<APIGatewayProxyStructuredResultV2>;
  /** One rescuer pass. */
  rescuerPass?: (run: () => Promise<void>) => Promise<void>;
}

/** redial on one machine, assembled. */
export interface LocalHost {
  system: System;
  jobs: JobRuntime;
  /** One in-process queue per job queue (empty with a transport of the caller's). */
  queues: LocalQueue[];
  transport: DispatchTransport;
  /** The in-process transport, unless the caller gave its own (it counts what it sent). */
  local: LocalTransport | undefined;
  logger: Logger;
  metrics: MetricsSink;
  /** The API's URL, when served. */
  url: string | undefined;
  /** The queue named `name`. */
  queue(name: QueueName): LocalQueue;
  /** Resolves when every queue is idle (nothing visible, nothing in flight). */
  idle(): Promise<void>;
  /** Rescuer passes completed so far. */
  rescuerPasses(): number;
  /** Runs one rescuer pass (outside the timer's count) as of `now`: a later time lets a benchmark look at every job still ahead of the rescuer. */
  rescueAsOf(now: number): Promise<void>;
  /** Fires every schedule still waiting on the in-process transport, now; returns how many (LocalTransport.firePending). */
  firePendingSchedules(): number;
  /** Stops the workers, the rescuer's timer, the server and the contexts' connections. */
  stop(): Promise<void>;
}

/**
 * Assembles redial on one machine: the job layer over in-process queues and timers (each queue with its
 * context's batch size and concurrency, and the visibility timeout of six worker timeouts that CDK gives
 * it too: visibilitySeconds in functions/jobs/queues.ts), the composition root over it, a worker per queue
 * handed SQS-shaped batches, and optionally the rescuer on a timer and the API on 127.0.0.1. `npm start`,
 * every test fixture and every benchmark build redial through here.
 */
export async function createLocalHost(options: LocalHostOptions): Promise<LocalHost> {
  const logger = options.logger ?? createLogger('redial-local');
  const metrics = options.metrics ?? new MemoryMetrics();
  const speed = options.speed ?? 1;
  const stops: (() => Promise<void> | void)[] = [];
  const localQueues = options.transport
    ? []
    : queueNames.map(
        (name) =>
          new LocalQueue({
            name,
            clock: options.clock,
            batchSize: queues[name].batchSize,
            maxConcurrency: Math.min(queues[name].maxConcurrency, options.queueConcurrency ?? Number.POSITIVE_INFINITY),
            visibilityMs: visibilitySeconds(queues[name]) * 1000 * speed,
            onError: (error) => logger.error('worker threw', { error: String(error) }),
          }),
      );
  const { recorder } = options;
  const local = options.transport ? undefined : new LocalTransport(localQueues, options.clock, recorder);
  const transport: DispatchTransport = options.transport ?? (options.wrapTransport ? options.wrapTransport(local!, localQueues) : local!);
  stops.push(async () => {
    local?.stop();
    await Promise.all(localQueues.map((q) => q.stop()));
  });
  const rescueAfterMs = options.rescueAfterMs ?? options.rescuer?.rescueAfterMs;
  const jobs = createJobRuntime({
    db: options.jobsDb ?? options.db,
    jobsTable: options.tableNames.jobs,
    queues,
    transport,
    clock: options.clock,
    rng: options.rng,
    logger,
    metrics,
    tracing: options.tracing ?? noTracing,
    ...(rescueAfterMs !== undefined ? { rescueAfterMs } : {}),
    ...(options.discardedRetentionSeconds !== undefined ? { discardedRetentionSeconds: options.discardedRetentionSeconds } : {}),
  });
  const withMail = options.contexts && recorder && options.contexts.mail ? { ...options.contexts, mail: { ...options.contexts.mail, transport: recordedMail(options.contexts.mail.transport, recorder) } } : options.contexts;
  const uploads = withMail?.uploads ?? localUploads(options.uploadsDir, options.clock);
  if (!withMail?.uploads) stops.push(() => (uploads as ReturnType<typeof localUploads>).close());
  const contexts = { ...withMail, uploads };
  const key = options.secretKey ?? processSecretKey();
  const secretKey = recorder ? recordedSecretKey(key, recorder) : key;
  const system = new System(() => ({ jobs, db: options.db, tableNames: options.tableNames, clock: options.clock, rng: options.rng, logger, metrics, secretKey, ...contexts }));
  stops.push(() => system.close());

  const custom = options.handlers?.({ jobs, system });
  for (const queue of localQueues) {
    const name = queue.name as QueueName;
    if (options.workers && !options.workers.includes(name)) continue;
    const handlers = custom ? custom.filter((h) => h.kind.queue === name) : system.handlers(name);
    const fn = `worker:${name}`;
    const worker = recorder ? jobs.worker(name, handlers, recordedRecord(fn, recorder)) : jobs.worker(name, handlers);
    const consume = recorder ? recordedWorker(fn, worker, recorder) : (event: SQSEvent) => worker(event, {} as never);
    const batch = options.boundaries?.batch;
    queue.consume(batch ? (event) => batch(name, event, (record) => consume({ Records: [record] })) : consume);
  }

  let passes = 0;
  let rescuerPass: ((now?: number) => Promise<void>) | undefined;
  if (options.rescuer) {
    const { intervalMs, rescueAfterMs, onClock, metrics: rescuerMetrics, recover = true } = options.rescuer;
    const runtime = rescuerMetrics
      ? createJobRuntime({ db: options.jobsDb ?? options.db, jobsTable: options.tableNames.jobs, queues, transport, clock: options.clock, rng: options.rng, logger, metrics: rescuerMetrics })
      : jobs;
    const rescuer = runtime.rescuer(custom ?? system.allHandlers(), rescueAfterMs);
    if (recover) await rescuer.recover();
    const measured = async (now?: number) => {
      const at = now !== undefined ? { now } : undefined;
      if (!recorder) return void (await rescuer.run(at));
      const run = await recorder.measure('rescuer', () => rescuer.run(at), { root: true });
      recorder.record({ service: 'Lambda', operation: 'Invoke', function: 'rescuer', records: 1, durationMs: run.durationMs, bytes: 0, source: 'rescuer' });
    };
    const around = options.boundaries?.rescuerPass;
    const pass = around ? (now?: number) => around(() => measured(now)) : measured;
    rescuerPass = pass;
    let running: Promise<void> | undefined;
    const tick = () => {
      if (running) return;
      running = pass()
        .then(() => void passes++)
        .catch((error: unknown) => logger.error('rescuer pass failed', { error: String(error) }))
        .finally(() => (running = undefined));
    };
    let cancel: () => void;
    if (onClock) {
      const clock = options.clock;
      const arm = (at: number) => {
        cancel = clock.setTimer(at, () => {
          arm(at + intervalMs);
          tick();
        });
      };
      arm(clock.now() + intervalMs);
    } else {
      const interval = setInterval(tick, intervalMs);
      cancel = () => clearInterval(interval);
    }
    stops.push(async () => {
      cancel();
      await running;
    });
  }

  let server: LocalHttpServer | undefined;
  if (options.serve) {
    const routes = [...system.routes(), ...(options.serve.extraRoutes?.({ jobs, system }) ?? [])];
    const routed = createApiHandler(routes, logger, { keys: () => system.apiKeys });
    const plain: ApiHandler = (event, context) => routed(event, context);
    const timed = recorder ? recordedApi(plain, system, recorder) : plain;
    const recorded = options.serve.concurrency === undefined ? timed : admitted(timed, options.serve.concurrency);
    const around = options.boundaries?.request;
    const routeOf = routeNamer(routes);
    const bounded: ApiHandler = around ? (event, context) => around(routeOf(event.requestContext.http.method, event.rawPath), () => recorded(event, context)) : recorded;
    const api = options.serve.wrap ? options.serve.wrap(bounded) : bounded;
    server = await startHttpServer({ port: options.serve.port, handler: options.serve.origins ? sameOriginOnly(api, options.serve.origins) : api });
    const started = server;
    stops.push(() => started.close());
  }

  return {
    system,
    jobs,
    queues: localQueues,
    transport,
    local,
    logger,
    metrics,
    url: server?.url,
    queue: (name) => {
      const found = localQueues.find((q) => q.name === name);
      if (!found) throw new Error(`no local queue ${name}`);
      return found;
    },
    idle: async () => {
      await Promise.all(localQueues.map((q) => q.idle()));
    },
    rescuerPasses: () => passes,
    rescueAsOf: async (now) => {
      if (!rescuerPass) throw new Error('no rescuer runs on this host');
      await rescuerPass(now);
    },
    firePendingSchedules: () => local?.firePending() ?? 0,
    stop: async () => {
      for (const fn of stops.splice(0).reverse()) await fn();
    },
  };
}

type SqsWorker = (event: SQSEvent, context: never) => Promise<SQSBatchResponse>;

/** Which route a request matched (`POST /v1/batches/{id}`), from the routes' own patterns; its method and path if none. */
function routeNamer(routes: readonly { method: string; path: string }[]): (method: string, path: string) => string {
  const compiled = routes.map((r) => ({ name: `${r.method} ${r.path}`, method: r.method, regex: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, '[^/]+')}$`) }));
  return (method, path) => compiled.find((r) => r.method === method && r.regex.test(path))?.name ?? `${method} ${path}`;
}

/** The job id's kind: ids are `<kind>:…` or, for periodic jobs, `<kind>@<period>`. */
const kindOfJob = (jobId: string): string => jobId.split(/[:@]/)[0] ?? 'unknown';

/** A queue worker as its Lambda, recorded: one invocation per batch (the records run and are timed inside it, {@link recordedRecord}). */
/** The API, serving at most `limit` requests at once: the others wait, in order, for a turn. */
function admitted(api: ApiHandler, limit: number): ApiHandler {
  let serving = 0;
  const waiting: (() => void)[] = [];
  return async (event, context) => {
    if (serving >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    serving++;
    try {
      return await api(event, context);
    } finally {
      serving--;
      waiting.shift()?.();
    }
  };
}

function recordedWorker(fn: string, worker: SqsWorker, recorder: RequestRecorder) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const batch = await recorder.measure(fn, () => worker(event, {} as never), { root: true });
    recorder.record({ service: 'Lambda', operation: 'Invoke', function: fn, records: event.Records.length, durationMs: batch.durationMs, bytes: 0, source: fn });
    return batch.value;
  };
}

/** Each record of a recorded worker's batch, measured apart: its requests are its kind's (`job:<kind>`), its duration a record's. */
function recordedRecord(fn: string, recorder: RequestRecorder): RecordHook {
  return async (job, run) => {
    const kind = kindOfJob(job.jobId);
    const measured = await recorder.measure(`job:${kind}`, run);
    recorder.record({ service: 'Lambda', operation: 'Record', function: fn, kind, durationMs: measured.durationMs });
    return measured.value;
  };
}

/**
 * The API as API Gateway and the function that serves each route (httpFunctionsByRoute: the intake, the
 * mail links, the tenant API or the IAM API), recorded: one invocation per request.
 */
function recordedApi(api: ApiHandler, system: System, recorder: RequestRecorder): ApiHandler {
  const routes = Object.entries(httpFunctionsByRoute(system)).map(([key, fn]) => {
    const [method, pattern] = key.split(' ') as [string, string];
    return { method, pattern, regex: new RegExp(`^${pattern.replace(/\{[^}]+\}/g, '[^/]+')}$`), fn };
  });
  const resolve = (method: string, path: string): { route: string; fn: HttpFunction } => {
    const found = routes.find((r) => r.method === method && r.regex.test(path));
    return found ? { route: `${method} ${found.pattern}`, fn: found.fn } : { route: `${method} ${path}`, fn: 'api' };
  };
  return async (event, context) => {
    const { route, fn } = resolve(event.requestContext.http.method, event.rawPath);
    const source = `api:${route}`;
    // Measured before the call: middy's body parser replaces the event's body with the parsed value.
    const requestBytes = Buffer.byteLength(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
    const call = await recorder.measure(source, () => api(event, context), { root: true });
    const bytes = requestBytes + Buffer.byteLength(call.value.body ?? '');
    recorder.record({ service: 'Lambda', operation: 'Invoke', function: fn, records: 1, durationMs: call.durationMs, bytes, source });
    return call.value;
  };
}

let processKey: LocalSecretKey | undefined;
/** The endpoint-secrets key of every host in this process that is given none. */
const processSecretKey = (): LocalSecretKey => (processKey ??= LocalSecretKey.generate());

/** The endpoint-secrets key with every use recorded as the KMS request it is on AWS. */
const recordedSecretKey = (key: SecretKey, recorder: RequestRecorder): SecretKey => ({
  encrypt: (plaintext, context) => {
    recorder.record({ service: 'KMS', operation: 'Encrypt' });
    return key.encrypt(plaintext, context);
  },
  decrypt: (ciphertext, context) => {
    recorder.record({ service: 'KMS', operation: 'Decrypt' });
    return key.decrypt(ciphertext, context);
  },
});

/** A mail transport whose every accepted message is recorded as one SES send. */
const recordedMail = (transport: MailTransport, recorder: RequestRecorder): MailTransport => ({
  name: transport.name,
  send: async (message, signal) => {
    const sent = await transport.send(message, signal);
    recorder.record({ service: 'SES', operation: 'SendEmail', bytes: message.raw.length });
    return sent;
  },
});
