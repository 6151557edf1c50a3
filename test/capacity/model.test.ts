import { describe, expect, it } from 'vitest';
import {
  buildModel,
  chunkedRequests,
  expectedMaxOf,
  fixedMonthlyUsd,
  gbSecondsFor,
  keyCheckAtRate,
  partitionWrites,
  readUnits,
  readUnitsFor,
  writeUnitsFor,
} from '../../bench/capacity/model.ts';
import type { Category } from '../../bench/capacity/model.ts';
import { prices } from '../../bench/capacity/prices.ts';
import type { DeployedSettings } from '../../bench/capacity/settings.ts';
import type { DynamoRecord, ItemWrite, Recorded } from '../../functions/platform/recorder.ts';

const dynamo = (fields: Partial<DynamoRecord>): DynamoRecord => ({
  service: 'DynamoDB',
  operation: 'UpdateItem',
  source: 'job:test',
  at: 0,
  outcome: 'ok',
  transaction: false,
  writes: [],
  reads: [],
  ...fields,
});
const write = (fields: Partial<ItemWrite>): ItemWrite => ({ table: 'jobs', pk: 'job-1', action: 'update', oldBytes: 0, newBytes: 0, putBytes: 0, indexes: [], ...fields });

const settings: DeployedSettings = {
  memoryMb: { api: 512, rescuer: 512, 'worker:calls': 1024, 'worker:webhooks': 512, 'worker:mail': 512, 'worker:ops': 512 },
  reservedConcurrency: { api: 50 },
  queues: {
    ops: { batchSize: 10, maxConcurrency: 2, timeoutSeconds: 60 },
    dial: { batchSize: 1, maxConcurrency: 5, timeoutSeconds: 60 },
    calls: { batchSize: 2, maxConcurrency: 5, timeoutSeconds: 60 },
    deliveries: { batchSize: 10, maxConcurrency: 5, timeoutSeconds: 60 },
    webhooks: { batchSize: 10, maxConcurrency: 5, timeoutSeconds: 60 },
    mail: { batchSize: 10, maxConcurrency: 2, timeoutSeconds: 60 },
    calendar: { batchSize: 10, maxConcurrency: 2, timeoutSeconds: 60 },
  },
  throttling: { intake: { rateLimit: 1000, burstLimit: 2000 }, calendarTools: { rateLimit: 100, burstLimit: 200 }, publicLinks: { rateLimit: 10, burstLimit: 20 }, tenantApi: { rateLimit: 100, burstLimit: 200 }, api: { rateLimit: 100, burstLimit: 200 } },
};

describe('DynamoDB units', () => {
  it('RoundWritesUpPerKilobyteAndReadsPerFourKilobytesHalvedWhenEventuallyConsistent', () => {
    expect(writeUnitsFor(0)).toBe(1);
    expect(writeUnitsFor(1024)).toBe(1);
    expect(writeUnitsFor(1025)).toBe(2);
    expect(readUnitsFor(0, true)).toBe(1);
    expect(readUnitsFor(4096, true)).toBe(1);
    expect(readUnitsFor(4097, true)).toBe(2);
    expect(readUnitsFor(10_000, false)).toBe(1.5);
  });

  it('ChargeAnUpdateTheLargerImageAndAMovedIndexEntryADeletePlusAPut', () => {
    const claim = dynamo({
      writes: [write({ oldBytes: 900, newBytes: 1100, indexes: [{ index: 'byState', oldKey: 'available', newKey: 'running', oldBytes: 900, newBytes: 1100, keyChanged: true, changed: true }] })],
    });
    expect(partitionWrites(claim)).toEqual([
      { table: 'jobs', index: null, key: 'job-1', units: 2 },
      { table: 'jobs', index: 'byState', key: 'available', units: 1 },
      { table: 'jobs', index: 'byState', key: 'running', units: 2 },
    ]);
  });

  it('DoubleTransactionItemsButNotTheirIndexWritesAndChargeAnUnchangedEntryNothing', () => {
    const tx = dynamo({
      operation: 'TransactWriteItems',
      transaction: true,
      writes: [
        write({ table: 'calls', pk: 'TENANT#t1', oldBytes: 300, newBytes: 300 }),
        write({ table: 'webhooks', pk: 'EVENT#e1', action: 'put', newBytes: 2100, putBytes: 2100 }),
        write({ pk: 'job-2', action: 'put', newBytes: 700, putBytes: 700, indexes: [{ index: 'byState', newKey: 'available', oldBytes: 0, newBytes: 700, keyChanged: false, changed: true }] }),
        write({ pk: 'job-3', oldBytes: 500, newBytes: 520, indexes: [{ index: 'byState', oldKey: 'scheduled', newKey: 'scheduled', oldBytes: 500, newBytes: 520, keyChanged: false, changed: true }] }),
        write({ table: 'webhooks', pk: 'ENDPOINT#x', oldBytes: 200, newBytes: 210, indexes: [{ index: 'byWatch', oldKey: 'w', newKey: 'w', oldBytes: 40, newBytes: 40, keyChanged: false, changed: false }] }),
        write({ table: 'calls', pk: 'TENANT#t2', action: 'check', oldBytes: 100, newBytes: 100 }),
      ],
    });
    expect(partitionWrites(tx)).toEqual([
      { table: 'calls', index: null, key: 'TENANT#t1', units: 2 },
      { table: 'webhooks', index: null, key: 'EVENT#e1', units: 6 },
      { table: 'jobs', index: null, key: 'job-2', units: 2 },
      { table: 'jobs', index: 'byState', key: 'available', units: 1 },
      { table: 'jobs', index: null, key: 'job-3', units: 2 },
      { table: 'jobs', index: 'byState', key: 'scheduled', units: 1 },
      { table: 'webhooks', index: null, key: 'ENDPOINT#x', units: 2 },
      { table: 'calls', index: null, key: 'TENANT#t2', units: 2 },
    ]);
  });

  it('ChargeARefusedWriteTheLargerOfStoredAndPutOnceWithNoIndexWrites', () => {
    const refusedPut = dynamo({ operation: 'PutItem', outcome: 'conditionFailed', writes: [write({ action: 'put', oldBytes: 1500, newBytes: 1500, putBytes: 2500 })] });
    expect(partitionWrites(refusedPut)).toEqual([{ table: 'jobs', index: null, key: 'job-1', units: 3 }]);
    const cancelled = dynamo({ operation: 'TransactWriteItems', transaction: true, outcome: 'cancelled', writes: [write({ oldBytes: 100, newBytes: 100 }), write({ pk: 'job-9', action: 'put', putBytes: 1200 })] });
    expect(partitionWrites(cancelled).map((w) => w.units)).toEqual([1, 2]);
    expect(partitionWrites(dynamo({ outcome: 'error', writes: [write({ oldBytes: 5000 })] }))).toEqual([]);
  });

  it('ChargeAnItemReadPerItemAndAQueryOnAllTheBytesItEvaluated', () => {
    const batchGet = dynamo({
      operation: 'BatchGetItem',
      reads: [
        { table: 'calls', pk: 'BATCH#b', bytes: 5000, items: 1, consistent: true, shape: 'item' },
        { table: 'calls', pk: 'BATCH#b', bytes: 0, items: 0, consistent: true, shape: 'item' },
      ],
    });
    expect(readUnits(batchGet)).toBe(3);
    const query = dynamo({ operation: 'Query', reads: [{ table: 'jobs', index: 'byState', pk: 'running', bytes: 100 * 1500, items: 100, consistent: false, shape: 'range' }] });
    expect(readUnits(query)).toBe(18.5);
  });
});

describe('the key check at a steady rate', () => {
  const at = (requestsPerSecondPerKey: number, containersPerKey = 1) =>
    keyCheckAtRate({ requestsPerSecondPerKey, containersPerKey, cacheMs: 30_000, touchEveryMs: 60_000, readUnitsPerLookup: 1, writeUnitsPerTouch: 1, prices });

  it('ReadsAKeyOncePerCacheLifetimeAndWritesLastUsedAtAtMostOnceAMinutePerContainer', () => {
    // 1 request a second: a read serves itself and the 30 that follow within 30 s; a touch the 60 within a minute.
    expect(at(1).lookupsPerRequest).toBeCloseTo(1 / 31, 12);
    expect(at(1).hitRate).toBeCloseTo(30 / 31, 12);
    expect(at(1).touchesPerRequest).toBeCloseTo(1 / 61, 12);
    expect(at(1).usdPerMillionRequests).toBeCloseTo(((1 / 31) * 0.125 + (1 / 61) * 0.625), 10);
    // Two containers share the rate: each sees half, so twice the reads a request.
    expect(at(2, 2).lookupsPerRequest).toBeCloseTo(at(1).lookupsPerRequest, 12);
    expect(at(1, 2).lookupsPerRequest).toBeCloseTo(1 / 16, 12);
    // A rare request always misses.
    expect(at(0).lookupsPerRequest).toBe(1);
    expect(at(0).touchesPerRequest).toBe(1);
  });
});

describe('the other services', () => {
  it('CountPayloadChunksLambdaMillisecondsAndTheSlowestOfABatch', () => {
    expect(chunkedRequests(30, 65_536)).toBe(1);
    expect(chunkedRequests(65_537, 65_536)).toBe(2);
    expect(gbSecondsFor(99.2, 512)).toBe(0.05);
    // Two draws from {10, 30}: the slowest is 30 unless both are 10 (1/4).
    expect(expectedMaxOf([10, 30], 2)).toBe(25);
    expect(expectedMaxOf([10, 20, 30], 1)).toBeCloseTo(20, 10);
  });
});

describe('the model of a run', () => {
  /** Two results and one mail, with every kind of record once or twice. */
  const records: Recorded[] = [
    dynamo({
      source: 'api:POST /v1/calls/webhook',
      operation: 'TransactWriteItems',
      transaction: true,
      writes: [write({ table: 'calls', pk: 'TENANT#big', oldBytes: 200, newBytes: 200 }), write({ pk: 'fanout-1', action: 'put', newBytes: 600, putBytes: 600, indexes: [{ index: 'byState', newKey: 'available', oldBytes: 0, newBytes: 600, keyChanged: false, changed: true }] })],
    }),
    dynamo({
      source: 'api:POST /v1/calls/webhook',
      operation: 'TransactWriteItems',
      transaction: true,
      writes: [write({ table: 'calls', pk: 'TENANT#big', oldBytes: 200, newBytes: 200 }), write({ pk: 'fanout-2', action: 'put', newBytes: 600, putBytes: 600, indexes: [{ index: 'byState', newKey: 'available', oldBytes: 0, newBytes: 600, keyChanged: false, changed: true }] })],
    }),
    dynamo({ source: 'job:webhook.fanout', operation: 'GetItem', reads: [{ table: 'webhooks', pk: 'EVENT#1', bytes: 300, items: 1, consistent: false, shape: 'item' }] }),
    dynamo({ source: 'job:owner.notify', writes: [write({ pk: 'notify-1', oldBytes: 2000, newBytes: 2100, indexes: [{ index: 'byState', oldKey: 'available', newKey: 'running', oldBytes: 2000, newBytes: 2100, keyChanged: true, changed: true }] })] }),
    dynamo({ source: 'rescuer', operation: 'Query', reads: [{ table: 'jobs', index: 'byState', pk: 'running', bytes: 0, items: 0, consistent: false, shape: 'range' }] }),
    { service: 'SQS', operation: 'SendMessage', source: 'api:POST /v1/calls/webhook', at: 0, queue: 'webhooks', bytes: 40, delaySeconds: 0 },
    { service: 'SQS', operation: 'SendMessage', source: 'api:POST /v1/calls/webhook', at: 0, queue: 'webhooks', bytes: 40, delaySeconds: 0 },
    { service: 'Scheduler', operation: 'CreateSchedule', source: 'job:calls.finalise', at: 0, queue: 'calls', bytes: 40, delayMs: 1_800_000, created: true },
    { service: 'Scheduler', operation: 'Invoke', source: 'scheduler', at: 0, queue: 'calls' },
    { service: 'SQS', operation: 'SendMessage', source: 'scheduler', at: 0, queue: 'calls', bytes: 40, delaySeconds: 0, bySchedule: true },
    { service: 'Lambda', operation: 'Invoke', source: 'api', at: 0, function: 'api', records: 1, durationMs: 40, bytes: 300 },
    { service: 'Lambda', operation: 'Invoke', source: 'api', at: 0, function: 'api', records: 1, durationMs: 60, bytes: 300 },
    { service: 'Lambda', operation: 'Invoke', source: 'worker:webhooks', at: 0, function: 'worker:webhooks', records: 2, durationMs: 100, bytes: 0 },
    { service: 'Lambda', operation: 'Record', source: 'job:webhook.fanout', at: 0, function: 'worker:webhooks', kind: 'webhook.fanout', durationMs: 100 },
    { service: 'Lambda', operation: 'Record', source: 'job:webhook.fanout', at: 0, function: 'worker:webhooks', kind: 'webhook.fanout', durationMs: 60 },
    { service: 'Lambda', operation: 'Invoke', source: 'worker:mail', at: 0, function: 'worker:mail', records: 1, durationMs: 500, bytes: 0 },
    { service: 'SES', operation: 'SendEmail', source: 'job:owner.notify', at: 0, bytes: 2000 },
  ];
  const categorize = (r: Recorded): Category => (r.source === 'rescuer' ? 'fixed' : r.source.includes('notify') || r.source === 'worker:mail' ? 'mail' : 'result');
  const model = buildModel({ records, results: 2, mails: 1, mailsPerResult: 0.1, categorize, settings, prices, rates: { average: 100, burst: 1000 } });

  it('DividesResultWorkByResultsAndPricesMailAtTheRateAsked', () => {
    // Results: 2 × (tenant 2 + job 2 + index 1) = 10 units over 2 results; mail: (3 + 2 + 3) × 0.1.
    expect(model.writeUnitsPerResult).toBeCloseTo(5 + 0.8, 10);
    // The fanout's eventually consistent read (0.5) over 2 results; the rescuer's read is fixed work.
    expect(model.readUnitsPerResult).toBeCloseTo(0.25, 10);
    expect(model.perResult.writeUnitsByTable).toEqual({ calls: 2, jobs: 2 + 0.1 * 3, 'jobs.byState': 1 + 0.1 * 5 });
    // 3 sends, plus receive and delete for the webhooks batch, over 2 results; the mail batch's 2 at 0.1.
    expect(model.perResult.sqsRequests).toBeCloseTo(2.5 + 0.2, 10);
    expect(model.perResult.schedulerInvocations).toBe(0.5);
    expect(model.perResult.apiRequests).toBe(1);
    expect(model.perResult.lambdaInvocations).toBeCloseTo(1.5 + 0.1, 10);
    // api 0.1 GB-s over 2 results at 0.5 GB, webhooks 0.1 s × 0.5 GB / 2, mail 0.5 s × 0.5 GB × 0.1.
    expect(model.perResult.lambdaGbSeconds).toBeCloseTo(0.025 + 0.025 + 0.025, 10);
    expect(model.perResult.mails).toBeCloseTo(0.1, 10);
  });

  it('CountsTheTenantApisKeyCheckApart_ItsReadsAndItsLastUsedWrites', () => {
    const keyed = buildModel({
      records: [
        ...records,
        { service: 'Lambda', operation: 'Invoke', source: 'api:POST /v1/batches', at: 0, function: 'tenantApi', records: 1, durationMs: 20, bytes: 300 },
        { service: 'Lambda', operation: 'Invoke', source: 'api:GET /v1/batches', at: 0, function: 'tenantApi', records: 1, durationMs: 20, bytes: 300 },
        dynamo({ source: 'api:POST /v1/batches', operation: 'GetItem', reads: [{ table: 'calls', pk: 'TENANT#big#KEYS', bytes: 200, items: 1, consistent: true, shape: 'item' }] }),
        dynamo({ source: 'api:POST /v1/batches', operation: 'UpdateItem', writes: [write({ table: 'calls', pk: 'TENANT#big#KEYS', oldBytes: 200, newBytes: 230 })] }),
      ],
      results: 2,
      mails: 1,
      mailsPerResult: 0.1,
      categorize,
      settings: { ...settings, memoryMb: { ...settings.memoryMb, tenantApi: 512 } },
      prices,
      rates: { average: 100, burst: 1000 },
    });
    // Over 2 results: one consistent read (1 unit) and one write (1 unit) of a key, for two tenant API requests.
    expect(keyed.perResult.apiKeys).toEqual({ requests: 1, lookups: 0.5, touches: 0.5, readUnits: 0.5, writeUnits: 0.5, tenantApiRequests: 1 });
    expect(model.perResult.apiKeys).toEqual({ requests: 0, lookups: 0, touches: 0, readUnits: 0, writeUnits: 0, tenantApiRequests: 0 });
    expect(keyed.writeUnitsPerResult - model.writeUnitsPerResult).toBeCloseTo(0.5, 10);
  });

  it('PricesEachKindApart_AnAttemptRowPerAttemptWithItsIndexEntry_AKeptEventInItsTransaction', () => {
    const attempt = (pk: string, delivered: boolean) =>
      dynamo({
        source: 'job:webhook.deliver',
        operation: 'PutItem',
        writes: [
          write({
            table: 'webhooks',
            pk,
            action: 'put',
            newBytes: 460,
            putBytes: 460,
            indexes: delivered ? [{ index: 'byReceived', newKey: pk.replace('ATTEMPTS', 'RECEIVED'), oldBytes: 0, newBytes: 240, keyChanged: false, changed: true }] : [],
          }),
        ],
      });
    const kinds = [
      { name: 'attemptRows', pk: /#ATTEMPTS#/ },
      { name: 'keptEvents', pk: /#EVENTS#/ },
      { name: 'endpointReads', pk: /#ENDPOINT#/, source: 'job:webhook.deliver', only: 'reads' as const },
    ];
    const priced = buildModel({
      records: [
        ...records,
        // Three attempts to one endpoint, two delivered: three Puts, two index entries.
        attempt('TENANT#big#ATTEMPTS#e1', true),
        attempt('TENANT#big#ATTEMPTS#e1', false),
        attempt('TENANT#big#ATTEMPTS#e1', true),
        // An event kept in its publishing transaction, beside the batch row: doubled, and no request of its own.
        dynamo({
          source: 'api:POST /v1/calls/webhook',
          operation: 'TransactWriteItems',
          transaction: true,
          writes: [write({ table: 'calls', pk: 'TENANT#big', oldBytes: 200, newBytes: 200 }), write({ table: 'webhooks', pk: 'TENANT#big#EVENTS#2026-12-03T06#1', action: 'put', newBytes: 1100, putBytes: 1100 })],
        }),
        // The drain's read of the endpoint, and a lease write the kind leaves to the totals.
        dynamo({ source: 'job:webhook.deliver', operation: 'GetItem', reads: [{ table: 'webhooks', pk: 'TENANT#big#ENDPOINT#e1', bytes: 500, items: 1, consistent: true, shape: 'item' }] }),
        dynamo({ source: 'job:webhook.deliver', writes: [write({ table: 'webhooks', pk: 'TENANT#big#ENDPOINT#e1', oldBytes: 500, newBytes: 510 })] }),
        // The intake's read of the same endpoint is not the deliverer's.
        dynamo({ source: 'api:POST /v1/calls/webhook', operation: 'GetItem', reads: [{ table: 'webhooks', pk: 'TENANT#big#ENDPOINT#e1', bytes: 500, items: 1, consistent: true, shape: 'item' }] }),
      ],
      results: 2,
      mails: 1,
      mailsPerResult: 0.1,
      categorize,
      settings,
      prices,
      rates: { average: 100, burst: 1000 },
      itemKinds: kinds,
    });
    const { attemptRows, keptEvents, endpointReads } = priced.perResult.itemKinds;
    // Over 2 results: 3 rows of 1 unit and 2 index entries of 1 unit; each a PutItem of its own.
    expect(attemptRows).toMatchObject({ writes: 1.5, reads: 0, ownRequests: 1.5, requestsByOperation: { PutItem: 1.5 }, writeUnits: 2.5, indexWriteUnits: 1, readUnits: 0, meanItemBytes: 460 });
    expect(attemptRows!.usdPerMillionResults).toBeCloseTo(2.5 * 0.625, 10);
    // The index partition took 2 units over 2 results, the table's 3: the table's is the hottest.
    expect(attemptRows!.hottest).toEqual({ index: null, key: 'TENANT#big#ATTEMPTS#e1', wcuPerSecondAtBurst: 1500 });
    // 1,100 B: 2 units, doubled in the transaction, over 2 results; no request of its own.
    expect(keptEvents).toMatchObject({ writes: 0.5, ownRequests: 0, requestsByOperation: { TransactWriteItems: 0.5 }, writeUnits: 2, indexWriteUnits: 0 });
    // One consistent read of the endpoint by the deliverer, over 2 results; its lease write and the intake's read are not counted.
    expect(endpointReads).toMatchObject({ writes: 0, reads: 0.5, ownRequests: 0.5, readUnits: 0.5, writeUnits: 0, meanItemBytes: 0, meanReadBytes: 500, hottest: null });
    // Their units are in the totals as well: the rows, the kept event and its transaction's batch row, the lease write.
    expect(priced.writeUnitsPerResult - model.writeUnitsPerResult).toBeCloseTo(2.5 + (2 + 1) + 0.5, 10);
    expect(model.perResult.itemKinds).toEqual({});
  });

  it('PricesADialsConditionCheckApartFromTheListsWritesOfTheSameItem', () => {
    const supp = 'TENANT#big#SUPP#1';
    const priced = buildModel({
      records: [
        ...records,
        // A dial: the suppression check (no entry: 1 KB, doubled) beside the batch row, in one transaction.
        dynamo({
          source: 'job:calls.dial',
          operation: 'TransactWriteItems',
          transaction: true,
          writes: [write({ table: 'calls', pk: 'TENANT#big', oldBytes: 200, newBytes: 200 }), write({ table: 'calls', pk: supp, action: 'check' })],
        }),
        // An opt-out: the entry written (an Update) in the intake's transaction.
        dynamo({ source: 'api:POST /v1/calls/webhook', operation: 'TransactWriteItems', transaction: true, writes: [write({ table: 'calls', pk: supp, action: 'update', newBytes: 228 })] }),
      ],
      results: 2,
      mails: 1,
      mailsPerResult: 0.1,
      categorize,
      settings,
      prices,
      rates: { average: 100, burst: 1000 },
      itemKinds: [
        { name: 'check', pk: /#SUPP#/, actions: ['check'], only: 'writes' as const },
        { name: 'list', pk: /#SUPP#/, actions: ['put', 'update', 'delete'] },
      ],
    });
    const { check, list } = priced.perResult.itemKinds;
    // Over 2 results, each 1 KB doubled by its transaction.
    expect(check).toMatchObject({ writes: 0.5, writeUnits: 1, requestsByOperation: { TransactWriteItems: 0.5 }, ownRequests: 0 });
    expect(list).toMatchObject({ writes: 0.5, writeUnits: 1, requestsByOperation: { TransactWriteItems: 0.5 }, ownRequests: 0.5, meanItemBytes: 228 });
  });

  it('PricesAMillionResultsFromThePriceTableWithAndWithoutSes', () => {
    const expected =
      5.8 * 0.625 + 0.25 * 0.125 + 2.7 * 0.4 + 0.5 * 1 + 1.6 * 0.2 + 0.075 * 0.0000133334 * 1e6 + 1 * 1;
    expect(model.usdPerMillionResults).toBeCloseTo(expected, 6);
    expect(model.usdPerMillionResultsWithSes - model.usdPerMillionResults).toBeCloseTo(0.1 * 100, 6);
  });

  it('ProjectsTheHottestPartitionQueuesSchedulesAndConcurrencyToARate', () => {
    expect(model.hottestPartitionWcuPerSecondAtBurst).toEqual({ table: 'calls', index: null, key: 'TENANT#big', wcuPerSecond: 2000, wcuPerSecondAtAverage: 200 });
    const webhooks = model.queues.find((q) => q.name === 'webhooks')!;
    expect(webhooks.messagesPerResult).toBe(1);
    expect(webhooks.demandPerSecondAtBurst).toBe(1000);
    // Ten records a batch, each 60 or 100 ms: the slowest is 100 ms unless all ten are 60.
    const batchMs = 100 - 40 * 0.5 ** 10;
    expect(webhooks.expectedBatchMs).toBeCloseTo(batchMs, 10);
    expect(webhooks.capacityPerSecond).toBeCloseTo((5 * 10) / (batchMs / 1000), 6);
    // Twice 1,000/s, ten a batch of ≈ 100 ms: ≈ 20 batches at once.
    expect(webhooks.concurrencyForTwiceBurst).toBe(Math.ceil((2 * 1000 * (batchMs / 1000)) / 10));
    expect(model.queues.find((q) => q.name === 'ops')!.capacityPerSecond).toBeNull();
    expect(model.queues.find((q) => q.name === 'ops')!.concurrencyForTwiceBurst).toBeNull();
    // One schedule of 1,800 s for two results: 0.5 × rate × 1,800 live at once.
    expect(model.scheduler.liveSchedulesAtBurst).toBe(900_000);
    const api = model.lambda.find((l) => l.function === 'api')!;
    expect(api.concurrencyAtBurst).toBeCloseTo(1 * 1000 * 0.05, 10);
    expect(api.maxConcurrency).toBe(50);
    expect(model.http).toEqual([{ function: 'api', requestsPerResult: 1, requestsPerSecondAtAverage: 100, requestsPerSecondAtBurst: 1000, rateLimit: 100, burstLimit: 200 }]);
    // A worker at the burst: 1,000 messages a second in full batches of ten, each as long as the slowest record.
    const worker = model.lambda.find((l) => l.function === 'worker:webhooks')!;
    expect(worker.concurrencyAtBurst).toBeCloseTo((1000 / 10) * (batchMs / 1000), 10);
    expect(worker.maxConcurrency).toBe(5);
  });

  it('PricesFixedWorkPerRunTimesRunsAMonth', () => {
    const fixed = fixedMonthlyUsd(records, [{ source: 'rescuer', runsSeen: 1, runsPerMonth: 43_200 }], settings, prices);
    expect(fixed['rescuer']).toBeCloseTo(0.5 * 0.125e-6 * 43_200, 12);
  });
});
