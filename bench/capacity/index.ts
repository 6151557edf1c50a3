import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { retentionSeconds } from '../../functions/jobs/row.ts';
import { mailKinds } from '../../functions/mail/kinds.ts';
import { MAIL_RECORD_RETENTION_SECONDS } from '../../functions/mail/store.ts';
import { EVENT_RETENTION_SECONDS } from '../../functions/webhooks/events.ts';
import { CALLS_RETENTION_SECONDS } from '../../functions/calls/model.ts';
import { allKinds } from '../../functions/app/system.ts';
import type { InvocationRecord, Recorded, RunRecord, ScheduleFiredRecord, SqsRecord } from '../../functions/platform/recorder.ts';
import { fmt } from '../support.ts';
import { runDay, representativeDay, ROUNDS } from './day.ts';
import type { DayOutcome } from './day.ts';
import { startCapacityHost } from './host.ts';
import { KEY_CACHE_MS, LAST_USED_EVERY_MS } from '../../functions/calls/keys.ts';
import { pricedItemKinds } from './kinds.ts';
import { buildModel, fixedMonthlyUsd, keyCheckAtRate } from './model.ts';
import { apiRoutes, billLines, durationScales, sourceDurations } from './bill.ts';
import type { BillLine, SourceDurations } from './bill.ts';
import { limitsOf } from './limits.ts';
import type { Limit } from './limits.ts';
import type { CapacityModel, Category, KeyCheckAtRate } from './model.ts';
import { prices } from './prices.ts';
import { deployedSettings } from './settings.ts';

/** 10 million call results a day, on average, and the burst when large campaigns open their windows. */
export const RATES = { average: 10_000_000 / 86_400, burst: 1_000 };
/** The rescuer runs once a minute on AWS (lib/redial-stack.ts, RescuerSchedule). */
const RESCUER_RUNS_PER_MONTH = 30 * 24 * 60;
/** How long each table's rows stay (their TTL): most job rows finish completed; a batch's rows 90 days after their last write. */
const RETENTION_DAYS: Record<string, number | null> = {
  jobs: retentionSeconds.completed / 86_400,
  webhooks: EVENT_RETENTION_SECONDS / 86_400,
  mail: MAIL_RECORD_RETENTION_SECONDS / 86_400,
  calls: CALLS_RETENTION_SECONDS / 86_400,
};

/**
 * How many API requests, and how many batches per queue, the day serves at once (the rest wait their turn,
 * untimed). Every part of redial runs here on one 2-core machine against one DynamoDB Local process, which
 * queues what it is sent at once; on AWS each invocation has a machine of its own and DynamoDB does not
 * queue. Admitted a few at a time, DynamoDB Local answers near its unloaded latency, so a measured duration
 * is a record's work, not the miniature's queue (`--unlimited` measures with every record at once:
 * docs/capacity.md, "Durations"). The queues' capacity is still sized against the deployed concurrency.
 */
export const API_CONCURRENCY = 4;
export const QUEUE_CONCURRENCY = 1;

export interface CapacityOptions {
  /** Contacts across all batches: about 1.75 results each over three rounds. @default 400 */
  contacts?: number;
  /** Job time per real time. @default 0.03 */
  timeScale?: number;
  /** Where to write the report as JSON. */
  json?: string;
  /** Where to write every record of the day as JSON (large: tens of megabytes), to look closer. */
  records?: string;
  /** Serve every request and record at once (the context's concurrency), not a few at a time. @default false */
  unlimited?: boolean;
  /** Where to write every AWS request of the day by deployed function as JSON, for the IAM check (`node test/infra/iam/check.ts FILE`). */
  sentRequests?: string;
}

export interface CapacityReport extends CapacityModel {
  generatedAt: string;
  machine: string;
  prices: { region: string; checkedOn: string };
  day: {
    tenants: number;
    batches: number;
    contacts: number;
    rounds: number;
    endpointsPerTenant: Record<string, number>;
    results: number;
    mails: number;
    measuredMailsPerResult: number;
    deliveriesPerResult: number;
    /** The attempt log's rows the day left, per result: by who sent the attempt (its job, or the holder draining the wait list). */
    attemptRowsPerResult: { job: number; waitList: number; delivered: number };
    largestTenantShare: { tenant: string; share: number };
    largestBatchShare: { batchId: string; share: number };
    realSeconds: number;
    jobTimeSeconds: number;
    timeScale: number;
    /** Requests and batches per queue served at once (`unlimited`: as the contexts declare), see {@link API_CONCURRENCY}. */
    admission: { apiConcurrency: number; queueConcurrency: number } | 'unlimited';
  };
  fixedUsdPerMonth: Record<string, number>;
  /**
   * What stays stored, per table and index: bytes per result the day left behind, how long TTL keeps it,
   * and the gigabytes that makes at 10 M results a day (steady state; a table without TTL grows by that
   * much every month).
   */
  storage: Record<string, { bytesPerResult: number; retentionDays: number | null; gigabytes: number }>;
  storageUsdPerMonth: number;
  /**
   * Each priced kind's storage (kinds.ts; `<kind>.<index>` for its index entries), as `storage` (its bytes
   * are in `storage` too), with what it costs a month with point-in-time recovery. Only kinds kept for a
   * time (TTL) per result: API keys are kept per key.
   */
  storageByItemKind: Record<string, { bytesPerResult: number; retentionDays: number; gigabytes: number; usdPerMonth: number }>;
  /**
   * The key check per tenant request at steady rates (model.ts `keyCheckAtRate`), with the units of a lookup
   * and a touch measured in the day: at the day's own mix (its tenant API requests per result at 10 M
   * results a day, over its keys, one warm container each) and at a polling back end's 1 and 10 requests a
   * second per key.
   */
  apiKeysAtRate: { dayMix: KeyCheckAtRate & { usdPerMillionResults: number }; polling: KeyCheckAtRate[] };
  /** 10 M results a day for 30 days, priced: per-result costs, the fixed ones and storage (with point-in-time recovery). */
  monthlyUsdAt10MPerDay: { withoutSes: number; withSes: number };
  /**
   * The whole bill (issue 28): `usdPerMillionResults` above is every cost, Lambda duration production-shaped;
   * this keeps the parts — the request model's figure with the durations measured on this machine
   * (`usdPerMillionResultsMeasuredDurations`, what earlier runs reported), the lines §1 adds (bill.ts), the
   * API Gateway requests per route, and the durations per source.
   */
  bill: {
    usdPerMillionResultsMeasuredDurations: number;
    lines: BillLine[];
    apiRoutes: Record<string, { requestsPerResult: number; usdPerMillionResults: number }>;
    durations: SourceDurations[];
    processCpuMs: number;
    lambdaGbSecondsPerResult: { measured: number; productionShaped: number; ideal: number };
  };
  /** The same day with an instant network: every wait 0, CPU only (§2). */
  ideal: { usdPerMillionResults: number; lambdaDurationUsdPerMillionResults: number; monthlyUsdAt10MPerDayWithoutSes: number };
  /** The limits that bind (§3), each against its demand. */
  limits: Limit[];
}

const mailKindNames = new Set<string>(mailKinds.map((k) => k.kind));
const periodicKinds = allKinds.filter((k) => k.periodic);

/** Results pay for what the day's calls caused; mail is priced per mail; the rescuer and periodic jobs are fixed. */
function categorize(record: Recorded): Category {
  const source = record.source;
  if (source === 'rescuer' || periodicKinds.some((k) => source === `job:${k.kind}`)) return 'fixed';
  if (record.service === 'SES' || source === 'worker:mail' || mailKindNames.has(source.replace(/^job:/, ''))) return 'mail';
  if (source === 'scheduler' && (record as ScheduleFiredRecord | SqsRecord).queue === 'mail') return 'mail';
  return 'result';
}

/** `npm run bench -- capacity`: a representative day through the local stack, recorded, modelled and priced. */
export async function benchCapacity(dynamoEndpoint: string, options: CapacityOptions = {}): Promise<{ lines: string[]; report: CapacityReport }> {
  const contacts = options.contacts ?? 400;
  const timeScale = options.timeScale ?? 0.03;
  const settings = deployedSettings();
  const lines: string[] = [];
  const log = (line: string) => console.log(`  ${line}`);
  const admission = options.unlimited ? {} : { apiConcurrency: API_CONCURRENCY, queueConcurrency: QUEUE_CONCURRENCY };
  const host = await startCapacityHost({ dynamoEndpoint, timeScale, seed: 12, rescueIntervalMs: 60_000 * timeScale, ...admission, ...(options.sentRequests ? { logRequests: true } : {}) });
  let day: DayOutcome;
  let records: Recorded[];
  let passes: number;
  let cpuBySource: Record<string, number>;
  try {
    const stopCpu = host.recorder.trackCpu();
    try {
      day = await runDay(host, contacts, { timeoutMs: 900_000, log });
    } finally {
      stopCpu();
    }
    cpuBySource = host.recorder.cpuBySource();
    records = [...host.recorder.records];
    passes = host.rescuerPasses();
    if (options.sentRequests && host.sentRequests) writeFileSync(options.sentRequests, JSON.stringify(host.sentRequests.toJSON()));
  } finally {
    await host.stop();
  }

  // Mail at the rate the day's scenario produces (owner notices at finalising), not a flat guess.
  const mailsPerResult = day.mails / day.results;
  const model = buildModel({ records, results: day.results, mails: day.mails, mailsPerResult, categorize, settings, prices, rates: RATES, itemKinds: pricedItemKinds });
  const runs = (kind: string) => records.filter((r) => r.service === 'Lambda' && r.operation === 'Record' && (r as RunRecord).kind === kind).length;
  const fixedUsdPerMonth = fixedMonthlyUsd(
    records,
    [
      { source: 'rescuer', runsSeen: passes, runsPerMonth: RESCUER_RUNS_PER_MONTH },
      ...periodicKinds.map((k) => ({ source: `job:${k.kind}`, runsSeen: runs(k.kind), runsPerMonth: (30 * 86_400) / k.periodic!.everySeconds })),
    ],
    settings,
    prices,
  );
  const fixed = Object.values(fixedUsdPerMonth).reduce((a, b) => a + b, 0);
  const resultsPerDay = RATES.average * 86_400;
  const resultsPerMonth = resultsPerDay * 30;
  const storage = Object.fromEntries(
    Object.entries(day.stored).map(([label, { bytes }]) => {
      const retentionDays = RETENTION_DAYS[label.split('.')[0]!] ?? null;
      const bytesPerResult = bytes / day.results;
      return [label, { bytesPerResult, retentionDays, gigabytes: (bytesPerResult * resultsPerDay * (retentionDays ?? 30)) / 2 ** 30 }];
    }),
  );
  const storedGb = Object.values(storage).reduce((n, s) => n + s.gigabytes, 0);
  const gbMonth = prices.dynamodb.storageGbMonth + prices.dynamodb.pitrGbMonth;
  const storageUsdPerMonth = storedGb * gbMonth;
  const storageByItemKind = Object.fromEntries(
    Object.entries(day.storedByKind).flatMap(([label, { bytes }]) => {
      // A kind without TTL (API keys) is kept per key, not per result: not scaled to 10 M results a day.
      const retentionDays = pricedItemKinds.find((k) => k.name === label.split('.')[0])?.retentionDays ?? null;
      if (retentionDays === null) return [];
      const bytesPerResult = bytes / day.results;
      const gigabytes = (bytesPerResult * resultsPerDay * (retentionDays ?? 30)) / 2 ** 30;
      return [[label, { bytesPerResult, retentionDays, gigabytes, usdPerMonth: gigabytes * gbMonth }]];
    }),
  );
  // The key check at steady rates, from the units one lookup and one touch took in the day.
  const keys = model.perResult.apiKeys;
  const keyRate = (requestsPerSecondPerKey: number) =>
    keyCheckAtRate({
      requestsPerSecondPerKey,
      containersPerKey: 1,
      cacheMs: KEY_CACHE_MS,
      touchEveryMs: LAST_USED_EVERY_MS,
      readUnitsPerLookup: keys.lookups > 0 ? keys.readUnits / keys.lookups : 1,
      writeUnitsPerTouch: keys.touches > 0 ? keys.writeUnits / keys.touches : 1,
      prices,
    });
  const dayMix = keyRate((keys.tenantApiRequests * RATES.average) / representativeDay.length);
  const apiKeysAtRate = { dayMix: { ...dayMix, usdPerMillionResults: dayMix.usdPerMillionRequests * keys.tenantApiRequests }, polling: [1, 10].map(keyRate) };
  // §2: each source's CPU measured, its waits priced; §1: the lines the request model leaves out.
  const queueOf = new Map(allKinds.map((k) => [k.kind, k.queue]));
  const routeFunction = new Map(records.filter((r): r is InvocationRecord => r.service === 'Lambda' && r.operation === 'Invoke' && r.source.startsWith('api:')).map((r) => [r.source, r.function]));
  const functionOf = (source: string) => (source.startsWith('job:') ? `worker:${queueOf.get(source.slice(4)) ?? '?'}` : (routeFunction.get(source) ?? source));
  const down = day.endpointRequests.down;
  const durations = sourceDurations({
    records,
    processCpuMs: day.processCpuMs,
    cpuBySource,
    endpointRequests: { normal: day.endpointRequests.normal.requests + day.endpointRequests.throttling.requests, slow: day.endpointRequests.slow.requests, down: down.requests, downFailed: down.byStatus['503'] ?? 0 },
    placerCalls: day.results,
  });
  const scales = durationScales(durations, functionOf);
  const scaled = (which: 'production' | 'ideal') => model.lambda.reduce((n, l) => n + l.gbSecondsPerResult * (scales[l.function]?.[which] ?? 1), 0);
  const gbs = { measured: model.perResult.lambdaGbSeconds, productionShaped: scaled('production'), ideal: scaled('ideal') };
  const concurrency = Object.fromEntries(model.lambda.map((l) => [l.function, { average: l.concurrencyAtAverage * (scales[l.function]?.production ?? 1), burst: l.concurrencyAtBurst * (scales[l.function]?.production ?? 1) }]));
  const weight = (record: Recorded) => {
    const category = categorize(record);
    return category === 'result' ? 1 / day.results : category === 'mail' && day.mails > 0 ? mailsPerResult / day.mails : 0;
  };
  const lines_ = billLines(
    {
      records,
      weight,
      results: day.results,
      lambda: model.lambda,
      settings,
      prices,
      rates: RATES,
      endpointRequestsPerResult: Object.values(day.endpointRequestsByPath).map((n) => n / day.results),
      deliveryBytesPerResult: day.deliveryBytes / day.results,
      placerBytesPerResult: day.placerBytes / day.results,
      outboundRequestsPerResult: (day.deliveries + day.results) / day.results,
      concurrency,
    },
    functionOf,
  );
  const durationUsd = (gbSeconds: number) => gbSeconds * prices.lambda.gbSecondArm64 * 1e6;
  const measuredDuration = model.usdPerMillionResultsByService['lambdaDuration'] ?? 0;
  const linesUsd = lines_.reduce((n, l) => n + l.usdPerMillionResults, 0);
  const allIn = (gbSeconds: number) => model.usdPerMillionResults - measuredDuration + durationUsd(gbSeconds) + linesUsd;
  const usdPerMillionResults = allIn(gbs.productionShaped);
  const sesPerMillion = model.usdPerMillionResultsByService['ses'] ?? 0;
  const monthly = (perMillion: number) => (perMillion * resultsPerMonth) / 1e6 + fixed + storageUsdPerMonth;
  const limits = limitsOf({ model, settings, rates: RATES, concurrency, day: { resultsByTenant: day.resultsByTenant, results: day.results, endpointRequestsByPath: day.endpointRequestsByPath }, durations, records, weight });
  const [largestTenant, tenantResults] = Object.entries(day.resultsByTenant).sort((a, b) => b[1] - a[1])[0]!;
  const [largestBatch, batchResults] = Object.entries(day.resultsByBatch).sort((a, b) => b[1] - a[1])[0]!;
  const report: CapacityReport = {
    generatedAt: new Date().toISOString(),
    machine: `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), DynamoDB Local in memory`,
    prices: { region: prices.region, checkedOn: prices.checkedOn },
    day: {
      tenants: representativeDay.length,
      batches: day.batches.length,
      contacts: day.batches.reduce((n, b) => n + b.contacts, 0),
      rounds: ROUNDS,
      endpointsPerTenant: Object.fromEntries(representativeDay.map((t) => [t.tenantId, t.endpoints])),
      results: day.results,
      mails: day.mails,
      measuredMailsPerResult: day.mails / day.results,
      deliveriesPerResult: day.deliveries / day.results,
      attemptRowsPerResult: { job: day.attemptRows.job / day.results, waitList: day.attemptRows.waitList / day.results, delivered: day.attemptRows.delivered / day.results },
      largestTenantShare: { tenant: largestTenant, share: tenantResults / day.results },
      largestBatchShare: { batchId: largestBatch, share: batchResults / day.results },
      realSeconds: day.realSeconds,
      jobTimeSeconds: day.jobTimeSeconds,
      timeScale,
      admission: options.unlimited ? 'unlimited' : { apiConcurrency: API_CONCURRENCY, queueConcurrency: QUEUE_CONCURRENCY },
    },
    ...model,
    usdPerMillionResults,
    usdPerMillionResultsWithSes: usdPerMillionResults + sesPerMillion,
    usdPerMillionResultsByService: { ...model.usdPerMillionResultsByService, lambdaDuration: durationUsd(gbs.productionShaped), ...Object.fromEntries(lines_.map((l) => [l.name, l.usdPerMillionResults])) },
    fixedUsdPerMonth,
    storage,
    storageUsdPerMonth,
    storageByItemKind,
    apiKeysAtRate,
    monthlyUsdAt10MPerDay: { withoutSes: monthly(usdPerMillionResults), withSes: monthly(usdPerMillionResults + sesPerMillion) },
    bill: {
      usdPerMillionResultsMeasuredDurations: model.usdPerMillionResults,
      lines: lines_,
      apiRoutes: apiRoutes(records, weight, prices),
      durations,
      processCpuMs: day.processCpuMs,
      lambdaGbSecondsPerResult: gbs,
    },
    ideal: { usdPerMillionResults: allIn(gbs.ideal), lambdaDurationUsdPerMillionResults: durationUsd(gbs.ideal), monthlyUsdAt10MPerDayWithoutSes: monthly(allIn(gbs.ideal)) },
    limits,
  };
  if (options.json) writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
  if (options.records) writeFileSync(options.records, JSON.stringify(records));

  const d = report.day;
  lines.push(
    `the day             ${fmt(d.results)} call results (${fmt(d.contacts)} contacts, ${d.batches} batches, ${d.tenants} tenants, up to ${d.rounds} rounds) in ${fmt(d.realSeconds, 1)} s real, ${fmt(d.jobTimeSeconds / 60, 1)} min job time`,
    `                    ${d.admission === 'unlimited' ? 'every request and record served at once (--unlimited)' : `served ${d.admission.apiConcurrency} API requests and ${d.admission.queueConcurrency} batch per queue at once (durations: docs/capacity.md)`}`,
    `                    largest tenant ${fmt(100 * d.largestTenantShare.share, 1)} % of results, largest batch ${fmt(100 * d.largestBatchShare.share, 1)} %; ${fmt(d.deliveriesPerResult, 2)} deliveries and ${fmt(d.measuredMailsPerResult, 4)} mails per result (priced at that rate)`,
    `                    endpoints: ${Object.entries(day.endpointRequests).map(([p, e]) => `${p} ${e.requests} requests (${Object.entries(e.byStatus).map(([st, n]) => `${st}: ${n}`).join(', ')})`).join('; ')}`,
    `cost                ${usd(report.usdPerMillionResults)} per million results without SES, all in, durations production-shaped; ${usd(report.usdPerMillionResultsWithSes)} with SES (${prices.region} list prices of ${prices.checkedOn})`,
    `                    ideal day (instant network, CPU only): ${usd(report.ideal.usdPerMillionResults)}; the request model with this machine's durations (earlier runs' figure): ${usd(report.bill.usdPerMillionResultsMeasuredDurations)}`,
    `                    ${Object.entries(report.usdPerMillionResultsByService).map(([k, v]) => `${k} ${usd(v)}`).join(', ')}`,
    `lambda GB-ms/result measured ${fmt(gbs.measured * 1000, 1)} (load ${loadAverage()}), production-shaped ${fmt(gbs.productionShaped * 1000, 1)}, ideal ${fmt(gbs.ideal * 1000, 1)}; process CPU ${fmt(day.processCpuMs / 1000, 1)} s over the day`,
    ...durations.slice(0, 8).map((x) => `  ${x.source.padEnd(30)}${fmt(x.runs)} runs: measured ${fmt(x.measuredMs, 1)} ms (store ${fmt(x.storeMs, 1)}), CPU ${fmt(x.cpuMs, 1)} + waits ${fmt(x.waitMs, 1)} = ${fmt(x.productionMs, 1)} ms`),
    ...lines_.map((l) => `${l.name.padEnd(20)}${usd(l.usdPerMillionResults)} per million results, ${usd(l.usdPerMonthAt10M)}/month at 10 M a day: ${l.basis}`),
    `api routes          ${Object.entries(report.bill.apiRoutes).map(([route, r]) => `${route} ${fmt(r.requestsPerResult, 4)}/result (${usd(r.usdPerMillionResults)})`).join('; ')}`,
    ...limits.map((l) => `limit ${l.ok ? 'ok ' : 'NOT'} ${l.name.padEnd(44)}demand ${fmt(l.demand, l.limit < 1 ? 3 : 1)} vs ${fmt(l.limit, l.limit < 1 ? 3 : 1)}${l.action ? `: ${l.action}` : ''}`),
    `write units         ${fmt(report.writeUnitsPerResult, 1)} per result: ${top(report.perResult.writeUnitsByTable, 6)}`,
    `                    by source: ${top(report.perResult.writeUnitsBySource, 8)}`,
    `read units          ${fmt(report.readUnitsPerResult, 2)} per result: ${top(report.perResult.readUnitsByTable, 4)}`,
    `requests/result     SQS ${fmt(report.perResult.sqsRequests, 2)} (${fmt(report.perResult.sqsSends, 2)} sends), Lambda ${fmt(report.perResult.lambdaInvocations, 2)} invocations (${fmt(report.perResult.lambdaGbSeconds * 1000, 1)} GB-ms), API ${fmt(report.perResult.apiRequests, 2)}, Scheduler ${fmt(report.perResult.schedulerCreates, 3)} creates`,
    `API keys/result     ${fmt(report.perResult.apiKeys.requests, 6)} DynamoDB requests (${fmt(report.perResult.apiKeys.readUnits, 6)} read, ${fmt(report.perResult.apiKeys.writeUnits, 6)} write units) for ${fmt(report.perResult.apiKeys.tenantApiRequests, 6)} tenant API requests`,
    ...itemKindLines(report),
    `hottest partition   ${report.hottestPartitionWcuPerSecondAtBurst.table}${report.hottestPartitionWcuPerSecondAtBurst.index ? `.${report.hottestPartitionWcuPerSecondAtBurst.index}` : ''} "${report.hottestPartitionWcuPerSecondAtBurst.key}": ${fmt(report.hottestPartitionWcuPerSecondAtBurst.wcuPerSecondAtAverage)} WCU/s at ${fmt(RATES.average)} results/s, ${fmt(report.hottestPartitionWcuPerSecondAtBurst.wcuPerSecond)} WCU/s at ${fmt(RATES.burst)} (limit 1,000 per partition)`,
  );
  for (const p of report.partitions.slice(0, 8)) {
    lines.push(`  ${`${p.table}${p.index ? `.${p.index}` : ''}`.padEnd(18)}${p.keys.slice(0, 3).map((k) => `"${k.key}" ${fmt(k.wcuPerSecondAtBurst)}`).join(', ')} WCU/s at the burst`);
  }
  for (const q of report.queues) {
    lines.push(
      `queue ${q.name.padEnd(14)}demand ${fmt(q.demandPerSecondAtAverage)}/s average, ${fmt(q.demandPerSecondAtBurst)}/s burst; capacity ${q.capacityPerSecond === null ? 'not measured (no records)' : `${fmt(q.capacityPerSecond)}/s`} (${q.maxConcurrency} × ${q.batchSize} per ${q.expectedBatchMs === null ? '?' : fmt(q.expectedBatchMs)} ms batch; records p50 ${fmt(q.recordMs.p50, 1)} ms, p99 ${fmt(q.recordMs.p99, 1)} ms; 2× the burst needs concurrency ${q.concurrencyForTwiceBurst ?? '?'})`,
    );
  }
  lines.push(
    `scheduler           ${fmt(report.scheduler.createsPerSecondAtAverage, 1)} creates/s average, ${fmt(report.scheduler.createsPerSecondAtBurst, 1)}/s burst; mean wait ${fmt(report.scheduler.meanDelaySeconds)} s, so ${fmt(report.scheduler.liveSchedulesAtAverage)} live schedules on average, ${fmt(report.scheduler.liveSchedulesAtBurst)} at a sustained burst`,
    `api gateway         ${report.http.map((h) => `${h.function} ${fmt(h.requestsPerSecondAtAverage)}/s average, ${fmt(h.requestsPerSecondAtBurst)}/s burst${h.rateLimit === null ? '' : ` (limit ${fmt(h.rateLimit)}/s a route, burst ${fmt(h.burstLimit ?? 0)})`}`).join('; ')}`,
    `lambda concurrency  ${fmt(report.lambdaConcurrencyAtAverage, 1)} on average, ${fmt(report.lambdaConcurrencyAtBurst, 1)} at the burst: ${report.lambda.map((l) => `${l.function} ${fmt(l.concurrencyAtBurst, 1)}${l.maxConcurrency === null ? '' : ` (cap ${l.maxConcurrency})`}`).join(', ')}`,
    `storage             ${fmt(storedGb)} GB at 10 M results/day (${Object.entries(storage).map(([k, v]) => `${k} ${fmt(v.bytesPerResult)} B/result × ${v.retentionDays === null ? '30 days, growing: no TTL' : `${fmt(v.retentionDays)} days`}`).join(', ')}): ${usd(storageUsdPerMonth)}/month with point-in-time recovery`,
    `fixed               ${Object.entries(report.fixedUsdPerMonth).map(([k, v]) => `${k} ${usd(v)}/month`).join(', ')}`,
    `10 M results/day    ${usd(report.monthlyUsdAt10MPerDay.withoutSes)} a month without SES, ${usd(report.monthlyUsdAt10MPerDay.withSes)} with it${options.json ? `; JSON: ${options.json}` : ''}`,
  );
  return { lines, report };
}

/** The priced kinds' lines: per result, their units, requests and dollars; their storage; the key check at steady rates. */
function itemKindLines(report: CapacityReport): string[] {
  const lines: string[] = [];
  const d = report.day;
  lines.push(
    `attempt rows        ${fmt(d.attemptRowsPerResult.job + d.attemptRowsPerResult.waitList, 3)} per result (${fmt(d.attemptRowsPerResult.job, 3)} by their job, ${fmt(d.attemptRowsPerResult.waitList, 3)} sent from the wait list; ${fmt(d.attemptRowsPerResult.delivered, 3)} delivered) for ${fmt(d.deliveriesPerResult, 3)} requests the endpoints received`,
  );
  for (const kind of pricedItemKinds) {
    const k = report.perResult.itemKinds[kind.name];
    if (!k) continue;
    if (k.writes === 0 && k.reads === 0) {
      lines.push(`${`${kind.name} `.padEnd(20)}no requests in the day: $0 per million results (${kind.description})`);
      continue;
    }
    const stored = Object.entries(report.storageByItemKind).filter(([label]) => label.split('.')[0] === kind.name);
    const ops = Object.entries(k.requestsByOperation).map(([op, n]) => `${op} ${fmt(n, 3)}`).join(', ');
    lines.push(
      `${`${kind.name} `.padEnd(20)}${fmt(k.writeUnits, 3)} write units (${fmt(k.indexWriteUnits, 3)} of them index entries), ${fmt(k.readUnits, 3)} read units per result: ${usd(k.usdPerMillionResults)} per million results`,
      `                    ${fmt(k.writes, 3)} item writes, ${fmt(k.reads, 3)} reads, ${fmt(k.ownRequests, 3)} requests of their own per result (${ops || 'none'}); items ${fmt(k.meanItemBytes)} B as written, ${fmt(k.meanReadBytes)} B as read${k.hottest ? `; hottest "${k.hottest.key}"${k.hottest.index ? ` (${k.hottest.index})` : ''} ${fmt(k.hottest.wcuPerSecondAtBurst)} WCU/s at the burst` : ''}`,
    );
    if (stored.length) {
      lines.push(
        `                    stored: ${stored.map(([label, s]) => `${label} ${fmt(s.bytesPerResult)} B/result × ${fmt(s.retentionDays, s.retentionDays < 2 ? 2 : 0)} days = ${fmt(s.gigabytes)} GB, ${usd(s.usdPerMonth)}/month`).join('; ')}`,
      );
    }
  }
  const rate = (r: KeyCheckAtRate) => `${fmt(r.requestsPerSecondPerKey, 2)}/s a key: hit rate ${fmt(100 * r.hitRate, 1)} %, ${fmt(r.lookupsPerRequest, 4)} lookups and ≤ ${fmt(r.touchesPerRequest, 4)} lastUsedAt writes a request, ${usd(r.usdPerMillionRequests)} per million tenant requests`;
  lines.push(
    `key check at rate   one warm container a key (30 s cache, lastUsedAt ≤ once a minute): the day's mix, ${rate(report.apiKeysAtRate.dayMix)}, ${usd(report.apiKeysAtRate.dayMix.usdPerMillionResults)} per million results`,
    ...report.apiKeysAtRate.polling.map((r) => `                    a polling back end, ${rate(r)}`),
  );
  return lines;
}

const loadAverage = () => loadavg().map((n) => n.toFixed(1)).join(' ');
const usd = (n: number) => `$${fmt(n, n < 0.1 ? 4 : n < 100 ? 2 : 0)}`;
const top = (values: Record<string, number>, n: number) =>
  Object.entries(values)
    .slice(0, n)
    .map(([k, v]) => `${k} ${fmt(v, 2)}`)
    .join(', ');
