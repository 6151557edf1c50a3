import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../functions/cli/cli.ts';
import type { LocalRuntime } from '../../functions/local/runtime.ts';
import { probeKind } from '../../functions/ops/probe.ts';
import { runCliAt } from '../support/cli.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

// The schedules of docs/job-layer.md's policy table, written out here rather than read from the code under test.
const WEBHOOK_WAITS_S = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, ...Array.from({ length: 12 }, () => 10 * 3600)]; // 18 attempts → 17 waits
const MAIL_WAITS_S = Array.from({ length: 7 }, (_, i) => 20 * 3 ** i); // 8 attempts → 7 waits: 20 s, then ×3
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

let runtime: LocalRuntime;

beforeAll(async () => {
  process.env['LOG_LEVEL'] ??= 'ERROR';
  runtime = await startTestRuntime({ port: 0, timeScale: 0.001 });
});

afterAll(async () => {
  await runtime?.stop();
});

/** Runs one CLI command line in-process against the local runtime. */
const ops = (...argv: string[]) => runCliAt(runtime.url, argv);

async function opsJson<T = Record<string, unknown>>(...argv: string[]): Promise<T> {
  const result = await ops(...argv, '--json');
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

interface ShownJob {
  id: string;
  state: string;
  attempt: number;
  maxAttempts: number;
  attempts: { attempt: number; outcome: string; error?: string; durationMs: number }[];
}

const waitForState = (id: string, state: string) =>
  vi.waitFor(
    async () => {
      const job = await opsJson<ShownJob>('jobs', 'show', id);
      expect(job.state).toBe(state);
      return job;
    },
    { timeout: 20_000, interval: 100 },
  );

describe('ops CLI against the local runtime', () => {
  let probeId: string;

  it('probe --fail 2 is retried by the job layer and completes on its third attempt', async () => {
    const probe = await ops('probe', '--fail', '2');
    expect(probe.code, probe.stderr).toBe(0);
    probeId = probe.stdout.trim();
    expect(probeId).toMatch(/^[0-9a-f-]{36}$/);

    const job = await waitForState(probeId, 'completed');
    expect(job.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retryable'],
      [2, 'retryable'],
      [3, 'completed'],
    ]);
    expect(job.attempts[0]!.error).toContain('probe failure 1 of 2');

    const shown = await ops('jobs', 'show', probeId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^state\s+completed$/m);
    expect(shown.stdout).toMatch(/^attempt\s+3\/10$/m);
    const history = shown.stdout.slice(shown.stdout.indexOf('attempts\n'));
    expect(history).toMatch(/^#\s+AT\s+DURATION\s+OUTCOME\s+ERROR$/m);
    expect(history).toMatch(/^1\s+\S+Z\s+\d+(\.\d+)? m?s\s+retryable\s+.*probe failure 1 of 2$/m);
    expect(history).toMatch(/^2\s+\S+Z\s+.*retryable\s+.*probe failure 2 of 2$/m);
    expect(history).toMatch(/^3\s+\S+Z\s+.*completed\s+-$/m);
  });

  it('jobs list --state completed --kind ops.probe includes the probe, as a table and as JSON', async () => {
    const listed = await ops('jobs', 'list', '--state', 'completed', '--kind', 'ops.probe');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+KIND\s+STATE\s+ATTEMPT\s+SCHEDULED\s+DISCARD\s+LAST ERROR$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${probeId}\\s+ops\\.probe\\s+completed\\s+3/10\\s+\\S+Z\\s+-\\s+probe failure 2 of 2$`, 'm'));

    const page = await opsJson<{ jobs: { id: string; state: string; kind: string }[] }>('jobs', 'list', '--state', 'completed', '--kind', 'ops.probe');
    expect(page.jobs.find((j) => j.id === probeId)).toMatchObject({ state: 'completed', kind: 'ops.probe' });
    expect(page.jobs.every((j) => j.state === 'completed' && j.kind === 'ops.probe')).toBe(true);

    const otherKind = await opsJson<{ jobs: unknown[] }>('jobs', 'list', '--state', 'completed', '--kind', 'webhook.deliver');
    expect(otherKind.jobs).toEqual([]);
  });

  it('jobs retry of a completed job fails with the 409 message and exit code 1', async () => {
    const retried = await ops('jobs', 'retry', probeId);
    expect(retried.code).toBe(1);
    expect(retried.stderr.trim()).toBe(`409 conflict: cannot retry job ${probeId} in state completed`);
    expect(retried.stdout).toBe('');
  });

  it('jobs cancel stops a scheduled job, and jobs retry brings it back to run now', async () => {
    // A day ahead: at TIME_SCALE 0.001 that is 86 s of real time, well past this test.
    const { id } = await runtime.jobs.client.enqueue(probeKind, { failTimes: 0 }, { delayMs: 24 * 3_600_000 });
    expect((await opsJson<ShownJob>('jobs', 'show', id)).state).toBe('scheduled');

    const cancelled = await ops('jobs', 'cancel', id);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`cancelled job ${id}: cancelled (attempt 0/10)`);
    expect((await opsJson<{ jobs: { id: string }[] }>('jobs', 'list', '--state', 'cancelled', '--kind', 'ops.probe')).jobs.map((j) => j.id)).toContain(id);

    const again = await ops('jobs', 'cancel', id);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`409 conflict: cannot cancel job ${id} in state cancelled`);

    const retried = await opsJson<ShownJob & { scheduledAt: string }>('jobs', 'retry', id);
    expect(retried.state).toBe('available');
    const done = await waitForState(id, 'completed');
    expect(done.attempts.map((a) => a.outcome)).toEqual(['completed']);
  });

  it('jobs cancel and jobs retry by filter: a dry run counts, then a progress bar and the final count; the retried jobs run', async () => {
    // A day ahead: they wait through this test. No other test leaves an ops.probe scheduled.
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await runtime.jobs.client.enqueue(probeKind, { failTimes: 0, note: 'bulk' }, { delayMs: 24 * 3_600_000 })).id);

    const dry = await ops('jobs', 'cancel', '--state', 'scheduled', '--kind', 'ops.probe', '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout.trim()).toBe('5 jobs match (dry run: none cancelled)');
    expect((await opsJson<ShownJob>('jobs', 'show', ids[0]!)).state).toBe('scheduled');

    const cancelled = await ops('jobs', 'cancel', '--state', 'scheduled', '--kind', 'ops.probe');
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stderr).toContain('[████████████████████████] 5/5 cancelled');
    expect(cancelled.stdout).toMatch(/^cancelled 5 of 5 matching jobs \(to finish an interrupted run, repeat it with --until \S+\)\n$/);
    const listed = await opsJson<{ jobs: { id: string }[] }>('jobs', 'list', '--state', 'cancelled', '--kind', 'ops.probe', '--limit', '200');
    expect(listed.jobs.map((j) => j.id)).toEqual(expect.arrayContaining(ids));

    const retried = await opsJson<{ matched: number; retried: number; until: string }>('jobs', 'retry', '--state', 'cancelled', '--kind', 'ops.probe', '--limit', '3');
    expect(retried).toMatchObject({ matched: 5, retried: 3 });
    const rest = await ops('jobs', 'retry', '--state', 'cancelled', '--kind', 'ops.probe', '--until', retried.until);
    expect(rest.stdout).toMatch(/^retried 2 of 2 matching jobs/);
    for (const id of ids) expect((await waitForState(id, 'completed')).attempts.map((a) => a.outcome)).toEqual(['completed']);
  });

  it('jobs show of an unknown id fails with the 404 message', async () => {
    const shown = await ops('jobs', 'show', 'no-such-job');
    expect(shown.code).toBe(1);
    expect(shown.stderr.trim()).toBe('404 not_found: job no-such-job not found');
  });

  it('probe --json prints {jobId}', async () => {
    const { jobId } = await opsJson<{ jobId: string }>('probe', '--fail', '0', '--note', 'json output');
    expect((await opsJson<ShownJob & { args: unknown }>('jobs', 'show', jobId)).args).toEqual({ failTimes: 0, note: 'json output' });
  });
});

describe('ops CLI: tenants’ keys, and a tenant’s batches and endpoints with its key or as an operator', () => {
  it('endpoints attempts lists the attempt log with --api-key; endpoints recover starts a recovery and shows it by id', async () => {
    const receiver = (await import('node:http')).createServer((_req, res) => res.writeHead(200).end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    try {
      expect((await fetch(`${runtime.url}/v1/tenants/cli-log`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 1 }) })).status).toBe(200);
      const key = (await ops('keys', 'create', 'cli-log')).stdout.trim();
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const registered = await fetch(`${runtime.url}/v1/endpoints`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ url }) });
      const { endpointId } = (await registered.json()) as { endpointId: string };
      const since = new Date(Date.now() - 60_000).toISOString();
      const published = await fetch(`${runtime.url}/v1/dev/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tenantId: 'cli-log', type: 'call.completed', data: { n: 1 } }) });
      const { eventId } = (await published.json()) as { eventId: string };
      const page = await vi.waitFor(
        async () => {
          const listed = await opsJson<{ attempts: { eventId: string; result: string; status: number }[] }>('--api-key', key, 'endpoints', 'attempts', endpointId);
          expect(listed.attempts).toHaveLength(1);
          return listed;
        },
        { timeout: 20_000, interval: 100 },
      );
      expect(page.attempts[0]).toMatchObject({ eventId, result: 'delivered', status: 200 });
      const text = await ops('--api-key', key, 'endpoints', 'attempts', endpointId, '--status', 'delivered');
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain(eventId);

      const started = await opsJson<{ recoveryId: string }>('--api-key', key, 'endpoints', 'recover', endpointId, '--since', since, '--dry-run');
      expect(started.recoveryId).toMatch(/^rcv_/);
      const shown = await vi.waitFor(
        async () => {
          const r = await opsJson<{ status: string; matched: number; requeued: number }>('--api-key', key, 'endpoints', 'recover', endpointId, started.recoveryId);
          expect(r.status).toBe('completed');
          return r;
        },
        { timeout: 20_000, interval: 100 },
      );
      // The one event was received: nothing to recover.
      expect(shown).toMatchObject({ matched: 0, requeued: 0 });
      expect((await ops('--api-key', key, 'endpoints', 'recover', endpointId)).code).toBe(2);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('endpoints update, rotate-secret and delete act on the key’s own endpoint; another tenant’s key gets exit 1 and changes nothing', async () => {
    for (const tenant of ['cli-manage', 'cli-other']) {
      expect((await fetch(`${runtime.url}/v1/tenants/${tenant}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 1 }) })).status).toBe(200);
    }
    const key = (await ops('keys', 'create', 'cli-manage')).stdout.trim();
    const other = (await ops('keys', 'create', 'cli-other')).stdout.trim();
    const registered = await fetch(`${runtime.url}/v1/endpoints`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ url: 'http://127.0.0.1:9/first' }) });
    const { endpointId } = (await registered.json()) as { endpointId: string };

    const updated = await opsJson<{ url: string; eventTypes: string[] | null; description: string | null }>('--api-key', key, 'endpoints', 'update', endpointId, '--url', 'http://127.0.0.1:9/second', '--event-types', 'call.completed,batch.finalised', '--description', 'the CRM');
    expect(updated).toMatchObject({ url: 'http://127.0.0.1:9/second', eventTypes: ['call.completed', 'batch.finalised'], description: 'the CRM' });
    expect((await ops('--api-key', key, 'endpoints', 'update', endpointId)).code).toBe(2);
    const refused = await ops('--api-key', other, 'endpoints', 'update', endpointId, '--description', 'mine now');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/404/);

    const rotated = await opsJson<{ secret: string; previousSecretUntil: string | null }>('--api-key', key, 'endpoints', 'rotate-secret', endpointId);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.previousSecretUntil).not.toBeNull();
    const shown = await ops('--api-key', key, 'endpoints', 'show', endpointId);
    expect(shown.stdout).toContain('note       the CRM');
    expect(shown.stdout).toContain(`previous signs too until ${rotated.previousSecretUntil}`);
    expect((await opsJson<{ previousSecretUntil: string | null }>('--api-key', key, 'endpoints', 'rotate-secret', endpointId, '--expire-old-now')).previousSecretUntil).toBeNull();

    expect((await ops('--api-key', other, 'endpoints', 'delete', endpointId)).code).toBe(1);
    const deleted = await opsJson<{ endpointId: string; purgeJobId: string }>('--api-key', key, 'endpoints', 'delete', endpointId);
    expect(deleted.endpointId).toBe(endpointId);
    expect(deleted.purgeJobId).toMatch(/^webhook\.purge/);
    expect((await ops('--api-key', key, 'endpoints', 'show', endpointId)).code).toBe(1);
    expect((await ops('--api-key', key, 'endpoints', 'delete', endpointId)).code).toBe(1);
  });

  it('keys create prints a key once; --api-key acts as its tenant, the operator through the copies; a revoked key exits 1 naming the key', async () => {
    const tenant = await fetch(`${runtime.url}/v1/tenants/cli-tenant`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2 }) });
    expect(tenant.status).toBe(200);
    const created = await ops('keys', 'create', 'cli-tenant');
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^rdl_cli-tenant\.k_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain('shown once');
    const keyId = key.split('.')[1]!;

    // A batch created as the tenant, with its key.
    const made = await fetch(`${runtime.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ contacts: [{ number: '+14155550142' }], maxAttempts: 1 }),
    });
    const { batchId } = (await made.json()) as { batchId: string };
    expect(batchId).toMatch(/^b_cli-tenant\./);

    // As the tenant: its listing and its batch (--api-key, or REDIAL_API_KEY).
    const listed = await opsJson<{ batches: { batchId: string }[] }>('--api-key', key, 'batches', 'list');
    expect(listed.batches.map((b) => b.batchId)).toEqual([batchId]);
    const byEnv = await runCli(['--api', runtime.url, 'batches', 'show', batchId], { stdout: { write: () => true }, stderr: { write: () => true } }, {
      env: { REDIAL_API_KEY: key },
      credentials: () => Promise.reject(new Error('none needed')),
      now: () => new Date(),
    });
    expect(byEnv).toBe(0);
    // As an operator: one tenant's batches, or every tenant's, and the batch through the operator copy.
    expect((await opsJson<{ batches: { batchId: string }[] }>('batches', 'list', '--tenant', 'cli-tenant')).batches.map((b) => b.batchId)).toEqual([batchId]);
    expect((await opsJson<{ batches: { batchId: string }[] }>('batches', 'list')).batches.map((b) => b.batchId)).toContain(batchId);
    const shown = await ops('batches', 'show', batchId);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`batch      ${batchId} (tenant cli-tenant)`);
    expect((await ops('--api-key', key, 'batches', 'list', '--tenant', 'other')).code).toBe(2);
    expect((await opsJson<{ endpoints: unknown[] }>('--api-key', key, 'endpoints', 'list')).endpoints).toEqual([]);

    const keys = await opsJson<{ keys: { keyId: string; revokedAt: string | null; lastUsedAt: string | null }[] }>('keys', 'list', 'cli-tenant');
    expect(keys.keys).toMatchObject([{ keyId, revokedAt: null }]);
    expect(keys.keys[0]!.lastUsedAt).not.toBeNull();
    const revoked = await ops('keys', 'revoke', 'cli-tenant', keyId);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`revoked ${keyId} of tenant cli-tenant`);
    const refused = await ops('--api-key', key, 'batches', 'list');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('401 unauthorized');
    expect(refused.stderr).toContain('--api-key or REDIAL_API_KEY');
  });
});

describe('ops CLI: batches export', () => {
  it('WritesEveryPageToStdoutInOrder_AsCsvWithOneHeaderOrAsJsonLines_WithTheKeyOrAsAnOperator', async () => {
    expect((await fetch(`${runtime.url}/v1/tenants/cli-export`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 1 }) })).status).toBe(200);
    const key = (await ops('keys', 'create', 'cli-export')).stdout.trim();
    // 600 contacts: three pages of the export; every 100th has a formula for a name.
    const contacts = Array.from({ length: 600 }, (_, i) => ({ number: `+1415555${String(3000 + i)}`, externalId: `c${i}`, variables: { name: i % 100 === 0 ? `=cmd${i}` : `n${i}` } }));
    const made = await fetch(`${runtime.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ contacts, maxAttempts: 1 }),
    });
    expect(made.status, await made.clone().text()).toBe(201);
    const { batchId } = (await made.json()) as { batchId: string };

    const csv = await ops('--api-key', key, 'batches', 'export', batchId, '--format', 'csv');
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.split('\r\n');
    expect(lines[0]).toBe('number,external_id,name,status,code,attempts,recording_url,transcript_url,summary,ended_reason');
    expect(lines.filter((l) => l.startsWith('number,'))).toHaveLength(1);
    const firstColumns = (rows: string[]) => rows.map((l) => l.split(',').slice(0, 3));
    const expected = contacts.map((c) => [c.number, c.externalId, c.variables.name.startsWith('=') ? `'${c.variables.name}` : c.variables.name]);
    expect(firstColumns(lines.slice(1, -1))).toEqual(expected);
    expect(lines.at(-1)).toBe('');

    // As an operator (the operator copy), JSON Lines: the same contacts.
    const jsonl = await ops('batches', 'export', batchId, '--format', 'jsonl');
    expect(jsonl.code, jsonl.stderr).toBe(0);
    const objects = jsonl.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { number: string; externalId: string; variables: { name: string } });
    expect(objects.map((o) => [o.number, o.externalId, o.variables.name])).toEqual(contacts.map((c) => [c.number, c.externalId, c.variables.name]));

    // From a cursor: the rest, without the header (the batch is dialling: states may have moved on since).
    const cursor = (await fetch(`${runtime.url}/v1/batches/${batchId}/export`, { headers: { authorization: `Bearer ${key}` } })).headers.get('link')!.match(/cursor=([^&>]+)/)![1]!;
    const rest = await ops('--api-key', key, 'batches', 'export', batchId, '--cursor', decodeURIComponent(cursor));
    expect(rest.code, rest.stderr).toBe(0);
    expect(firstColumns(rest.stdout.split('\r\n').slice(0, -1))).toEqual(expected.slice(250));

    // Another tenant's batch: exit 1, nothing on stdout.
    const other = await ops('--api-key', key, 'batches', 'export', batchId.replace('cli-export', 'cli-tenant'));
    expect(other.code).toBe(1);
    expect(other.stdout).toBe('');
    expect((await ops('batches', 'export', batchId, '--format', 'xlsx')).code).toBe(2);
  });
});

describe('ops CLI without a server', () => {
  it("policies prints webhook.deliver's 17 waits, 5.32 d in all, and owner.notify's 6.07 h", async () => {
    const { code, stdout } = await ops('policies');
    expect(code).toBe(0);

    const section = (kind: string) => stdout.split('\n\n').find((s) => s.split('\n')[0]!.split(', ').includes(kind)) ?? '';
    const webhook = section('webhook.deliver');
    expect(webhook).toContain('18 attempts; when exhausted: discarded');
    const rows = webhook.split('\n').filter((line) => /^\s+\d+\s{2}/.test(line));
    expect(rows).toHaveLength(WEBHOOK_WAITS_S.length);
    expect(rows[0]).toMatch(/^\s+1\s+5 s\s+4\.5 s–5\.5 s\s+5 s$/);
    expect(rows[1]).toMatch(/^\s+2\s+5 min\s+4\.5 min–5\.5 min\s+5\.08 min$/);
    expect(rows[5]).toMatch(/^\s+6\s+10 h\s+9 h–11 h\s+/);
    expect(rows.at(-1)).toMatch(/^\s+17\s+10 h\s+9 h–11 h\s+5\.32 d$/);
    expect((sum(WEBHOOK_WAITS_S) / 86_400).toFixed(2)).toBe('5.32');
    expect(webhook).toContain('17 waits, 5.32 d from the first attempt to the last');

    const mail = section('owner.notify');
    expect(mail).toContain('8 attempts; when exhausted: discarded + alert');
    expect((sum(MAIL_WAITS_S) / 3600).toFixed(2)).toBe('6.07');
    expect(mail).toContain('7 waits, 6.07 h from the first attempt to the last');
    expect(mail).toMatch(/^\s+1\s+20 s\s+18 s–22 s\s+20 s$/m);
  });

  it('policies --json matches the policy table to the millisecond', async () => {
    const { policies } = await opsJson<{ policies: { kind: string; maxAttempts: number; schedule: { delayMs: number; cumulativeMs: number }[] }[] }>('policies');
    const webhook = policies.find((p) => p.kind === 'webhook.deliver')!;
    expect(webhook.maxAttempts).toBe(18);
    expect(webhook.schedule.map((r) => r.delayMs)).toEqual(WEBHOOK_WAITS_S.map((s) => s * 1000));
    expect(webhook.schedule.at(-1)!.cumulativeMs).toBe(sum(WEBHOOK_WAITS_S) * 1000);
    const mail = policies.find((p) => p.kind === 'owner.notify')!;
    expect(mail.schedule.map((r) => r.delayMs)).toEqual(MAIL_WAITS_S.map((s) => s * 1000));
  });

  it('policies works from the npm script as a separate process (Node 22)', async () => {
    const { stdout } = await promisify(execFile)('./node_modules/.bin/node', ['bin/ops.ts', 'policies'], { cwd: process.cwd(), env: { ...process.env, REDIAL_API_URL: 'http://127.0.0.1:1' } });
    expect(stdout).toContain('webhook.deliver\n');
    expect(stdout).toContain('17 waits, 5.32 d from the first attempt to the last');
  });

  it('says no redial API is there when the connection is refused, exit code 1', async () => {
    const port = await closedPort();
    let stderr = '';
    const code = await runCli(
      ['--api', `http://127.0.0.1:${port}`, 'jobs', 'list'],
      { stdout: { write: () => true }, stderr: { write: (text: string) => (stderr += text) } },
      { env: {}, credentials: () => Promise.reject(new Error('unused')), now: () => new Date() },
    );
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`no redial API at http://127.0.0.1:${port} (is \`npm start\` running?)`);
  });

  it('answers a wrong command line with exit code 2 and sends nothing', async () => {
    let sent = 0;
    const run = (...argv: string[]) =>
      runCli(argv, { stdout: { write: () => true }, stderr: { write: () => true } }, {
        env: {},
        credentials: () => Promise.reject(new Error('unused')),
        now: () => new Date(),
        send: () => {
          sent++;
          return Promise.resolve({ status: 200, headers: {}, text: '{"jobs":[]}' });
        },
      });
    expect(await run('jobs', 'list', '--limit', 'ten')).toBe(2);
    expect(await run('jobs', 'list', '--limit', '201')).toBe(2);
    expect(await run('jobs', 'list', '--state', 'lost')).toBe(2);
    expect(await run('jobs', 'show')).toBe(2);
    expect(await run('probe', '--fail', '-1')).toBe(2);
    expect(await run('frobnicate')).toBe(2);
    expect(await run('--api', 'not a url', 'jobs', 'list')).toBe(2);
    expect(await run('jobs', 'retry')).toBe(2);
    expect(await run('jobs', 'cancel', 'some-id', '--state', 'scheduled')).toBe(2);
    expect(await run('jobs', 'list', '--since', 'yesterday')).toBe(2);
    expect(await run('jobs', 'retry', '--state', 'discarded', '--limit', '0')).toBe(2);
    expect(sent).toBe(0);
    expect(await run('jobs', 'list', '--limit', '10')).toBe(0);
    expect(sent).toBe(1);
  });
});

/** A port nothing listens on: bound once, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('ops CLI: batches pause, resume, rerun', () => {
  it('PausesAndResumesAScheduledBatchAndRefusesARerunOfAnUnfinishedOne', async () => {
    expect((await fetch(`${runtime.url}/v1/tenants/cli-control`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2 }) })).status).toBe(200);
    const key = (await ops('keys', 'create', 'cli-control')).stdout.trim();
    // Scheduled 29 days ahead (under the local runtime's time scale, far beyond this test).
    const startAt = new Date(Date.now() + 29 * 86_400_000).toISOString();
    const made = await fetch(`${runtime.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ contacts: [{ number: '+14155550177' }], maxAttempts: 1, startAt }),
    });
    const { batchId } = (await made.json()) as { batchId: string };

    const paused = await ops('--api-key', key, 'batches', 'pause', batchId);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toBe(`paused ${batchId}: Paused (from Scheduled)\n`);
    const shown = await ops('--api-key', key, 'batches', 'show', batchId);
    expect(shown.stdout).toContain('status     Paused');
    expect(shown.stdout).toContain('(resume returns it to Scheduled)');
    expect(shown.stdout).toMatch(/starts {5}\d{4}-/);
    // Idempotent, as the route is.
    expect((await opsJson<{ status: string }>('--api-key', key, 'batches', 'pause', batchId)).status).toBe('Paused');

    const resumed = await ops('--api-key', key, 'batches', 'resume', batchId);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe(`resumed ${batchId}: Scheduled\n`);

    const rerun = await ops('--api-key', key, 'batches', 'rerun', batchId, '--codes', 'NO_PICKUP');
    expect(rerun.code).toBe(1);
    expect(rerun.stderr).toContain('409');
  });
});
