// API Gateway (HTTP API) entry point of the tenant routes (docs/operations.md, "Who may call what"): API
// Gateway asks for no IAM signature on them; every request must present one of a tenant's API keys, which
// this function checks before anything else runs (functions/platform/http.ts, functions/calls/keys.ts) and
// acts for that tenant alone. Operators reach the same handlers through the IAM copies (api.ts).
import { createApiHandler } from '../../platform/http.ts';
import { callsConfigFromEnv } from '../../calls/config.ts';
import { lambdaClientHost, withSecretKey } from '../aws.ts';
import { withMailLinks } from '../mail-parts.ts';
import { withUploads } from '../uploads-part.ts';
import { routesServedBy } from '../routes.ts';
import { Contexts } from '../wiring.ts';

const { host, tracing } = lambdaClientHost('redial-tenant-api', () => ({ calls: callsConfigFromEnv() }), withMailLinks, withSecretKey, withUploads);
const contexts = new Contexts(() => host);

export const handler = createApiHandler(routesServedBy(contexts, 'tenantApi'), host.logger, { keys: () => contexts.apiKeys }).use(tracing.handlerMiddleware());
