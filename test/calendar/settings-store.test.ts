import { ScanCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/platform/clock.ts';
import { transact } from '../../functions/platform/dynamo.ts';
import { LocalSecretKey, SecretKeyError } from '../../functions/platform/secret-key.ts';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { CalendarCredentials } from '../../functions/calendar/credentials.ts';
import { calendarKey } from '../../functions/calendar/model.ts';
import { calendarLoader, CalendarSettingsStore } from '../../functions/calendar/settings-store.ts';
import type { CalendarSettingsInput } from '../../functions/calendar/settings-store.ts';
import { freshTables } from '../support/dynamo.ts';

const settings: CalendarSettingsInput = { provider: 'google', providerCalendarId: 'primary', timezone: 'Europe/Berlin', bookableHours: { mon: [['09:00', '17:00']] } };
const credentials = { clientId: 'client.apps.googleusercontent.com', clientSecret: 'shh', refreshToken: '1//refresh' };
const NOW = Date.parse('2026-03-02T10:00:00Z');

async function fixture() {
  const { clients, tableNames } = await freshTables();
  const clock = new ManualClock(NOW);
  const store = new CalendarSettingsStore(clients.dynamo, tableNames.calendar);
  const sealer = new CalendarCredentials(LocalSecretKey.generate(), clock);
  const items = async () => {
    const result = await clients.dynamo.send(new ScanCommand({ TableName: tableNames.calendar, ConsistentRead: true }));
    return (result.Items ?? []).sort((a, b) => `${String(a['pk'])}|${String(a['sk'])}`.localeCompare(`${String(b['pk'])}|${String(b['sk'])}`));
  };
  return { clients, tableNames, clock, store, sealer, items, load: calendarLoader(store, sealer) };
}

describe('calendar settings store (DynamoDB Local)', () => {
  it('PutsTheCalendarAndItsListingEntryUnderTheTenantsKeys_CredentialsSealedNeverInTheClear', async () => {
    const fx = await fixture();
    const acme = operatorScope('acme');
    const sealed = await fx.sealer.seal('acme', 'sales', credentials);
    const outcome = await fx.store.put(acme, 'sales', settings, sealed, NOW);
    expect(outcome).toMatchObject({ committed: true, created: true, stored: { calendarId: 'sales', timezone: 'Europe/Berlin', sealedCredentials: sealed } });
    const items = await fx.items();
    expect(items.map((i) => [i['pk'], i['sk']])).toEqual([
      ['TENANT#acme#CAL#sales', 'CALENDAR'],
      ['TENANT#acme#CALENDARS', 'sales'],
    ]);
    // Every tenant-owned key starts with the tenant; nothing stored holds a credential in the clear.
    expect(items.every((i) => String(i['pk']).startsWith('TENANT#acme#'))).toBe(true);
    const stored = JSON.stringify(items);
    for (const secret of Object.values(credentials)) expect(stored).not.toContain(secret);
    // The loader opens them: the provider's access.
    expect((await fx.load('acme', 'sales'))?.access).toEqual({ providerCalendarId: 'primary', timeZone: 'Europe/Berlin', credentials });
  });

  it('ANewCalendarWithoutCredentialsIsRefusedAndWritesNothing_AnUpdateWithoutThemKeepsTheStoredOnes', async () => {
    const fx = await fixture();
    const acme = operatorScope('acme');
    expect(await fx.store.put(acme, 'sales', settings, undefined, NOW)).toEqual({ committed: false, reason: 'credentials_required' });
    expect(await fx.items()).toEqual([]);

    const sealed = await fx.sealer.seal('acme', 'sales', credentials);
    await fx.store.put(acme, 'sales', settings, sealed, NOW);
    const updated = await fx.store.put(acme, 'sales', { ...settings, timezone: 'America/New_York' }, undefined, NOW + 60_000);
    expect(updated).toMatchObject({ committed: true, created: false, stored: { timezone: 'America/New_York', sealedCredentials: sealed, updatedAt: '2026-03-02T10:01:00.000Z' } });
    expect((await fx.store.get('acme', 'sales'))?.createdAt).toBe('2026-03-02T10:00:00.000Z');
  });

  it('CredentialsSealedForOneCalendarDoNotOpenForAnotherOrAnotherTenant', async () => {
    const fx = await fixture();
    const sealed = await fx.sealer.seal('acme', 'sales', credentials);
    await expect(fx.sealer.open('acme', 'support', sealed)).rejects.toBeInstanceOf(SecretKeyError);
    await expect(fx.sealer.open('other', 'sales', sealed)).rejects.toBeInstanceOf(SecretKeyError);
    expect(await fx.sealer.open('acme', 'sales', sealed)).toEqual(credentials);
  });

  it('ListsOnlyTheScopesCalendarsInIdOrder_APageAtATime', async () => {
    const fx = await fixture();
    for (const [tenant, id] of [['acme', 'c'], ['acme', 'a'], ['other', 'b'], ['acme', 'b']] as const) {
      await fx.store.put(operatorScope(tenant), id, settings, await fx.sealer.seal(tenant, id, credentials), NOW);
    }
    const first = await fx.store.list(operatorScope('acme'), 2);
    expect(first.calendars.map((c) => c.calendarId)).toEqual(['a', 'b']);
    const second = await fx.store.list(operatorScope('acme'), 2, first.cursor);
    expect(second.calendars.map((c) => c.calendarId)).toEqual(['c']);
    expect((await fx.store.list(operatorScope('other'), 10)).calendars.map((c) => [c.tenantId, c.calendarId])).toEqual([['other', 'b']]);
    // A cursor is its tenant's: another tenant's listing refuses it.
    await expect(fx.store.list(operatorScope('other'), 2, first.cursor)).rejects.toThrow(/cursor/);
  });

  it('ABatchRecordsItselfOnTheCalendarInItsOwnTransaction_RefusedWhenTheCalendarIsGone', async () => {
    const fx = await fixture();
    const acme = operatorScope('acme');
    await fx.store.put(acme, 'sales', settings, await fx.sealer.seal('acme', 'sales', credentials), NOW);
    expect(await transact(fx.clients.dynamo, [fx.store.useForBatchItem('acme', 'sales', 'b_acme.1')])).toEqual({ committed: true });
    expect(await transact(fx.clients.dynamo, [fx.store.useForBatchItem('acme', 'sales', 'b_acme.2')])).toEqual({ committed: true });
    expect(await fx.store.get('acme', 'sales')).toMatchObject({ batchIds: ['b_acme.1', 'b_acme.2'], uses: 2 });
    const missing = await transact(fx.clients.dynamo, [fx.store.useForBatchItem('acme', 'nope', 'b_acme.3')]);
    expect(missing.committed).toBe(false);
    expect(!missing.committed && missing.refused['calendar']?.code).toBe('ConditionalCheckFailed');
    expect(await fx.store.get('acme', 'nope')).toBeUndefined();
  });

  it('DeleteIsConditionalOnNoBatchAddedSinceItsCheck_AndRemovesTheListingEntry', async () => {
    const fx = await fixture();
    const acme = operatorScope('acme');
    await fx.store.put(acme, 'sales', settings, await fx.sealer.seal('acme', 'sales', credentials), NOW);
    const read = await fx.store.get('acme', 'sales');
    // A batch commits between the delete's check and its write.
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [fx.store.useForBatchItem('acme', 'sales', 'b_acme.1')] }));
    expect(await fx.store.delete(acme, 'sales', read!.uses)).toBe('changed');
    expect(await fx.store.get('acme', 'sales')).toBeDefined();

    const again = await fx.store.get('acme', 'sales');
    expect(await fx.store.delete(acme, 'sales', again!.uses)).toBe('deleted');
    expect(await fx.items()).toEqual([]);
    expect(await fx.store.delete(acme, 'sales', 0)).toBe('absent');
  });

  it('ForgetsFinishedBatchesOnlyIfNothingWasAddedSince', async () => {
    const fx = await fixture();
    const acme = operatorScope('acme');
    await fx.store.put(acme, 'sales', settings, await fx.sealer.seal('acme', 'sales', credentials), NOW);
    for (const id of ['b_acme.1', 'b_acme.2']) await transact(fx.clients.dynamo, [fx.store.useForBatchItem('acme', 'sales', id)]);
    expect(await fx.store.forgetBatches(acme, 'sales', ['b_acme.1'], 1)).toBe(false);
    expect(await fx.store.forgetBatches(acme, 'sales', ['b_acme.1'], 2)).toBe(true);
    expect(await fx.store.get('acme', 'sales')).toMatchObject({ batchIds: ['b_acme.2'], uses: 2 });
    expect(await fx.store.forgetBatches(acme, 'sales', ['b_acme.2'], 2)).toBe(true);
    expect((await fx.store.get('acme', 'sales'))?.batchIds).toEqual([]);
    expect((await fx.items()).find((i) => i['sk'] === 'CALENDAR')).not.toHaveProperty('batchIds');
  });

  it('TheLoaderAnswersUndefinedForNoSuchCalendar_AndNoAccessWithoutAKeyToOpenWith', async () => {
    const fx = await fixture();
    expect(await fx.load('acme', 'nope')).toBeUndefined();
    await fx.store.put(operatorScope('acme'), 'sales', settings, await fx.sealer.seal('acme', 'sales', credentials), NOW);
    await expect(calendarLoader(fx.store, undefined)('acme', 'sales')).rejects.toThrow(/no key to open calendar credentials/);
    expect(calendarKey('acme', 'sales')).toEqual({ pk: 'TENANT#acme#CAL#sales', sk: 'CALENDAR' });
  });
});
