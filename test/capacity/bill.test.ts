import { describe, expect, it } from 'vitest';
import {
  ACCESS_LOG_LINE,
  COLD_IMPORT_MS,
  ENDPOINT_TIMEOUT_MS,
  ENVIRONMENT_LIFETIME_HOURS,
  IDLE_POLLERS_PER_QUEUE,
  LAMBDA_ONLY_LOG_FIELDS,
  LATENCY_MS,
  LONG_POLL_SECONDS,
  PLATFORM_LINES,
  billLines,
  durationScales,
  meanLatencyMs,
  sourceDurations,
} from '../../bench/capacity/bill.ts';
import type { BillInput } from '../../bench/capacity/bill.ts';
import { batchRowTransactions, conflictProbability, limitsOf, TENANT_CONCURRENCY_CAP } from '../../bench/capacity/limits.ts';
import { buildModel } from '../../bench/capacity/model.ts';
import type { LambdaRow } from '../../bench/capacity/model.ts';
import { prices } from '../../bench/capacity/prices.ts';
import type { DeployedSettings } from '../../bench/capacity/settings.ts';
import type { DynamoRecord, InvocationRecord, OtherRecord, Recorded, RunRecord } from '../../functions/platform/recorder.ts';

const RATES = { average: 10_000_000 / 86_400, burst: 1_000 };
const MONTH = RATES.average * 30 * 86_400;

const settings: DeployedSettings = {
  memoryMb: { intake: 512, 'worker:deliveries': 1024 },
  reservedConcurrency: { intake: 100 },
  queues: {
    ops: { batchSize: 10, maxConcurrency: 2, timeoutSeconds: 60 },
    dial: { batchSize: 10, maxConcurrency: 300, timeoutSeconds: 60 },
    calls: { batchSize: 10, maxConcurrency: 200, timeoutSeconds: 60 },
    deliveries: { batchSize: 10, maxConcurrency: 1000, timeoutSeconds: 60 },
    webhooks: { batchSize: 10, maxConcurrency: 1000, timeoutSeconds: 60 },
    mail: { batchSize: 10, maxConcurrency: 200, timeoutSeconds: 60 },
    calendar: { batchSize: 10, maxConcurrency: 20, timeoutSeconds: 60 },
  },
  throttling: { intake: { rateLimit: 1000, burstLimit: 2000 }, calendarTools: { rateLimit: 200, burstLimit: 400 }, publicLinks: { rateLimit: 10, burstLimit: 20 }, tenantApi: { rateLimit: 100, burstLimit: 200 }, api: { rateLimit: 100, burstLimit: 200 } },
  template: { logGroups: [{ id: 'a', retentionDays: 30 }], alarms: 3, alarmMetrics: 4, dashboards: 1, kmsKeys: 2, secrets: 1, functions: 2 },
};

const row = (fields: Partial<LambdaRow> & { function: string }): LambdaRow => ({
  memoryMb: 512,
  invocationsPerResult: 1,
  meanDurationMs: 10,
  gbSecondsPerResult: 0,
  concurrencyAtAverage: 1,
  concurrencyAtBurst: 1,
  maxConcurrency: null,
  ...fields,
});

const base = (fields: Partial<BillInput> = {}): BillInput => ({
  records: [],
  weight: () => 0.5,
  results: 2,
  lambda: [],
  settings,
  prices,
  rates: RATES,
  endpointRequestsPerResult: [],
  deliveryBytesPerResult: 0,
  placerBytesPerResult: 0,
  outboundRequestsPerResult: 0,
  concurrency: {},
  ...fields,
});
const lineOf = (input: BillInput, name: string) => billLines(input, (s) => s).find((l) => l.name === name)!;
const other = (fields: Partial<OtherRecord>): OtherRecord => ({ service: 'CloudWatchLogs', operation: 'Log', source: 'job:x', at: 0, ...fields });

describe('the bill beyond requests (issue 28 §1)', () => {
  it('PricesLogsFromTheBytesHandlersWroteEmfLinesPlatformLinesAndAccessLogsKeptForTheRetention', () => {
    const records = [other({ bytes: 200 }), other({ operation: 'EMF', bytes: 300, detail: 'Redial/JobDiscarded{service=redial,kind=a}' })];
    const input = base({ records, lambda: [row({ function: 'intake', invocationsPerResult: 1 })] });
    const logs = lineOf(input, 'cloudwatchLogs');
    const platform = PLATFORM_LINES.reduce((n, l) => n + l.length + 1, 0);
    const perResult = 0.5 * (200 + LAMBDA_ONLY_LOG_FIELDS.length) + 0.5 * 300 + platform + ACCESS_LOG_LINE.length + 1;
    expect(logs.measured['bytesPerResult']).toBeCloseTo(perResult, 6);
    expect(logs.measured['appLogLinesPerResult']).toBe(0.5);
    expect(logs.measured['retentionDays']).toBe(30);
    // Ingestion per result, plus the month's storage (and the cold starts' init lines) spread over its results.
    expect(logs.usdPerMillionResults).toBeGreaterThan((perResult / 2 ** 30) * 0.5 * 1e6);
    const storedGb = ((perResult * MONTH) / 30) * 30 / 2 ** 30;
    expect(logs.measured['storedGb']).toBeGreaterThan(storedGb);
  });

  it('CountsACustomMetricPerEmfNameAndDimensionSetPerFunctionAndTheTemplatesAlarmsAndDashboard', () => {
    const emf = (source: string, detail: string) => other({ operation: 'EMF', source, bytes: 100, detail });
    const records = [emf('job:a', 'R/X{kind=a}'), emf('job:a', 'R/X{kind=a}'), emf('job:b', 'R/X{kind=a}'), emf('job:a', 'R/X{kind=b};R/Y{kind=b}')];
    const metrics = billLines(base({ records }), (s) => s).find((l) => l.name === 'cloudwatchMetrics')!;
    expect(metrics.measured['customMetrics']).toBe(4);
    expect(metrics.usdPerMonthAt10M).toBeCloseTo(4 * 0.3 + 4 * 0.1 + 3.0, 9);
  });

  it('DecryptsEachEndpointsSecretOncePerCachePeriodPerWarmContainerAtMostOncePerDelivery', () => {
    // 0.001 deliveries a result to one endpoint ≈ 0.116/s: below one per 5 minutes per container? No: 35 per 5 min, so one decrypt per 5 min per container.
    const kms = lineOf(base({ endpointRequestsPerResult: [0.001], concurrency: { 'worker:deliveries': { average: 2, burst: 2 } } }), 'kms');
    const rate = 0.001 * RATES.average;
    expect(kms.measured['decryptsPerSecond']).toBeCloseTo(rate / (1 + (rate * 300) / 2), 9);
    expect(kms.measured['decryptsPerSecond']).toBeLessThan(2 / 300);
    // A rarely used endpoint: nearly every delivery decrypts.
    const rare = lineOf(base({ endpointRequestsPerResult: [1e-9], concurrency: { 'worker:deliveries': { average: 2, burst: 2 } } }), 'kms');
    expect(rare.measured['decryptsPerSecond']! / (1e-9 * RATES.average)).toBeGreaterThan(0.99);
    expect(kms.usdPerMonthAt10M).toBeGreaterThan(2 * prices.kms.keyMonth);
  });

  it('SamplesTracesAtOnePerSecondAndFivePercentOfTheRestPerFunction', () => {
    const xray = lineOf(base({ lambda: [row({ function: 'intake', invocationsPerResult: 1 }), row({ function: 'rescuer', invocationsPerResult: 0 })] }), 'xray');
    expect(xray.measured['tracesPerSecond']).toBeCloseTo(1 + 0.05 * (RATES.average - 1), 9);
  });

  it('PricesIdlePollingPerQueueAndColdStartsFromTheScaleOutAndEnvironmentLifetime', () => {
    const sqs = lineOf(base(), 'sqsIdlePolling');
    expect(sqs.measured['emptyReceivesPerMonth']).toBe(Object.keys(settings.queues).length * IDLE_POLLERS_PER_QUEUE * ((30 * 86_400) / LONG_POLL_SECONDS));
    const init = lineOf(base({ lambda: [row({ function: 'intake', memoryMb: 512 })], concurrency: { intake: { average: 10, burst: 90 } } }), 'lambdaInit');
    const coldStarts = 10 * ((30 * 24) / ENVIRONMENT_LIFETIME_HOURS) + 30 * 80;
    expect(init.measured['coldStartsPerMonth']).toBeCloseTo(coldStarts, 9);
    expect(init.usdPerMonthAt10M).toBeCloseTo(coldStarts * (COLD_IMPORT_MS['intake']! / 1000) * 0.5 * prices.lambda.gbSecondArm64, 9);
    const secrets = lineOf(base({ lambda: [row({ function: 'intake' })], concurrency: { intake: { average: 10, burst: 90 } } }), 'secretsManager');
    expect(secrets.usdPerMonthAt10M).toBeCloseTo(0.4 + coldStarts * prices.secretsManager.request, 9);
  });

  it('PricesDataTransferOutFromTheBytesReceivedPlusTheStatedHttpsOverhead', () => {
    const out = lineOf(base({ deliveryBytesPerResult: 1000, placerBytesPerResult: 500, outboundRequestsPerResult: 2 }), 'dataTransferOut');
    expect(out.measured['bytesPerResult']).toBe(1500 + 2 * 1200);
    expect(out.usdPerMillionResults).toBeCloseTo(((3900 / 1e9) * 0.09) * 1e6, 9);
  });
});

describe('durations shaped like production (issue 28 §2)', () => {
  const run = (kind: string, durationMs: number): RunRecord => ({ service: 'Lambda', operation: 'Record', source: `worker:q`, at: 0, function: 'worker:q', kind, durationMs });
  const invoke = (fn: string, source: string, durationMs: number): InvocationRecord => ({ service: 'Lambda', operation: 'Invoke', source, at: 0, function: fn, records: 1, durationMs, bytes: 0 });
  const dynamo = (source: string, operation: string, ms: number): DynamoRecord => ({ service: 'DynamoDB', operation, source, at: 0, outcome: 'ok', transaction: false, writes: [], reads: [], ms });

  it('SharesTheProcessCpuOutByEachSourcesStretchesAndPricesWaitsFromRequestsTimesLatencies', () => {
    const records: Recorded[] = [
      invoke('worker:q', 'worker:q', 100),
      run('a', 100),
      run('a', 60),
      dynamo('job:a', 'GetItem', 30),
      dynamo('job:a', 'TransactWriteItems', 50),
      invoke('intake', 'api:POST /x', 40),
      dynamo('api:POST /x', 'UpdateItem', 20),
    ];
    // Stretches add up to 80 ms, the process used 40: every source's CPU is half its stretches.
    const d = sourceDurations({ records, processCpuMs: 40, cpuBySource: { 'job:a': 40, 'api:POST /x': 20, unscoped: 20 }, endpointRequests: { normal: 0, slow: 0, down: 0, downFailed: 0 }, placerCalls: 0 });
    const a = d.find((x) => x.source === 'job:a')!;
    expect(a.cpuMs).toBeCloseTo(10, 9);
    expect(a.measuredMs).toBe(80);
    expect(a.storeMs).toBe(40);
    expect(a.waitMs).toBe((LATENCY_MS['DynamoDB:GetItem']! + LATENCY_MS['DynamoDB:TransactWriteItems']!) / 2);
    const api = d.find((x) => x.source === 'api:POST /x')!;
    expect(api.cpuMs).toBeCloseTo(10, 9);
    expect(api.productionMs).toBeCloseTo(10 + LATENCY_MS['DynamoDB:UpdateItem']!, 9);
    const scales = durationScales(d, (s) => (s === 'job:a' ? 'worker:q' : 'intake'));
    expect(scales['worker:q']!.production).toBeCloseTo((2 * a.productionMs) / 160, 9);
    expect(scales['worker:q']!.ideal).toBeCloseTo(20 / 160, 9);
    // A machine that ran nothing else: stretches are CPU, never scaled up.
    expect(sourceDurations({ records, processCpuMs: 1e6, cpuBySource: { 'job:a': 40 }, endpointRequests: { normal: 0, slow: 0, down: 0, downFailed: 0 }, placerCalls: 0 }).find((x) => x.source === 'job:a')!.cpuMs).toBe(20);
  });

  it('PricesDeliveriesAtTheirEndpointsLatencyAndADownEndpointsFailuresAtTheTimeout', () => {
    const records: Recorded[] = [run('webhook.deliver', 10), run('webhook.deliver', 10), run('calls.dial', 10)];
    const d = sourceDurations({ records, processCpuMs: 1e9, cpuBySource: {}, endpointRequests: { normal: 2, slow: 0, down: 1, downFailed: 1 }, placerCalls: 4 });
    expect(d.find((x) => x.source === 'job:webhook.deliver')!.waitMs).toBeCloseTo((2 * meanLatencyMs({ p50: 80, p99: 2000, timeoutShare: 0.01 }) + ENDPOINT_TIMEOUT_MS) / 2, 6);
    expect(d.find((x) => x.source === 'job:calls.dial')!.waitMs).toBe(4 * LATENCY_MS['placer']!);
  });

  it('MeanLatencyOfALogNormalWithTheGivenMedianAndP99PlusTheTimeoutShare', () => {
    const sigma = Math.log(2000 / 80) / 2.3263;
    expect(meanLatencyMs({ p50: 80, p99: 2000, timeoutShare: 0 })).toBeCloseTo(80 * Math.exp((sigma * sigma) / 2), 6);
    expect(meanLatencyMs({ p50: 80, p99: 2000, timeoutShare: 1 })).toBe(ENDPOINT_TIMEOUT_MS);
  });
});

describe('the limits that bind (issue 28 §3)', () => {
  it('ConflictProbabilityGrowsWithTheRateOnOneItemAndItsHoldTime', () => {
    expect(conflictProbability(0, 14)).toBe(0);
    expect(conflictProbability(100, 14)).toBeCloseTo(1 - Math.exp(-2.8), 9);
    expect(conflictProbability(10, 14)).toBeLessThan(conflictProbability(20, 14));
  });

  it('FindsTheBatchRowMostTransactionsTouch', () => {
    const tx = (pk: string): DynamoRecord => ({
      service: 'DynamoDB',
      operation: 'TransactWriteItems',
      source: 'api:x',
      at: 0,
      outcome: 'ok',
      transaction: true,
      writes: [
        { table: 'calls', pk, sk: 'BATCH', action: 'update', oldBytes: 0, newBytes: 0, putBytes: 0, indexes: [] },
        { table: 'calls', pk: `${pk}#C1`, sk: 'n', action: 'update', oldBytes: 0, newBytes: 0, putBytes: 0, indexes: [] },
      ],
      reads: [],
    });
    expect(batchRowTransactions([tx('B1'), tx('B2'), tx('B1')], () => 0.1)).toEqual({ key: 'B1', perResult: 0.2 });
  });

  it('FlagsTheIntakeRouteLimitTheTenantCapAndOneInFlightWithAnAction', () => {
    const intake: InvocationRecord = { service: 'Lambda', operation: 'Invoke', source: 'api:POST /v1/calls/webhook', at: 0, function: 'intake', records: 1, durationMs: 20, bytes: 100 };
    // 1.01 intake requests a result: 1,010/s at the burst against a route limit of 1,000/s.
    const records: Recorded[] = Array.from({ length: 101 }, () => intake);
    const model = buildModel({ records, results: 100, mails: 0, mailsPerResult: 0, categorize: () => 'result', settings, prices, rates: RATES });
    const limits = limitsOf({
      model,
      settings,
      rates: RATES,
      concurrency: { intake: { average: 3, burst: 20 } },
      day: { resultsByTenant: { acme: 20, b: 16, c: 16, d: 16, e: 16, f: 16 }, results: 100, endpointRequestsByPath: { '/hooks/acme/0': 21, '/hooks/other/0': 80 } },
      durations: [],
      records,
      weight: () => 0.01,
    });
    const byName = (name: string) => limits.find((l) => l.name === name)!;
    expect(byName('apigateway.route.intake')).toMatchObject({ limit: 1000, ok: false });
    expect(byName('apigateway.route.intake').demand).toBeCloseTo(1010, 6);
    expect(byName('apigateway.route.intake').action).toMatch(/intakeRateLimit=1600/);
    expect(byName('lambda.reserved.intake')).toMatchObject({ demand: 20, limit: 100, ok: true });
    expect(byName('lambda.reserved.intake').action).toBeUndefined();
    // The largest tenant: 20 % of 115.7/s for 90 s ≈ 2,083 calls in flight against the cap.
    expect(byName('calls.inFlight.average').demand).toBeCloseTo(0.2 * RATES.average * 90, 6);
    expect(byName('calls.inFlight.average')).toMatchObject({ limit: TENANT_CONCURRENCY_CAP, ok: false });
    // The busiest endpoint, 0.8 deliveries a result: 800/s at the burst, far more than one at a time carries.
    expect(byName('webhooks.oneInFlight.burst')).toMatchObject({ ok: false });
    expect(byName('webhooks.oneInFlight.burst').demand).toBeCloseTo(800, 6);
    expect(limits.every((l) => l.ok || (l.action ?? '').length > 0)).toBe(true);
  });
});
