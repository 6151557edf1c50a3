import { randomBytes } from 'node:crypto';
import { createApiHandler, route } from '../platform/http.ts';
import type { Logger } from '../platform/logger.ts';
import { startHttpServer } from '../platform/local/http-server.ts';
import type { ApiHandler } from '../platform/local/http-server.ts';
import { sameOriginOnly } from '../platform/local/same-origin.ts';
import { redirect } from './layout.ts';
import { panelRoutes } from './index.ts';
import type { PanelApi } from './source.ts';

/** A panel served on its own, in front of an ops API. */
export interface PanelServer {
  /** `http://127.0.0.1:<port>`; the panel is at `/panel`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the panel on 127.0.0.1 in front of `api` (`npm run ops -- panel --api …`): the same pages as
 * the local runtime's, reading and acting only through that API. It binds loopback only and keeps the
 * local runtime's two guards: a request is served only from this server's own Host and Origin
 * (sameOriginOnly: no page on another site, no rebound name, can drive it), and every button's POST
 * carries this process's form token. Nothing is exposed beyond this machine; on AWS the API sees the
 * operator's own signed requests.
 */
export async function startPanelServer(options: { api: PanelApi; port: number; logger: Logger }): Promise<PanelServer> {
  const formToken = randomBytes(32).toString('base64url');
  const home = route({ method: 'GET', path: '/', auth: 'none', summary: 'The panel', handler: () => Promise.resolve(redirect('/panel')) });
  const routed = createApiHandler([home, ...panelRoutes({ api: options.api, formToken })], options.logger);
  // The guard needs the port, known once the server listens; nothing is served before then.
  const guard: { handler?: ApiHandler } = {};
  const server = await startHttpServer({ port: options.port, handler: (event, context) => guard.handler!(event, context) });
  guard.handler = sameOriginOnly((event, context) => routed(event, context), [server.url, `http://localhost:${server.port}`]);
  return { url: server.url, close: () => server.close() };
}
