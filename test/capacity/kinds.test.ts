import { describe, expect, it } from 'vitest';
import { pricedItemKinds } from '../../bench/capacity/kinds.ts';
import { apiKeysPartition } from '../../functions/calls/keys.ts';
import { attemptKey, batchIds, contactDataKey, contactKey, externalIdKey, listKey } from '../../functions/calls/model.ts';
import { attemptsPartition, receivedPartition } from '../../functions/webhooks/attempts.ts';
import { endpointIds, endpointPartition, waitListPartition } from '../../functions/webhooks/endpoint.ts';
import { EVENT_RETENTION_SECONDS, newEvent } from '../../functions/webhooks/events.ts';
import { keptKey } from '../../functions/webhooks/kept-events.ts';
import { CAP_SLOT_TTL_MS, capSlotKey } from '../../functions/calls/compliance/cap.ts';
import { deferEntrySk, deferPartition, markSk } from '../../functions/calls/compliance/dial-items.ts';
import { suppressionAuditKey, suppressionKey } from '../../functions/calls/compliance/suppression.ts';

const batchId = batchIds.make('acme-co', 'c0ffee00c0ffee00c0ffee00c0ffee00');
const kind = (name: string) => pricedItemKinds.find((k) => k.name === name)!;
const endpointId = endpointIds.make('acme-co', '6aa48ebba1494eb8a04c3a8086629b17');
const event = newEvent({ tenantId: 'acme-co', type: 'call.completed', data: {} }, Date.parse('2026-12-03T06:00:00Z'));

describe('the kinds the capacity report prices apart', () => {
  it('TellEachKindByTheKeyTheCodeWritesAndNoOtherKey', () => {
    const keyOf = (pk: string, sk?: string) => ({ pk, ...(sk !== undefined ? { sk } : {}) });
    const keys: Record<string, { pk: string; sk?: string }[]> = {
      attemptRows: [keyOf(attemptsPartition(endpointId))],
      keptEvents: [keyOf(keptKey(event).pk)],
      apiKeys: [keyOf(apiKeysPartition('acme-co'))],
      deliveryEndpointReads: [keyOf(endpointPartition(endpointId))],
      contactData: [contactDataKey(batchId, '+14155550100'), externalIdKey(batchId, 'crm-1')],
      callAttempts: [attemptKey(batchId, '+14155550100', 2)],
      capSlots: [capSlotKey('acme-co', '+14155550100', 0), capSlotKey('acme-co', '+14155550100', 19)],
      deferrals: [keyOf(deferPartition(batchId), deferEntrySk(1, Date.parse('2026-12-03T17:00:00Z'), 0, 3)), keyOf(deferPartition(batchId), markSk(1, 0, 3))],
    };
    // Kinds that share their keys with another by design: told apart by action or by reads and writes (below).
    const shared: Record<string, { pk: string; sk?: string }[]> = {
      suppressionCheck: [suppressionKey('acme-co', '+14155550100')],
      suppressionList: [suppressionKey('acme-co', '+14155550100'), suppressionAuditKey('acme-co', '+14155550100', '2026-12-03T06:00:00.000Z', 'removed')],
      capQuery: [capSlotKey('acme-co', '+14155550100', 0)],
    };
    for (const [name, own] of Object.entries(shared)) for (const key of own) expect(kind(name).pk.test(key.pk), `${name} matches ${JSON.stringify(key)}`).toBe(true);
    // The shared kinds match none of the others' keys.
    for (const name of Object.keys(shared)) {
      for (const key of [...Object.values(keys).flat().filter((k) => !k.pk.includes('#CAP#'))]) expect(kind(name).pk.test(key.pk), `${name} does not match ${JSON.stringify(key)}`).toBe(false);
    }
    const others = [
      ...[waitListPartition(endpointId, 1), receivedPartition(endpointId), 'TENANT#acme-co', 'TENANT#acme-co#BATCH#b1', 'ENDPOINTS'].map((pk) => keyOf(pk)),
      // The contact's own item and the batch's rows share the partitions the contact kinds use.
      contactKey(batchId, '+14155550100'),
      listKey(batchId, 1, 0),
    ];
    const matches = (name: string, key: { pk: string; sk?: string }) => kind(name).pk.test(key.pk) && (kind(name).sk === undefined || (key.sk !== undefined && kind(name).sk!.test(key.sk)));
    for (const [name, own] of Object.entries(keys)) {
      for (const key of own) expect(matches(name, key), `${name} matches ${JSON.stringify(key)}`).toBe(true);
      for (const [otherName, otherKeys] of Object.entries(keys)) {
        if (otherName !== name) for (const key of otherKeys) expect(matches(name, key), `${name} does not match ${JSON.stringify(key)}`).toBe(false);
      }
      for (const other of others) expect(matches(name, other), `${name} does not match ${JSON.stringify(other)}`).toBe(false);
    }
  });

  it('KeepAttemptsAndEventsAsLongAsTheirTtlAndCountOnlyTheDeliverersEndpointReads', () => {
    expect(kind('attemptRows').retentionDays).toBe(EVENT_RETENTION_SECONDS / 86_400);
    expect(kind('keptEvents').retentionDays).toBe(30);
    expect(kind('deliveryEndpointReads')).toMatchObject({ source: 'job:webhook.deliver', only: 'reads' });
  });

  it('PriceTheDialsSuppressionCheckApartFromTheListAndTheCapsReadApartFromItsSlots', () => {
    expect(kind('suppressionCheck')).toMatchObject({ actions: ['check'], only: 'writes' });
    expect(kind('suppressionList').actions).not.toContain('check');
    expect(kind('capQuery').only).toBe('reads');
    expect(kind('capSlots')).toMatchObject({ only: 'writes', retentionDays: CAP_SLOT_TTL_MS / 86_400_000 });
    // A key with more segments before CAP is not a slot partition: a tenant id never contains '#'.
    expect(kind('capSlots').pk.test('TENANT#acme-co#BATCH#x#CAP#+1415')).toBe(false);
  });
});
