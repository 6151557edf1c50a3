// API Gateway (HTTP API) entry point: every route of redial, behind IAM auth except the public ones.
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../aws.ts';
import { allRoutes } from '../system.ts';

const { deps } = awsSystem('redial-api');

export const handler = createApiHandler(allRoutes(deps), deps.logger);
