// API Gateway (HTTP API) entry point: every route of redial, behind IAM auth except the public ones.
import { z } from 'zod';
import { checkWebhookSecret } from '../../calls/config.ts';
import { readSecretString } from '../../platform/aws.ts';
import { parseConfig } from '../../platform/config.ts';
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../aws.ts';
import { allRoutes } from '../system.ts';

const system = awsSystem('redial-api');
// The call-result intake's signing secret, read once per cold start (lib/ keeps it in Secrets Manager).
const { CALL_WEBHOOK_SECRET_ARN } = parseConfig(z.object({ CALL_WEBHOOK_SECRET_ARN: z.string().startsWith('arn:') }));
const webhookSecret = checkWebhookSecret(await readSecretString(system.clients.secrets, CALL_WEBHOOK_SECRET_ARN));
const deps = { ...system.deps, calls: { ...system.deps.calls, webhookSecret } };

export const handler = createApiHandler(allRoutes(deps), deps.logger);
