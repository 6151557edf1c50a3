import { describe, expect, it } from 'vitest';
import { conditionCheck, Expression, putItem, updateItem } from '../../functions/platform/dynamo.ts';

describe('Expression: update clauses, exactly', () => {
  it('BuildsSetIncrementAppendAddAndRemoveIntoOneUpdateWithAPlaceholderPerNameAndValue', () => {
    const e = new Expression();
    e.when(e.eq('state', 'available'))
      .set('state', 'running')
      .increment('attempt', 1)
      .increment('snoozes', -1)
      .append('attempts', { n: 1 })
      .add('holders', new Set(['job-1']))
      .remove('leaseToken', 'leaseUntil');
    expect(e.build()).toEqual({
      UpdateExpression: 'SET #state = :v1, #attempt = #attempt + :v2, #snoozes = #snoozes + :v3, #attempts = list_append(#attempts, :v4) ADD #holders :v5 REMOVE #leaseToken, #leaseUntil',
      ConditionExpression: '(#state = :v0)',
      ExpressionAttributeNames: { '#state': 'state', '#attempt': 'attempt', '#snoozes': 'snoozes', '#attempts': 'attempts', '#holders': 'holders', '#leaseToken': 'leaseToken', '#leaseUntil': 'leaseUntil' },
      ExpressionAttributeValues: { ':v0': 'available', ':v1': 'running', ':v2': 1, ':v3': -1, ':v4': [{ n: 1 }], ':v5': new Set(['job-1']) },
    });
  });

  it('IncrementsAMapEntryByItsPathCreatingItFromTheInitialValue', () => {
    const e = new Expression();
    e.increment(['byCode', 'NO_PICKUP'], 1, 0).increment(['byCode', 'TIMEOUT'], -2);
    expect(e.build()).toEqual({
      UpdateExpression: 'SET #byCode.#NO_PICKUP = if_not_exists(#byCode.#NO_PICKUP, :v0) + :v1, #byCode.#TIMEOUT = #byCode.#TIMEOUT + :v2',
      ExpressionAttributeNames: { '#byCode': 'byCode', '#NO_PICKUP': 'NO_PICKUP', '#TIMEOUT': 'TIMEOUT' },
      ExpressionAttributeValues: { ':v0': 0, ':v1': 1, ':v2': -2 },
    });
  });

  it('KeepsNamesThatReadAlikeApartAndGivesOneNameOnePlaceholder', () => {
    const e = new Expression();
    e.increment(['byCode', 'TEMPORARY-UNAVAILABLE'], 1, 0).increment(['byCode', 'TEMPORARY_UNAVAILABLE'], 1, 0).set('a.b', 1);
    expect(e.build()).toEqual({
      UpdateExpression:
        'SET #byCode.#TEMPORARY_UNAVAILABLE = if_not_exists(#byCode.#TEMPORARY_UNAVAILABLE, :v0) + :v1, #byCode.#TEMPORARY_UNAVAILABLE_1 = if_not_exists(#byCode.#TEMPORARY_UNAVAILABLE_1, :v2) + :v3, #a_b = :v4',
      ExpressionAttributeNames: { '#byCode': 'byCode', '#TEMPORARY_UNAVAILABLE': 'TEMPORARY-UNAVAILABLE', '#TEMPORARY_UNAVAILABLE_1': 'TEMPORARY_UNAVAILABLE', '#a_b': 'a.b' },
      ExpressionAttributeValues: { ':v0': 0, ':v1': 1, ':v2': 0, ':v3': 1, ':v4': 1 },
    });
  });

  it('SetsFromAnotherAttributeAndKeepsAValueAlreadyThere', () => {
    const e = new Expression();
    e.set('email', e.attr('pendingEmail')).setIfNotExists('failingSince', '2026-03-01T00:00:00.000Z').remove('pendingEmail');
    expect(e.build()).toEqual({
      UpdateExpression: 'SET #email = #pendingEmail, #failingSince = if_not_exists(#failingSince, :v0) REMOVE #pendingEmail',
      ExpressionAttributeNames: { '#email': 'email', '#pendingEmail': 'pendingEmail', '#failingSince': 'failingSince' },
      ExpressionAttributeValues: { ':v0': '2026-03-01T00:00:00.000Z' },
    });
  });

  it('RefusesAnEmptyPathOrName', () => {
    expect(() => new Expression().set([], 1)).toThrow(RangeError);
    expect(() => new Expression().set('', 1)).toThrow(RangeError);
  });
});

describe('Expression: condition fragments, exactly', () => {
  it('ComparesWithValuesWithOtherAttributesAndWithSizes', () => {
    const e = new Expression();
    const fragments = [
      e.eq('status', 'Calling'),
      e.ne('state', 'running'),
      e.lt('active', e.attr('concurrencyLimit')),
      e.le('scheduledAt', 't'),
      e.gt('nCalling', 0),
      e.lt(e.size('holders'), 30),
      e.exists('pk'),
      e.notExists('pk'),
      e.contains('holders', 'job-1'),
      e.inList('state', ['available', 'retryable']),
      e.beginsWith('sk', 'WAIT#'),
      e.between('sk', 'A', 'B'),
    ];
    expect(fragments).toEqual([
      '#status = :v0',
      '#state <> :v1',
      '#active < #concurrencyLimit',
      '#scheduledAt <= :v2',
      '#nCalling > :v3',
      'size(#holders) < :v4',
      'attribute_exists(#pk)',
      'attribute_not_exists(#pk)',
      'contains(#holders, :v5)',
      '#state IN (:v6, :v7)',
      'begins_with(#sk, :v8)',
      '#sk BETWEEN :v9 AND :v10',
    ]);
  });

  it('ParenthesisesOnlyWhatPrecedenceNeeds', () => {
    const e = new Expression();
    const a = e.eq('a', 1);
    const b = e.eq('b', 2);
    const c = e.eq('c', 3);
    expect(e.or(e.and(a, b), c)).toBe('(#a = :v0 AND #b = :v1) OR #c = :v2');
    expect(e.and(e.or(a, b), c)).toBe('(#a = :v0 OR #b = :v1) AND #c = :v2');
    // An OR inside an OR, an AND inside an AND, need none; one fragment alone is itself.
    expect(e.or(e.or(a, b), c)).toBe('#a = :v0 OR #b = :v1 OR #c = :v2');
    expect(e.and(e.and(a, b), c)).toBe('#a = :v0 AND #b = :v1 AND #c = :v2');
    expect(e.or(e.and(a, b))).toBe('#a = :v0 AND #b = :v1');
    // Operators inside a function call or a parenthesised group are not the fragment's own.
    expect(e.and(e.not(e.or(a, b)), c)).toBe('NOT (#a = :v0 OR #b = :v1) AND #c = :v2');
  });

  it('JoinsWhenFragmentsWithAndEachInParenthesesOnce', () => {
    const e = new Expression();
    e.when(e.exists('id'))
      .when(e.or(e.notExists('holder'), e.lt('busyUntil', 't')))
      .when(`(${e.eq('a', 1)} OR ${e.eq('b', 2)})`)
      .when(`(${e.eq('c', 3)}) OR (${e.eq('d', 4)})`)
      .set('holder', 'job-1');
    // DynamoDB refuses `((x))`: a fragment wholly in parentheses gets no second pair.
    expect(e.build().ConditionExpression).toBe(
      '(attribute_exists(#id)) AND (attribute_not_exists(#holder) OR #busyUntil < :v0) AND (#a = :v1 OR #b = :v2) AND ((#c = :v3) OR (#d = :v4))',
    );
  });
});

describe('Expression: queries and scans', () => {
  it('BuildsAKeyConditionAndAnOptionalFilter', () => {
    const e = new Expression();
    expect(e.forQuery(e.and(e.eq('pk', 'ENDPOINT#e1'), e.beginsWith('sk', 'WAIT#')), e.or(e.notExists('notBefore'), e.le('notBefore', 't')))).toEqual({
      KeyConditionExpression: '#pk = :v0 AND begins_with(#sk, :v1)',
      FilterExpression: 'attribute_not_exists(#notBefore) OR #notBefore <= :v2',
      ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', '#notBefore': 'notBefore' },
      ExpressionAttributeValues: { ':v0': 'ENDPOINT#e1', ':v1': 'WAIT#', ':v2': 't' },
    });
    const scan = new Expression();
    expect(scan.forScan(scan.eq('sk', 'BATCH'))).toEqual({ FilterExpression: '#sk = :v0', ExpressionAttributeNames: { '#sk': 'sk' }, ExpressionAttributeValues: { ':v0': 'BATCH' } });
  });

  it('RefusesUpdateClausesOrWriteConditionsInAQuery', () => {
    const e = new Expression().set('a', 1);
    expect(() => e.forQuery(e.eq('pk', 'x'))).toThrow(RangeError);
    const c = new Expression();
    c.when(c.exists('pk'));
    expect(() => c.forScan()).toThrow(RangeError);
  });
});

describe('transaction items', () => {
  it('NamesEachItemAndAsksForTheStoredItemOnlyWhereTheCallerDecidesFromIt', () => {
    const e = new Expression();
    e.when(e.exists('pk')).increment('active', -1);
    expect(updateItem('tenant', 'calls', { pk: 'TENANT#t', sk: 'TENANT' }, e, { returnStored: true })).toEqual({
      name: 'tenant',
      Update: {
        TableName: 'calls',
        Key: { pk: 'TENANT#t', sk: 'TENANT' },
        UpdateExpression: 'SET #active = #active + :v0',
        ConditionExpression: '(attribute_exists(#pk))',
        ExpressionAttributeNames: { '#pk': 'pk', '#active': 'active' },
        ExpressionAttributeValues: { ':v0': -1 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
    expect(putItem('list page 0', 'calls', { pk: 'p', sk: 's' })).toEqual({ name: 'list page 0', Put: { TableName: 'calls', Item: { pk: 'p', sk: 's' } } });
    const check = new Expression();
    expect(conditionCheck('tenant', 'calls', { pk: 'p', sk: 's' }, check.when(check.exists('pk')))).toEqual({
      name: 'tenant',
      ConditionCheck: { TableName: 'calls', Key: { pk: 'p', sk: 's' }, ConditionExpression: '(attribute_exists(#pk))', ExpressionAttributeNames: { '#pk': 'pk' } },
    });
  });

  it('RefusesAnUpdateThatChangesNothingAPutWithUpdateClausesAndACheckWithoutACondition', () => {
    expect(() => updateItem('x', 't', { pk: 'p' }, new Expression())).toThrow(RangeError);
    expect(() => putItem('x', 't', { pk: 'p' }, new Expression().set('a', 1))).toThrow(RangeError);
    expect(() => conditionCheck('x', 't', { pk: 'p' }, new Expression())).toThrow(RangeError);
  });
});
