/**
 * The rest of the bill (issue 28 §1) and the day's durations shaped like production (§2): pure functions
 * from what the capacity day recorded, the template's facts and stated rates to priced lines. Every rate
 * that is not measured here is a named constant below with where it comes from; docs/capacity.md ("The
 * whole bill") explains each line.
 */
import type { DynamoRecord, InvocationRecord, Recorded, RunRecord } from '../../functions/platform/recorder.ts';
import type { LambdaRow } from './model.ts';
import type { Prices } from './prices.ts';
import type { DeployedSettings, TemplateFacts } from './settings.ts';

// ─── stated rates (not measured here) ────────────────────────────────────────────────────────────────

/**
 * X-Ray's default sampling rule, which the template leaves in place (lib/constructs/function.ts sets
 * `Tracing.ACTIVE` and no rule): the first request each second and 5 % of the rest
 * (https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html). Applied per function:
 * each function's invocations are one service's requests.
 */
export const XRAY_RESERVOIR_PER_SECOND = 1;
export const XRAY_FIXED_RATE = 0.05;
/** Traces scanned per trace recorded: an operator's console views and the service map scan what they cover; priced as each trace scanned once (an assumption: AWS bills what is looked at). */
export const XRAY_SCANS_PER_TRACE = 1;

/**
 * Lambda's own log lines per invocation with the template's JSON log format (`LoggingFormat.JSON`, system
 * log level INFO): `platform.start` and `platform.report` (with its X-Ray segment), sized from the format
 * AWS documents (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html),
 * ids and figures at their usual widths.
 */
export const PLATFORM_LINES = [
  '{"time":"2026-12-03T18:00:00.000Z","type":"platform.start","record":{"requestId":"6d7c1a2b-3e4f-4a5b-8c9d-0e1f2a3b4c5d","version":"$LATEST","tracing":{"spanId":"a1b2c3d4e5f60718","type":"X-Amzn-Trace-Id","value":"Root=1-6762a1b2-0123456789abcdef01234567;Parent=a1b2c3d4e5f60718;Sampled=0;Lineage=1:a1b2c3d4:0"}}}',
  '{"time":"2026-12-03T18:00:00.123Z","type":"platform.report","record":{"requestId":"6d7c1a2b-3e4f-4a5b-8c9d-0e1f2a3b4c5d","metrics":{"durationMs":123.45,"billedDurationMs":124,"memorySizeMB":512,"maxMemoryUsedMB":128},"tracing":{"spanId":"a1b2c3d4e5f60718","type":"X-Amzn-Trace-Id","value":"Root=1-6762a1b2-0123456789abcdef01234567;Parent=a1b2c3d4e5f60718;Sampled=0;Lineage=1:a1b2c3d4:0"},"status":"success"}}',
];
/** A cold start adds `platform.initStart` and `platform.initReport`, about as long as the two above. */
export const PLATFORM_INIT_LINES_BYTES = 2 * 260;
/** What Powertools adds to each line on Lambda that it cannot add here: the trace id (`_X_AMZN_TRACE_ID` is set only on Lambda). */
export const LAMBDA_ONLY_LOG_FIELDS = ',"xray_trace_id":"1-6762a1b2-0123456789abcdef01234567"';
/** One API Gateway access log line in the stage's format (lib/redial-stack.ts `httpApi`), typical values. */
export const ACCESS_LOG_LINE =
  '{"requestId":"JkT7ViMfoAMEPQg=","time":"03/Dec/2026:18:00:00 +0000","ip":"203.0.113.10","caller":"-","routeKey":"POST /v1/calls/webhook","status":"200","responseLength":"52","latencyMs":"41","integrationError":"-","authorizerError":"-"}';
/** CloudWatch bills stored log bytes after compression; priced uncompressed (an upper bound: JSON lines compress several-fold). */
export const LOG_STORAGE_COMPRESSION = 1;

/**
 * Idle long-polling by each queue's event source: Lambda polls with five pollers, and keeps five when a
 * maximum concurrency is set (every redial queue's), each a 20-second long poll
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html). An upper bound: a busy
 * queue's receives return messages instead.
 */
export const IDLE_POLLERS_PER_QUEUE = 5;
export const LONG_POLL_SECONDS = 20;

/**
 * Cold starts: INIT is billed like the handler for ZIP functions on managed runtimes since 1 August 2025
 * (AWS Compute Blog, "AWS Lambda standardizes billing for INIT Phase"). An execution environment lives
 * about {@link ENVIRONMENT_LIFETIME_HOURS} (AWS publishes no figure; an assumption), so the average
 * concurrency is replaced that often, and each burst starts its extra environments cold, once
 * {@link BURSTS_PER_DAY} a day (the day's calling windows opening).
 */
export const ENVIRONMENT_LIFETIME_HOURS = 2;
export const BURSTS_PER_DAY = 1;
/**
 * INIT duration per function: the bundle's cold `import()` in a fresh Node 22 process, median of 5
 * (`npm run bench -- bundles`, docs/benchmarks.md "Lambda bundles", 2026-12-03 10:00 UTC, load 2.6–3.6).
 * Node's own start and the runtime's bootstrap are not in it.
 */
export const COLD_IMPORT_MS: Record<string, number> = {
  intake: 299,
  publicLinks: 319,
  tenantApi: 261,
  api: 224,
  rescuer: 207,
  'worker:mail': 180,
  'worker:deliveries': 214,
  'worker:webhooks': 298,
  'worker:dial': 233,
  'worker:calls': 211,
  'worker:ops': 218,
};

/**
 * Bytes on the wire per outbound HTTPS request beyond what the receiver read (request line, headers,
 * body): a new TLS connection per request (the deliverer connects to the address it vetted each time; the
 * placer's client may pool, priced as not) sends a ClientHello and its key share (≈ 600 B) and TCP/IP
 * headers on about ten segments (≈ 600 B). An assumption from TLS 1.3's message sizes, not a measurement.
 */
export const HTTPS_OVERHEAD_BYTES_PER_REQUEST = 1_200;

/**
 * Stated latencies for §2, per request (ms): DynamoDB as AWS describes it ("single-digit millisecond":
 * https://aws.amazon.com/dynamodb/), a transaction's two phases about twice a write; the call placer
 * 150–400 ms (uniform: mean 275); SQS, Scheduler, SES, KMS and Secrets Manager at their usual in-region
 * round trips (assumptions).
 */
export const LATENCY_MS: Record<string, number> = {
  'DynamoDB:GetItem': 4,
  'DynamoDB:BatchGetItem': 6,
  'DynamoDB:Query': 6,
  'DynamoDB:Scan': 10,
  'DynamoDB:PutItem': 6,
  'DynamoDB:UpdateItem': 6,
  'DynamoDB:DeleteItem': 6,
  'DynamoDB:BatchWriteItem': 10,
  'DynamoDB:TransactWriteItems': 14,
  'DynamoDB:TransactGetItems': 8,
  'SQS:SendMessage': 8,
  'Scheduler:CreateSchedule': 25,
  'Scheduler:DeleteSchedule': 20,
  'SES:SendEmail': 60,
  'KMS:Decrypt': 8,
  'KMS:Encrypt': 8,
  placer: 275,
};
/** Any DynamoDB operation not in {@link LATENCY_MS}. */
const DEFAULT_DYNAMO_MS = 6;

/** The deliverer's timeout (functions/webhooks: a delivery gives up after 10 s). */
export const ENDPOINT_TIMEOUT_MS = 10_000;

/**
 * Customer endpoints' latency by the day's profiles (day.ts): the issue's p50 80 ms / p99 2 s with 1 % at
 * the timeout for a normal endpoint; a slow one ten times that at the median; a `down` endpoint's failures
 * wait the full timeout (an endpoint that is down does not answer); its and the throttling endpoint's
 * other answers as a normal one's.
 */
export const ENDPOINT_LATENCY = {
  normal: { p50: 80, p99: 2_000, timeoutShare: 0.01 },
  slow: { p50: 800, p99: 6_000, timeoutShare: 0.03 },
} as const;

/** The mean of a log-normal latency with that median and 99th percentile, the `timeoutShare` waiting the whole timeout. */
export function meanLatencyMs(profile: { p50: number; p99: number; timeoutShare: number }, timeoutMs: number = ENDPOINT_TIMEOUT_MS): number {
  const sigma = Math.log(profile.p99 / profile.p50) / 2.3263;
  const body = Math.min(timeoutMs, profile.p50 * Math.exp((sigma * sigma) / 2));
  return (1 - profile.timeoutShare) * body + profile.timeoutShare * timeoutMs;
}

// ─── the lines ───────────────────────────────────────────────────────────────────────────────────────

/** One priced line: what it costs per million results and a month at 10 M results a day, and from what. */
export interface BillLine {
  name: string;
  usdPerMillionResults: number;
  /** A month at 10 M results a day: the per-result part and what is billed by the month whatever the load. */
  usdPerMonthAt10M: number;
  /** How it was priced, in a sentence, with the measured figures it used. */
  basis: string;
  measured: Record<string, number>;
}

export interface BillInput {
  records: readonly Recorded[];
  /** A record's weight per result (1/results for the day's results, the mail's at its rate, 0 for fixed work). */
  weight: (record: Recorded) => number;
  results: number;
  lambda: readonly LambdaRow[];
  settings: DeployedSettings;
  prices: Prices;
  rates: { average: number; burst: number };
  /** Endpoint requests per result, per endpoint; bytes the endpoints and the placer received per result. */
  endpointRequestsPerResult: readonly number[];
  deliveryBytesPerResult: number;
  placerBytesPerResult: number;
  /** Outbound HTTPS requests per result (deliveries and placer calls). */
  outboundRequestsPerResult: number;
  /** Each function's Lambda concurrency on average and at the burst, production-shaped (§2). */
  concurrency: Record<string, { average: number; burst: number }>;
}

const SECONDS_PER_MONTH = 30 * 86_400;

/** The deployed function a record's source belongs to (`worker:<queue>` for a job, the HTTP function for a route). */
export function functionOfSource(source: string, kindQueue: (kind: string) => string | undefined, routeFunction: (route: string) => string | undefined): string {
  if (source.startsWith('job:')) return `worker:${kindQueue(source.slice(4)) ?? '?'}`;
  if (source.startsWith('api:')) return routeFunction(source.slice(4)) ?? 'api';
  return source;
}

/**
 * The lines issue 28 §1 adds. `functionOf` maps a record's source to its deployed function (for the
 * per-function EMF metrics and log lines).
 */
export function billLines(input: BillInput, functionOf: (source: string) => string): BillLine[] {
  const { prices, rates, settings } = input;
  const template: TemplateFacts = settings.template ?? { logGroups: [], alarms: 0, alarmMetrics: 0, dashboards: 0, kmsKeys: 0, secrets: 0, functions: 0 };
  const perMonth = (perResult: number) => perResult * rates.average * SECONDS_PER_MONTH;
  const line = (name: string, usdPerResult: number, fixedMonthly: number, basis: string, measured: Record<string, number>): BillLine => ({
    name,
    usdPerMillionResults: usdPerResult * 1e6 + (fixedMonthly / perMonth(1)) * 1e6,
    usdPerMonthAt10M: perMonth(usdPerResult) + fixedMonthly,
    basis,
    measured,
  });
  const invocations = (fn: string) => input.lambda.find((l) => l.function === fn)?.invocationsPerResult ?? 0;
  const lines: BillLine[] = [];

  // Cold starts, per function and month (also what the Secrets Manager read and the KMS caches follow).
  const coldStartsPerMonth: Record<string, number> = {};
  for (const l of input.lambda) {
    const c = input.concurrency[l.function] ?? { average: l.concurrencyAtAverage, burst: l.concurrencyAtBurst };
    const replaced = Math.max(1, c.average) * ((30 * 24) / ENVIRONMENT_LIFETIME_HOURS);
    coldStartsPerMonth[l.function] = replaced + BURSTS_PER_DAY * 30 * Math.max(0, c.burst - c.average);
  }

  // KMS: a deliveries container decrypts an endpoint's secret once per SECRET_CACHE_MS it delivers to it.
  const kmsDecryptsDay = input.records.reduce((n, r) => n + (r.service === 'KMS' && r.operation === 'Decrypt' ? input.weight(r) : 0), 0);
  const containers = Math.max(1, input.concurrency['worker:deliveries']?.average ?? 1);
  const cacheSeconds = 300;
  const decryptsPerSecond = input.endpointRequestsPerResult.reduce((n, perResult) => {
    const rate = perResult * rates.average;
    return n + rate / (1 + (rate * cacheSeconds) / containers);
  }, 0);
  const coldDecrypts = (coldStartsPerMonth['worker:deliveries'] ?? 0) * input.endpointRequestsPerResult.length;
  const kmsPerResult = (decryptsPerSecond / rates.average + coldDecrypts / perMonth(1)) * prices.kms.request;
  lines.push(
    line('kms', kmsPerResult, template.kmsKeys * prices.kms.keyMonth, `endpoint-secret Decrypts: each of ${input.endpointRequestsPerResult.length} endpoints once per 5 min (the secret cache) per warm deliveries container (${fmt(containers)} on average), plus once per cold start; ${template.kmsKeys} customer-managed keys a month`, {
      decryptsPerSecond,
      decryptsPerResultInTheDay: kmsDecryptsDay,
      keys: template.kmsKeys,
    }),
  );

  // Secrets Manager: the intake reads its signing secret once per cold start.
  const intakeColdStarts = coldStartsPerMonth['intake'] ?? 0;
  lines.push(line('secretsManager', 0, template.secrets * prices.secretsManager.secretMonth + intakeColdStarts * prices.secretsManager.request, `GetSecretValue once per intake cold start (${fmt(intakeColdStarts)} a month) and ${template.secrets} secret a month`, { intakeColdStartsPerMonth: intakeColdStarts, secrets: template.secrets }));

  // X-Ray: the default rule, per function.
  let tracesPerSecond = 0;
  for (const l of input.lambda) {
    const rate = l.invocationsPerResult * rates.average;
    tracesPerSecond += Math.min(rate, XRAY_RESERVOIR_PER_SECOND) + XRAY_FIXED_RATE * Math.max(0, rate - XRAY_RESERVOIR_PER_SECOND);
  }
  const tracesPerResult = tracesPerSecond / rates.average;
  lines.push(
    line('xray', tracesPerResult * (prices.xray.traceRecorded + XRAY_SCANS_PER_TRACE * prices.xray.traceScanned), 0, `default sampling (${XRAY_RESERVOIR_PER_SECOND}/s and ${100 * XRAY_FIXED_RATE} % of the rest) per function: ${fmt(tracesPerSecond, 1)} traces/s at the average rate, each scanned ${XRAY_SCANS_PER_TRACE}×`, {
      tracesPerSecond,
      tracesPerResult,
    }),
  );

  // CloudWatch Logs: what the handlers wrote (measured), EMF, Lambda's platform lines, access logs.
  let appBytes = 0;
  let appLines = 0;
  let emfBytes = 0;
  const metricIds = new Set<string>();
  for (const r of input.records) {
    if (r.service !== 'CloudWatchLogs') continue;
    const o = r;
    const w = input.weight(r);
    if (o.operation === 'EMF') {
      emfBytes += w * (o.bytes ?? 0);
      for (const id of (o.detail ?? '').split(';')) if (id) metricIds.add(`${functionOf(r.source)}|${id}`);
    } else {
      appBytes += w * ((o.bytes ?? 0) + LAMBDA_ONLY_LOG_FIELDS.length);
      appLines += w;
    }
  }
  const lambdaInvocations = input.lambda.reduce((n, l) => n + l.invocationsPerResult, 0);
  const platformBytes = lambdaInvocations * PLATFORM_LINES.reduce((n, l) => n + l.length + 1, 0);
  const apiRequests = ['intake', 'publicLinks', 'tenantApi', 'api'].reduce((n, fn) => n + invocations(fn), 0);
  const accessBytes = apiRequests * (ACCESS_LOG_LINE.length + 1);
  const coldStartsTotal = Object.values(coldStartsPerMonth).reduce((a, b) => a + b, 0);
  const initLogBytesPerMonth = coldStartsTotal * PLATFORM_INIT_LINES_BYTES;
  const bytesPerResult = appBytes + emfBytes + platformBytes + accessBytes;
  const gb = 2 ** 30;
  const retention = Math.max(0, ...template.logGroups.map((g) => g.retentionDays ?? 3650));
  const storedGb = ((perMonth(bytesPerResult) + initLogBytesPerMonth) / 30) * retention * LOG_STORAGE_COMPRESSION / gb;
  lines.push(
    line('cloudwatchLogs', (bytesPerResult / gb) * prices.cloudwatch.logIngestedGb, (initLogBytesPerMonth / gb) * prices.cloudwatch.logIngestedGb + storedGb * prices.cloudwatch.logStoredGbMonth, `${fmt(bytesPerResult)} B a result ingested (handlers' lines at INFO ${fmt(appBytes)}, EMF ${fmt(emfBytes)}, Lambda's platform lines ${fmt(platformBytes)}, API access log ${fmt(accessBytes)}), kept ${retention} days: ${fmt(storedGb)} GB stored`, {
      bytesPerResult,
      appLogBytesPerResult: appBytes,
      appLogLinesPerResult: appLines,
      emfBytesPerResult: emfBytes,
      platformBytesPerResult: platformBytes,
      accessLogBytesPerResult: accessBytes,
      retentionDays: retention,
      storedGb,
    }),
  );
  lines.push(
    line('cloudwatchMetrics', 0, metricIds.size * prices.cloudwatch.customMetricMonth + template.alarmMetrics * prices.cloudwatch.alarmMetricMonth + template.dashboards * prices.cloudwatch.dashboardMonth, `${metricIds.size} custom metrics (each EMF name and dimension set the day emitted, per function), ${template.alarms} alarms on ${template.alarmMetrics} metrics, ${template.dashboards} dashboard (its Logs Insights widgets scan logs when viewed: not priced)`, {
      customMetrics: metricIds.size,
      alarms: template.alarms,
      alarmMetrics: template.alarmMetrics,
      dashboards: template.dashboards,
    }),
  );

  // Data transfer out: what the endpoints and the placer received, plus each request's TLS and TCP overhead.
  const outBytes = input.deliveryBytesPerResult + input.placerBytesPerResult + input.outboundRequestsPerResult * HTTPS_OVERHEAD_BYTES_PER_REQUEST;
  lines.push(
    line('dataTransferOut', (outBytes / 1e9) * prices.dataTransfer.outGb, 0, `${fmt(outBytes)} B a result to the internet: deliveries ${fmt(input.deliveryBytesPerResult)}, placer calls ${fmt(input.placerBytesPerResult)}, ${fmt(input.outboundRequestsPerResult, 2)} HTTPS requests × ${HTTPS_OVERHEAD_BYTES_PER_REQUEST} B overhead`, {
      bytesPerResult: outBytes,
      deliveryBytesPerResult: input.deliveryBytesPerResult,
      placerBytesPerResult: input.placerBytesPerResult,
    }),
  );

  // SQS: idle pollers' empty receives, per queue.
  const queues = Object.keys(settings.queues).length;
  const emptyReceives = queues * IDLE_POLLERS_PER_QUEUE * (SECONDS_PER_MONTH / LONG_POLL_SECONDS);
  lines.push(line('sqsIdlePolling', 0, emptyReceives * prices.sqs.request, `${queues} queues × ${IDLE_POLLERS_PER_QUEUE} pollers × a ${LONG_POLL_SECONDS} s long poll: ${fmt(emptyReceives)} empty receives a month at most`, { emptyReceivesPerMonth: emptyReceives, queues }));

  // Lambda INIT.
  let initUsdPerMonth = 0;
  for (const l of input.lambda) {
    const ms = COLD_IMPORT_MS[l.function] ?? Math.max(...Object.values(COLD_IMPORT_MS));
    initUsdPerMonth += (coldStartsPerMonth[l.function] ?? 0) * (Math.ceil(ms) / 1000) * (l.memoryMb / 1024) * prices.lambda.gbSecondArm64;
  }
  lines.push(
    line('lambdaInit', 0, initUsdPerMonth, `${fmt(coldStartsTotal)} cold starts a month (environments replaced every ${ENVIRONMENT_LIFETIME_HOURS} h, a burst's extra ones once a day), each its bundle's cold import (${Math.min(...Object.values(COLD_IMPORT_MS))}–${Math.max(...Object.values(COLD_IMPORT_MS))} ms)`, {
      coldStartsPerMonth: coldStartsTotal,
      ...Object.fromEntries(Object.entries(coldStartsPerMonth).map(([fn, n]) => [`coldStartsPerMonth:${fn}`, n])),
    }),
  );
  return lines;
}

/** API Gateway requests per result and dollars per million results, per route (already in the `apiGateway` total). */
export function apiRoutes(records: readonly Recorded[], weight: (record: Recorded) => number, prices: Prices): Record<string, { requestsPerResult: number; usdPerMillionResults: number }> {
  const out: Record<string, { requestsPerResult: number; usdPerMillionResults: number }> = {};
  for (const r of records) {
    if (r.service !== 'Lambda' || r.operation !== 'Invoke' || !r.source.startsWith('api:')) continue;
    const inv = r as InvocationRecord;
    const entry = (out[r.source.slice(4)] ??= { requestsPerResult: 0, usdPerMillionResults: 0 });
    const n = weight(r) * Math.max(1, Math.ceil(inv.bytes / prices.apiGateway.chunkBytes));
    entry.requestsPerResult += n;
    entry.usdPerMillionResults += n * prices.apiGateway.httpRequest * 1e6;
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1].requestsPerResult - a[1].requestsPerResult));
}

// ─── §2: durations shaped like production ────────────────────────────────────────────────────────────

/** One source's (a job kind's, a route's, a worker batch's own) runs in the day, and what its durations become. */
export interface SourceDurations {
  source: string;
  runs: number;
  /** Mean measured wall time per run, and of it the store's round trips (DynamoDB Local's), ms. */
  measuredMs: number;
  storeMs: number;
  /** CPU per run: its stretches of JavaScript, scaled so the day's stretches add up to the process's measured CPU. */
  cpuMs: number;
  /** Waits per run priced from its requests × {@link LATENCY_MS} (and endpoints', the placer's), ms. */
  waitMs: number;
  /** cpuMs + waitMs (production-shaped); cpuMs alone is the ideal (instant network). */
  productionMs: number;
}

export interface DurationInput {
  records: readonly Recorded[];
  /** The process's CPU time over the day (user + system), ms. */
  processCpuMs: number;
  /** Each source's stretches of JavaScript over the day (RequestRecorder `trackCpu`), `unscoped` for the rest, ms. */
  cpuBySource: Record<string, number>;
  /** Endpoint requests of the day by latency profile (every one sent by a `job:webhook.deliver` run). */
  endpointRequests: { normal: number; slow: number; down: number; downFailed: number };
  /** Calls the placer was asked to place (each by a `job:calls.dial` run). */
  placerCalls: number;
}

/**
 * Per source: measured wall time and the store's share of it; its CPU, the stretches of JavaScript that
 * ran in its scope scaled so all stretches add up to the process's CPU time (on a loaded machine a
 * stretch also holds the time the OS ran another process); and the waits its requests would take at the
 * stated latencies.
 */
export function sourceDurations(input: DurationInput): SourceDurations[] {
  const bySource = new Map<string, { runs: number; wallMs: number; storeMs: number; waitMs: number }>();
  const at = (source: string) => bySource.get(source) ?? bySource.set(source, { runs: 0, wallMs: 0, storeMs: 0, waitMs: 0 }).get(source)!;
  for (const r of input.records) {
    if (r.service === 'Lambda' && r.operation === 'Record') {
      const run = r as RunRecord;
      const s = at(`job:${run.kind}`);
      s.runs++;
      s.wallMs += run.durationMs;
    } else if (r.service === 'Lambda' && r.operation === 'Invoke') {
      const inv = r as InvocationRecord;
      if (!inv.function.startsWith('worker:')) {
        const s = at(r.source);
        s.runs++;
        s.wallMs += inv.durationMs;
      }
    } else if (r.service === 'DynamoDB') {
      const d = r as DynamoRecord;
      const s = at(r.source);
      s.storeMs += d.ms ?? 0;
      s.waitMs += LATENCY_MS[`DynamoDB:${d.operation}`] ?? DEFAULT_DYNAMO_MS;
    } else {
      const ms = LATENCY_MS[`${r.service}:${r.operation}`];
      if (ms !== undefined && r.source !== 'scheduler') at(r.source).waitMs += ms;
    }
  }
  const deliver = at('job:webhook.deliver');
  const normal = meanLatencyMs(ENDPOINT_LATENCY.normal);
  deliver.waitMs += input.endpointRequests.normal * normal + input.endpointRequests.slow * meanLatencyMs(ENDPOINT_LATENCY.slow) + input.endpointRequests.downFailed * ENDPOINT_TIMEOUT_MS + (input.endpointRequests.down - input.endpointRequests.downFailed) * normal;
  at('job:calls.dial').waitMs += input.placerCalls * LATENCY_MS['placer']!;
  const stretches = Object.values(input.cpuBySource).reduce((a, b) => a + b, 0);
  const cpuScale = stretches > 0 ? Math.min(1, input.processCpuMs / stretches) : 0;
  return [...bySource.entries()]
    .filter(([, s]) => s.runs > 0)
    .map(([source, s]) => {
      const cpuMs = ((input.cpuBySource[source] ?? 0) / s.runs) * cpuScale;
      const waitMs = s.waitMs / s.runs;
      return { source, runs: s.runs, measuredMs: s.wallMs / s.runs, storeMs: s.storeMs / s.runs, cpuMs, waitMs, productionMs: cpuMs + waitMs };
    })
    .sort((a, b) => b.runs * b.productionMs - a.runs * a.productionMs);
}

/**
 * Each function's duration scale from measured to production-shaped (and to ideal): the sum over its runs
 * of the modelled durations over the sum of the measured ones. A worker batch runs its records side by
 * side, so its invocation scales as its records do.
 */
export function durationScales(durations: readonly SourceDurations[], functionOf: (source: string) => string): Record<string, { production: number; ideal: number }> {
  const sums = new Map<string, { measured: number; production: number; ideal: number }>();
  for (const d of durations) {
    const fn = functionOf(d.source);
    const s = sums.get(fn) ?? sums.set(fn, { measured: 0, production: 0, ideal: 0 }).get(fn)!;
    s.measured += d.runs * d.measuredMs;
    s.production += d.runs * d.productionMs;
    s.ideal += d.runs * d.cpuMs;
  }
  return Object.fromEntries([...sums.entries()].map(([fn, s]) => [fn, { production: s.measured > 0 ? s.production / s.measured : 1, ideal: s.measured > 0 ? s.ideal / s.measured : 1 }]));
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
