// API Gateway (HTTP API) entry point of the public routes other than the intake: the links sent by mail
// (their single-use token is their auth), /healthz and the OpenAPI document. It may update a tenant's mail
// rows and nothing else. It builds the mail context's public routes alone: the document it serves is
// docs/openapi.json, the generated document of every route (test/infra/routes.test.ts holds the two
// equal), so that its bundle holds no other context's routes (docs/architecture.md, "Bundles").
import { createApiHandler } from '../../platform/http.ts';
import type { MailDeps } from '../../mail/context.ts';
import openApiDocument from '../../../docs/openapi.json' with { type: 'json' };
import { lambdaClientHost } from '../aws.ts';
import { buildMail } from '../contexts/mail.ts';
import { withMailLinks } from '../mail-parts.ts';
import { publicLinkRoutes } from '../public-routes.ts';

const { host, tracing } = lambdaClientHost('redial-links', withMailLinks);
let mail: MailDeps | undefined;
const routes = publicLinkRoutes(
  () => host.clock,
  () => (mail ??= buildMail(host)),
  () => openApiDocument,
);

export const handler = createApiHandler(routes, host.logger).use(tracing.handlerMiddleware());
