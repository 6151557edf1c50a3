import { randomBytes } from 'node:crypto';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { writeUnitsFor } from '../../bench/capacity/model.ts';
import { describe, expect, it } from 'vitest';
import { tables } from '../../functions/app/system.ts';
import type { TableNames } from '../../functions/app/system.ts';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { itemSize, numberSize, valueSize } from '../../functions/platform/item-size.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { LocalQueue, LocalTransport } from '../../functions/platform/local/queues.ts';
import { RequestRecorder } from '../../functions/platform/recorder.ts';
import type { DynamoRecord } from '../../functions/platform/recorder.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

/** Fresh tables and clients that record every request. */
async function recorded() {
  const prefix = `r${randomBytes(5).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(dynamoEndpoint(), Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
  const recorder = new RequestRecorder({ tables: Object.fromEntries(Object.entries(tables).map(([key, d]) => [tableNames[key as keyof TableNames], d])), complete: true });
  const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials, recorder });
  return { recorder, clients, tableNames };
}

const dynamoRecords = (recorder: RequestRecorder) => recorder.records.filter((r): r is DynamoRecord => r.service === 'DynamoDB');

describe('item sizes, by DynamoDB rules', () => {
  it('CountNamesStringsNumbersListsAndMapsAsDynamoDBDoes', () => {
    expect(numberSize('0')).toBe(1);
    expect(numberSize('1')).toBe(2);
    expect(numberSize('12345')).toBe(4);
    // Base-100 digits aligned on the decimal point: 1|.5 is two, 12|.5 two, 1|23|45|.67|8 five.
    expect(numberSize('1.5')).toBe(3);
    expect(numberSize('12.5')).toBe(3);
    expect(numberSize('12345.678')).toBe(6);
    expect(numberSize('-3.5')).toBe(4);
    expect(numberSize('-0.00120')).toBe(3);
    expect(numberSize('1000000')).toBe(2);
    expect(numberSize('1.5e3')).toBe(2);
    expect(valueSize({ S: 'héllo' })).toBe(6);
    expect(valueSize({ BOOL: true })).toBe(1);
    // A list: 3 bytes, plus each element and one byte per element.
    expect(valueSize({ L: [{ S: 'ab' }, { N: '7' }] })).toBe(3 + (2 + 1) + (2 + 1));
    // A map: 3 bytes, plus each key's name, value, and one byte per element.
    expect(valueSize({ M: { a: { S: 'xy' } } })).toBe(3 + 1 + 2 + 1);
    expect(itemSize({ pk: { S: 'TENANT#t1' }, sk: { S: 'TENANT' }, active: { N: '1' } })).toBe(2 + 9 + 2 + 6 + 6 + 2);
  });
});

describe('item sizes against DynamoDB Local', () => {
  it('GiveTheWriteUnitsDynamoDBLocalChargesForItemsAroundTheKilobyteBoundary', async () => {
    const { clients, tableNames } = await recorded();
    const shapes = [
      (pad: string, sk: string) => ({ pk: { S: 'X' }, sk: { S: sk }, pad: { S: pad } }),
      (pad: string, sk: string) => ({
        pk: { S: 'X' },
        sk: { S: sk },
        n: { N: '12345.678' },
        neg: { N: '-3.5' },
        m: { M: { a: { N: '1' }, bb: { S: 'xyz' }, l: { L: [{ N: '1.5' }, { S: 'two' }, { BOOL: true }, { NULL: true }, { M: { deep: { S: 'er' } } }] } } },
        ss: { SS: ['a', 'bb'] },
        pad: { S: pad },
      }),
    ];
    let n = 0;
    for (const shape of shapes) {
      let pad = 0;
      while (itemSize(shape('a'.repeat(pad), 'k00000')) < 1024) pad++;
      for (const length of [pad - 1, pad, pad + 1]) {
        const item = shape('a'.repeat(length), `k${String(n++).padStart(5, '0')}`);
        const put = await clients.dynamo.send(new PutItemCommand({ TableName: tableNames.calls, Item: item, ReturnConsumedCapacity: 'TOTAL' }));
        expect({ length, units: put.ConsumedCapacity?.CapacityUnits }).toEqual({ length, units: writeUnitsFor(itemSize(item)) });
      }
    }
  });
});

describe('the request recorder', () => {
  it('IsNotInstalledOnClientsBuiltWithoutOne', () => {
    const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: 'http://127.0.0.1:9' }, credentials: localCredentials });
    const stack = (clients.dynamo.middlewareStack as unknown as { identify(): string[] }).identify();
    expect(stack.some((m) => m.includes('redialRequestRecorder'))).toBe(false);
  });

  it('SeesThePartitionKeyAndIndexMoveOfEveryItemOfATransaction', async () => {
    const { recorder, clients, tableNames } = await recorded();
    await clients.dynamo.send(new PutCommand({ TableName: tableNames.calls, Item: { pk: 'TENANT#t1', sk: 'TENANT', active: 1 } }));
    await clients.dynamo.send(
      new PutCommand({ TableName: tableNames.jobs, Item: { id: 'job-1', state: 'available', stateOrder: '2026-01-01T00:00:00.000Z#job-1', kind: 'k' } }),
    );
    recorder.clear();

    await clients.dynamo.send(
      new TransactWriteCommand({
        TransactItems: [
          { Update: { TableName: tableNames.calls, Key: { pk: 'TENANT#t1', sk: 'TENANT' }, UpdateExpression: 'SET active = active + :one', ExpressionAttributeValues: { ':one': 1 } } },
          { Put: { TableName: tableNames.webhooks, Item: { pk: 'EVENT#e1', sk: 'EVENT', type: 'call.completed' } } },
          {
            Update: {
              TableName: tableNames.jobs,
              Key: { id: 'job-1' },
              UpdateExpression: 'SET #s = :running, stateOrder = :order',
              ExpressionAttributeNames: { '#s': 'state' },
              ExpressionAttributeValues: { ':running': 'running', ':order': '2026-01-01T00:01:05.000Z#job-1' },
            },
          },
        ],
      }),
    );

    const [tx] = dynamoRecords(recorder);
    expect(tx).toMatchObject({ operation: 'TransactWriteItems', transaction: true, outcome: 'ok' });
    expect(tx!.writes.map((w) => [w.table, w.pk, w.action])).toEqual([
      ['calls', 'TENANT#t1', 'update'],
      ['webhooks', 'EVENT#e1', 'put'],
      ['jobs', 'job-1', 'update'],
    ]);
    // Sizes by hand: pk+TENANT#t1 11, sk+TENANT 8, active+number 8 → 27 before and after.
    expect(tx!.writes[0]).toMatchObject({ oldBytes: 27, newBytes: 27, indexes: [] });
    // pk+EVENT#e1 10, sk+EVENT 7, type+call.completed 18; it has no `watch`, so it is not in byWatch.
    expect(tx!.writes[1]).toMatchObject({ oldBytes: 0, newBytes: 35, indexes: [] });
    // id 7, state 14 → 12, stateOrder 40, kind 5: the state moves the entry from one byState partition to another.
    expect(tx!.writes[2]).toMatchObject({ oldBytes: 66, newBytes: 64 });
    expect(tx!.writes[2]!.indexes).toEqual([{ index: 'byState', oldKey: 'available', newKey: 'running', oldBytes: 66, newBytes: 64, keyChanged: true, changed: true }]);
  });

  it('RecordsARefusedWriteAsChangingNothingAndAQueryByItsPartitionAndTheBytesItRead', async () => {
    const { recorder, clients, tableNames } = await recorded();
    await clients.dynamo.send(new PutCommand({ TableName: tableNames.jobs, Item: { id: 'job-2', state: 'running', stateOrder: 'x#job-2', note: 'y'.repeat(100) } }));
    recorder.clear();

    await expect(
      clients.dynamo.send(
        new UpdateCommand({
          TableName: tableNames.jobs,
          Key: { id: 'job-2' },
          UpdateExpression: 'SET #s = :done',
          ConditionExpression: '#s = :available',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':done': 'completed', ':available': 'available' },
        }),
      ),
    ).rejects.toThrow();
    // A filter and COUNT do not shrink what a query reads: the recorder sees the whole entry.
    await clients.dynamo.send(
      new QueryCommand({
        TableName: tableNames.jobs,
        IndexName: 'byState',
        KeyConditionExpression: '#s = :running',
        FilterExpression: 'note = :nothing',
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: { ':running': 'running', ':nothing': 'none' },
        Select: 'COUNT',
      }),
    );

    const [refused, query] = dynamoRecords(recorder);
    const size = 2 + 5 + 5 + 7 + 10 + 7 + 4 + 100;
    expect(refused).toMatchObject({ operation: 'UpdateItem', outcome: 'conditionFailed' });
    expect(refused!.writes).toEqual([{ table: 'jobs', pk: 'job-2', action: 'update', oldBytes: size, newBytes: size, putBytes: 0, indexes: [] }]);
    expect(query!.reads).toEqual([{ table: 'jobs', index: 'byState', pk: 'running', bytes: size, items: 1, consistent: false, shape: 'range' }]);
  });

  it('RecordsTheLocalTransportsSendsSchedulesAndFiringsAndFiresWaitingSchedulesOnRequest', async () => {
    const clock = new ManualClock(Date.parse('2026-11-30T00:00:00Z'));
    const recorder = new RequestRecorder({ tables: {} });
    const queue = new LocalQueue({ name: 'ops', clock, batchSize: 10, maxConcurrency: 2, visibilityMs: 60_000 });
    const transport = new LocalTransport([queue], clock, recorder);
    await recorder.measure('job:test', async () => {
      await transport.sendMessage('ops', '{"jobId":"a","seq":1}', 5);
      await transport.createSchedule('job-b-1', clock.now() + 3_600_000, 'ops', '{"jobId":"b","seq":1}');
      await transport.createSchedule('job-b-1', clock.now() + 3_600_000, 'ops', '{"jobId":"b","seq":1}');
    });
    clock.advance(3_600_000);
    await transport.createSchedule('job-c-1', clock.now() + 21_600_000, 'ops', '{"jobId":"c","seq":1}');
    // Fired now, as though its time had come: what a schedule that outlived its job costs when it fires.
    expect(transport.firePending()).toBe(1);
    expect(transport.pendingSchedules()).toBe(0);
    expect(queue.snapshot()).toMatchObject({ sent: 3, waiting: 3 });
    expect(recorder.records.map(({ at: _at, ...r }) => r)).toEqual([
      { service: 'SQS', operation: 'SendMessage', queue: 'ops', bytes: 21, delaySeconds: 5, source: 'job:test' },
      { service: 'Scheduler', operation: 'CreateSchedule', queue: 'ops', bytes: 21, delayMs: 3_600_000, created: true, source: 'job:test' },
      { service: 'Scheduler', operation: 'CreateSchedule', queue: 'ops', bytes: 21, delayMs: 3_600_000, created: false, source: 'job:test' },
      { service: 'Scheduler', operation: 'Invoke', queue: 'ops', source: 'scheduler' },
      { service: 'SQS', operation: 'SendMessage', queue: 'ops', bytes: 21, delaySeconds: 0, bySchedule: true, source: 'scheduler' },
      { service: 'Scheduler', operation: 'CreateSchedule', queue: 'ops', bytes: 21, delayMs: 21_600_000, created: true, source: 'unscoped' },
      { service: 'Scheduler', operation: 'Invoke', queue: 'ops', source: 'scheduler' },
      { service: 'SQS', operation: 'SendMessage', queue: 'ops', bytes: 21, delaySeconds: 0, bySchedule: true, source: 'scheduler' },
    ]);
    transport.stop();
    await queue.stop();
  });
});
