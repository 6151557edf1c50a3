import middy from '@middy/core';
import type { MiddlewareObj, Request } from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import httpRouterHandler from '@middy/http-router';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import * as z from 'zod';
import { isTransientAwsError } from './aws.ts';
import type { Logger } from './logger.ts';
import { operatorScope, scopeOfKey, tenantIdSchema } from './tenancy.ts';
import type { ApiKeyVerifier, TenantScope } from './tenancy.ts';

/**
 * An error a route throws (or a context's error map returns) to answer with a given status, a short fixed
 * code and a message: the body is `{error: code, message, ...details}`.
 */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  /** Response headers beside the body (`retry-after`). */
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>, options?: { cause?: unknown; headers?: Record<string, string> }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.headers = options?.headers ?? {};
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const notFound = (what: string): HttpError => new HttpError(404, 'not_found', `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>): HttpError => new HttpError(409, 'conflict', message, details);
export const unavailable = (message = 'temporarily unavailable; nothing was written, try again', headers?: Record<string, string>): HttpError =>
  new HttpError(503, 'unavailable', message, undefined, headers ? { headers } : undefined);

/** A validated request. */
export interface ApiRequest<P, Q, B, H = unknown> {
  params: P;
  query: Q;
  body: B;
  /** Every header, by lower-cased name; those the route's `headers` schema declares, as it parsed them. */
  headers: Record<string, string> & H;
  /** The body exactly as received (signature checks need it). */
  rawBody: string;
  event: APIGatewayProxyEventV2;
  /**
   * The tenant the request acts for: on a tenant route, the tenant of the API key it presented; on an
   * operator copy of one, the tenant its path names. Undefined on every other route.
   */
  scope: TenantScope | undefined;
}

/** A tenant route's validated request: its scope is always there. */
export type TenantRequest<P, Q, B, H = unknown> = ApiRequest<P, Q, B, H> & { scope: TenantScope };

/** A route's answer: JSON by default, or `text` with its own content type (the panel's HTML). */
export interface ApiResponse {
  status: number;
  body?: unknown;
  text?: string;
  headers?: Record<string, string>;
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/** A route: where it lives, who may call it, what it accepts (zod), and what it does. */
export interface Route<P = unknown, Q = unknown, B = unknown, H = unknown> {
  method: Method;
  path: string;
  /**
   * Who may call it (docs/operations.md, "Who may call what"): `tenant`, a tenant with one of its API keys
   * (`Authorization: Bearer rdl_…`, checked here before anything is parsed; the handler gets its
   * {@link TenantScope}); `iam`, an operator (API Gateway checks SigV4 on AWS; locally, whoever reaches
   * 127.0.0.1); `none`, the signed intake and the tokens sent by mail, which authenticate themselves.
   */
  auth: 'iam' | 'none' | 'tenant';
  /**
   * An operator copy of a tenant route (made by {@link withOperatorCopies}): `auth: 'iam'`, and the scope is
   * the tenant its path names (`params.tenantId`).
   */
  scopeFromPath?: boolean;
  /** A tenant route's operator copy's path. @default `/v1/ops/tenants/{tenantId}` and the route's path after `/v1` */
  opsPath?: string;
  summary: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /** The JSON body's schema. A route with one takes `Content-Type: application/json` only (else 415). */
  body?: z.ZodType<B>;
  /**
   * Request headers the route reads, by lower-cased name (`idempotency-key`): validated like the body (a
   * bad one is a 400 naming `headers.<name>`) and listed in the OpenAPI document. Others pass through unread.
   */
  headers?: z.ZodType<H>;
  /**
   * A body that is not JSON, which the handler reads itself from the raw event (the CSV of
   * `POST /v1/batches/csv`): its media type and what it holds, for the OpenAPI document only.
   */
  rawBody?: { mediaType: string; description: string };
  /** Largest body accepted, checked before any parsing (default 256 KiB). */
  maxBodyBytes?: number;
  /**
   * Which statuses the route answers, for the OpenAPI document: a JSON answer's schema, or the media types
   * of a text answer (`text`: an export's CSV), and the response headers it sets, with what each says.
   */
  responses?: Record<number, { description: string; schema?: z.ZodType; text?: readonly string[]; headers?: Record<string, string> }>;
  /** Runs before parsing, on the raw request (the intake verifies its signature here). */
  guard?: (request: { headers: Record<string, string>; rawBody: string }) => Promise<void> | void;
  /** The route's context's error map: a domain error in, its HTTP answer out (undefined: not a domain error). */
  errors?: ErrorMap;
  handler: (request: ApiRequest<P, Q, B, H>) => Promise<ApiResponse>;
}

/** A context's one mapping from its domain errors to HTTP answers; undefined for an error it does not know. */
export type ErrorMap = (error: unknown) => HttpError | undefined;

/** A route with its types erased: what route lists, routers and the OpenAPI document take. */
export type ApiRoute = Route<never, never, never, never>;

/** Declares a route; the types of params, query, body and declared headers follow from their schemas. */
export const route = <P = Record<string, never>, Q = Record<string, never>, B = undefined, H = unknown>(definition: Route<P, Q, B, H>): ApiRoute =>
  definition as unknown as ApiRoute;

/** A tenant route as declared: its handler is given the request's {@link TenantScope}. */
export interface TenantRoute<P, Q, B, H> extends Omit<Route<P, Q, B, H>, 'auth' | 'handler' | 'scopeFromPath'> {
  handler: (request: TenantRequest<P, Q, B, H>) => Promise<ApiResponse>;
}

/**
 * Declares a tenant route (`auth: 'tenant'`): callable with one of a tenant's API keys, for that tenant
 * alone; {@link withOperatorCopies} gives operators a copy of it under `/v1/ops/tenants/{tenantId}`. A
 * `tenantId` in its body or query is optional, and refused (403) when it is not the scope's.
 */
export const tenantRoute = <P = Record<string, never>, Q = Record<string, never>, B = undefined, H = unknown>(definition: TenantRoute<P, Q, B, H>): ApiRoute =>
  ({ ...definition, auth: 'tenant' }) as unknown as ApiRoute;

/** The path of a tenant route's operator copy. */
export const operatorPathOf = (r: Pick<Route, 'path' | 'opsPath'>): string => r.opsPath ?? `/v1/ops/tenants/{tenantId}${r.path.replace(/^\/v1(?=\/)/, '')}`;

/**
 * A tenant route's operator copy: the same handler, at {@link operatorPathOf}, behind IAM, acting for the
 * tenant its path names. The panel and the CLI's operator commands reach tenants' data through these.
 */
export function operatorCopy(r: ApiRoute): ApiRoute {
  if (r.auth !== 'tenant') throw new Error(`${r.method} ${r.path} is not a tenant route`);
  const tenant = { tenantId: tenantIdSchema };
  const params = r.params === undefined ? z.object(tenant) : r.params instanceof z.ZodObject ? r.params.extend(tenant) : undefined;
  if (!params) throw new Error(`${r.method} ${r.path}: an operator copy needs its path parameters as a z.object`);
  const { opsPath: _, ...rest } = r;
  return { ...rest, path: operatorPathOf(r), auth: 'iam', scopeFromPath: true, params: params as unknown as ApiRoute['params'], summary: `${r.summary} (operator copy: for the tenant in the path)` };
}

/** The routes, each tenant route followed by its operator copy. */
export const withOperatorCopies = (routes: readonly ApiRoute[]): ApiRoute[] => routes.flatMap((r) => (r.auth === 'tenant' ? [r, operatorCopy(r)] : [r]));

/** The same routes, each answering its context's domain errors through `errors` (one map per context). */
export const withErrors = (errors: ErrorMap, routes: readonly ApiRoute[]): ApiRoute[] => routes.map((r) => ({ ...r, errors }));

export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;

/** A field path as the error body shows it: `contacts.3.number`. */
const issuePath = (path: readonly PropertyKey[]): string => path.map(String).join('.');

function invalid(where: 'body' | 'query' | 'path' | 'headers', error: z.ZodError): HttpError {
  return new HttpError(400, 'invalid_request', `invalid ${where}`, {
    issues: error.issues.flatMap((issue) =>
      // An unknown field is named by its own path (`body.maxAtempts`), not its object's.
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({ path: [where, issuePath([...issue.path, key])].filter(Boolean).join('.'), message: 'unknown field' }))
        : [{ path: [where, issuePath(issue.path)].filter(Boolean).join('.'), message: issue.message }],
    ),
  });
}

/** Whether a Content-Type is JSON: `application/json` or a `+json` type, with any parameters. */
export function isJson(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && /^application\/[a-z0-9.+-]+\+json$/.test(type));
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  return { statusCode: status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** What the middlewares hand on to the route's handler, on the Lambda context (as middy's own middlewares do). */
interface RouteState {
  rawBody: string;
  params: unknown;
  query: unknown;
  headers: Record<string, string>;
  scope: TenantScope | undefined;
}

type RouteContext = Context & { route: RouteState };
type HttpRequest = Request<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RouteContext>;
type HttpMiddleware = MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RouteContext>;

/** 413 for a body over `maxBytes`, checked before anything reads it. */
const bodyLimit = (maxBytes: number): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    const { body, isBase64Encoded } = request.event;
    const size = Buffer.byteLength(body ?? '', isBase64Encoded ? 'base64' : 'utf8');
    if (size > maxBytes) throw new HttpError(413, 'payload_too_large', `body is ${size} bytes; the limit is ${maxBytes}`);
  },
});

/**
 * A JSON route takes JSON only (415 otherwise): a browser sends text/plain or a form cross-site without
 * asking first. Checked before the guard, so the raw body is kept for it and for the handler.
 */
const jsonOnly = (): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    if (!isJson(request.event.headers?.['content-type'])) {
      throw new HttpError(415, 'unsupported_media_type', 'send the body as application/json (Content-Type: application/json)');
    }
  },
});

/** Where the middlewares leave what they found for the handler, empty at first. */
const routeState = (): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    request.context.route = { rawBody: '', params: {}, query: {}, headers: {}, scope: undefined };
  },
});

/** Keeps the body as received (signature checks read it), decoded from base64 if API Gateway encoded it. */
const rawBody = (): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    const { body, isBase64Encoded } = request.event;
    request.context.route.rawBody = isBase64Encoded ? Buffer.from(body ?? '', 'base64').toString('utf8') : (body ?? '');
  },
});

/** Runs the route's guard on the raw request, before anything is parsed (the intake's signature check). */
const guard = (check: NonNullable<Route['guard']>): HttpMiddleware => ({
  before: async (request: HttpRequest) => {
    await check({ headers: request.event.headers as Record<string, string>, rawBody: request.context.route.rawBody });
  },
});

/** RFC 6750's challenge: `WWW-Authenticate: Bearer`, with `error="invalid_token"` for a key presented and refused. */
function challenge(presented: boolean): HttpError {
  const header = presented ? 'Bearer realm="redial", error="invalid_token"' : 'Bearer realm="redial"';
  const message = presented
    ? 'the API key is not valid: malformed, unknown or revoked'
    : 'this route needs one of the tenant’s API keys: Authorization: Bearer rdl_…';
  return new HttpError(401, 'unauthorized', message, undefined, { headers: { 'www-authenticate': header } });
}

/**
 * The tenant auth step, before anything is parsed: `Authorization: Bearer <key>`, verified (a cached
 * lookup and a constant-time hash comparison: functions/calls/keys.ts); the request acts for the key's
 * tenant. No key, a malformed, unknown or revoked one: 401 with `WWW-Authenticate: Bearer`, nothing read
 * of the body and nothing written.
 */
const bearerKey = (keys: () => ApiKeyVerifier): HttpMiddleware => ({
  before: async (request: HttpRequest) => {
    const header = request.event.headers?.['authorization'];
    if (header === undefined || header.trim() === '') throw challenge(false);
    const match = /^Bearer +(\S{1,512})\s*$/i.exec(header);
    if (!match) throw challenge(true);
    const found = await keys().verify(match[1]!);
    if (!found) throw challenge(true);
    request.context.route.scope = scopeOfKey(found.tenantId, found.keyId);
  },
});

/**
 * After the validator: an operator copy acts for the tenant its path names; and on any tenant-scoped route,
 * a `tenantId` in the body or the query that is not the scope's is refused (403), nothing written.
 */
const tenantScoped = (fromPath: boolean): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    const state = request.context.route;
    if (fromPath) state.scope = operatorScope((state.params as { tenantId: string }).tenantId);
    const scope = state.scope;
    if (!scope) throw new Error('a tenant-scoped route ran without a scope');
    const named: [string, unknown][] = [
      ['body.tenantId', (request.event.body as { tenantId?: unknown } | undefined)?.tenantId],
      ['query.tenantId', request.event.queryStringParameters?.['tenantId']],
    ];
    for (const [path, tenantId] of named) {
      if (tenantId !== undefined && tenantId !== scope.tenantId) {
        const who = fromPath ? 'the tenant in the path' : 'the API key’s tenant';
        throw new HttpError(403, 'forbidden', `${path} names another tenant than ${who}; leave it out, or name ${scope.tenantId}`, { issues: [{ path, message: `not ${scope.tenantId}` }] });
      }
    }
  },
});

/**
 * middy's JSON body parser, after the guard; an empty body is left undefined for the schema to refuse
 * with its field path, as any other missing field is.
 */
const jsonBody = (): HttpMiddleware => {
  const parser = httpJsonBodyParser({ disableContentTypeCheck: true });
  return {
    before: async (request: HttpRequest) => {
      if (!request.event.body) {
        (request.event as { body?: unknown }).body = undefined;
        return;
      }
      await parser.before?.(request);
    },
  };
};

/**
 * Path parameters as the route sees them: percent-decoded (`webhook.deliver%3Aevt_1` → `webhook.deliver:evt_1`).
 * The router matches the raw path; a malformed escape is left as it is and fails the route's schema.
 */
function decodeParams(params: APIGatewayProxyEventV2['pathParameters']): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    try {
      out[key] = value === undefined ? undefined : decodeURIComponent(value);
    } catch {
      out[key] = value;
    }
  }
  return out;
}

/** The zod validator: path, query, declared headers and body, each refused with its field paths (400). */
const validator = (definition: Route<unknown, unknown, unknown, unknown>): HttpMiddleware => ({
  before: (request: HttpRequest) => {
    const { event } = request;
    const check = <T>(where: 'path' | 'query' | 'headers' | 'body', schema: z.ZodType<T> | undefined, value: unknown): unknown => {
      if (!schema) return where === 'body' ? undefined : {};
      const parsed = schema.safeParse(value);
      if (!parsed.success) throw invalid(where, parsed.error);
      return parsed.data;
    };
    request.context.route.params = check('path', definition.params, decodeParams(event.pathParameters));
    request.context.route.query = check('query', definition.query, event.queryStringParameters ?? {});
    const declared = check('headers', definition.headers, event.headers ?? {});
    request.context.route.headers = { ...(event.headers as Record<string, string>), ...(declared as object) };
    if (definition.body) (event as { body?: unknown }).body = check('body', definition.body, event.body);
  },
});

/**
 * Turns what a route threw into an answer http-error-handler renders: an {@link HttpError} as it says, a
 * domain error through the route's context's {@link ErrorMap}, a body middy's parser could not read as
 * `invalid_json`, a transient AWS error as 503 with Retry-After (nothing was written; the caller decides),
 * and anything else as a logged 500 that shows nothing of the error.
 */
const errorAnswers = (definition: Route<unknown, unknown, unknown, unknown>, logger: Logger): HttpMiddleware => ({
  onError: (request: HttpRequest) => {
    const error = request.error;
    const answer = toHttpError(error, definition.errors);
    if (answer) {
      request.error = renderable(answer);
      return;
    }
    const path = request.event.rawPath;
    if (isTransientAwsError(error)) {
      logger.warn('transient failure answered 503', { path, error: error instanceof Error ? error.name : String(error) });
      request.error = renderable(unavailable(undefined, { 'retry-after': '1' }));
      return;
    }
    logger.error('unhandled error', { path, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) });
    request.error = renderable(new HttpError(500, 'internal', 'internal error'));
  },
});

function toHttpError(error: unknown, errors: ErrorMap | undefined): HttpError | undefined {
  if (error instanceof HttpError) return error;
  const mapped = errors?.(error);
  if (mapped) return mapped;
  const cause = (error as { cause?: { package?: unknown } } | undefined)?.cause;
  if (cause?.package === '@middy/http-json-body-parser') return new HttpError(400, 'invalid_json', 'body is not valid JSON', undefined, { cause: error });
  return undefined;
}

/** An HttpError in the shape http-error-handler renders: status, exposed, its JSON body as the message. */
const renderable = (error: HttpError): Error =>
  Object.assign(new Error(JSON.stringify({ error: error.code, message: error.message, ...error.details })), {
    statusCode: error.status,
    expose: true,
    // http-error-handler sets Content-Type: application/json for a JSON message.
    headers: error.headers,
  });

/** A route's answer as API Gateway takes it. */
function respond(response: ApiResponse): APIGatewayProxyStructuredResultV2 {
  if (response.text !== undefined) {
    return { statusCode: response.status, headers: { 'content-type': 'text/plain; charset=utf-8', ...response.headers }, body: response.text };
  }
  return response.body === undefined ? { statusCode: response.status, headers: response.headers ?? {}, body: '' } : json(response.status, response.body, response.headers);
}

/**
 * One route as a middy chain, read top to bottom: security headers, errors rendered, header names lower
 * case, the body cap, a tenant route's API key, JSON only, the raw body kept, the guard, the JSON body
 * parsed, the zod validator, the tenant scope's checks, then the handler.
 */
function routeHandler(r: ApiRoute, logger: Logger, keys: (() => ApiKeyVerifier) | undefined) {
  const definition = r as unknown as Route<unknown, unknown, unknown, unknown>;
  const chain = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RouteContext>()
    // Referrer-Policy same-origin, not middy's no-referrer: under no-referrer a browser sends `Origin: null`
    // on a page's own form posts, and the local runtime's same-origin guard (platform/local/same-origin.ts)
    // would refuse the panel's buttons.
    .use(httpSecurityHeaders({ contentSecurityPolicy: false, referrerPolicy: { policy: 'same-origin' } }))
    .use(httpErrorHandler({ logger: false }))
    .use(errorAnswers(definition, logger))
    .use(httpHeaderNormalizer())
    .use(routeState())
    .use(bodyLimit(definition.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));
  if (definition.auth === 'tenant') {
    if (!keys) throw new Error(`${definition.method} ${definition.path} is a tenant route: the API handler needs an API key verifier`);
    chain.use(bearerKey(keys));
  }
  if (definition.body) chain.use(jsonOnly());
  chain.use(rawBody());
  if (definition.guard) chain.use(guard(definition.guard));
  if (definition.body) chain.use(jsonBody());
  chain.use(validator(definition));
  if (definition.auth === 'tenant' || definition.scopeFromPath) chain.use(tenantScoped(definition.scopeFromPath === true));
  return chain.handler(async (event, context) => {
    const { rawBody: raw, params, query, headers, scope } = context.route;
    return respond(await definition.handler({ params, query, body: event.body, headers, rawBody: raw, event, scope }));
  });
}

/** What an API handler needs besides its routes. */
export interface ApiHandlerOptions {
  /** How tenant routes verify a presented API key; required when any route is a tenant route. Called on the first such request. */
  keys?: () => ApiKeyVerifier;
}

/**
 * The API Gateway (HTTP API, payload 2.0) handler for a set of routes: middy's HTTP router over one middy
 * chain per route. The same handler serves API Gateway on AWS and the local host's HTTP server.
 */
export function createApiHandler(routes: readonly ApiRoute[], logger: Logger, options: ApiHandlerOptions = {}) {
  const router = httpRouterHandler({
    routes: routes.map((r) => ({ method: r.method, path: r.path, handler: routeHandler(r, logger, options.keys) as never })),
    notFoundResponse: ({ method, path }: { method: string; path: string }) => json(404, { error: 'not_found', message: `no route for ${method} ${path}` }) as never,
  });
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>().handler(router as never);
}

/** Query-string helpers for zod schemas. */
export const queryInt = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
