/**
 * The capacity and cost model: pure functions from what the request recorder saw
 * (functions/platform/recorder.ts) to units, partitions, queue demand, Lambda time and dollars per call
 * result. No I/O: the same records always give the same report. docs/capacity.md explains each rule.
 */
import type { DynamoRecord, InvocationRecord, ItemRead, ItemWrite, Recorded, RunRecord, ScheduleRecord, SqsRecord } from '../../functions/platform/recorder.ts';
import type { Prices } from './prices.ts';
import type { DeployedSettings } from './settings.ts';

// ─── DynamoDB's rules ────────────────────────────────────────────────────────────────────────────────

/** A write unit covers 1 KB; every write takes at least one. */
export const writeUnitsFor = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

/** A read unit covers 4 KB strongly consistent, twice that eventually consistent; every read takes at least half a unit. */
export const readUnitsFor = (bytes: number, consistent: boolean): number => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

/** Write units taken on one partition of a table (`index` null) or of an index. */
export interface PartitionWrite {
  table: string;
  index: string | null;
  key: string;
  units: number;
}

/**
 * The writes one request made, per partition:
 * - a Put, Update or Delete takes the larger of the item's size before and after, per KB (a Delete the item it removed);
 * - in a transaction every item takes twice that (prepare and commit), a ConditionCheck too;
 * - a write refused by its condition still takes the larger of the stored item and the Put's item, once;
 *   a cancelled transaction likewise, once per item (its prepare phase);
 * - each index the item is in takes its own writes, per KB of the projected entry, never doubled: a new entry
 *   one put, a removed entry one delete, a moved index key a delete from the old partition and a put into the
 *   new one, a changed projection (same key) one write; an entry that did not change takes nothing.
 */
export function partitionWrites(request: DynamoRecord): PartitionWrite[] {
  if (request.outcome === 'error') return [];
  const writes: PartitionWrite[] = [];
  for (const w of request.writes) {
    writes.push({ table: w.table, index: null, key: w.pk, units: baseUnits(request, w) });
    if (request.outcome !== 'ok') continue;
    for (const c of w.indexes) {
      const at = (key: string | undefined, units: number) => writes.push({ table: w.table, index: c.index, key: key ?? '', units });
      if (c.keyChanged) {
        at(c.oldKey, writeUnitsFor(c.oldBytes));
        at(c.newKey, writeUnitsFor(c.newBytes));
      } else if (c.oldKey === undefined) at(c.newKey, writeUnitsFor(c.newBytes));
      else if (c.newKey === undefined) at(c.oldKey, writeUnitsFor(c.oldBytes));
      else if (c.changed) at(c.newKey, writeUnitsFor(Math.max(c.oldBytes, c.newBytes)));
    }
  }
  return writes;
}

function baseUnits(request: DynamoRecord, w: ItemWrite): number {
  if (request.outcome !== 'ok') return writeUnitsFor(Math.max(w.oldBytes, w.putBytes));
  const units = writeUnitsFor(w.action === 'delete' || w.action === 'check' ? w.oldBytes : Math.max(w.oldBytes, w.newBytes));
  return request.transaction || w.action === 'check' ? 2 * units : units;
}

/**
 * The read units one request took: an item read per item (4 KB each, at least one), a Query or Scan on the
 * bytes it evaluated all together; eventually consistent halves it, a transactional read doubles it.
 */
export function readUnits(request: DynamoRecord): number {
  const factor = request.transaction ? 2 : 1;
  return request.reads.reduce((n: number, r: ItemRead) => n + factor * readUnitsFor(r.bytes, r.consistent), 0);
}

// ─── the other services' rules ───────────────────────────────────────────────────────────────────────

/** SQS bills every 64 KB chunk of a payload as a request, API Gateway every 512 KB: at least one each. */
export const chunkedRequests = (bytes: number, chunkBytes: number): number => Math.max(1, Math.ceil(bytes / chunkBytes));

/** Lambda bills duration per started millisecond, times the memory configured, in GB-seconds. */
export const gbSecondsFor = (durationMs: number, memoryMb: number): number => (Math.ceil(durationMs) / 1000) * (memoryMb / 1024);

/**
 * E[the longest of `draws` records], drawn from the durations seen: a batch of records run side by side
 * lasts as long as its slowest. Exact for the empirical distribution.
 */
export function expectedMaxOf(durations: readonly number[], draws: number): number {
  const sorted = [...durations].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return NaN;
  let expected = 0;
  sorted.forEach((x, i) => (expected += x * (((i + 1) / n) ** draws - (i / n) ** draws)));
  return expected;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

// ─── the tenant API's key check at a steady rate ─────────────────────────────────────────────────────

/** What the key check costs per tenant request when a key's requests arrive at a steady rate. */
export interface KeyCheckAtRate {
  requestsPerSecondPerKey: number;
  containersPerKey: number;
  /** Requests answered from the container's cache: 1 − lookupsPerRequest. */
  hitRate: number;
  /** Consistent GetItems of the key per request. */
  lookupsPerRequest: number;
  /** lastUsedAt writes per request, at most (a container's attempt another's write made needless is refused, and still takes its unit). */
  touchesPerRequest: number;
  readUnitsPerRequest: number;
  writeUnitsPerRequest: number;
  usdPerMillionRequests: number;
}

/**
 * The key check (functions/calls/keys.ts) per tenant request, at `requestsPerSecondPerKey` spread evenly
 * over `containersPerKey` warm containers, requests arriving at random (Poisson): a container reads a key
 * on its first request after its cached copy is `cacheMs` old, so a read serves on average
 * 1 + r × cacheMs requests (r its rate); it writes lastUsedAt at most once per `touchEveryMs` likewise.
 * The units of one lookup and one touch are the measured ones (the key's item as stored). Pure.
 */
export function keyCheckAtRate(input: {
  requestsPerSecondPerKey: number;
  containersPerKey: number;
  cacheMs: number;
  touchEveryMs: number;
  readUnitsPerLookup: number;
  writeUnitsPerTouch: number;
  prices: Prices;
}): KeyCheckAtRate {
  const perContainer = input.requestsPerSecondPerKey / input.containersPerKey;
  const lookupsPerRequest = 1 / (1 + (perContainer * input.cacheMs) / 1000);
  const touchesPerRequest = 1 / (1 + (perContainer * input.touchEveryMs) / 1000);
  const readUnitsPerRequest = lookupsPerRequest * input.readUnitsPerLookup;
  const writeUnitsPerRequest = touchesPerRequest * input.writeUnitsPerTouch;
  return {
    requestsPerSecondPerKey: input.requestsPerSecondPerKey,
    containersPerKey: input.containersPerKey,
    hitRate: 1 - lookupsPerRequest,
    lookupsPerRequest,
    touchesPerRequest,
    readUnitsPerRequest,
    writeUnitsPerRequest,
    usdPerMillionRequests: (readUnitsPerRequest * input.prices.dynamodb.readRequestUnit + writeUnitsPerRequest * input.prices.dynamodb.writeRequestUnit) * 1e6,
  };
}

// ─── from a run to a report ──────────────────────────────────────────────────────────────────────────

/**
 * What a record is charged to: the call results of the run; the mail it sent (priced per mail, then at
 * `mailsPerResult`); or fixed work (the rescuer, periodic jobs) that does not grow with results.
 */
export type Category = 'result' | 'mail' | 'fixed';

/**
 * Items priced apart (bench/capacity/kinds.ts): the writes and reads of items whose partition key matches
 * `pk` (of requests from `source` only, when given; reads or writes only, when `only` says so).
 */
export interface ItemKind {
  name: string;
  pk: RegExp;
  /** The sort key as well, for kinds that share their partitions with others (a contact's data and attempts). */
  sk?: RegExp;
  source?: string;
  only?: 'reads' | 'writes';
  /** Only these write actions count as the kind's writes (a suppression entry's ConditionCheck apart from its Puts). @default every action */
  actions?: readonly ItemWrite['action'][];
}

/** What one kind of item cost, per result (weighted as every record: results, mail at its rate, nothing for fixed work). */
export interface ItemKindCost {
  /** Item writes (refused ones too) and item or range reads of the kind. */
  writes: number;
  reads: number;
  /** Requests that touched the kind, by operation (a kept event's is its publishing transaction). */
  requestsByOperation: Record<string, number>;
  /** Requests that touched nothing else: what the kind adds in requests (a kept event, in a transaction of other items: none). */
  ownRequests: number;
  /** The kind's write units, its index entries' included (`indexWriteUnits` of them), and its read units. */
  writeUnits: number;
  indexWriteUnits: number;
  readUnits: number;
  /** The mean size of the item as written (applied writes), and as read (item reads), bytes: what its units follow from. */
  meanItemBytes: number;
  meanReadBytes: number;
  usdPerMillionResults: number;
  /** The kind's hottest partition (its table's or an index's) at the burst. */
  hottest: { index: string | null; key: string; wcuPerSecondAtBurst: number } | null;
}

export interface ModelInput {
  records: readonly Recorded[];
  /** Call results the run produced (one per dial: a reported result, a watchdog's TIMEOUT, a placer refusal). */
  results: number;
  /** Mails the run sent. */
  mails: number;
  /** Mails per result the report prices (the run's own rate is reported beside it). */
  mailsPerResult: number;
  categorize: (record: Recorded) => Category;
  settings: DeployedSettings;
  prices: Prices;
  /** Results per second to project to: on average and at the burst. */
  rates: { average: number; burst: number };
  /** Keys listed per table and index. @default 5 */
  topKeys?: number;
  /** Items priced apart (`perResult.itemKinds`). @default none */
  itemKinds?: readonly ItemKind[];
}

export interface PartitionRow {
  key: string;
  wcuPerResult: number;
  wcuPerSecondAtAverage: number;
  wcuPerSecondAtBurst: number;
}

export interface QueueRow {
  name: string;
  messagesPerResult: number;
  demandPerSecondAtAverage: number;
  demandPerSecondAtBurst: number;
  /** Messages a second the event source can take: concurrency × batch size ÷ the expected batch duration. */
  capacityPerSecond: number | null;
  batchSize: number;
  maxConcurrency: number;
  recordMs: { p50: number; p99: number; mean: number; count: number };
  /** The expected duration of a full batch: the slowest of `batchSize` records. */
  expectedBatchMs: number | null;
  /** The least maximum concurrency that carries twice the burst demand at this batch size (what lib/redial-stack.ts's defaults are sized from). */
  concurrencyForTwiceBurst: number | null;
}

export interface LambdaRow {
  function: string;
  memoryMb: number;
  invocationsPerResult: number;
  meanDurationMs: number;
  gbSecondsPerResult: number;
  /** Instances busy at once (Little's law); a queue worker's from full batches of its measured records. */
  concurrencyAtAverage: number;
  concurrencyAtBurst: number;
  /** What caps it: the event source's maximum concurrency for a queue worker, the reserved concurrency for another function. */
  maxConcurrency: number | null;
}

/** Requests to one HTTP function's routes against API Gateway's limit for them. */
export interface HttpRow {
  function: string;
  requestsPerResult: number;
  requestsPerSecondAtAverage: number;
  requestsPerSecondAtBurst: number;
  /** API Gateway's steady rate limit per route of this function (null: none set). */
  rateLimit: number | null;
  burstLimit: number | null;
}

export interface CapacityModel {
  results: number;
  mails: number;
  mailsPerResult: number;
  rates: { average: number; burst: number };
  writeUnitsPerResult: number;
  readUnitsPerResult: number;
  usdPerMillionResults: number;
  usdPerMillionResultsWithSes: number;
  usdPerMillionResultsByService: Record<string, number>;
  perResult: {
    writeUnitsByTable: Record<string, number>;
    writeUnitsBySource: Record<string, number>;
    readUnitsByTable: Record<string, number>;
    dynamoRequestsByOperation: Record<string, number>;
    sqsRequests: number;
    sqsSends: number;
    schedulerCreates: number;
    schedulerInvocations: number;
    lambdaInvocations: number;
    lambdaGbSeconds: number;
    apiRequests: number;
    /**
     * The tenant API's key check (functions/calls/keys.ts): DynamoDB requests on `TENANT#<id>#KEYS` items
     * (a GetItem per key per container per 30 s, lastUsedAt at most once a minute), their units, and the
     * tenant API requests they authenticated.
     */
    apiKeys: { requests: number; lookups: number; touches: number; readUnits: number; writeUnits: number; tenantApiRequests: number };
    /** Each of `itemKinds`, priced apart (their units are in the totals too). */
    itemKinds: Record<string, ItemKindCost>;
    mails: number;
  };
  hottestPartitionWcuPerSecondAtBurst: { table: string; index: string | null; key: string; wcuPerSecond: number; wcuPerSecondAtAverage: number };
  partitions: { table: string; index: string | null; keys: PartitionRow[] }[];
  queues: QueueRow[];
  scheduler: {
    createsPerResult: number;
    createsPerSecondAtAverage: number;
    createsPerSecondAtBurst: number;
    meanDelaySeconds: number;
    liveSchedulesAtAverage: number;
    liveSchedulesAtBurst: number;
  };
  lambda: LambdaRow[];
  http: HttpRow[];
  lambdaConcurrencyAtAverage: number;
  lambdaConcurrencyAtBurst: number;
}

const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);
/** The functions API Gateway invokes (functions/app/system.ts, HttpFunction); the others are queue workers and the rescuer. */
const isHttpFunction = (fn: string): boolean => fn === 'intake' || fn === 'publicLinks' || fn === 'tenantApi' || fn === 'api';
const tableLabel = (table: string, index: string | null) => (index ? `${table}.${index}` : table);

/** Derives the per-result model from a run's records. */
export function buildModel(input: ModelInput): CapacityModel {
  const { records, settings, prices, rates } = input;
  if (!(input.results > 0)) throw new Error('the run produced no call results to divide by');
  const weightOf = (category: Category): number => {
    if (category === 'result') return 1 / input.results;
    if (category === 'mail') return input.mails > 0 ? input.mailsPerResult / input.mails : 0;
    return 0;
  };

  let wcu = 0;
  let rcu = 0;
  let sqs = 0;
  let sqsSends = 0;
  let schedulerCreates = 0;
  let schedulerInvocations = 0;
  let scheduleSeconds = 0;
  let scheduleCount = 0;
  let scheduleLive = 0;
  let apiRequests = 0;
  let mails = 0;
  const apiKeys = { requests: 0, lookups: 0, touches: 0, readUnits: 0, writeUnits: 0, tenantApiRequests: 0 };
  const kinds = (input.itemKinds ?? []).map((kind) => ({ kind, tally: newKindTally() }));
  const isKeyItem = (pk: string) => /^TENANT#[^#]+#KEYS$/.test(pk);
  const wcuByTable = new Map<string, number>();
  const wcuBySource = new Map<string, number>();
  const rcuByTable = new Map<string, number>();
  const opsByName = new Map<string, number>();
  const partitions = new Map<string, { table: string; index: string | null; key: string; units: number }>();
  const lambda = new Map<string, { invocations: number; gbSeconds: number; durationMs: number; count: number }>();
  const messages = new Map<string, number>();
  const runs = new Map<string, number[]>();
  const httpRequests = new Map<string, number>();

  for (const record of records) {
    const weight = weightOf(input.categorize(record));
    if (record.service === 'DynamoDB') {
      const r = record as DynamoRecord;
      add(opsByName, r.operation, weight);
      for (const w of partitionWrites(r)) {
        wcu += weight * w.units;
        add(wcuByTable, tableLabel(w.table, w.index), weight * w.units);
        add(wcuBySource, r.source, weight * w.units);
        const id = `${w.table}\u0000${w.index ?? ''}\u0000${w.key}`;
        const row = partitions.get(id) ?? { table: w.table, index: w.index, key: w.key, units: 0 };
        row.units += weight * w.units;
        partitions.set(id, row);
      }
      const units = readUnits(r);
      rcu += weight * units;
      for (const { kind, tally } of kinds) tallyKind(kind, tally, r, weight);
      if ([...r.reads, ...r.writes].some((item) => isKeyItem(item.pk))) {
        apiKeys.requests += weight;
        if (r.operation === 'GetItem') apiKeys.lookups += weight;
        if (r.operation === 'UpdateItem') apiKeys.touches += weight;
        apiKeys.readUnits += weight * units;
        apiKeys.writeUnits += weight * partitionWrites(r).reduce((n, w) => n + w.units, 0);
      }
      for (const read of r.reads) add(rcuByTable, tableLabel(read.table, read.index ?? null), weight * (r.transaction ? 2 : 1) * readUnitsFor(read.bytes, read.consistent));
    } else if (record.service === 'SQS' && record.operation === 'SendMessage') {
      sqs += weight * chunkedRequests((record as SqsRecord).bytes, prices.sqs.chunkBytes);
      sqsSends += weight;
    } else if (record.service === 'Scheduler' && record.operation === 'CreateSchedule') {
      const s = record as ScheduleRecord;
      schedulerCreates += weight;
      if (s.created) {
        scheduleSeconds += s.delayMs / 1000;
        scheduleCount++;
        scheduleLive += weight * (s.delayMs / 1000);
      }
    } else if (record.service === 'Scheduler' && record.operation === 'Invoke') {
      schedulerInvocations += weight;
    } else if (record.service === 'Lambda' && record.operation === 'Invoke') {
      const inv = record as InvocationRecord;
      const memory = settings.memoryMb[inv.function];
      if (memory === undefined) throw new Error(`no memory setting for function ${inv.function}`);
      const row = lambda.get(inv.function) ?? { invocations: 0, gbSeconds: 0, durationMs: 0, count: 0 };
      row.invocations += weight;
      row.gbSeconds += weight * gbSecondsFor(inv.durationMs, memory);
      row.durationMs += inv.durationMs;
      row.count++;
      lambda.set(inv.function, row);
      if (inv.function === 'tenantApi') apiKeys.tenantApiRequests += weight;
      if (isHttpFunction(inv.function)) {
        apiRequests += weight * chunkedRequests(inv.bytes, prices.apiGateway.chunkBytes);
        add(httpRequests, inv.function, weight);
      }
      if (inv.function.startsWith('worker:')) {
        add(messages, inv.function.slice('worker:'.length), weight * inv.records);
        // The event source's poller: one ReceiveMessage for the batch, one DeleteMessageBatch after it.
        sqs += weight * 2;
      }
    } else if (record.service === 'Lambda' && record.operation === 'Record') {
      const run = record as RunRecord;
      (runs.get(run.function) ?? runs.set(run.function, []).get(run.function)!).push(run.durationMs);
    } else if (record.service === 'SES') {
      mails += weight;
    }
  }

  const lambdaRows: LambdaRow[] = [...lambda.entries()]
    .map(([fn, row]) => {
      const meanDurationMs = row.durationMs / row.count;
      const name = fn.startsWith('worker:') ? fn.slice('worker:'.length) : undefined;
      const queue = name ? settings.queues[name as keyof DeployedSettings['queues']] : undefined;
      const durations = runs.get(fn) ?? [];
      // A worker at scale takes full batches, each as long as its slowest record (Little's law on batches);
      // the API and the rescuer: their invocations as measured.
      const concurrency =
        queue && durations.length
          ? (rate: number) => (((messages.get(name!) ?? 0) * rate) / queue.batchSize) * (expectedMaxOf(durations, queue.batchSize) / 1000)
          : (rate: number) => row.invocations * rate * (meanDurationMs / 1000);
      return {
        function: fn,
        memoryMb: settings.memoryMb[fn]!,
        invocationsPerResult: row.invocations,
        meanDurationMs,
        gbSecondsPerResult: row.gbSeconds,
        concurrencyAtAverage: concurrency(rates.average),
        concurrencyAtBurst: concurrency(rates.burst),
        maxConcurrency: queue?.maxConcurrency ?? settings.reservedConcurrency[fn] ?? null,
      };
    })
    .sort((a, b) => a.function.localeCompare(b.function));
  const lambdaInvocations = lambdaRows.reduce((n, r) => n + r.invocationsPerResult, 0);
  const lambdaGbSeconds = lambdaRows.reduce((n, r) => n + r.gbSecondsPerResult, 0);

  const queues: QueueRow[] = Object.entries(settings.queues).map(([name, spec]) => {
    const durations = runs.get(`worker:${name}`) ?? [];
    const expectedBatchMs = durations.length ? expectedMaxOf(durations, spec.batchSize) : null;
    const perResult = messages.get(name) ?? 0;
    return {
      name,
      messagesPerResult: perResult,
      demandPerSecondAtAverage: perResult * rates.average,
      demandPerSecondAtBurst: perResult * rates.burst,
      capacityPerSecond: expectedBatchMs ? (spec.maxConcurrency * spec.batchSize) / (expectedBatchMs / 1000) : null,
      batchSize: spec.batchSize,
      maxConcurrency: spec.maxConcurrency,
      recordMs: {
        p50: percentile(durations, 50),
        p99: percentile(durations, 99),
        mean: durations.reduce((a, b) => a + b, 0) / (durations.length || NaN),
        count: durations.length,
      },
      expectedBatchMs,
      concurrencyForTwiceBurst: expectedBatchMs ? Math.max(2, Math.ceil((2 * perResult * rates.burst * (expectedBatchMs / 1000)) / spec.batchSize)) : null,
    };
  });

  const grouped = new Map<string, { table: string; index: string | null; keys: PartitionRow[] }>();
  for (const p of [...partitions.values()].sort((a, b) => b.units - a.units)) {
    const label = tableLabel(p.table, p.index);
    const group = grouped.get(label) ?? grouped.set(label, { table: p.table, index: p.index, keys: [] }).get(label)!;
    if (group.keys.length < (input.topKeys ?? 5)) {
      group.keys.push({ key: p.key, wcuPerResult: p.units, wcuPerSecondAtAverage: p.units * rates.average, wcuPerSecondAtBurst: p.units * rates.burst });
    }
  }
  const hottest = [...partitions.values()].reduce((a, b) => (b.units > a.units ? b : a), { table: '', index: null, key: '', units: 0 } as PartitionWrite);

  const usd = {
    dynamodbWrites: wcu * prices.dynamodb.writeRequestUnit,
    dynamodbReads: rcu * prices.dynamodb.readRequestUnit,
    sqs: sqs * prices.sqs.request,
    scheduler: schedulerInvocations * prices.scheduler.invocation + schedulerCreates * prices.scheduler.createSchedule,
    lambdaRequests: lambdaInvocations * prices.lambda.request,
    lambdaDuration: lambdaGbSeconds * prices.lambda.gbSecondArm64,
    apiGateway: apiRequests * prices.apiGateway.httpRequest,
  };
  const withoutSes = Object.values(usd).reduce((a, b) => a + b, 0);
  const ses = mails * prices.ses.email;
  const meanDelaySeconds = scheduleCount ? scheduleSeconds / scheduleCount : 0;

  return {
    results: input.results,
    mails: input.mails,
    mailsPerResult: input.mailsPerResult,
    rates,
    writeUnitsPerResult: wcu,
    readUnitsPerResult: rcu,
    usdPerMillionResults: withoutSes * 1e6,
    usdPerMillionResultsWithSes: (withoutSes + ses) * 1e6,
    usdPerMillionResultsByService: Object.fromEntries([...Object.entries(usd), ['ses', ses]].map(([k, v]) => [k, (v as number) * 1e6])),
    perResult: {
      writeUnitsByTable: sortedObject(wcuByTable),
      writeUnitsBySource: sortedObject(wcuBySource),
      readUnitsByTable: sortedObject(rcuByTable),
      dynamoRequestsByOperation: sortedObject(opsByName),
      sqsRequests: sqs,
      sqsSends,
      schedulerCreates,
      schedulerInvocations,
      lambdaInvocations,
      lambdaGbSeconds,
      apiRequests,
      apiKeys,
      itemKinds: Object.fromEntries(kinds.map(({ kind, tally }) => [kind.name, kindCost(tally, prices, rates)])),
      mails,
    },
    hottestPartitionWcuPerSecondAtBurst: {
      table: hottest.table,
      index: hottest.index,
      key: hottest.key,
      wcuPerSecond: hottest.units * rates.burst,
      wcuPerSecondAtAverage: hottest.units * rates.average,
    },
    partitions: [...grouped.values()].sort((a, b) => (b.keys[0]?.wcuPerResult ?? 0) - (a.keys[0]?.wcuPerResult ?? 0)),
    queues,
    scheduler: {
      createsPerResult: schedulerCreates,
      createsPerSecondAtAverage: schedulerCreates * rates.average,
      createsPerSecondAtBurst: schedulerCreates * rates.burst,
      meanDelaySeconds,
      liveSchedulesAtAverage: scheduleLive * rates.average,
      liveSchedulesAtBurst: scheduleLive * rates.burst,
    },
    lambda: lambdaRows,
    http: [...httpRequests.entries()].map(([fn, perResult]) => ({
      function: fn,
      requestsPerResult: perResult,
      requestsPerSecondAtAverage: perResult * rates.average,
      requestsPerSecondAtBurst: perResult * rates.burst,
      rateLimit: settings.throttling?.[fn as keyof NonNullable<DeployedSettings['throttling']>]?.rateLimit ?? null,
      burstLimit: settings.throttling?.[fn as keyof NonNullable<DeployedSettings['throttling']>]?.burstLimit ?? null,
    })),
    lambdaConcurrencyAtAverage: lambdaRows.reduce((n, r) => n + r.concurrencyAtAverage, 0),
    lambdaConcurrencyAtBurst: lambdaRows.reduce((n, r) => n + r.concurrencyAtBurst, 0),
  };
}

interface KindTally {
  writes: number;
  reads: number;
  requests: Map<string, number>;
  ownRequests: number;
  writeUnits: number;
  indexWriteUnits: number;
  readUnits: number;
  bytes: number;
  applied: number;
  readBytes: number;
  itemReads: number;
  partitions: Map<string, { index: string | null; key: string; units: number }>;
}

const newKindTally = (): KindTally => ({ writes: 0, reads: 0, requests: new Map(), ownRequests: 0, writeUnits: 0, indexWriteUnits: 0, readUnits: 0, bytes: 0, applied: 0, readBytes: 0, itemReads: 0, partitions: new Map() });

/** Adds what one request did to items of `kind`: its item writes with their index entries (by the rules of {@link partitionWrites}), its reads. */
function tallyKind(kind: ItemKind, tally: KindTally, r: DynamoRecord, weight: number): void {
  if (kind.source !== undefined && r.source !== kind.source) return;
  const matches = (item: { pk: string; sk?: string }) => kind.pk.test(item.pk) && (kind.sk === undefined || (item.sk !== undefined && kind.sk.test(item.sk)));
  const writes = kind.only === 'reads' ? [] : r.writes.filter((w) => matches(w) && (kind.actions === undefined || kind.actions.includes(w.action)));
  const reads = kind.only === 'writes' ? [] : r.reads.filter(matches);
  if (writes.length === 0 && reads.length === 0) return;
  add(tally.requests, r.operation, weight);
  if (writes.length === r.writes.length && reads.length === r.reads.length) tally.ownRequests += weight;
  for (const w of writes) {
    tally.writes += weight;
    if (r.outcome === 'ok' && w.action !== 'delete' && w.action !== 'check') {
      tally.bytes += w.newBytes;
      tally.applied++;
    }
    // The item's own partition writes, as partitionWrites charges them: the item, then its index entries.
    for (const p of partitionWrites({ ...r, writes: [w] })) {
      tally.writeUnits += weight * p.units;
      if (p.index !== null) tally.indexWriteUnits += weight * p.units;
      const id = `${p.index ?? ''}\u0000${p.key}`;
      const row = tally.partitions.get(id) ?? tally.partitions.set(id, { index: p.index, key: p.key, units: 0 }).get(id)!;
      row.units += weight * p.units;
    }
  }
  for (const read of reads) {
    tally.reads += weight;
    tally.readUnits += weight * (r.transaction ? 2 : 1) * readUnitsFor(read.bytes, read.consistent);
    if (read.shape === 'item' && read.items > 0) {
      tally.readBytes += read.bytes;
      tally.itemReads++;
    }
  }
}

function kindCost(tally: KindTally, prices: Prices, rates: { burst: number }): ItemKindCost {
  const hottest = [...tally.partitions.values()].reduce<{ index: string | null; key: string; units: number } | null>((a, b) => (a === null || b.units > a.units ? b : a), null);
  return {
    writes: tally.writes,
    reads: tally.reads,
    requestsByOperation: sortedObject(tally.requests),
    ownRequests: tally.ownRequests,
    writeUnits: tally.writeUnits,
    indexWriteUnits: tally.indexWriteUnits,
    readUnits: tally.readUnits,
    meanItemBytes: tally.applied ? tally.bytes / tally.applied : 0,
    meanReadBytes: tally.itemReads ? tally.readBytes / tally.itemReads : 0,
    usdPerMillionResults: (tally.writeUnits * prices.dynamodb.writeRequestUnit + tally.readUnits * prices.dynamodb.readRequestUnit) * 1e6,
    hottest: hottest && { index: hottest.index, key: hottest.key, wcuPerSecondAtBurst: hottest.units * rates.burst },
  };
}

/** The monthly cost of work that does not grow with results: per run seen, times runs a month. */
export function fixedMonthlyUsd(
  records: readonly Recorded[],
  groups: readonly { source: string; runsSeen: number; runsPerMonth: number }[],
  settings: DeployedSettings,
  prices: Prices,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const group of groups) {
    if (group.runsSeen === 0) continue;
    let usd = 0;
    for (const record of records) {
      if (record.source !== group.source) continue;
      if (record.service === 'DynamoDB') {
        const r = record as DynamoRecord;
        usd += partitionWrites(r).reduce((n, w) => n + w.units, 0) * prices.dynamodb.writeRequestUnit + readUnits(r) * prices.dynamodb.readRequestUnit;
      } else if (record.service === 'SQS' && record.operation === 'SendMessage') {
        usd += chunkedRequests((record as SqsRecord).bytes, prices.sqs.chunkBytes) * prices.sqs.request;
      } else if (record.service === 'Lambda' && record.operation === 'Invoke') {
        const inv = record as InvocationRecord;
        usd += prices.lambda.request + gbSecondsFor(inv.durationMs, settings.memoryMb[inv.function] ?? 0) * prices.lambda.gbSecondArm64;
      }
    }
    out[group.source] = (usd / group.runsSeen) * group.runsPerMonth;
  }
  return out;
}

function sortedObject(map: Map<string, number>): Record<string, number> {
  return Object.fromEntries([...map.entries()].filter(([, v]) => v !== 0).sort((a, b) => b[1] - a[1]));
}
