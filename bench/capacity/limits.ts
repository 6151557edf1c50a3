/**
 * The AWS limits that bind at 10 M results a day (issue 28 §3): each an entry `{name, demand, limit, ok,
 * action?}` built from what the model reports and the stated rates below; an entry that is not ok says
 * what to do (a setting, a quota request, a design change). docs/capacity.md ("The limits that bind")
 * explains each. Pure.
 */
import { tenantBody } from '../../functions/calls/schemas.ts';
import type { DynamoRecord, Recorded } from '../../functions/platform/recorder.ts';
import { ENDPOINT_LATENCY, LATENCY_MS, meanLatencyMs } from './bill.ts';
import type { SourceDurations } from './bill.ts';
import type { CapacityModel } from './model.ts';
import type { DeployedSettings } from './settings.ts';

export interface Limit {
  name: string;
  demand: number;
  limit: number;
  ok: boolean;
  /** What to do when not ok. */
  action?: string;
  /** The unit and how demand was derived, in a few words. */
  basis: string;
}

/** Lambda's default account concurrency in a region (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). */
export const LAMBDA_ACCOUNT_CONCURRENCY = 1_000;
/** Each function scales by up to 1,000 execution environments every 10 seconds (same page, "Lambda scaling behavior"). */
export const LAMBDA_SCALE_PER_10_SECONDS = 1_000;
/** An SQS event source adds up to 300 concurrent invocations a minute after its first 5 (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html). */
export const SQS_ESM_START = 5;
export const SQS_ESM_SCALE_PER_MINUTE = 300;
/** The burst's rise, as the issue states it: from the average rate to 1,000 results a second within 60 seconds. */
export const BURST_RISE_SECONDS = 60;
/**
 * A new on-demand table serves up to 4,000 write and 12,000 read request units a second at once; more
 * needs the table to have served it before or warm throughput set
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html, "Initial throughput").
 */
export const ON_DEMAND_INITIAL_WRU = 4_000;
export const ON_DEMAND_INITIAL_RRU = 12_000;
/** A partition's write throughput (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html). */
export const PARTITION_WCU = 1_000;
/** API Gateway's account throttle per region, requests a second (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html). */
export const API_GATEWAY_ACCOUNT_RPS = 10_000;
/** How long a call lasts, for calls in flight (the issue's figure). */
export const CALL_SECONDS = 90;
/**
 * The transaction-conflict window on one item: DynamoDB rejects a transaction that touches an item another
 * transaction holds (TransactionConflict). Held for about one transaction's round trip ({@link LATENCY_MS}).
 * With transactions on the item arriving at random at rate λ, a transaction conflicts with probability
 * 1 − e^(−2λτ) (another arrives within τ before or after it).
 */
export const conflictProbability = (perSecond: number, holdMs: number): number => 1 - Math.exp((-2 * perSecond * holdMs) / 1000);
/**
 * Transactions a second on the hottest batch row at the burst, as `npm run bench -- capacity` measured it
 * (the `dynamodb.transactionConflicts.batchRow` limit: 151 a second on `TENANT#wayne#BATCH#…` in the run of 2026-12-03 19:36; docs/capacity.md): what the conflict test
 * (test/capacity/transaction-conflicts.test.ts) injects conflicts at. Update it with the run it comes from.
 */
export const BATCH_ROW_TRANSACTIONS_PER_SECOND_AT_BURST = 151;
/** The rate of conflicts on one item the design accepts (each costs a 503 and a re-sent result, or a job retry): 1 %. */
export const ACCEPTED_CONFLICT_SHARE = 0.01;

export interface LimitsInput {
  model: CapacityModel;
  settings: DeployedSettings;
  rates: { average: number; burst: number };
  /** Each function's concurrency, production-shaped. */
  concurrency: Record<string, { average: number; burst: number }>;
  day: { resultsByTenant: Record<string, number>; results: number; endpointRequestsByPath: Record<string, number> };
  durations: readonly SourceDurations[];
  records: readonly Recorded[];
  weight: (record: Recorded) => number;
}

/** The tenant concurrency cap the API accepts (functions/calls/schemas.ts `tenantBody`). */
export const TENANT_CONCURRENCY_CAP: number = (tenantBody.shape.concurrencyLimit as unknown as { maxValue: number }).maxValue;

/**
 * Transactions per result touching the hottest batch row (`sk = BATCH`), and their cancelled share:
 * the hot item a burst's transactions meet on.
 */
export function batchRowTransactions(records: readonly Recorded[], weight: (r: Recorded) => number): { key: string; perResult: number } {
  const byKey = new Map<string, number>();
  for (const r of records) {
    if (r.service !== 'DynamoDB' || r.operation !== 'TransactWriteItems') continue;
    const d = r as DynamoRecord;
    for (const key of new Set(d.writes.filter((w) => w.sk === 'BATCH').map((w) => w.pk))) byKey.set(key, (byKey.get(key) ?? 0) + weight(r));
  }
  const [key, perResult] = [...byKey.entries()].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  return { key, perResult };
}

export function limitsOf(input: LimitsInput): Limit[] {
  const { model, settings, rates, concurrency } = input;
  const limits: Limit[] = [];
  const entry = (name: string, demand: number, limit: number, basis: string, action: string, okWhen: (d: number, l: number) => boolean = (d, l) => d <= l) => {
    const ok = okWhen(demand, limit);
    limits.push({ name, demand, limit, ok, basis, ...(ok ? {} : { action }) });
  };

  // Lambda: the account's concurrency against what is reserved plus the unreserved functions' peak.
  const reserved = Object.values(settings.reservedConcurrency).reduce((a, b) => a + b, 0);
  const unreservedPeak = Object.entries(concurrency).reduce((n, [fn, c]) => n + (settings.reservedConcurrency[fn] === undefined ? c.burst : 0), 0);
  entry('lambda.accountConcurrency', reserved + unreservedPeak, LAMBDA_ACCOUNT_CONCURRENCY, `reserved ${reserved} + the other functions' peak at the burst (production-shaped)`, 'request an account concurrency quota above the sum of reserved concurrency and the event sources’ maximum concurrency (docs/capacity.md)');
  const eventSourceCaps = Object.values(settings.queues).reduce((n, q) => n + q.maxConcurrency, 0);
  entry('lambda.accountConcurrency.atTheCaps', reserved + eventSourceCaps, LAMBDA_ACCOUNT_CONCURRENCY, 'reserved + every event source at its maximum concurrency: what the account may have to carry when queues back up', `request an account concurrency quota of at least ${Math.ceil((reserved + eventSourceCaps) / 500) * 500} (or lower the event sources’ maximum concurrency)`);
  for (const [fn, r] of Object.entries(settings.reservedConcurrency)) {
    const c = concurrency[fn];
    if (c) entry(`lambda.reserved.${fn}`, c.burst, r, 'concurrency at the burst (production-shaped)', `deploy with a reserved concurrency above ${Math.ceil(c.burst * 2)} (-c ${fn}ReservedConcurrency=…)`);
  }
  for (const q of model.queues) {
    const c = concurrency[`worker:${q.name}`];
    if (!c) continue;
    entry(`sqs.maxConcurrency.${q.name}`, c.burst, q.maxConcurrency, 'batches in flight at the burst (production-shaped)', `raise -c ${q.name}Concurrency above ${Math.ceil(c.burst * 2)}`);
    // From the average to the burst within BURST_RISE_SECONDS: the event source adds 300 a minute after its first 5.
    const rise = Math.max(0, c.burst - Math.max(c.average, SQS_ESM_START));
    const canAdd = (SQS_ESM_SCALE_PER_MINUTE * BURST_RISE_SECONDS) / 60;
    entry(`sqs.scaleOut.${q.name}`, rise, canAdd, `concurrency to add within ${BURST_RISE_SECONDS} s of the burst's rise`, 'the queue backs up for the minutes the event source needs to scale: raise its floor with provisioned mode (minimum pollers) before the windows open');
  }
  for (const [fn, c] of Object.entries(concurrency)) {
    if (fn.startsWith('worker:')) continue;
    entry(`lambda.scaleRate.${fn}`, (Math.max(0, c.burst - c.average) * 10) / BURST_RISE_SECONDS, LAMBDA_SCALE_PER_10_SECONDS, 'new environments per 10 s during the rise', 'provisioned concurrency for the rise');
  }

  // DynamoDB: a new on-demand table's initial throughput against the first burst; the hottest partition.
  const tables = new Map<string, { writes: number; reads: number }>();
  for (const [label, units] of Object.entries(model.perResult.writeUnitsByTable)) (tables.get(label) ?? tables.set(label, { writes: 0, reads: 0 }).get(label)!).writes += units * rates.burst;
  for (const [label, units] of Object.entries(model.perResult.readUnitsByTable)) (tables.get(label) ?? tables.set(label, { writes: 0, reads: 0 }).get(label)!).reads += units * rates.burst;
  for (const [label, t] of tables) {
    entry(`dynamodb.initialWrites.${label}`, t.writes, ON_DEMAND_INITIAL_WRU, 'write units a second at the burst', `set the table's warm throughput to at least ${Math.ceil((t.writes * 1.5) / 1000) * 1000} WRU/s (WarmThroughput.WriteUnitsPerSecond) before the first burst`);
    if (t.reads > 0) entry(`dynamodb.initialReads.${label}`, t.reads, ON_DEMAND_INITIAL_RRU, 'read units a second at the burst', `set the table's warm throughput to at least ${Math.ceil((t.reads * 1.5) / 1000) * 1000} RRU/s before the first burst`);
  }
  const hot = model.hottestPartitionWcuPerSecondAtBurst;
  entry('dynamodb.hottestPartition', hot.wcuPerSecond, PARTITION_WCU, `${hot.table}${hot.index ? `.${hot.index}` : ''} "${hot.key}", WCU/s at the burst`, 'split the item’s writes (write sharding)');

  // Transaction conflicts on the hottest batch row.
  const tx = batchRowTransactions(input.records, input.weight);
  const perSecond = tx.perResult * rates.burst;
  const hold = LATENCY_MS['DynamoDB:TransactWriteItems']!;
  const p = conflictProbability(perSecond, hold);
  entry('dynamodb.transactionConflicts.batchRow', p, ACCEPTED_CONFLICT_SHARE, `share of the transactions on the hottest batch row (${tx.key}, ${perSecond.toFixed(0)} a second at the burst, each holding it ≈ ${hold} ms) that meet another`, 'split the batch row’s counters so fewer transactions share one item');

  // API Gateway: the account throttle and each function's route limits.
  const apiDemand = model.http.reduce((n, h) => n + h.requestsPerSecondAtBurst, 0);
  entry('apigateway.account', apiDemand, API_GATEWAY_ACCOUNT_RPS, 'requests a second at the burst, every route', 'request an API Gateway account throttle increase');
  for (const h of model.http) {
    if (h.rateLimit !== null) entry(`apigateway.route.${h.function}`, h.requestsPerSecondAtBurst, h.rateLimit, 'requests a second at the burst against its route limit', `deploy with -c ${h.function}RateLimit=${Math.ceil((h.requestsPerSecondAtBurst * 1.5) / 100) * 100}`);
  }

  // Calls in flight: the largest tenant's against the cap on a tenant's concurrency limit.
  const [tenant, results] = Object.entries(input.day.resultsByTenant).sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  const share = results / input.day.results;
  for (const [label, rate] of [['average', rates.average], ['burst', rates.burst]] as const) {
    entry(`calls.inFlight.${label}`, share * rate * CALL_SECONDS, TENANT_CONCURRENCY_CAP, `calls in flight for the largest tenant (${tenant}, ${(100 * share).toFixed(1)} % of results) at ${CALL_SECONDS} s a call`, `raise the tenant concurrency cap (functions/calls/schemas.ts) to ${Math.ceil((share * rate * CALL_SECONDS) / 1000) * 1000}, or state that one tenant may carry at most ${Math.floor((TENANT_CONCURRENCY_CAP / CALL_SECONDS / rate) * 1000) / 10} % of the ${label} rate`);
  }

  // One delivery in flight per endpoint: the busiest endpoint's deliveries against what one at a time carries.
  const busiest = Math.max(0, ...Object.values(input.day.endpointRequestsByPath)) / input.day.results;
  const mean = meanLatencyMs(ENDPOINT_LATENCY.normal);
  for (const [label, rate] of [['average', rates.average], ['burst', rates.burst]] as const) {
    const perSecond_ = busiest * rate;
    entry(`webhooks.oneInFlight.${label}`, perSecond_, 1000 / mean, `deliveries a second to the busiest endpoint vs one at a time at a mean answer of ${mean.toFixed(0)} ms (it keeps up if it answers in ${(1000 / perSecond_).toFixed(0)} ms)`, `more than one delivery in flight per endpoint (issue 28 §4 maxInFlight ≥ ${Math.ceil(perSecond_ / (1000 / mean))}); otherwise its deliveries wait in its list`);
  }
  return limits;
}
