// SQS entry point of the calls queue's worker (calls.watchdog, calls.finalise). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { callsConfigFromEnv } from '../../calls/config.ts';
import { callsQueueHandlers } from '../../calls/calls-queue.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import { lambdaHost } from '../aws.ts';
import { buildCalls } from '../contexts/calls.ts';
import { buildPublisher } from '../contexts/publisher.ts';

const { host, tracing } = lambdaHost('redial-worker-calls', () => ({ calls: callsConfigFromEnv() }));
let publisher: Publisher | undefined;
const calls = buildCalls(host, () => (publisher ??= buildPublisher(host)));

export const handler = host.jobs.worker('calls', callsQueueHandlers(calls)).use(tracing.handlerMiddleware());
