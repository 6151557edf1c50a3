// SQS entry point of the ops queue's worker. Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-ops');

export const handler = host.jobs.worker('ops', system.handlers('ops'));
