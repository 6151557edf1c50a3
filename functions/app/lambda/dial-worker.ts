// SQS entry point of the dial queue's worker (calls.dial). Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { callsConfigFromEnv, requireDialling } from '../../calls/config.ts';
import { dialQueueHandlers } from '../../calls/dial-queue.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import { lambdaHost } from '../aws.ts';
import { buildCalls } from '../contexts/calls.ts';
import { buildPublisher } from '../contexts/publisher.ts';

// A worker that could not dial fails its cold start, loudly, instead of failing every dial.
const { host, tracing } = lambdaHost('redial-worker-dial', () => ({ calls: requireDialling(callsConfigFromEnv()) }));
let publisher: Publisher | undefined;
const calls = buildCalls(host, () => (publisher ??= buildPublisher(host)));

export const handler = host.jobs.worker('dial', dialQueueHandlers(calls)).use(tracing.handlerMiddleware());
