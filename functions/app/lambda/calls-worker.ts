// SQS entry point of the calls queue's worker. Job failures are recorded by the job layer, never thrown.
import { requireDialling } from '../../calls/config.ts';
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-calls');
// A worker that could not dial fails its cold start, loudly, instead of failing every dial.
requireDialling(host.calls);

export const handler = host.jobs.worker('calls', system.handlers('calls'));
