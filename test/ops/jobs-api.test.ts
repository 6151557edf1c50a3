import { afterEach, describe, expect, it } from 'vitest';
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
  const server = await startHttpServer({ port: 0, handler: createApiHandler(jobRoutes(() => ({ jobs: fx.jobs.client, kinds: kinds.handlers.map((h) => h.kind) })), fx.logger) });
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

  it('AForgedMalformedOrForeignCursorIs400NamingTheFieldNot500', async () => {
    const { get } = await opsApi(3);
    const first = await get('/v1/ops/jobs?state=available&limit=1');
    expect(first.body.cursor).toEqual(expect.any(String));
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cursors: Record<string, string> = {
      'any JSON object (the probe)': 'eyJ4IjoxfQ',
      'a raw key of the right attributes, other state': b64({ id: 'x', state: 'completed', stateOrder: '2026-01-01T00:00:00.000Z#x' }),
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
    // Without a state every state is merged and there are no pages: a cursor there is refused too.
    const stateless = await get(`/v1/ops/jobs?cursor=${encodeURIComponent(first.body.cursor)}`);
    expect(stateless.status).toBe(400);
    expect(stateless.body.issues.map((i: { path: string }) => i.path)).toEqual(['query.cursor']);
  });
});
