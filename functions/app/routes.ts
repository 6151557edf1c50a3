import { withOperatorCopies } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { openApiDocument } from '../platform/openapi.ts';
import { calendarContextRoutes } from '../calendar/routes.ts';
import { callsContextRoutes } from '../calls/routes.ts';
import { mailRoutes } from '../mail/routes.ts';
import { jobRoutes } from '../ops/jobs-api.ts';
import { webhookRoutes } from '../webhooks/api.ts';
import { healthzRoute, openApiRoute } from './public-routes.ts';
import type { Contexts } from './wiring.ts';

/**
 * The API: every context's routes over {@link Contexts}, and which deployed function serves each. It
 * imports each context's routes, never its job handlers (its module), so the API functions bundle no job's
 * code. The contexts' modules list the same routes (test/infra/bundles.test.ts checks them against these).
 */

/**
 * Every route of the API (docs/openapi.json), the OpenAPI route itself included, each tenant route
 * followed by its operator copy (`/v1/ops/tenants/{tenantId}/…`). Builds no context.
 */
export function apiRoutes(contexts: Contexts): ApiRoute[] {
  const list: ApiRoute[] = withOperatorCopies([
    healthzRoute(() => contexts.host.clock),
    ...jobRoutes(() => contexts.ops),
    ...callsContextRoutes(() => contexts.calls),
    ...mailRoutes(() => contexts.mail),
    ...webhookRoutes(() => contexts.webhooks),
    ...calendarContextRoutes(() => contexts.calendar),
  ]);
  const all: ApiRoute[] = [];
  // The document lists every route, this one included.
  all.push(...list, openApiRoute(() => apiDocument(all)));
  return all;
}

/**
 * The deployed functions that serve HTTP on AWS, each with only the grants its routes need (lib/access.ts):
 * `intake` serves the calls context's public route (the signed call-result intake), `calendarTools` the calendar
 * context's public routes (the agent's tools during a call, signed as the intake is), `publicLinks` the other
 * public routes (the links sent by mail, /healthz and the OpenAPI document), `tenantApi` the tenant routes
 * (an API key, checked in the function), `api` every route behind IAM (the operators', the operator copies of
 * the tenant routes among them).
 */
export type HttpFunction = 'intake' | 'calendarTools' | 'publicLinks' | 'tenantApi' | 'api';

const routeKey = (r: Pick<ApiRoute, 'method' | 'path'>) => `${r.method} ${r.path}`;

/** Which deployed function serves each route of the API, by `METHOD /path`. Builds nothing. */
export function httpFunctionsByRoute(contexts: Contexts): Record<string, HttpFunction> {
  const intake = new Set(callsContextRoutes(() => contexts.calls).filter((r) => r.auth === 'none').map(routeKey));
  const calendarTools = new Set(calendarContextRoutes(() => contexts.calendar).filter((r) => r.auth === 'none').map(routeKey));
  const served = (r: ApiRoute): HttpFunction =>
    r.auth === 'iam' ? 'api' : r.auth === 'tenant' ? 'tenantApi' : intake.has(routeKey(r)) ? 'intake' : calendarTools.has(routeKey(r)) ? 'calendarTools' : 'publicLinks';
  return Object.fromEntries(apiRoutes(contexts).map((r) => [routeKey(r), served(r)]));
}

/** The routes one deployed function serves (its Lambda entry point routes these and nothing else). */
export function routesServedBy(contexts: Contexts, fn: HttpFunction): ApiRoute[] {
  const byRoute = httpFunctionsByRoute(contexts);
  return apiRoutes(contexts).filter((r) => byRoute[routeKey(r)] === fn);
}

/** The OpenAPI document of redial's API (docs/openapi.json is a copy, checked by a test). */
export const apiDocument = (routes: readonly ApiRoute[]) =>
  openApiDocument(routes, {
    title: 'redial',
    version: '1',
    description:
      'Outbound calling campaigns with one owner of retries. Tenant routes take one of the tenant’s API keys (`Authorization: Bearer rdl_…`) and act for its tenant alone; ' +
      'operator routes (every `/v1/ops/…` route, the operator copies of the tenant routes under `/v1/ops/tenants/{tenantId}` among them, and tenant administration) use IAM auth on AWS; ' +
      'the signed call-result intake, the links sent by mail, /healthz and this document are public.',
  });
