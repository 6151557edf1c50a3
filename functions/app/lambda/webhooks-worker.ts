// SQS entry point of the webhooks queue's worker (webhook.fanout, webhook.wake, webhook.sweep). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { awsSystem } from '../aws.ts';

const { system, host, tracing } = awsSystem('redial-worker-webhooks');

export const handler = host.jobs.worker('webhooks', system.handlers('webhooks')).use(tracing.handlerMiddleware());
