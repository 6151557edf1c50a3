// SQS entry point of the deliveries queue's worker (webhook.deliver). Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-deliveries');

export const handler = host.jobs.worker('deliveries', system.handlers('deliveries'));
