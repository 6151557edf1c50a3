import * as z from 'zod';
import { iso } from '../platform/clock.ts';
import { notFound, route, unavailable } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { CallsDeps } from './deps.ts';
import { apiKeyKey, apiKeyView, apiKeyViewSchema, keyIdSchema, newApiKey } from './keys.ts';
import type { ApiKeyRow } from './keys.ts';
import { tenantParams } from './schemas.ts';

const keyParams = tenantParams.extend({ keyId: keyIdSchema });
const createdSchema = z.object({
  keyId: z.string(),
  key: z.string().describe('the API key: shown here once, stored only as its hash; send it as `Authorization: Bearer <key>`'),
});

/**
 * The operators' routes for a tenant's API keys (IAM on AWS): issue one (shown once), list them (never a
 * key or its hash), revoke one. A tenant holds as many keys at once as it is issued, each working until it
 * is revoked; a revoked key is refused everywhere within `KEY_CACHE_MS` (keys.ts).
 */
export function keyRoutes(calls: () => CallsDeps): ApiRoute[] {
  const create = route({
    method: 'POST',
    path: '/v1/tenants/{tenantId}/keys',
    auth: 'iam',
    summary: 'Issue an API key for a tenant: the key is in this answer once, and stored only as its hash',
    params: tenantParams,
    responses: { 201: { description: 'issued', schema: createdSchema }, 404: { description: 'no such tenant; nothing written' } },
    handler: async ({ params }) => {
      const { store, clock, secureRandom } = calls();
      const { keyId, key, hash } = newApiKey(params.tenantId, secureRandom);
      const row: ApiKeyRow = { ...apiKeyKey(params.tenantId, keyId), tenantId: params.tenantId, keyId, hash, createdAt: iso(clock.now()) };
      const result = await store.transact(store.createApiKeyItems(row));
      if (!result.committed) {
        if (result.refused.tenant?.code === 'ConditionalCheckFailed') throw notFound(`tenant ${params.tenantId}`);
        throw unavailable();
      }
      return { status: 201, body: { keyId, key } };
    },
  });

  const list = route({
    method: 'GET',
    path: '/v1/tenants/{tenantId}/keys',
    auth: 'iam',
    summary: "A tenant's API keys, revoked ones too: when each was issued, last used (to the minute) and revoked; never a key",
    params: tenantParams,
    responses: { 200: { description: 'the keys, by key id', schema: z.object({ keys: z.array(apiKeyViewSchema) }) }, 404: { description: 'no such tenant' } },
    handler: async ({ params }) => {
      const { store } = calls();
      const [tenant, keys] = await Promise.all([store.getTenantRow(params.tenantId), store.listApiKeys(params.tenantId)]);
      if (!tenant) throw notFound(`tenant ${params.tenantId}`);
      return { status: 200, body: { keys: keys.map(apiKeyView) } };
    },
  });

  const revoke = route({
    method: 'DELETE',
    path: '/v1/tenants/{tenantId}/keys/{keyId}',
    auth: 'iam',
    summary: 'Revoke an API key: refused everywhere within 30 s (each container trusts what it read of a key that long); idempotent',
    params: keyParams,
    responses: { 200: { description: 'the key, revoked', schema: apiKeyViewSchema }, 404: { description: 'no such key' } },
    handler: async ({ params }) => {
      const { store, clock, keys } = calls();
      const row = await store.revokeApiKey(params.tenantId, params.keyId, clock.now());
      if (!row) throw notFound(`key ${params.keyId} of tenant ${params.tenantId}`);
      keys.forget(params.tenantId, params.keyId);
      return { status: 200, body: apiKeyView(row) };
    },
  });

  return [create, list, revoke];
}
