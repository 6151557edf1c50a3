import * as z from 'zod';
import { tenantRoute } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { WebhooksContext } from './context.ts';
import { endpointIds, endpointViewSchema } from './endpoint.ts';
import { updateEndpointSchema } from './manage.ts';

const endpointParams = z.object({ id: endpointIds.schema });

export const deletedSchema = z.object({
  endpointId: z.string(),
  deletedAt: z.string(),
  purgeJobId: z.string().describe('the webhook.purge job that discards what waited for it (reason endpoint_deleted)'),
});

/** The body of rotate-secret: `{}` for the default (a JSON body, as every POST with one: functions/platform/http.ts). */
const rotateBody = z.strictObject({
  expireOldNow: z.boolean().optional().describe('end the previous secret at once instead of after 24 h'),
});
export const rotatedSchema = z.object({
  secret: z.string().describe('the new signing secret (whsec_…), shown once'),
  previousSecretUntil: z.string().nullable().describe('until when deliveries are signed with the previous secret too; null: not at all'),
});

/**
 * The endpoint management routes (docs/webhooks.md, "Managing an endpoint"): change, delete, rotate the
 * secret. Tenant routes (each copied for operators under `/v1/ops/tenants/{tenantId}`); `context` is called on
 * the first request.
 */
export function manageRoutes(context: () => WebhooksContext): ApiRoute[] {
  const update = tenantRoute({
    method: 'PATCH',
    path: '/v1/endpoints/{id}',
    summary: 'Change an endpoint’s URL (through the SSRF guard; clears failingSince and releases held deliveries), event types (for events published from now on) or description',
    params: endpointParams,
    body: updateEndpointSchema,
    responses: {
      200: { description: 'the endpoint as it now is', schema: endpointViewSchema },
      400: { description: 'invalid body, or a URL the SSRF guard refuses; nothing written' },
      404: { description: 'no such endpoint (or deleted)' },
    },
    handler: async ({ params, body, scope }) => ({ status: 200, body: await context().manage.update(scope, params.id, body) }),
  });
  const remove = tenantRoute({
    method: 'DELETE',
    path: '/v1/endpoints/{id}',
    summary: 'Delete an endpoint: nothing is sent to it from now on; what waits for it is discarded (endpoint_deleted) by a job; its deliveries stay readable 30 days',
    params: endpointParams,
    responses: {
      202: { description: 'deleted; the purge of what waited for it is under way', schema: deletedSchema },
      404: { description: 'no such endpoint (or deleted already)' },
    },
    handler: async ({ params, scope }) => ({ status: 202, body: await context().manage.remove(scope, params.id) }),
  });
  const rotate = tenantRoute({
    method: 'POST',
    path: '/v1/endpoints/{id}/rotate-secret',
    summary: 'Rotate the signing secret: the new one is shown once; deliveries carry both signatures for 24 h (unless expireOldNow), then only the new one',
    params: endpointParams,
    body: rotateBody,
    responses: {
      200: { description: 'the new secret', schema: rotatedSchema },
      400: { description: 'invalid body; nothing written' },
      404: { description: 'no such endpoint (or deleted)' },
      409: { description: 'rotated by another request meanwhile; nothing written' },
    },
    handler: async ({ params, body, scope }) => ({ status: 200, body: await context().manage.rotate(scope, params.id, body.expireOldNow === true) }),
  });
  return [update, remove, rotate];
}
