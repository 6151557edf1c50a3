// API Gateway (HTTP API) entry point of the call-result intake, POST /v1/calls/webhook: a public route
// (its Standard Webhooks signature is its auth), so it runs alone, with the intake's grants only. It
// imports the intake route, the calls context and the webhooks publisher, and nothing else: its caller
// waits through every cold start (docs/architecture.md, "Bundles").
import * as z from 'zod';
import { parseConfig } from '../../platform/config.ts';
import { createApiHandler } from '../../platform/http.ts';
import { callsConfigFromEnv, checkWebhookSecret } from '../../calls/config.ts';
import { intakeRoute } from '../../calls/intake-api.ts';
import { countingCallResults } from '../../calls/metrics.ts';
import { tracingCallResults } from '../../calls/tracing.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import { lambdaClientHost, readSecret } from '../aws.ts';
import { buildCalls } from '../contexts/calls.ts';
import { buildPublisher } from '../contexts/publisher.ts';

// The signing secret, read once per cold start (lib/ keeps it in Secrets Manager, never in the environment).
const { CALL_WEBHOOK_SECRET_ARN } = parseConfig(z.object({ CALL_WEBHOOK_SECRET_ARN: z.string().startsWith('arn:') }));
const webhookSecret = checkWebhookSecret(await readSecret(CALL_WEBHOOK_SECRET_ARN));
const { host, tracing } = lambdaClientHost('redial-intake', () => ({ calls: callsConfigFromEnv(process.env, { webhookSecret }) }));
let publisher: Publisher | undefined;
const calls = buildCalls(host, () => (publisher ??= buildPublisher(host)));

// Each result's trace is annotated with its batchId and callId: the keys to follow it by.
export const handler = createApiHandler([tracingCallResults(countingCallResults(intakeRoute(() => calls), host.metrics), tracing)], host.logger).use(tracing.handlerMiddleware());
