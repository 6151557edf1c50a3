import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineKind, periodicPolicy } from '../../functions/jobs/index.ts';
import { jobRoutes } from '../../functions/ops/jobs-api.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import { jobsFixture } from '../support/jobs.ts';
import { testKinds } from '../jobs/kinds.ts';

const servers: LocalHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** The ops job routes over HTTP, on DynamoDB Local, with `count` available jobs. */
async function opsApi(count: number) {
  const kinds = testKinds();
  const fx = await jobsFixture({ handlers: kinds.handlers });
  for (let i = 0; i < count; i++) await fx.jobs.client.enqueue(kinds.flakyKind, { failTimes: 0 });
  const server = await startHttpServer({ port: 0, handler: createApiHandler(jobRoutes(() => ({ jobs: fx.jobs.client, kinds: kinds.handlers.map((h) => h.kind), periodicStatus: (kind) => fx.jobs.store.getPeriodic(kind) })), fx.logger) });
  servers.push(server);
  const get = async (path: string) => {
    const response = await fetch(`${server.url}${path}`);
    return { status: response.status, body: (await response.json()) as any };
  };
  return { fx, get };
}

describe('GET /v1/ops/jobs: cursors are opaque, and only a cursor of this listing is accepted', () => {
  it('FollowingTheCursorListsEveryJobOnce', async () => {
    const { get } = await opsApi(5);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const response = await get(`/v1/ops/jobs?state=available&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.status).toBe(200);
      seen.push(...response.body.jobs.map((j: { id: string }) => j.id));
      cursor = response.body.cursor;
      if (!cursor) break;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
  });

  it('ACursorPositionedInEveryPartitionIsAcceptedThoughLongerThan4000Characters', async () => {
    // A listing over every state reads all 32 byCheck partitions; once it has read into each, its cursor
    // holds 32 sort keys (the demo's listing of completed jobs grew past the earlier 4,000-character cap).
    const { get } = await opsApi(1);
    const id = `webhook.deliver:${'0'.repeat(32)}:${'1'.repeat(32)}`;
    const positions = Array.from({ length: 32 }, (_, n) => `2026-01-01T00:00:${String(n).padStart(2, '0')}.000Z#${id}`);
    const cursor = Buffer.from(JSON.stringify([1, 'byCheck', '*', positions])).toString('base64url');
    expect(cursor.length).toBeGreaterThan(4000);
    const response = await get(`/v1/ops/jobs?limit=1&cursor=${encodeURIComponent(cursor)}`);
    expect(response.status).toBe(200);
  });

  it('AForgedMalformedOrForeignCursorIs400NamingTheFieldNot500', async () => {
    const { get } = await opsApi(3);
    const first = await get('/v1/ops/jobs?state=available&limit=1');
    expect(first.body.cursor).toEqual(expect.any(String));
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cursors: Record<string, string> = {
      'any JSON object (the probe)': 'eyJ4IjoxfQ',
      'a raw key of the right attributes, other state': b64({ id: 'x', checkShard: 'c01', checkAt: '2026-01-01T00:00:00.000Z#x' }),
      'positions for too few partitions': b64([1, 'byCheck', 'available', [null, 0]]),
      'a position that is not a key of this index': b64([1, 'byCheck', 'available', Array.from({ length: 32 }, () => 'x')]),
      'not base64 JSON': 'not-a-cursor',
      'an empty key value': b64(['', 'available', '']),
      'a cursor of another listing (state completed)': first.body.cursor,
    };
    for (const [what, cursor] of Object.entries(cursors)) {
      const state = what.startsWith('a cursor of another listing') ? 'completed' : 'available';
      const response = await get(`/v1/ops/jobs?state=${state}&cursor=${encodeURIComponent(cursor)}`);
      expect(response.status, what).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path), what).toEqual(['query.cursor']);
    }
    // Without a state every state is listed, with cursors of its own: another listing's is refused there too.
    const stateless = await get(`/v1/ops/jobs?cursor=${encodeURIComponent(first.body.cursor)}`);
    expect(stateless.status).toBe(400);
    expect(stateless.body.issues.map((i: { path: string }) => i.path)).toEqual(['query.cursor']);
  });
});

describe('GET /v1/ops/periodic: every periodic kind with its last run, for the panel', () => {
  it('ListsOnlyPeriodicKindsNeverRunThenWithTheLastFailureKeptAfterASuccess', async () => {
    const kinds = testKinds();
    const tick = defineKind({ kind: 'test.tick', queue: 'ops', policy: periodicPolicy, periodic: { everySeconds: 60 }, args: z.object({}), description: 'tick' });
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const server = await startHttpServer({
      port: 0,
      handler: createApiHandler(jobRoutes(() => ({ jobs: fx.jobs.client, kinds: [...kinds.handlers.map((h) => h.kind), tick], periodicStatus: (kind) => fx.jobs.store.getPeriodic(kind) })), fx.logger),
    });
    servers.push(server);
    const periodic = async () => (await (await fetch(`${server.url}/v1/ops/periodic`)).json());
    const never = { kind: 'test.tick', everySeconds: 60, lastRunAt: null, lastOutcome: null, lastJobId: null, lastFailureAt: null, lastError: null };
    expect(await periodic()).toEqual({ periodic: [never] });

    await fx.jobs.store.recordPeriodic({ id: 'periodic:test.tick', kind: 'test.tick', lastRunAt: '2026-01-05T10:00:00.000Z', lastOutcome: 'failed', lastJobId: 'test.tick@1', lastFailureAt: '2026-01-05T10:00:00.000Z', lastError: 'tick failed' });
    await fx.jobs.store.recordPeriodic({ id: 'periodic:test.tick', kind: 'test.tick', lastRunAt: '2026-01-05T10:01:00.000Z', lastOutcome: 'completed', lastJobId: 'test.tick@2' });
    expect(await periodic()).toEqual({
      periodic: [{ ...never, lastRunAt: '2026-01-05T10:01:00.000Z', lastOutcome: 'completed', lastJobId: 'test.tick@2', lastFailureAt: '2026-01-05T10:00:00.000Z', lastError: 'tick failed' }],
    });
  });
});
