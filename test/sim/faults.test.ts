import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { CallsStore } from '../../functions/calls/store.ts';
import { tables } from '../../functions/app/system.ts';
import type { TableNames } from '../../functions/app/system.ts';
import { createAwsClients, isTransientAwsError, localCredentials } from '../../functions/platform/aws.ts';
import { putItem } from '../../functions/platform/dynamo.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { SimClock } from '../../sim/clock.ts';
import { FaultInjector } from '../../sim/faults.ts';
import type { Fault } from '../../sim/plan.ts';
import { Scopes } from '../../sim/scope.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

/** Fresh tables, clients with an injector holding `faults`, and clients without one. */
async function injected(faults: Fault[]) {
  const prefix = `f${randomBytes(5).toString('hex')}`;
  const tableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames;
  await ensureTables(dynamoEndpoint(), Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })));
  const scopes = new Scopes();
  const clock = new SimClock(Date.parse('2026-01-05T09:00:00Z'));
  const injector = new FaultInjector({ faults, scopes, clock, draw: () => 0 });
  const local = { region: 'local', endpoints: { dynamodb: dynamoEndpoint() }, credentials: localCredentials };
  const clients = createAwsClients({ ...local, interceptor: injector });
  const plain = createAwsClients(local);
  const job = (fn: () => Promise<unknown>, invocation = scopes.invocation('worker:calls')) => scopes.run({ where: 'job', name: 'calls.dial', jobId: 'calls.dial:b:1', invocation }, fn);
  return { tableNames, scopes, injector, clients, plain, job, table: tableNames.calls };
}

const put = (table: string, pk: string) => new PutCommand({ TableName: table, Item: { pk, sk: 'X' } });
const get = (table: string, pk: string) => new GetCommand({ TableName: table, Key: { pk, sk: 'X' }, ConsistentRead: true });

describe('the fault injector', () => {
  it('RefusesTheNthMatchingWriteBeforeItIsAppliedAndNoOtherRequest', async () => {
    const f = await injected([{ id: 1, kind: 'dynamo.throughput', target: { where: 'job', name: 'calls.dial' }, ops: 'write', nth: 2 }]);
    await f.job(() => f.clients.dynamo.send(put(f.table, 'a')));
    const refused = await f.job(() => f.clients.dynamo.send(put(f.table, 'b'))).catch((error: unknown) => error);
    await f.job(() => f.clients.dynamo.send(put(f.table, 'c')));
    // Outside a run (the simulator's own requests) nothing is injected.
    await f.clients.dynamo.send(put(f.table, 'd'));
    expect((refused as Error).name).toBe('ProvisionedThroughputExceededException');
    expect(isTransientAwsError(refused)).toBe(true);
    for (const [pk, written] of [['a', true], ['b', false], ['c', true], ['d', true]] as const) {
      expect((await f.plain.dynamo.send(get(f.table, pk))).Item !== undefined).toBe(written);
    }
    expect(f.injector.fired.map((i) => i.fault.id)).toEqual([1]);
  });

  it('AppliesAWriteAndThenLosesItsResponse', async () => {
    const f = await injected([{ id: 1, kind: 'dynamo.lostResponse', target: {}, ops: 'write', nth: 1 }]);
    const lost = await f.job(() => f.clients.dynamo.send(put(f.table, 'a'))).catch((error: unknown) => error);
    expect((lost as { code?: string }).code).toBe('ECONNRESET');
    expect(isTransientAwsError(lost)).toBe(true);
    expect((await f.plain.dynamo.send(get(f.table, 'a'))).Item).toBeDefined();
  });

  // Issue 26's import ends a page on unprocessed items and writes it again from its cursor.
  it('AppliesOnlyTheFirstItemsOfABatchWriteAndAnswersTheRestUnprocessed', async () => {
    const f = await injected([{ id: 1, kind: 'dynamo.unprocessed', target: { where: 'job' }, nth: 2, applied: 2 }]);
    const store = new CallsStore(f.clients.dynamo, f.table);
    const items = (prefix: string) => Array.from({ length: 5 }, (_, i) => ({ pk: `${prefix}${i}`, sk: 'X' }));
    const first = (await f.job(() => store.putItems(items('a')))) as { unprocessed: number };
    const second = (await f.job(() => store.putItems(items('b')))) as { unprocessed: number };
    expect([first.unprocessed, second.unprocessed]).toEqual([0, 3]);
    for (let i = 0; i < 5; i++) {
      expect((await f.plain.dynamo.send(get(f.table, `a${i}`))).Item).toBeDefined();
      expect((await f.plain.dynamo.send(get(f.table, `b${i}`))).Item !== undefined).toBe(i < 2);
    }
    expect(f.injector.fired.map((i) => i.detail)).toEqual([expect.stringMatching(/BatchWriteItem/)]);
  });

  it('CancelsATransactionWithAConflictOnOneItemThatTheStoresReadAsContention', async () => {
    const f = await injected([{ id: 1, kind: 'dynamo.conflict', target: {}, ops: 'write', nth: 1 }]);
    const store = new CallsStore(f.clients.dynamo, f.table);
    const result = await f.job(() => store.transact([putItem('a', f.table, { pk: 'a', sk: 'X' }), putItem('b', f.table, { pk: 'b', sk: 'X' })]));
    expect(result).toMatchObject({ committed: false, contention: true, refused: { a: { code: 'TransactionConflict', item: undefined } } });
    expect(Object.keys((result as { refused: object }).refused)).toEqual(['a']);
    expect((await f.plain.dynamo.send(get(f.table, 'a'))).Item).toBeUndefined();
  });

  it('ACrashKillsTheWholeInvocationAtItsNextRequests', async () => {
    const f = await injected([{ id: 1, kind: 'crash.atRequest', target: { where: 'job' }, nth: 1, request: 2 }]);
    const invocation = f.scopes.invocation('worker:calls');
    let sibling = 'pending';
    let crashed = 'pending';
    void f.job(async () => {
      await f.clients.dynamo.send(put(f.table, 'first'));
      await f.clients.dynamo.send(put(f.table, 'never'));
      crashed = 'went on';
    }, invocation);
    await invocation.died;
    // Another run of the same invocation stops at its next request, as a process would.
    void f.job(async () => {
      await f.clients.dynamo.send(put(f.table, 'sibling'));
      sibling = 'went on';
    }, invocation);
    await new Promise((r) => setTimeout(r, 200));
    expect(invocation.crashed).toBe(true);
    expect([crashed, sibling]).toEqual(['pending', 'pending']);
    expect((await f.plain.dynamo.send(get(f.table, 'first'))).Item).toBeDefined();
    expect((await f.plain.dynamo.send(get(f.table, 'never'))).Item).toBeUndefined();
    expect((await f.plain.dynamo.send(get(f.table, 'sibling'))).Item).toBeUndefined();
  });

  it('CrashesAfterTheSideEffectAtTheRunsNextRequest', async () => {
    const f = await injected([{ id: 1, kind: 'crash.afterSideEffect', target: { where: 'job', name: 'calls.dial' }, nth: 1 }]);
    const invocation = f.scopes.invocation('worker:calls');
    void f.job(async () => {
      await f.clients.dynamo.send(put(f.table, 'before'));
      f.scopes.sideEffect('calls.dial:b:1');
      await f.clients.dynamo.send(put(f.table, 'after'));
    }, invocation);
    await invocation.died;
    expect((await f.plain.dynamo.send(get(f.table, 'before'))).Item).toBeDefined();
    expect((await f.plain.dynamo.send(get(f.table, 'after'))).Item).toBeUndefined();
  });
});
