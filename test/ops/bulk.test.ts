import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { jobRoutes } from '../../functions/ops/jobs-api.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import type { JobRow } from '../../functions/jobs/index.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds } from '../jobs/kinds.ts';

const servers: LocalHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const T0 = Date.parse('2026-12-01T08:00:00.000Z');
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();

/**
 * The ops job routes over HTTP on DynamoDB Local, with dead letters made by running jobs: at T0 three
 * test.picky discarded `http_4xx` and two test.flaky discarded `exhausted`; an hour later four more
 * test.picky and one test.flaky; an hour after that two test.picky that completed.
 */
async function opsApi() {
  const kinds = testKinds({ maxAttempts: 1, onExhausted: 'discard' });
  const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
  fx.clock.set(T0);
  const made = async (picky: number, flaky: number, status = 410) => {
    for (let i = 0; i < picky; i++) await fx.jobs.client.enqueue(kinds.pickyKind, { status });
    for (let i = 0; i < flaky; i++) await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 1 });
    await fx.idle();
  };
  await made(3, 2);
  fx.clock.advance(HOUR);
  await made(4, 1);
  fx.clock.advance(HOUR);
  await made(2, 0, 200);
  const server = await startHttpServer({ port: 0, handler: createApiHandler(jobRoutes(() => ({ jobs: fx.jobs.client, kinds: kinds.handlers.map((h) => h.kind), periodicStatus: (kind) => fx.jobs.store.getPeriodic(kind) })), fx.logger) });
  servers.push(server);
  const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
    return { status: response.status, body: (await response.json()) as any };
  };
  /** Every job the listing gives for `query`, following its cursor `pageSize` at a time. */
  const listAll = async (query: string, pageSize = 3) => {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const response = await call('GET', `/v1/ops/jobs?${query}&limit=${pageSize}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.status, query).toBe(200);
      ids.push(...response.body.jobs.map((j: { id: string }) => j.id));
      cursor = response.body.cursor;
      if (!cursor) break;
    }
    expect(new Set(ids).size, `${query}: no job listed twice`).toBe(ids.length);
    return ids;
  };
  const rows = async (ids: readonly string[]) => Promise.all(ids.map((id) => fx.jobs.store.mustGet(id)));
  return { fx, kinds, call, listAll, rows };
}

describe('GET /v1/ops/jobs: dead letters filtered by kind, reason and when they were discarded', () => {
  it('FiltersCombineAndEveryPageFollowsThem', async () => {
    const { listAll, rows } = await opsApi();
    const all = await listAll('state=discarded');
    expect(all).toHaveLength(10);
    const picky4xx = await listAll('state=discarded&kind=test.picky&reason=http_4xx');
    expect(picky4xx).toHaveLength(7);
    expect((await rows(picky4xx)).every((r) => r.kind === 'test.picky' && r.discardReason === 'http_4xx')).toBe(true);
    const later = await listAll(`state=discarded&kind=test.picky&reason=http_4xx&since=${at(T0 + HOUR / 2)}`, 2);
    expect(later).toHaveLength(4);
    expect((await rows(later)).every((r) => Date.parse(r.finalizedAt!) === T0 + HOUR)).toBe(true);
    expect(await listAll(`state=discarded&until=${at(T0 + HOUR / 2)}`)).toHaveLength(5);
    expect(await listAll(`state=discarded&reason=exhausted&since=${at(T0)}&until=${at(T0 + HOUR)}`)).toHaveLength(3);
    expect(await listAll(`state=discarded&kind=test.flaky&reason=http_4xx`)).toEqual([]);
    // Newest first, by when they were discarded.
    const times = (await rows(all)).map((r) => Date.parse(r.finalizedAt!));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(await listAll('state=completed&kind=test.picky')).toHaveLength(2);
  });

  it('ABadFilterIs400NamingEachField', async () => {
    const { call } = await opsApi();
    const cases: [string, string[]][] = [
      ['reason=http_4xx', ['query.reason']],
      ['state=discarded&since=yesterday', ['query.since']],
      [`state=discarded&since=${at(T0 + HOUR)}&until=${at(T0)}`, ['query.until']],
      ['state=gone', ['query.state']],
    ];
    for (const [query, paths] of cases) {
      const response = await call('GET', `/v1/ops/jobs?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path), query).toEqual(paths);
    }
  });
});

describe('POST /v1/ops/jobs/retry and /cancel: bulk actions by the same filter', () => {
  it('ADryRunCountsAndChangesNothing_ThenEachMatchedJobIsRetriedOnceWithOneMoreAttemptAndItsHistory', async () => {
    const { fx, call, listAll, rows } = await opsApi();
    const filter = { state: 'discarded', kind: 'test.flaky', reason: 'exhausted', until: at(T0 + HOUR) };
    const ids = await listAll('state=discarded&kind=test.flaky');
    const before = await rows(ids);

    expect(await call('POST', '/v1/ops/jobs/retry', { ...filter, dryRun: true })).toEqual({ status: 200, body: { matched: 3, retried: 0, until: filter.until } });
    expect(await rows(ids)).toEqual(before);

    expect(await call('POST', '/v1/ops/jobs/retry', { ...filter, limit: 2 })).toEqual({ status: 200, body: { matched: 3, retried: 2, until: expect.any(String) } });
    expect(await call('POST', '/v1/ops/jobs/retry', filter)).toEqual({ status: 200, body: { matched: 1, retried: 1, until: expect.any(String) } });
    expect(await call('POST', '/v1/ops/jobs/retry', filter)).toEqual({ status: 200, body: { matched: 0, retried: 0, until: expect.any(String) } });
    await fx.idle();

    // Each ran once more (test.flaky fails once, then succeeds), with its first attempt kept.
    for (const row of await rows(ids)) {
      expect(row).toMatchObject({ state: 'completed', attempt: 2, maxAttempts: 2 });
      expect(row.attempts.map((a) => a.outcome)).toEqual(['discarded', 'completed']);
      expect(row.deadLetter).toBeUndefined();
    }
    expect(await listAll('state=discarded')).toHaveLength(7);
  });

  it('BulkCancelStopsTheMatchingWaitingJobs_WhichBecomeDeadLettersOpsCanList', async () => {
    const { fx, kinds, call, listAll } = await opsApi();
    const waiting: string[] = [];
    for (let i = 0; i < 3; i++) waiting.push((await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 }, { delayMs: HOUR })).id);
    const other = (await fx.jobs.client.enqueue(kinds.pickyKind, { status: 200 }, { delayMs: HOUR })).id;

    // Without an until, the range ends now (on the job layer's clock), and the answer says where.
    expect(await call('POST', '/v1/ops/jobs/cancel', { state: 'scheduled', kind: 'test.flaky', dryRun: true })).toEqual({ status: 200, body: { matched: 3, cancelled: 0, until: at(fx.clock.now()) } });
    expect((await fx.jobs.store.mustGet(waiting[0]!)).state).toBe('scheduled');
    expect(await call('POST', '/v1/ops/jobs/cancel', { state: 'scheduled', kind: 'test.flaky' })).toEqual({ status: 200, body: { matched: 3, cancelled: 3, until: expect.any(String) } });
    expect((await listAll('state=cancelled&kind=test.flaky')).sort()).toEqual([...waiting].sort());
    await fx.settle(2 * HOUR);
    expect(kinds.runs.filter((r) => waiting.includes(r.id))).toEqual([]);
    expect((await fx.jobs.store.mustGet(other)).state).toBe('completed');
  });

  it('ABadBodyIs400NamingEachFieldAndWritesNothing', async () => {
    const { call, listAll } = await opsApi();
    const cases: [string, unknown, string[]][] = [
      ['retry', { state: 'completed' }, ['body.state']],
      ['cancel', { state: 'discarded' }, ['body.state']],
      ['retry', { state: 'discarded', reason: 'Not A Reason' }, ['body.reason']],
      ['retry', { state: 'cancelled', reason: 'http_4xx' }, ['body.reason']],
      ['retry', { state: 'discarded', since: at(T0 + HOUR), until: at(T0) }, ['body.until']],
      ['retry', { state: 'discarded', limit: 0 }, ['body.limit']],
      ['retry', { state: 'discarded', dryRun: 'yes' }, ['body.dryRun']],
      ['retry', { kind: 'test.picky' }, ['body.state']],
    ];
    for (const [action, body, paths] of cases) {
      const response = await call('POST', `/v1/ops/jobs/${action}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path), JSON.stringify(body)).toEqual(paths);
    }
    const unknown = await call('POST', '/v1/ops/jobs/retry', { state: 'discarded', everything: true });
    expect(unknown.status).toBe(400);
    expect(await listAll('state=discarded')).toHaveLength(10);
  });
});

describe('a bulk retry killed half-way', () => {
  it('RunAgainWithTheSameFilterRetriesTheRestAndNoJobTwice', async () => {
    const kinds = testKinds({ maxAttempts: 1, onExhausted: 'discard' });
    const fx = await jobsFixture({ handlers: kinds.handlers, transport: 'local' });
    const start = Date.now(); // the child process runs on the real clock
    fx.clock.set(start);
    for (let i = 0; i < 40; i++) await fx.jobs.client.enqueue(kinds.pickyKind, { status: 404 });
    await fx.idle();
    const until = fx.clock.now();
    const dead = (await fx.jobs.client.list({ state: 'discarded', limit: 200 })).jobs;
    expect(dead).toHaveLength(40);
    const before = new Map(dead.map((row) => [row.id, row]));

    const child = spawn(process.execPath, ['test/support/bulk-crash-worker.ts', dynamoEndpoint(), fx.tableNames.jobs, String(until), '15'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('crashing') && resolve());
      child.once('exit', (code) => reject(new Error(`bulk retry exited before its crash with ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    const half = await Promise.all(dead.map((row) => fx.jobs.store.mustGet(row.id)));
    const doneByChild = half.filter((row) => row.state === 'available').length;
    expect(doneByChild).toBeGreaterThanOrEqual(15);
    expect(doneByChild).toBeLessThan(40);

    // The jobs the child retried may run meanwhile and be discarded again: the same `until` leaves them out.
    fx.clock.advance(60_000);
    const rest = await fx.jobs.client.retryMatching({ state: 'discarded', until, limit: 1000 });
    expect(rest).toEqual({ matched: 40 - doneByChild, changed: 40 - doneByChild });
    expect(await fx.jobs.client.retryMatching({ state: 'discarded', until, limit: 1000 })).toEqual({ matched: 0, changed: 0 });

    for (const row of await Promise.all(dead.map((r) => fx.jobs.store.mustGet(r.id)))) {
      const was: JobRow = before.get(row.id)!;
      // Retried exactly once: one seq on, one attempt more, its history kept.
      expect(row.seq, row.id).toBe(was.seq + 1);
      expect(row.maxAttempts, row.id).toBe(2);
      expect(row.attempts.slice(0, was.attempts.length)).toEqual(was.attempts);
    }
  });
});
