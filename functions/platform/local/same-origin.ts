import type { ApiHandler } from './http-server.ts';

/**
 * The local runtime's guard against cross-site requests. Locally there is no IAM: the API and the panel
 * answer anyone who reaches 127.0.0.1, and any web page the developer opens can send requests there (a
 * `no-cors` fetch or a form post needs no permission), or reach it under a name of its own that resolves to
 * 127.0.0.1 (DNS rebinding). So a request is served only when its `Host` is one of the runtime's own
 * addresses and its `Origin`, when it has one, is one of the runtime's own origins; anything else is a 403
 * and reaches no route. Clients that are not browsers (curl, the CLI, the call placer) send no Origin and
 * the Host they connected to.
 *
 * @example
 * const handler = sameOriginOnly(api, ['http://127.0.0.1:3000', 'http://localhost:3000']);
 */
export function sameOriginOnly(handler: ApiHandler, ownOrigins: readonly string[]): ApiHandler {
  const origins = new Set(ownOrigins.map((o) => new URL(o).origin));
  const hosts = new Set(ownOrigins.map((o) => new URL(o).host));
  return async (event, context) => {
    const host = event.headers['host']?.toLowerCase();
    const origin = event.headers['origin'];
    if (host === undefined || !hosts.has(host)) return refused(`Host ${host ?? '(none)'} is not this runtime's address`);
    if (origin !== undefined && !origins.has(origin.toLowerCase())) return refused(`Origin ${origin} is not this runtime's`);
    return handler(event, context);
  };
}

const refused = (why: string) => ({
  statusCode: 403,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: 'cross_site_refused', message: `${why}: the local runtime answers its own pages and clients only` }),
});
