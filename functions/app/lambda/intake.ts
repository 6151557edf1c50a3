// API Gateway (HTTP API) entry point of the call-result intake, POST /v1/calls/webhook: a public route
// (its Standard Webhooks signature is its auth), so it runs alone, with the intake's grants only.
import * as z from 'zod';
import { readSecretString } from '../../platform/aws.ts';
import { parseConfig } from '../../platform/config.ts';
import { createApiHandler } from '../../platform/http.ts';
import { checkWebhookSecret } from '../../calls/config.ts';
import { countingCallResults } from '../../calls/metrics.ts';
import { tracingCallResults } from '../../calls/tracing.ts';
import { awsSystem } from '../aws.ts';
import { routesServedBy, System } from '../system.ts';

const { host, clients, tracing } = awsSystem('redial-intake');
// The signing secret, read once per cold start (lib/ keeps it in Secrets Manager, never in the environment).
const { CALL_WEBHOOK_SECRET_ARN } = parseConfig(z.object({ CALL_WEBHOOK_SECRET_ARN: z.string().startsWith('arn:') }));
const webhookSecret = checkWebhookSecret(await readSecretString(clients.secrets, CALL_WEBHOOK_SECRET_ARN));
const system = new System(() => ({ ...host, calls: { ...host.calls, webhookSecret } }));

// Each result's trace is annotated with its batchId and callId: the keys to follow it by.
export const handler = createApiHandler(
  routesServedBy(system, 'intake').map((intake) => tracingCallResults(countingCallResults(intake, host.metrics), tracing)),
  host.logger,
).use(tracing.handlerMiddleware());
