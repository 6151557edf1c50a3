// SQS entry point of the webhooks queue's worker. Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-webhooks');

export const handler = host.jobs.worker('webhooks', system.handlers('webhooks'));
