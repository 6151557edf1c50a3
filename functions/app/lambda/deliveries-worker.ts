// SQS entry point of the deliveries queue's worker (webhook.deliver). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { webhooksModule } from '../../webhooks/module.ts';
import { lambdaHost, withSecretKey } from '../aws.ts';
import { buildWebhooks } from '../contexts/webhooks.ts';

const { host, tracing } = lambdaHost('redial-worker-deliveries', withSecretKey);

export const handler = host.jobs.worker('deliveries', webhooksModule.handlers(buildWebhooks(host)).filter((h) => h.kind.queue === 'deliveries')).use(tracing.handlerMiddleware());
