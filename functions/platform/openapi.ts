import * as z from 'zod';
import type { ApiRoute, Route } from './http.ts';

/** An OpenAPI 3.1 document (the parts redial writes). */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, unknown>>;
}

const schemaOf = (schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> => {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json['$schema'];
  return json;
};

/** `idempotency-key` → `Idempotency-Key`: header names are case-insensitive; the document shows them as clients write them. */
const headerName = (name: string): string => name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());

/** Path, query and header parameters of a route, from its zod object schemas (a schema's description becomes the parameter's). */
function parameters(route: Route<unknown, unknown, unknown>): unknown[] {
  const out: unknown[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
    ['header', route.headers],
  ] as const) {
    if (!schema) continue;
    const json = schemaOf(schema, 'input') as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
    for (const [name, property] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = property;
      out.push({
        name: where === 'header' ? headerName(name) : name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        ...(description === undefined ? {} : { description }),
        schema: rest,
      });
    }
  }
  return out;
}

/**
 * The OpenAPI document of a set of routes, generated from the same zod schemas that validate requests,
 * so it cannot drift from what the API accepts. Routes with `auth: 'iam'` carry the SigV4 security scheme,
 * tenant routes the bearer API key.
 */
export function openApiDocument(routes: readonly ApiRoute[], info: OpenApiDocument['info']): OpenApiDocument & Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes as unknown as Route<unknown, unknown, unknown>[]) {
    const responses = Object.fromEntries(
      Object.entries(r.responses ?? { 200: { description: 'OK' } }).map(([status, response]) => [
        status,
        {
          description: response.description,
          ...(response.headers ? { headers: Object.fromEntries(Object.entries(response.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }])) } : {}),
          ...(response.schema ? { content: { 'application/json': { schema: schemaOf(response.schema, 'output') } } } : {}),
          ...(response.text ? { content: Object.fromEntries(response.text.map((type) => [type, { schema: { type: 'string' } }])) } : {}),
        },
      ]),
    );
    if (r.body) responses['400'] ??= { description: 'Invalid request: `{error, message, issues: [{path, message}]}`' };
    if (r.body || r.rawBody) responses['413'] ??= { description: `Body over ${r.maxBodyBytes ?? 256 * 1024} bytes` };
    if (r.body) responses['415'] ??= { description: 'The body was not sent as `application/json`' };
    if (r.auth === 'tenant') {
      responses['401'] ??= { description: 'No API key, or one that is malformed, unknown or revoked (`WWW-Authenticate: Bearer`); nothing read or written' };
    }
    if (r.auth === 'tenant' || r.scopeFromPath) {
      responses['403'] ??= { description: 'A `tenantId` in the body or query that is not the tenant the request acts for; nothing written' };
    }
    paths[r.path] ??= {};
    paths[r.path]![r.method.toLowerCase()] = {
      summary: r.summary,
      security: r.auth === 'iam' ? [{ sigv4: [] }] : r.auth === 'tenant' ? [{ apiKey: [] }] : [],
      ...(parameters(r).length ? { parameters: parameters(r) } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(r.body, 'input') } } } } : {}),
      ...(r.rawBody ? { requestBody: { required: true, description: r.rawBody.description, content: { [r.rawBody.mediaType]: { schema: { type: 'string' } } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      securitySchemes: {
        sigv4: { type: 'apiKey', name: 'Authorization', in: 'header', description: 'Operators: AWS Signature Version 4 for execute-api (API Gateway IAM authorization)' },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'rdl_<tenantId>.<keyId>.<secret>',
          description: 'Tenants: `Authorization: Bearer <key>`, one of the tenant’s API keys (an operator issues it: `POST /v1/tenants/{tenantId}/keys`); the request acts for the key’s tenant',
        },
      },
    },
  };
}
