import { ConditionalCheckFailedException, ProvisionedThroughputExceededException, TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ThrottlingException } from '@aws-sdk/client-scheduler';
import { describe, expect, it } from 'vitest';
import { batchGet, Expression, IncompleteReadError, isContention, putItem, transact, updateItem } from '../../functions/platform/dynamo.ts';
import { isTransientAwsError } from '../../functions/platform/aws.ts';
import { freshTables } from '../support/dynamo.ts';

const meta = { $metadata: {} };

/** A fresh calls table (pk/sk) on DynamoDB Local, and a way to swap the client's answer to the next request. */
async function fixture() {
  const { clients, tableNames, counter } = await freshTables();
  const db = clients.dynamo;
  const table = tableNames.calls;
  const send = db.send.bind(db);
  let intercept: ((command: unknown) => unknown) | undefined;
  let sent = 0;
  (db as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
    sent++;
    const answer = intercept?.(command);
    if (answer !== undefined) return answer;
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  };
  const get = async (pk: string) => (await send(new GetCommand({ TableName: table, Key: { pk, sk: 'ROW' }, ConsistentRead: true }))).Item;
  return {
    db,
    table,
    counter,
    get,
    sent: () => sent,
    intercept: (fn: (command: unknown) => unknown) => (intercept = fn),
  };
}

/** A counter row that exists, and the update that asks it to be at `expected`. */
function counterAt(table: string, pk: string, expected: number) {
  const e = new Expression();
  e.when(e.eq('n', expected)).increment('n', 1);
  return updateItem('counter', table, { pk, sk: 'ROW' }, e, { returnStored: true });
}

describe('transact: named outcomes on DynamoDB Local', () => {
  it('CommitsEveryItemInOneTransactWriteItems', async () => {
    const fx = await fixture();
    await fx.db.send(new PutCommand({ TableName: fx.table, Item: { pk: 'c', sk: 'ROW', n: 1 } }));
    fx.counter.reset();
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW', v: 1 }), counterAt(fx.table, 'c', 1)]);
    expect(outcome).toEqual({ committed: true });
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.TransactWriteItems': 1 });
    expect(await fx.get('a')).toMatchObject({ v: 1 });
    expect(await fx.get('c')).toMatchObject({ n: 2 });
  });

  it('ReportsARefusedConditionUnderItsItemsNameWithTheItemAsStoredAndWritesNothing', async () => {
    const fx = await fixture();
    await fx.db.send(new PutCommand({ TableName: fx.table, Item: { pk: 'c', sk: 'ROW', n: 5 } }));
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW', v: 1 }), counterAt(fx.table, 'c', 1)]);
    expect(outcome).toMatchObject({ committed: false, contention: false, refused: { counter: { code: 'ConditionalCheckFailed', item: { pk: 'c', sk: 'ROW', n: 5 } } } });
    if (outcome.committed) throw new Error('unreachable');
    // Only refused items are reported; the error is DynamoDB's own, which is not contention.
    expect(Object.keys(outcome.refused)).toEqual(['counter']);
    expect(outcome.error.name).toBe('TransactionCanceledException');
    expect(isContention(outcome.error)).toBe(false);
    expect(await fx.get('a')).toBeUndefined();
    expect(await fx.get('c')).toMatchObject({ n: 5 });
  });

  it('ReportsAnItemThatDidNotAskForTheStoredItemWithoutIt', async () => {
    const fx = await fixture();
    const absent = new Expression();
    await fx.db.send(new PutCommand({ TableName: fx.table, Item: { pk: 'a', sk: 'ROW', v: 0 } }));
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW', v: 1 }, absent.when(absent.notExists('pk')))]);
    expect(outcome).toMatchObject({ committed: false, contention: false, refused: { row: { code: 'ConditionalCheckFailed', item: undefined } } });
  });

  it('ClassifiesATransactionConflictInjectedAtTheClientAsContentionSentOnce', async () => {
    // DynamoDB Local serialises transactions and never answers TransactionConflict: the client does, as DynamoDB would.
    const fx = await fixture();
    fx.intercept((command) =>
      command instanceof TransactWriteCommand
        ? Promise.reject(new TransactionCanceledException({ message: 'Transaction cancelled', ...meta, CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] }))
        : undefined,
    );
    const before = fx.sent();
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW' }), counterAt(fx.table, 'c', 1)]);
    expect(outcome).toMatchObject({ committed: false, contention: true, refused: { counter: { code: 'TransactionConflict', item: undefined } } });
    expect(fx.sent() - before).toBe(1);
    if (outcome.committed) throw new Error('unreachable');
    expect(isContention(outcome.error)).toBe(true);
    // The HTTP adapter answers 503 for it.
    expect(isTransientAwsError(outcome.error)).toBe(true);
  });

  it('CallsAConflictContentionEvenBesideAFailedCondition', async () => {
    const fx = await fixture();
    fx.intercept((command) =>
      command instanceof TransactWriteCommand
        ? Promise.reject(new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'ThrottlingError' }] }))
        : undefined,
    );
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW' }), counterAt(fx.table, 'c', 1)]);
    expect(outcome).toMatchObject({ committed: false, contention: true, refused: { row: { code: 'ConditionalCheckFailed' }, counter: { code: 'ThrottlingError' } } });
  });

  it('NamesAnItemAddedOnItsWayWithoutANameByItsPosition', async () => {
    const fx = await fixture();
    fx.intercept((command) => {
      if (command instanceof TransactWriteCommand) {
        command.input.TransactItems!.push({ ConditionCheck: { TableName: fx.table, Key: { pk: 'missing', sk: 'ROW' }, ConditionExpression: 'attribute_exists(pk)' } });
      }
      return undefined;
    });
    const outcome = await transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW' })]);
    expect(outcome).toMatchObject({ committed: false, contention: false, refused: { 'item 1': { code: 'ConditionalCheckFailed' } } });
  });

  it('RefusesTwoItemsWithOneNameBeforeSendingAnything', async () => {
    const fx = await fixture();
    const before = fx.sent();
    await expect(transact(fx.db, [putItem('row', fx.table, { pk: 'a', sk: 'ROW' }), putItem('row', fx.table, { pk: 'b', sk: 'ROW' })])).rejects.toThrow('two items of one transaction are named row');
    expect(fx.sent()).toBe(before);
  });

  it('ThrowsAFailureThatIsNotACancellation', async () => {
    const fx = await fixture();
    await expect(transact(fx.db, [putItem('row', `${fx.table}-missing`, { pk: 'a', sk: 'ROW' })])).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
  });
});

describe('isContention: one list of contention codes', () => {
  it('KnowsConflictsThrottlingAndCapacityDirectlyAndAsACancelledItemsReason', () => {
    const contention = [
      new TransactionConflictException({ message: 'conflict', ...meta }),
      new ProvisionedThroughputExceededException({ message: 'slow down', ...meta }),
      new ThrottlingException({ message: 'rate exceeded', Message: 'rate exceeded', ...meta }),
      Object.assign(new Error('too many requests'), { name: 'RequestLimitExceeded' }),
      new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'None' }, { Code: 'ProvisionedThroughputExceeded' }] }),
    ];
    for (const error of contention) expect(isContention(error), error.name).toBe(true);
    const not = [
      new ConditionalCheckFailedException({ message: 'no', ...meta }),
      new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }] }),
      new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'ValidationError' }] }),
      new Error('ProvisionedThroughputExceededException in a message is not the error'),
      'TransactionConflictException',
    ];
    for (const error of not) expect(isContention(error), String(error)).toBe(false);
  });
});

describe('the builders on DynamoDB Local', () => {
  it('IncrementsAMapEntryAddsToASetCopiesAnAttributeAndTakesNestedOrConditions', async () => {
    const fx = await fixture();
    await fx.db.send(new PutCommand({ TableName: fx.table, Item: { pk: 'b', sk: 'ROW', byCode: {}, pending: 'x@example.com', active: 1, limit: 2 } }));
    const update = async (e: Expression) => fx.db.send(new UpdateCommand({ TableName: fx.table, Key: { pk: 'b', sk: 'ROW' }, ...e.build() }));

    const first = new Expression();
    // DynamoDB refuses redundant parentheses (`((x))`): nested ORs and ANDs, and a lone grouped fragment, must add none.
    first
      .when(first.or(first.or(first.notExists('holder'), first.lt('active', first.attr('limit'))), first.and(first.exists('pk'), first.eq('active', 99))))
      .when(first.or(first.and(first.exists('pk'), first.gt('active', 0))))
      .when(`(${first.eq('active', 1)} OR ${first.eq('active', 2)})`)
      .increment(['byCode', 'NO-PICKUP'], 1, 0)
      .increment(['byCode', 'NO_PICKUP'], 1, 0)
      .add('holders', new Set(['job-1']))
      .set('email', first.attr('pending'))
      .remove('pending');
    await update(first);

    const second = new Expression();
    second.when(second.or(second.lt(second.size('holders'), 2), second.contains('holders', 'job-2'))).increment(['byCode', 'NO-PICKUP'], 2, 0).add('holders', new Set(['job-2']));
    await update(second);

    const third = new Expression();
    third.when(third.or(third.lt(third.size('holders'), 2), third.contains('holders', 'job-3'))).add('holders', new Set(['job-3']));
    await expect(update(third)).rejects.toBeInstanceOf(ConditionalCheckFailedException);

    expect(await fx.get('b')).toMatchObject({ byCode: { 'NO-PICKUP': 3, NO_PICKUP: 1 }, holders: new Set(['job-1', 'job-2']), email: 'x@example.com' });
    expect(await fx.get('b')).not.toHaveProperty('pending');
  });
});

describe('batchGet: a read DynamoDB leaves incomplete fails', () => {
  it('ReturnsTheItemsFoundInOneConsistentRequest', async () => {
    const fx = await fixture();
    await fx.db.send(new PutCommand({ TableName: fx.table, Item: { pk: 'a', sk: 'ROW', v: 1 } }));
    fx.counter.reset();
    const items = await batchGet(fx.db, fx.table, [
      { pk: 'a', sk: 'ROW' },
      { pk: 'missing', sk: 'ROW' },
    ]);
    expect(items).toEqual([{ pk: 'a', sk: 'ROW', v: 1 }]);
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.BatchGetItem': 1 });
  });

  it('FailsWithIncompleteReadErrorWhenKeysComeBackUnprocessedAndDoesNotAskAgain', async () => {
    // DynamoDB Local never leaves keys unprocessed: the client answers as DynamoDB does when throttled.
    const fx = await fixture();
    fx.intercept((command) =>
      command instanceof BatchGetCommand
        ? Promise.resolve({ Responses: { [fx.table]: [{ pk: 'a', sk: 'ROW' }] }, UnprocessedKeys: { [fx.table]: { Keys: [{ pk: 'b', sk: 'ROW' }] } }, $metadata: {} })
        : undefined,
    );
    const before = fx.sent();
    const read = batchGet(fx.db, fx.table, [
      { pk: 'a', sk: 'ROW' },
      { pk: 'b', sk: 'ROW' },
    ]);
    await expect(read).rejects.toBeInstanceOf(IncompleteReadError);
    await expect(read).rejects.toMatchObject({ unprocessed: 1 });
    expect(fx.sent() - before).toBe(1);
  });

  it('RefusesMoreKeysThanOneRequestTakes', async () => {
    const fx = await fixture();
    const keys = Array.from({ length: 101 }, (_, i) => ({ pk: `k${i}`, sk: 'ROW' }));
    await expect(batchGet(fx.db, fx.table, keys)).rejects.toThrow(RangeError);
  });
});
