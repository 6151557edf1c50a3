// SQS entry point of the ops queue's worker. Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { awsSystem } from '../aws.ts';

const { system, host, tracing } = awsSystem('redial-worker-ops');

export const handler = host.jobs.worker('ops', system.handlers('ops')).use(tracing.handlerMiddleware());
