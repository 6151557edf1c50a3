import * as z from 'zod';
import { InvalidCursorError } from '../platform/dynamo.ts';
import { conflict, HttpError, notFound, queryInt, route, tenantRoute, withErrors } from '../platform/http.ts';
import { tenantIdSchema } from '../platform/tenancy.ts';
import type { ApiRoute } from '../platform/http.ts';
import { idempotencyKeyHeaders, idempotencyKeyReused } from '../platform/idempotency.ts';
import type { WebhooksContext } from './context.ts';
import { endpointDetailSchema, endpointIds, endpointViewSchema } from './endpoint.ts';
import { EndpointDisabledError, EndpointNotFoundError, EndpointRotatedMeanwhileError, IdempotencyKeyReusedError, UrlRefusedError } from './errors.ts';
import { eventTypes } from './events.ts';
import { manageRoutes } from './manage-api.ts';
import { endpointLogHttpError, endpointLogRoutes } from './log-api.ts';

/** The body of `POST /v1/endpoints`. Unknown fields are refused, so a misspelt `eventType` is not silently dropped. */
export const registerEndpointSchema = z.strictObject({
  tenantId: tenantIdSchema.optional().describe('optional: the tenant is your API key’s (the path’s, on the operator copy); another tenant’s id is a 403'),
  url: z.string().min(1).max(2048),
  eventTypes: z.array(z.enum(eventTypes)).min(1).max(20).optional(),
  description: z.string().max(500).optional(),
});

const registeredSchema = z.object({ endpointId: z.string(), secret: z.string() });

/** An endpoint's id names its tenant: `ep_<tenantId>.<32 hex>` (endpoint.ts `endpointIds`). */
const endpointParams = z.object({ id: endpointIds.schema });

const listQuery = z.object({
  limit: queryInt(1, 100).optional().describe('endpoints per page, 1–100 (default 25)'),
  cursor: z.string().max(2000).optional().describe('the `cursor` of the previous page'),
});
const listResponse = z.object({ endpoints: z.array(endpointViewSchema), cursor: z.string().optional() });

/** The most deliveries of each job state `GET /v1/endpoints/{id}/deliveries` looks through (also its default). */
export const MAX_DELIVERIES_PER_STATE = 200;

const deliveriesResponse = z.object({
  endpointId: z.string(),
  perState: z.number().int().describe('how many of the newest webhook.deliver jobs of each state were looked through'),
  deliveries: z.array(
    z.object({
      jobId: z.string(),
      eventId: z.string(),
      state: z.string(),
      attempt: z.number().int(),
      maxAttempts: z.number().int(),
      discardReason: z.string().nullable(),
      createdAt: z.string(),
      updatedAt: z.string(),
      attempts: z.array(z.object({ attempt: z.number().int(), at: z.string(), durationMs: z.number(), outcome: z.string(), error: z.string().optional() })),
    }),
  ),
});

/**
 * The endpoint routes (docs/openapi.json, docs/webhooks.md): register, list, show, an endpoint's
 * deliveries, enable, redeliver — tenant routes, each acting for the tenant of the request's API key (and
 * copied for operators under `/v1/ops/tenants/{tenantId}`) — and the operators' listing of every tenant's
 * endpoints. `context` is called on the first request, so building the routes touches nothing.
 */
export function webhookRoutes(context: () => WebhooksContext): ApiRoute[] {
  const register = tenantRoute({
    method: 'POST',
    path: '/v1/endpoints',
    summary: 'Register a webhook endpoint; the signing secret is shown once, here (and to a retry with the same Idempotency-Key)',
    body: registerEndpointSchema,
    headers: idempotencyKeyHeaders('endpoint'),
    responses: {
      201: { description: 'registered', schema: registeredSchema },
      200: { description: 'a retry with the same Idempotency-Key and body: the endpoint it registered, with its secret; nothing written', schema: registeredSchema },
      400: { description: 'invalid body or Idempotency-Key, or a URL the SSRF guard refuses; nothing written' },
      422: { description: 'the Idempotency-Key was used before with a different body: `{error: "idempotency_key_reused", message}`; nothing written' },
    },
    handler: async ({ body, headers, scope }) => {
      const { replayed, ...registered } = await context().endpoints.register(scope, { url: body.url, eventTypes: body.eventTypes, description: body.description }, headers['idempotency-key']);
      return { status: replayed ? 200 : 201, body: registered };
    },
  });
  const list = tenantRoute({
    method: 'GET',
    path: '/v1/endpoints',
    summary: 'Your endpoints, newest first, a page at a time (a Query of your own partition, never a Scan; never a secret)',
    query: listQuery,
    responses: {
      200: { description: 'up to `limit` endpoints; `cursor`, when present, asks for the next page', schema: listResponse },
      400: { description: 'a bad limit, or a cursor this listing did not give out (to this tenant)' },
    },
    handler: async ({ query, scope }) => ({ status: 200, body: await context().endpoints.list(scope, query.limit ?? 25, query.cursor) }),
  });
  const listAll = route({
    method: 'GET',
    path: '/v1/ops/endpoints',
    auth: 'iam',
    summary: 'Every tenant’s endpoints, newest first, a page at a time (operators: the operators’ endpoint index; never a secret)',
    query: listQuery,
    responses: {
      200: { description: 'up to `limit` endpoints; `cursor`, when present, asks for the next page', schema: listResponse },
      400: { description: 'a bad limit, or a cursor this listing did not give out' },
    },
    handler: async ({ query }) => ({ status: 200, body: await context().endpoints.listAll(query.limit ?? 25, query.cursor) }),
  });
  const deliveries = tenantRoute({
    method: 'GET',
    path: '/v1/endpoints/{id}/deliveries',
    summary: "An endpoint's deliveries with every attempt, among the newest webhook.deliver jobs of each state (a bounded read, not its whole history)",
    params: endpointParams,
    query: z.object({ perState: queryInt(1, MAX_DELIVERIES_PER_STATE).optional().describe(`jobs looked through per state, 1–${MAX_DELIVERIES_PER_STATE} (default ${MAX_DELIVERIES_PER_STATE})`) }),
    responses: { 200: { description: "the endpoint's deliveries found, newest first", schema: deliveriesResponse }, 404: { description: 'no such endpoint' } },
    handler: async ({ params, query, scope }) => {
      const perState = query.perState ?? MAX_DELIVERIES_PER_STATE;
      return { status: 200, body: { endpointId: params.id, perState, deliveries: await context().endpoints.deliveries(scope, params.id, perState) } };
    },
  });
  const show = tenantRoute({
    method: 'GET',
    path: '/v1/endpoints/{id}',
    summary: 'One endpoint: URL, event types, health, disabled state (never the secret)',
    params: endpointParams,
    responses: { 200: { description: 'the endpoint, and the deliveries waiting in its list', schema: endpointDetailSchema }, 404: { description: 'no such endpoint' } },
    handler: async ({ params, scope }) => ({ status: 200, body: await context().endpoints.get(scope, params.id) }),
  });
  const enable = tenantRoute({
    method: 'POST',
    path: '/v1/endpoints/{id}/enable',
    summary: 'Enable an endpoint again; clears failingSince and the disable reason',
    params: endpointParams,
    responses: { 200: { description: 'the endpoint', schema: endpointViewSchema }, 404: { description: 'no such endpoint' } },
    handler: async ({ params, scope }) => ({ status: 200, body: await context().endpoints.enable(scope, params.id) }),
  });
  const redeliver = tenantRoute({
    method: 'POST',
    path: '/v1/endpoints/{id}/redeliver',
    summary: 'Run every discarded delivery of an endpoint again',
    params: endpointParams,
    responses: {
      200: { description: 'how many deliveries were requeued', schema: z.object({ requeued: z.number().int() }) },
      404: { description: 'no such endpoint' },
      409: { description: 'the endpoint is disabled; enable it first' },
    },
    handler: async ({ params, scope }) => {
      return { status: 200, body: await context().endpoints.redeliver(scope, params.id) };
    },
  });
  return withErrors(webhooksHttpError, [register, list, listAll, show, deliveries, enable, redeliver, ...manageRoutes(context), ...endpointLogRoutes(context)]);
}

/** The webhooks routes' errors as HTTP answers, in one place. */
export function webhooksHttpError(error: unknown): HttpError | undefined {
  const logged = endpointLogHttpError(error);
  if (logged) return logged;
  if (error instanceof EndpointNotFoundError) return notFound(`endpoint ${error.endpointId}`);
  if (error instanceof EndpointDisabledError) return conflict(error.message, { disabled: true });
  if (error instanceof UrlRefusedError) return new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path: 'body.url', message: error.reason }] });
  if (error instanceof IdempotencyKeyReusedError) return idempotencyKeyReused('endpoint');
  if (error instanceof EndpointRotatedMeanwhileError) return conflict(error.message);
  if (error instanceof InvalidCursorError) return new HttpError(400, 'invalid_request', 'invalid query', { issues: [{ path: 'query.cursor', message: error.message }] });
  return undefined;
}
