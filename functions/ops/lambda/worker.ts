// SQS entry point of the ops queue's worker. Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';
import { handlersByQueue } from '../system.ts';

const { deps } = awsSystem('redial-worker-ops');

export const handler = deps.jobs.worker('ops', handlersByQueue(deps).ops);
