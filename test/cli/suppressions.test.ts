import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLocalRuntime } from '../../functions/local/runtime.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { runCliAt } from '../support/cli.ts';

let runtime: LocalRuntime;

beforeAll(async () => {
  process.env['LOG_LEVEL'] ??= 'ERROR';
  runtime = await startLocalRuntime({ port: 0, dataDir: undefined, timeScale: 0.001 });
});

afterAll(async () => {
  await runtime?.stop();
});

/** Runs one CLI command line in-process against the local runtime. */
const ops = (...argv: string[]) => runCliAt(runtime.url, argv);

async function opsJson<T>(...argv: string[]): Promise<T> {
  const result = await ops(...argv, '--json');
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

describe('ops suppressions', () => {
  it('AddsListsRemovesAndImports_AsTheTenantAndAsAnOperator', async () => {
    const put = await fetch(`${runtime.url}/v1/tenants/supp-cli`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2 }) });
    expect(put.status).toBe(200);
    const key = (await ops('keys', 'create', 'supp-cli')).stdout.trim();

    const added = await ops('--api-key', key, 'suppressions', 'add', '+1 415 555 0101', '--reason', 'asked');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('suppressed +14155550101 (api: asked)');
    expect((await ops('suppressions', 'add', '+14155550102', '--tenant', 'supp-cli')).code).toBe(0);
    // An operator must name the tenant; a bad number is the API's 400, exit 1.
    expect((await ops('suppressions', 'list')).code).toBe(1);
    expect((await ops('--api-key', key, 'suppressions', 'add', '12')).code).toBe(1);

    const listed = await opsJson<{ suppressions: { number: string }[] }>('--api-key', key, 'suppressions', 'list');
    expect(listed.suppressions.map((e) => e.number).sort()).toEqual(['+14155550101', '+14155550102']);
    const text = await ops('suppressions', 'list', '--tenant', 'supp-cli');
    expect(text.stdout).toMatch(/NUMBER\s+SOURCE\s+SINCE\s+REASON/);
    expect(text.stdout).toContain('+14155550101');

    const removed = await ops('--api-key', key, 'suppressions', 'remove', '+14155550101');
    expect(removed.code, removed.stderr).toBe(0);
    expect((await ops('--api-key', key, 'suppressions', 'remove', '+14155550101')).code).toBe(1);

    const dir = await mkdtemp(join(tmpdir(), 'supp-cli-'));
    const file = join(dir, 'numbers.csv');
    await writeFile(file, 'number,reason\n+14155550103,complaint\n+14155550104,\n');
    const started = await opsJson<{ importId: string; total: number }>('--api-key', key, 'suppressions', 'import', file);
    expect(started.total).toBe(2);
    await vi.waitFor(
      async () => {
        const status = await opsJson<{ status: string; written: number }>('--api-key', key, 'suppressions', 'import-status', started.importId);
        expect(status).toMatchObject({ status: 'Done', written: 2 });
      },
      { timeout: 20_000, interval: 100 },
    );
    const after = await opsJson<{ suppressions: { number: string; source: string }[] }>('suppressions', 'list', '--tenant', 'supp-cli');
    expect(after.suppressions.map((e) => [e.number, e.source]).sort()).toEqual([
      ['+14155550102', 'api'],
      ['+14155550103', 'import'],
      ['+14155550104', 'import'],
    ]);
    await writeFile(file, 'number\nnope\n');
    const bad = await ops('--api-key', key, 'suppressions', 'import', file);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('invalid_csv');
  });
});
