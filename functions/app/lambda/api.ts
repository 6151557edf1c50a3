// API Gateway (HTTP API) entry point of every route behind IAM auth. The public routes have functions of
// their own (intake.ts, links.ts) with narrower grants.
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../aws.ts';
import { routesServedBy } from '../system.ts';

const { system, host } = awsSystem('redial-api');

export const handler = createApiHandler(routesServedBy(system, 'api'), host.logger);
