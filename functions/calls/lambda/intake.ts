// API Gateway (HTTP API) entry point of the call-result intake, POST /v1/calls/webhook: a public route
// (its Standard Webhooks signature is its auth), so it runs alone, with the intake's grants only.
import { z } from 'zod';
import { readSecretString } from '../../platform/aws.ts';
import { parseConfig } from '../../platform/config.ts';
import { createApiHandler } from '../../platform/http.ts';
import { awsSystem } from '../../ops/aws.ts';
import { routesServedBy } from '../../ops/system.ts';
import { checkWebhookSecret } from '../config.ts';
import { countingCallResults } from '../metrics.ts';

const system = awsSystem('redial-intake');
// The signing secret, read once per cold start (lib/ keeps it in Secrets Manager, never in the environment).
const { CALL_WEBHOOK_SECRET_ARN } = parseConfig(z.object({ CALL_WEBHOOK_SECRET_ARN: z.string().startsWith('arn:') }));
const webhookSecret = checkWebhookSecret(await readSecretString(system.clients.secrets, CALL_WEBHOOK_SECRET_ARN));
const deps = { ...system.deps, calls: { ...system.deps.calls, webhookSecret } };

export const handler = createApiHandler(
  routesServedBy(deps, 'intake').map((intake) => countingCallResults(intake, deps.metrics)),
  deps.logger,
);
