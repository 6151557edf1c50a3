import { describe, expect, it } from 'vitest';
import { alive, processesMatching, startLocalProcess } from '../support/local-process.ts';

/** A JSON request, as the API's clients send it (a body is sent as application/json). */
async function json(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const response = await fetch(url, init?.body === undefined ? init : { ...init, headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } });
  return { status: response.status, body: await response.json() };
}

describe('npm start, as a child process', () => {
  it('RunsAJobThatFailsTwiceThenSucceedsAndStopsWithNothingLeftRunning', { timeout: 120_000 }, async () => {
    const local = await startLocalProcess(['--memory', '--no-demo'], { TIME_SCALE: '0.01' });
    try {
      expect((await json(`${local.url}/healthz`)).body).toMatchObject({ status: 'ok' });
      const enqueued = await json(`${local.url}/v1/ops/probes`, { method: 'POST', body: JSON.stringify({ failTimes: 2 }) });
      expect(enqueued.status).toBe(201);
      const id = enqueued.body.jobId as string;

      let job: any;
      const deadline = Date.now() + 30_000;
      do {
        await new Promise((r) => setTimeout(r, 100));
        job = (await json(`${local.url}/v1/ops/jobs/${id}`)).body;
      } while (job.state !== 'completed' && Date.now() < deadline);

      expect(job.state).toBe('completed');
      expect(job.attempt).toBe(3);
      expect(job.attempts.map((a: any) => a.outcome)).toEqual(['retryable', 'retryable', 'completed']);
      expect(job.errors.map((e: any) => e.error)).toEqual(['probe failure 1 of 2', 'probe failure 2 of 2']);
      // The served OpenAPI document is generated from the routes' schemas; docs/openapi.json must be its copy.
      const served = await json(`${local.url}/v1/openapi.json`);
      expect(served.body.paths['/v1/ops/jobs/{id}/retry'].post.security).toEqual([{ sigv4: [] }]);
      const { readFileSync } = await import('node:fs');
      expect(served.body, 'docs/openapi.json is stale: run npm run openapi').toEqual(JSON.parse(readFileSync('docs/openapi.json', 'utf8')));

      const listed = await json(`${local.url}/v1/ops/jobs?state=completed&kind=ops.probe`);
      expect(listed.body.jobs.map((j: any) => j.id)).toContain(id);

      // Bad input: a clear 400 with the field path, and nothing enqueued.
      const bad = await json(`${local.url}/v1/ops/probes`, { method: 'POST', body: JSON.stringify({ failTimes: 'two' }) });
      expect(bad.status).toBe(400);
      expect(bad.body.issues[0].path).toBe('body.failTimes');
      expect((await json(`${local.url}/v1/ops/jobs?kind=ops.probe`)).body.jobs).toHaveLength(1);
    } finally {
      const code = await local.stop();
      expect(code).toBe(0);
    }
    expect(local.output()).toContain('stopped; nothing left running');
    expect(alive(local.dynamoPid)).toBe(false);
    expect(processesMatching(`kill ${local.dynamoPid}`)).toEqual([]);
    expect(alive(local.child.pid!)).toBe(false);
  });

  it('LeavesNothingRunningEvenWhenKilledWithSigkill', { timeout: 120_000 }, async () => {
    const local = await startLocalProcess(['--memory', '--no-demo'], {});
    await local.stop('SIGKILL');
    const deadline = Date.now() + 10_000;
    while (alive(local.dynamoPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(alive(local.dynamoPid)).toBe(false);
  });
});

describe('npm start, through npm', () => {
  it('StopsEverythingWhenNpmItselfIsTerminated', async () => {
    const { spawn } = await import('node:child_process');
    const npm = spawn('npm', ['start', '--', '--memory', '--no-demo'], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/pid (\d+)/.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const dynamoPid = Number(/DynamoDB Local\s+\S+\s+pid (\d+)/.exec(output)?.[1]);
    expect(dynamoPid).toBeGreaterThan(0);
    const { execFileSync } = await import('node:child_process');
    // The runtime is DynamoDB Local's parent (other tests may run runtimes of their own).
    const runtimePids = [Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(dynamoPid)], { encoding: 'utf8' }).trim())];
    expect(processesMatching('node bin/local.ts').some((line) => line.trim().startsWith(String(runtimePids[0])))).toBe(true);
    npm.kill('SIGTERM');
    const until = Date.now() + 15_000;
    while ((alive(dynamoPid) || runtimePids.some(alive)) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(alive(dynamoPid)).toBe(false);
    expect(runtimePids.filter(alive)).toEqual([]);
  }, 90_000);
});

describe('npm start, stopped with Ctrl-C', () => {
  it('StopsInOrderWithJobsInFlightWhenTheTerminalSignalsItsWholeProcessGroup', async () => {
    const { spawn } = await import('node:child_process');
    // A terminal's Ctrl-C sends SIGINT to its whole foreground process group: npm, the runtime, and any
    // child left in the group. DynamoDB Local must not be in it, or it dies under the jobs in flight.
    const npm = spawn('npm', ['start', '--', '--memory', '--no-demo'], { env: { ...process.env, PORT: '0', LOG_LEVEL: 'WARN' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    const deadline = Date.now() + 60_000;
    while (!/pid (\d+)/.test(output) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const url = /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)![1]!;
    const dynamoPid = Number(/DynamoDB Local\s+\S+\s+pid (\d+)/.exec(output)?.[1]);
    const probe = () => fetch(`${url}/v1/ops/probes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ failTimes: 0 }) }).then((r) => r.status);
    expect(await probe()).toBe(201);
    // Jobs enqueued and running while the signal arrives.
    const enqueued = Promise.all(Array.from({ length: 300 }, probe)).catch(() => []);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(-npm.pid!, 'SIGINT');
    await enqueued;
    await exited;
    const until = Date.now() + 15_000;
    while (alive(dynamoPid) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(alive(dynamoPid)).toBe(false);
    expect(output).toContain('stopped; nothing left running');
    expect(output).not.toMatch(/"level":"ERROR"/);
  }, 90_000);
});
