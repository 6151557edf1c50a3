// SQS entry point of the calls queue's worker. Job failures are recorded by the job layer, never thrown.
import { requireDialling } from '../config.ts';
import { awsSystem } from '../../ops/aws.ts';
import { handlersByQueue } from '../../ops/system.ts';

const { deps } = awsSystem('redial-worker-calls');
// A worker that could not dial fails its cold start, loudly, instead of failing every dial.
requireDialling(deps.calls);

export const handler = deps.jobs.worker('calls', handlersByQueue(deps).calls);
