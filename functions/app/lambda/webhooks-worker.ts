// SQS entry point of the webhooks queue's worker (webhook.fanout, webhook.wake, webhook.restart, webhook.sweep). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { webhooksModule } from '../../webhooks/module.ts';
import { lambdaHost, withSecretKey } from '../aws.ts';
import { buildWebhooks } from '../contexts/webhooks.ts';

const { host, tracing } = lambdaHost('redial-worker-webhooks', withSecretKey);

export const handler = host.jobs.worker('webhooks', webhooksModule.handlers(buildWebhooks(host)).filter((h) => h.kind.queue === 'webhooks')).use(tracing.handlerMiddleware());
