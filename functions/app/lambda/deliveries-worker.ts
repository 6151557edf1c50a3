// SQS entry point of the deliveries queue's worker (webhook.deliver). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { awsSystem } from '../aws.ts';

const { system, host, tracing } = awsSystem('redial-worker-deliveries');

export const handler = host.jobs.worker('deliveries', system.handlers('deliveries')).use(tracing.handlerMiddleware());
