import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { callsFixture } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const credentials = { clientId: 'client.apps.googleusercontent.com', clientSecret: 'very-secret', refreshToken: '1//refresh-token' };
const body = { provider: 'google', timezone: 'Europe/Berlin', bookableHours: { mon: [['09:00', '12:00'], ['13:00', '17:00']], fri: [['09:00', '13:00']] }, credentials };
const appointments = { calendarId: 'sales', durationMinutes: 30, bufferMinutes: 10, maxDaysAhead: 7 };

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

async function fixture() {
  const fx = await callsFixture({ workers: false });
  fixtures.push(fx);
  for (const tenantId of ['acme', 'other']) expect((await fx.api('PUT', `/v1/tenants/${tenantId}`, { concurrencyLimit: 2 })).status).toBe(200);
  const as = async (tenantId: string) => ({ authorization: `Bearer ${await fx.keyOf(tenantId)}` });
  const call = async (tenantId: string, method: string, path: string, payload?: unknown) => fx.send(method, path, payload, await as(tenantId));
  const calendarItems = async () => {
    const result = await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.calendar, ConsistentRead: true }));
    return (result.Items ?? []).sort((a, b) => `${String(a['pk'])}|${String(a['sk'])}`.localeCompare(`${String(b['pk'])}|${String(b['sk'])}`));
  };
  return { fx, call, calendarItems };
}

const paths = (response: { body: { issues?: { path: string }[] } }) => (response.body.issues ?? []).map((i) => i.path);

describe('calendar settings routes', () => {
  it('PutGetListDelete_AndNoAnswerEverCarriesTheCredentials', async () => {
    const { call, calendarItems } = await fixture();
    const put = await call('acme', 'PUT', '/v1/calendars/sales', body);
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      calendarId: 'sales',
      provider: 'google',
      providerCalendarId: 'primary',
      timezone: 'Europe/Berlin',
      bookableHours: body.bookableHours,
      credentialsStored: true,
      updatedAt: '2026-01-05T09:00:00.000Z',
    });
    const get = await call('acme', 'GET', '/v1/calendars/sales');
    expect(get).toEqual({ status: 200, body: put.body });
    const list = await call('acme', 'GET', '/v1/calendars');
    expect(list).toEqual({ status: 200, body: { calendars: [put.body] } });
    // Neither the answers nor the table hold a credential in the clear.
    for (const text of [JSON.stringify([put, get, list]), JSON.stringify(await calendarItems())]) {
      for (const secret of Object.values(credentials)) expect(text).not.toContain(secret);
    }
    // An update without credentials keeps them.
    const update = await call('acme', 'PUT', '/v1/calendars/sales', { ...body, credentials: undefined, providerCalendarId: 'team@group.calendar.google.com' });
    expect(update.status).toBe(200);
    expect(update.body).toMatchObject({ providerCalendarId: 'team@group.calendar.google.com', credentialsStored: true });
    const deleted = await call('acme', 'DELETE', '/v1/calendars/sales');
    expect(deleted).toMatchObject({ status: 200, body: { calendarId: 'sales', credentialsStored: true } });
    expect(await calendarItems()).toEqual([]);
    expect((await call('acme', 'GET', '/v1/calendars/sales')).status).toBe(404);
    expect((await call('acme', 'DELETE', '/v1/calendars/sales')).status).toBe(404);
  });

  it('BadBodiesAre400WithFieldPathsAndWriteNothing_ANewCalendarNeedsCredentials', async () => {
    const { call, calendarItems } = await fixture();
    const cases: [unknown, string[]][] = [
      [{ ...body, credentials: undefined }, ['body.credentials']],
      [{ ...body, timezone: 'Mars/Olympus' }, ['body.timezone']],
      [{ ...body, bookableHours: { mon: [['09:03', '17:00']] } }, ['body.bookableHours.mon.0.0']],
      [{ ...body, bookableHours: { mon: [['17:00', '09:00']] } }, ['body.bookableHours.mon.0.1']],
      [{ ...body, provider: 'outlook' }, ['body.provider']],
      [{ ...body, credentials: { clientId: 'x', clientSecret: 'y' } }, ['body.credentials.refreshToken']],
      [{ ...body, colour: 'blue' }, ['body.colour']],
    ];
    for (const [payload, expected] of cases) {
      const response = await call('acme', 'PUT', '/v1/calendars/sales', payload);
      expect(response.status, JSON.stringify(payload)).toBe(400);
      expect(paths(response), JSON.stringify(payload)).toEqual(expected);
    }
    expect((await call('acme', 'PUT', '/v1/calendars/not%20an%20id', body)).status).toBe(400);
    expect(await calendarItems()).toEqual([]);
  });

  it('AnotherTenantsCalendarIsNotFound_AndItsIdIsFreeForEachTenant', async () => {
    const { call } = await fixture();
    expect((await call('acme', 'PUT', '/v1/calendars/sales', body)).status).toBe(200);
    expect((await call('other', 'GET', '/v1/calendars/sales')).status).toBe(404);
    expect((await call('other', 'DELETE', '/v1/calendars/sales')).status).toBe(404);
    expect(await call('other', 'GET', '/v1/calendars')).toEqual({ status: 200, body: { calendars: [] } });
    // `other` updating "its" sales without credentials creates nothing (it has none), and touches acme's not at all.
    expect(paths(await call('other', 'PUT', '/v1/calendars/sales', { ...body, credentials: undefined }))).toEqual(['body.credentials']);
    expect((await call('acme', 'GET', '/v1/calendars/sales')).status).toBe(200);
  });

  it('ABatchNamingACalendarTheTenantDoesNotHaveIs400AtAppointmentsCalendarIdAndWritesNothing', async () => {
    const { fx, call, calendarItems } = await fixture();
    expect((await call('acme', 'PUT', '/v1/calendars/sales', body)).status).toBe(200);
    // Only acme has `sales`: other's batch naming it is refused, as is acme's naming one it does not have.
    const before = await fx.callsItems();
    const jobsBefore = await fx.allJobs();
    for (const [tenantId, calendarId] of [['other', 'sales'], ['acme', 'support']] as const) {
      const refused = await call(tenantId, 'POST', '/v1/batches', { contacts: [{ number: '+14155550100' }], maxAttempts: 1, appointments: { ...appointments, calendarId } });
      expect(refused.status).toBe(400);
      expect(paths(refused)).toEqual(['body.appointments.calendarId']);
    }
    const invalid = await call('acme', 'POST', '/v1/batches', { contacts: [{ number: '+14155550100' }], maxAttempts: 1, appointments: { ...appointments, durationMinutes: 33 } });
    expect(paths(invalid)).toEqual(['body.appointments.durationMinutes']);
    expect(await fx.callsItems()).toEqual(before);
    expect(await fx.allJobs()).toEqual(jobsBefore);
    expect((await calendarItems()).find((i) => i['sk'] === 'CALENDAR')).not.toHaveProperty('batchIds');
  });

  it('ABatchShowsItsAppointments_AndTheCalendarCannotBeDeletedWhileALiveBatchBooksIntoIt', async () => {
    const { call } = await fixture();
    expect((await call('acme', 'PUT', '/v1/calendars/sales', body)).status).toBe(200);
    const created = await call('acme', 'POST', '/v1/batches', { contacts: [{ number: '+14155550100' }], maxAttempts: 1, appointments: { calendarId: 'sales', durationMinutes: 30 } });
    expect(created.status).toBe(201);
    const batchId = created.body.batchId as string;
    const shown = await call('acme', 'GET', `/v1/batches/${batchId}`);
    expect(shown.body.appointments).toEqual({ calendarId: 'sales', durationMinutes: 30, bufferMinutes: 0, maxDaysAhead: 14 });
    // A batch without appointments shows null.
    const plain = await call('acme', 'POST', '/v1/batches', { contacts: [{ number: '+14155550101' }], maxAttempts: 1 });
    expect((await call('acme', 'GET', `/v1/batches/${plain.body.batchId as string}`)).body.appointments).toBeNull();

    const refused = await call('acme', 'DELETE', '/v1/calendars/sales');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: 'calendar_in_use', batchIds: [batchId] });
    expect((await call('acme', 'GET', '/v1/calendars/sales')).status).toBe(200);

    // Once the batch is deleted it books nothing more: the calendar may go.
    expect((await call('acme', 'DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
    expect((await call('acme', 'DELETE', '/v1/calendars/sales')).status).toBe(200);
    // And a new batch cannot name it any more.
    const late = await call('acme', 'POST', '/v1/batches', { contacts: [{ number: '+14155550102' }], maxAttempts: 1, appointments: { calendarId: 'sales', durationMinutes: 30 } });
    expect(paths(late)).toEqual(['body.appointments.calendarId']);
  });

  it('OperatorsReachTheSameRoutesForTheTenantInThePath', async () => {
    const { fx } = await fixture();
    expect((await fx.send('PUT', '/v1/ops/tenants/acme/calendars/sales', body)).status).toBe(200);
    expect((await fx.send('GET', '/v1/ops/tenants/acme/calendars')).body.calendars.map((c: { calendarId: string }) => c.calendarId)).toEqual(['sales']);
    expect((await fx.send('GET', '/v1/ops/tenants/other/calendars/sales')).status).toBe(404);
    expect((await fx.send('DELETE', '/v1/ops/tenants/acme/calendars/sales')).status).toBe(200);
  });
});
