// API Gateway (HTTP API) entry point of every route behind IAM auth. The public routes have functions of
// their own (functions/calls/lambda/intake.ts, functions/mail/lambda/links.ts) with narrower grants.
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../aws.ts';
import { routesServedBy } from '../system.ts';

const { deps } = awsSystem('redial-api');

export const handler = createApiHandler(routesServedBy(deps, 'api'), deps.logger);
