// API Gateway (HTTP API) entry point of the public routes other than the intake: the links sent by mail
// (their single-use token is their auth) and /healthz. It may update a tenant's mail rows and nothing else.
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../aws.ts';
import { routesServedBy } from '../system.ts';

const { system, host } = awsSystem('redial-links');

export const handler = createApiHandler(routesServedBy(system, 'publicLinks'), host.logger);
