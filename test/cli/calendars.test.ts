import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { runCliAt } from '../support/cli.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

let runtime: LocalRuntime;

beforeAll(async () => {
  process.env['LOG_LEVEL'] ??= 'ERROR';
  runtime = await startTestRuntime({ port: 0, timeScale: 1 });
});

afterAll(async () => {
  await runtime?.stop();
});

/** Runs one CLI command line in-process against the local runtime. */
const ops = (...argv: string[]) => runCliAt(runtime.url, argv);

const settings = { provider: 'google', timezone: 'Europe/Berlin', bookableHours: { mon: [['09:00', '17:00']] }, credentials: { clientId: 'cli-client', clientSecret: 'cli-secret', refreshToken: 'cli-refresh' } };

describe('ops calendars, and the local runtime’s built-in calendar', () => {
  it('PutsGetsListsAndDeletes_AsTheTenantAndAsAnOperator_NeverPrintingCredentials', async () => {
    const tenant = await fetch(`${runtime.url}/v1/tenants/cal-cli`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2 }) });
    expect(tenant.status).toBe(200);
    const key = (await ops('keys', 'create', 'cal-cli')).stdout.trim();
    const dir = await mkdtemp(join(tmpdir(), 'cal-cli-'));
    const file = join(dir, 'sales.json');
    await writeFile(file, JSON.stringify(settings));

    const put = await ops('--api-key', key, 'calendars', 'put', 'sales', file);
    expect(put.code, put.stderr).toBe(0);
    expect(put.stdout).toContain('sales: google primary, Europe/Berlin, mon 09:00–17:00; credentials stored');
    // Without credentials, a new calendar is the API's 400 (exit 1); an update keeps them.
    await writeFile(file, JSON.stringify({ ...settings, credentials: undefined, timezone: 'UTC' }));
    expect((await ops('--api-key', key, 'calendars', 'put', 'support', file)).code).toBe(1);
    expect((await ops('calendars', 'put', 'sales', file, '--tenant', 'cal-cli')).stdout).toContain('UTC');

    const got = await ops('--api-key', key, 'calendars', 'get', 'sales', '--json');
    expect(JSON.parse(got.stdout)).toMatchObject({ calendarId: 'sales', timezone: 'UTC', credentialsStored: true });
    const listed = await ops('calendars', 'list', '--tenant', 'cal-cli');
    expect(listed.stdout).toMatch(/CALENDAR\s+PROVIDER\s+ZONE\s+CREDENTIALS\s+UPDATED/);
    expect(listed.stdout).toContain('sales');
    // An operator must name the tenant.
    expect((await ops('calendars', 'list')).code).toBe(1);
    for (const output of [put, got, listed]) for (const secret of Object.values(settings.credentials)) expect(output.stdout).not.toContain(secret);

    // The calendar context's provider talks to the built-in simulator, with the credentials as stored.
    const calendar = runtime.system.calendar;
    const loaded = await calendar.loadCalendar('cal-cli', 'sales');
    expect(loaded?.access?.credentials).toEqual(settings.credentials);
    const now = Date.now();
    const busy = await calendar.provider.freeBusy(loaded!.access!, now, now + 3600_000, { deadline: now + 2_500 });
    expect(busy).toEqual({ type: 'ok', busy: [] });
    expect(runtime.calendarSimulator.requests.map((r) => r.op)).toEqual(['token', 'freeBusy']);

    const deleted = await ops('--api-key', key, 'calendars', 'delete', 'sales');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await ops('--api-key', key, 'calendars', 'get', 'sales')).code).toBe(1);
  });
});
