import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import { devEventRoutes } from '../../functions/webhooks/dev-api.ts';
import { webhooksFixture } from '../support/webhooks.ts';

let fx: Awaited<ReturnType<typeof webhooksFixture>>;
let server: LocalHttpServer;

beforeAll(async () => {
  fx = await webhooksFixture();
  server = await startHttpServer({ port: 0, handler: createApiHandler(devEventRoutes(() => fx.webhooks), fx.logger) });
});
afterAll(async () => {
  await server.close();
  await fx.close();
});

const post = async (body: unknown) => {
  const response = await fetch(`${server.url}/v1/dev/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
};
const items = async () => (await fx.clients.dynamo.send(new ScanCommand({ TableName: fx.tableNames.webhooks, ConsistentRead: true }))).Items ?? [];
/** `depth` maps, one inside the other, around a string. */
const nested = (depth: number): unknown => (depth === 0 ? 'x' : { a: nested(depth - 1) });

describe('POST /v1/dev/events: data DynamoDB cannot store is a 400, not a 500', () => {
  it('RefusesAnEmptyKeyTooDeepANestingAndNumbersOutOfRangeNamingEachAndWritesNothing', async () => {
    const before = await items();
    const cases: [string, unknown, string][] = [
      ['an empty key', { ok: 1, nested: { '': 1 } }, 'body.data.nested'],
      ['nested deeper than DynamoDB allows', { deep: nested(31) }, 'body.data.deep.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a'],
      ['a number past 2^53', { n: 1e200 }, 'body.data.n'],
      ['a number DynamoDB rounds to zero', { n: [1, 1e-200] }, 'body.data.n.1'],
    ];
    for (const [what, data, path] of cases) {
      const response = await post({ tenantId: 'acme', type: 'call.completed', data });
      expect(response.status, what).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path), what).toEqual([path]);
    }
    expect(await items()).toEqual(before);
  });

  it('StoresDataAtTheDeepestNestingDynamoDBAllows', async () => {
    // `data` is one level; 30 more maps inside it are the 31 DynamoDB stores.
    const response = await post({ tenantId: 'acme', type: 'call.completed', data: { deep: nested(30), n: 2 ** 53 - 1, small: 1e-130, list: [[], {}] } });
    expect(response.status).toBe(201);
    expect(response.body.eventId).toEqual(expect.any(String));
  });
});
