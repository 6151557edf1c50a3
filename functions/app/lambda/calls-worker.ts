// SQS entry point of the calls queue's worker (calls.watchdog, calls.finalise). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { awsSystem } from '../aws.ts';

const { system, host, tracing } = awsSystem('redial-worker-calls');

export const handler = host.jobs.worker('calls', system.handlers('calls')).use(tracing.handlerMiddleware());
