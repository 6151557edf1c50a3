// SQS entry point of the calls queue's worker (calls.watchdog, calls.finalise). Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-calls');

export const handler = host.jobs.worker('calls', system.handlers('calls'));
