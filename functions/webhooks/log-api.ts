import * as z from 'zod';
import { HttpError, notFound, queryInt, tenantRoute } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { TenantScope } from '../platform/tenancy.ts';
import { attemptResults, attemptView, attemptViewSchema } from './attempts.ts';
import type { AttemptFilter, AttemptView } from './attempts.ts';
import type { WebhooksContext } from './context.ts';
import { endpointIds } from './endpoint.ts';
import { EndpointNotFoundError } from './errors.ts';
import { eventTypes } from './events.ts';
import { recoverSchema, recoveryIdSchema, RecoveryNotFoundError, recoveryViewSchema, RecoveryWindowError } from './recover.ts';

const endpointParams = z.object({ id: endpointIds.schema });

/** The query of `GET /v1/endpoints/{id}/attempts`. */
export const attemptsQuery = z.object({
  since: z.iso.datetime().optional().describe('attempts at or after this time (ISO-8601 UTC)'),
  until: z.iso.datetime().optional().describe('attempts before this time'),
  status: z
    .union([z.enum(attemptResults), z.string().regex(/^[1-5]\d\d$/).transform(Number)])
    .optional()
    .describe(`a result (${attemptResults.join(', ')}) or an HTTP status (e.g. 503)`),
  eventType: z.enum(eventTypes).optional(),
  limit: queryInt(1, 200).optional().describe('attempts per page, 1–200 (default 50)'),
  cursor: z.string().max(2000).optional().describe('the `cursor` of the previous page'),
});

const attemptsResponse = z.object({ endpointId: z.string(), attempts: z.array(attemptViewSchema), cursor: z.string().optional() });

/**
 * One page of an endpoint's attempt log, newest first (attempt-log.ts). A deleted endpoint's log stays
 * readable while its row is kept.
 */
export async function attemptsOf(context: WebhooksContext, scope: TenantScope, id: string, filter: AttemptFilter, limit: number, cursor?: string): Promise<{ endpointId: string; attempts: AttemptView[]; cursor?: string }> {
  const endpoint = await context.deps.store.getEndpointIn(scope, id);
  if (!endpoint) throw new EndpointNotFoundError(id);
  const page = await context.deps.attemptLog.list(endpoint.endpointId, filter, limit, cursor);
  return { endpointId: endpoint.endpointId, attempts: page.attempts.map(attemptView), ...(page.cursor ? { cursor: page.cursor } : {}) };
}

/**
 * The attempt log and recovery routes (docs/webhooks.md): tenant routes, copied for operators like the
 * other endpoint routes.
 */
export function endpointLogRoutes(context: () => WebhooksContext): ApiRoute[] {
  const attempts = tenantRoute({
    method: 'GET',
    path: '/v1/endpoints/{id}/attempts',
    summary: "An endpoint's attempt log, newest first: every attempt of the last 30 days (its own jobs' and the sends from its wait list), a page at a time",
    params: endpointParams,
    query: attemptsQuery,
    responses: {
      200: { description: 'up to `limit` attempts (a filtered page may hold fewer, and still a `cursor`); `cursor`, when present, asks for the next page', schema: attemptsResponse },
      400: { description: 'a bad filter, or a cursor this listing did not give out (for this endpoint, tenant and window)' },
      404: { description: 'no such endpoint' },
    },
    handler: async ({ params, query, scope }) => {
      if (query.since !== undefined && query.until !== undefined && query.since >= query.until) {
        throw new HttpError(400, 'invalid_request', 'invalid query', { issues: [{ path: 'query.until', message: 'until must be after since' }] });
      }
      const filter: AttemptFilter = { since: norm(query.since), until: norm(query.until), status: query.status, eventType: query.eventType };
      return { status: 200, body: await attemptsOf(context(), scope, params.id, filter, query.limit ?? 50, query.cursor) };
    },
  });
  const recover = tenantRoute({
    method: 'POST',
    path: '/v1/endpoints/{id}/recover',
    summary: 'Send the endpoint again every event of a window (up to 30 days back) it subscribed to and did not receive, with its original webhook-id; a job does it',
    params: endpointParams,
    body: recoverSchema,
    responses: {
      202: { description: 'the recovery started; follow it at `/v1/endpoints/{id}/recoveries/{recoveryId}`', schema: z.object({ recoveryId: z.string() }) },
      400: { description: 'an invalid body, or a window outside the 30 days events are kept; nothing written' },
      404: { description: 'no such endpoint' },
      409: { description: 'the endpoint is disabled; enable it first' },
    },
    handler: async ({ params, body, scope }) => ({ status: 202, body: await context().recoveries.start(scope, params.id, body) }),
  });
  const recovery = tenantRoute({
    method: 'GET',
    path: '/v1/endpoints/{id}/recoveries/{recoveryId}',
    summary: 'One recovery of an endpoint: its state, the events matched (not received) and requeued (0 on a dry run)',
    params: z.object({ id: endpointIds.schema, recoveryId: recoveryIdSchema }),
    responses: { 200: { description: 'the recovery', schema: recoveryViewSchema }, 404: { description: 'no such endpoint, or no such recovery of it' } },
    handler: async ({ params, scope }) => ({ status: 200, body: await context().recoveries.get(scope, params.id, params.recoveryId) }),
  });
  return [attempts, recover, recovery];
}

/** An ISO time as the log's keys hold it (`toISOString`: milliseconds, `Z`). */
const norm = (value: string | undefined): string | undefined => (value === undefined ? undefined : new Date(value).toISOString());

/** The attempt log and recovery routes' own errors as HTTP answers. */
export function endpointLogHttpError(error: unknown): HttpError | undefined {
  if (error instanceof RecoveryWindowError) return new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path: `body.${error.field}`, message: error.message }] });
  if (error instanceof RecoveryNotFoundError) return notFound(`recovery ${error.recoveryId}`);
  return undefined;
}
