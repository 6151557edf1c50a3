import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { Clock } from '../platform/clock.ts';
import type { MailDeps } from '../mail/context.ts';
import { mailRoutes } from '../mail/routes.ts';

/**
 * The routes of no context (/healthz and the OpenAPI document) and the public links' function's list.
 * Apart from ./routes.ts, which lists every context's routes, so that the public links' function builds
 * its own without bundling the others.
 */

/** GET /healthz: liveness, with the host's time. */
export const healthzRoute = (clock: () => Clock): ApiRoute =>
  route({
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    summary: 'Liveness',
    handler: () => Promise.resolve({ status: 200, body: { status: 'ok', time: new Date(clock().now()).toISOString() } }),
  });

/** GET /v1/openapi.json: `document()`, the API described (./routes.ts `apiDocument`, or docs/openapi.json, its copy). */
export const openApiRoute = (document: () => unknown): ApiRoute =>
  route({
    method: 'GET',
    path: '/v1/openapi.json',
    // Public: it describes the API, which tenants' developers read without AWS credentials (it reveals no data).
    auth: 'none',
    summary: 'This API as an OpenAPI 3.1 document, generated from the zod schemas that validate it',
    // The document lists every route, this one included (docs/openapi.json is the same document).
    handler: () => Promise.resolve({ status: 200, body: document() }),
  });

/**
 * The public links' function's routes (functions/app/lambda/links.ts), in the API's order: /healthz, the
 * mail context's public routes (the links sent by mail) and the OpenAPI document, given as `document`
 * (docs/openapi.json there). test/infra/routes.test.ts holds them to `routesServedBy(…, 'publicLinks')`.
 */
export const publicLinkRoutes = (clock: () => Clock, mail: () => MailDeps, document: () => unknown): ApiRoute[] => [
  healthzRoute(clock),
  ...mailRoutes(mail).filter((r) => r.auth === 'none'),
  openApiRoute(document),
];
