import { randomBytes } from 'node:crypto';
import { apiKeyKey, ApiKeys, newApiKey } from '../../functions/calls/keys.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import { iso } from '../../functions/platform/clock.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import { webhookRoutes } from '../../functions/webhooks/api.ts';
import type { webhooksFixture } from './webhooks.ts';

/**
 * The endpoint routes served over real HTTP on a webhooks fixture, tenant keys checked as the deployed
 * tenant API checks them (the calls context's keys, over its table). `call` acts as `tenantId`, with its key.
 */
export async function webhooksApi(fx: Awaited<ReturnType<typeof webhooksFixture>>) {
  const calls = new CallsStore(fx.clients.dynamo, fx.tableNames.calls);
  const verifier = new ApiKeys({ store: calls, clock: fx.clock, logger: fx.logger });
  const server = await startHttpServer({ port: 0, handler: createApiHandler(webhookRoutes(() => fx.webhooks), fx.logger, { keys: () => verifier }) });
  const keys = new Map<string, string>();
  async function keyOf(tenantId: string): Promise<string> {
    if (!keys.has(tenantId)) {
      const now = fx.clock.now();
      await calls.transact(calls.upsertTenantItems({ tenantId, concurrencyLimit: 1, ownerEmail: undefined, now }));
      const { keyId, key, hash } = newApiKey(tenantId, randomBytes);
      const created = await calls.transact(calls.createApiKeyItems({ ...apiKeyKey(tenantId, keyId), tenantId, keyId, hash, createdAt: iso(now) }));
      if (!created.committed) throw new Error(`no key for ${tenantId}`);
      keys.set(tenantId, key);
    }
    return keys.get(tenantId)!;
  }
  async function call(tenantId: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { authorization: `Bearer ${await keyOf(tenantId)}` };
    const response = await fetch(`${server.url}${path}`, {
      method,
      ...(body === undefined ? { headers } : { body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {} };
  }
  return { call, keyOf, close: () => server.close() };
}
