// API Gateway (HTTP API) entry point of every route behind IAM auth. The public routes have functions of
// their own (intake.ts, links.ts) with narrower grants. Operators reach every context, so this entry
// wires every context's routes (../routes.ts) but no job's code (without SES: mail leaves from the mail
// worker only).
import { createApiHandler } from '../../platform/http.ts';
import { callsConfigFromEnv } from '../../calls/config.ts';
import { lambdaClientHost, withSecretKey } from '../aws.ts';
import { withMailLinks } from '../mail-parts.ts';
import { withUploads } from '../uploads-part.ts';
import { routesServedBy } from '../routes.ts';
import { Contexts } from '../wiring.ts';

const { host, tracing } = lambdaClientHost('redial-api', () => ({ calls: callsConfigFromEnv() }), withMailLinks, withSecretKey, withUploads);
const contexts = new Contexts(() => host);

export const handler = createApiHandler(routesServedBy(contexts, 'api'), host.logger).use(tracing.handlerMiddleware());
