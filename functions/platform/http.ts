import middy from '@middy/core';
import httpRouterHandler from '@middy/http-router';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { z } from 'zod';
import { isTransientAwsError } from './aws.ts';
import type { Logger } from './logger.ts';

/** An error a route handler throws to answer with a given status and a short, fixed code. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  constructor(status: number, code: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const notFound = (what: string): HttpError => new HttpError(404, 'not_found', `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>): HttpError => new HttpError(409, 'conflict', message, details);
export const unavailable = (message = 'temporarily unavailable; nothing was written, try again'): HttpError =>
  new HttpError(503, 'unavailable', message);

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
}

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
  /** `iam` on AWS (API Gateway checks SigV4); `none` for the signed intake and the tokens sent by mail. */
  auth: 'iam' | 'none';
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
  /** Largest body accepted, checked before any parsing (default 256 KiB). */
  maxBodyBytes?: number;
  /** Which statuses the route answers, with their response schemas, for the OpenAPI document. */
  responses?: Record<number, { description: string; schema?: z.ZodType }>;
  /** Runs before parsing, on the raw request (the intake verifies its signature here). */
  guard?: (request: { headers: Record<string, string>; rawBody: string }) => Promise<void> | void;
  handler: (request: ApiRequest<P, Q, B, H>) => Promise<ApiResponse>;
}

/** Declares a route; the types of params, query, body and declared headers follow from their schemas. */
export const route = <P = Record<string, never>, Q = Record<string, never>, B = undefined, H = unknown>(definition: Route<P, Q, B, H>): Route<P, Q, B, H> =>
  definition;

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

function lowerHeaders(headers: APIGatewayProxyEventV2['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}

function adapt(definition: Route<unknown, unknown, unknown>, logger: Logger) {
  return async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
    try {
      const raw = event.body ?? '';
      const size = Buffer.byteLength(raw, event.isBase64Encoded ? 'base64' : 'utf8');
      const max = definition.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
      if (size > max) throw new HttpError(413, 'payload_too_large', `body is ${size} bytes; the limit is ${max}`);
      const rawBody = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      const headers = lowerHeaders(event.headers);
      // A JSON route takes JSON only: a browser sends text/plain or a form cross-site without asking first.
      if (definition.body && !isJson(headers['content-type'])) {
        throw new HttpError(415, 'unsupported_media_type', 'send the body as application/json (Content-Type: application/json)');
      }
      if (definition.guard) await definition.guard({ headers, rawBody });

      const params = definition.params ? definition.params.safeParse(decodeParams(event.pathParameters)) : { success: true as const, data: {} };
      if (!params.success) throw invalid('path', params.error);
      const query = definition.query ? definition.query.safeParse(event.queryStringParameters ?? {}) : { success: true as const, data: {} };
      if (!query.success) throw invalid('query', query.error);
      const declared = definition.headers ? definition.headers.safeParse(headers) : { success: true as const, data: {} };
      if (!declared.success) throw invalid('headers', declared.error);
      let body: unknown = undefined;
      if (definition.body) {
        let parsedJson: unknown;
        try {
          parsedJson = rawBody === '' ? undefined : JSON.parse(rawBody);
        } catch {
          throw new HttpError(400, 'invalid_json', 'body is not valid JSON');
        }
        const parsed = definition.body.safeParse(parsedJson);
        if (!parsed.success) throw invalid('body', parsed.error);
        body = parsed.data;
      }
      const response = await definition.handler({ params: params.data, query: query.data, body, headers: { ...headers, ...(declared.data as object) }, rawBody, event });
      if (response.text !== undefined) {
        return { statusCode: response.status, headers: { 'content-type': 'text/plain; charset=utf-8', ...response.headers }, body: response.text };
      }
      return response.body === undefined
        ? { statusCode: response.status, headers: response.headers ?? {}, body: '' }
        : json(response.status, response.body, response.headers);
    } catch (error) {
      if (error instanceof HttpError) return json(error.status, { error: error.code, message: error.message, ...error.details });
      if (isTransientAwsError(error)) {
        logger.warn('transient failure answered 503', { path: event.rawPath, error: error instanceof Error ? error.name : String(error) });
        return json(503, { error: 'unavailable', message: 'temporarily unavailable; nothing was written, try again' }, { 'retry-after': '1' });
      }
      logger.error('unhandled error', { path: event.rawPath, error: error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error) });
      return json(500, { error: 'internal', message: 'internal error' });
    }
  };
}

/**
 * The API Gateway (HTTP API, payload 2.0) handler for a set of routes: middy with its HTTP router.
 * The same handler serves API Gateway on AWS and the local runtime's HTTP server.
 */
export function createApiHandler(routes: readonly Route<never, never, never>[], logger: Logger) {
  const router = httpRouterHandler({
    routes: routes.map((r) => ({ method: r.method, path: r.path, handler: adapt(r as unknown as Route<unknown, unknown, unknown>, logger) })),
    notFoundResponse: ({ method, path }: { method: string; path: string }) =>
      json(404, { error: 'not_found', message: `no route for ${method} ${path}` }) as never,
  });
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>().handler(
    router,
  );
}

/** Query-string helpers for zod schemas. */
export const queryInt = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
