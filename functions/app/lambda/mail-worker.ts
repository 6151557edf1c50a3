// SQS entry point of the mail queue's worker. Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../aws.ts';

const { system, host } = awsSystem('redial-worker-mail');

export const handler = host.jobs.worker('mail', system.handlers('mail'));
