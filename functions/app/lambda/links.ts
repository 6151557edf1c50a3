// API Gateway (HTTP API) entry point of the public routes other than the intake: the links sent by mail
// (their single-use token is their auth), /healthz and the OpenAPI document. It may update a tenant's mail
// rows and nothing else. The document lists every route, so this entry holds every context's routes (not
// their clients: it sends no mail and uses no key).
import { createApiHandler } from '../../platform/http.ts';
import { lambdaClientHost } from '../aws.ts';
import { withMailLinks } from '../mail-parts.ts';
import { routesServedBy, System } from '../system.ts';

const { host, tracing } = lambdaClientHost('redial-links', withMailLinks);
const system = new System(() => host);

export const handler = createApiHandler(routesServedBy(system, 'publicLinks'), host.logger).use(tracing.handlerMiddleware());
