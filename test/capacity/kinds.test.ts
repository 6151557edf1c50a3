import { describe, expect, it } from 'vitest';
import { pricedItemKinds } from '../../bench/capacity/kinds.ts';
import { apiKeysPartition } from '../../functions/calls/keys.ts';
import { attemptsPartition, receivedPartition } from '../../functions/webhooks/attempts.ts';
import { endpointIds, endpointPartition, waitListPartition } from '../../functions/webhooks/endpoint.ts';
import { EVENT_RETENTION_SECONDS, newEvent } from '../../functions/webhooks/events.ts';
import { keptKey } from '../../functions/webhooks/kept-events.ts';

const kind = (name: string) => pricedItemKinds.find((k) => k.name === name)!;
const endpointId = endpointIds.make('acme-co', '6aa48ebba1494eb8a04c3a8086629b17');
const event = newEvent({ tenantId: 'acme-co', type: 'call.completed', data: {} }, Date.parse('2026-12-03T06:00:00Z'));

describe('the kinds the capacity report prices apart', () => {
  it('TellEachKindByTheKeyTheCodeWritesAndNoOtherKey', () => {
    const keys = {
      attemptRows: attemptsPartition(endpointId),
      keptEvents: keptKey(event).pk,
      apiKeys: apiKeysPartition('acme-co'),
      deliveryEndpointReads: endpointPartition(endpointId),
    };
    const others = [waitListPartition(endpointId, 1), receivedPartition(endpointId), 'TENANT#acme-co', 'TENANT#acme-co#BATCH#b1', 'ENDPOINTS'];
    for (const [name, pk] of Object.entries(keys)) {
      expect(kind(name).pk.test(pk), `${name} matches ${pk}`).toBe(true);
      for (const [otherName, otherPk] of Object.entries(keys)) if (otherName !== name) expect(kind(name).pk.test(otherPk), `${name} does not match ${otherPk}`).toBe(false);
      for (const other of others) expect(kind(name).pk.test(other), `${name} does not match ${other}`).toBe(false);
    }
  });

  it('KeepAttemptsAndEventsAsLongAsTheirTtlAndCountOnlyTheDeliverersEndpointReads', () => {
    expect(kind('attemptRows').retentionDays).toBe(EVENT_RETENTION_SECONDS / 86_400);
    expect(kind('keptEvents').retentionDays).toBe(30);
    expect(kind('deliveryEndpointReads')).toMatchObject({ source: 'job:webhook.deliver', only: 'reads' });
  });
});
