// SQS entry point of the dial queue's worker (calls.dial). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { requireDialling } from '../../calls/config.ts';
import { awsSystem } from '../aws.ts';

const { system, host, tracing } = awsSystem('redial-worker-dial');
// A worker that could not dial fails its cold start, loudly, instead of failing every dial.
requireDialling(host.calls);

export const handler = host.jobs.worker('dial', system.handlers('dial')).use(tracing.handlerMiddleware());
