// SQS entry point of the mail queue's worker. Job failures are recorded by the job layer, never thrown.
import { awsSystem } from '../../ops/aws.ts';
import { handlersByQueue } from '../../ops/system.ts';

const { deps } = awsSystem('redial-worker-mail');

export const handler = deps.jobs.worker('mail', handlersByQueue(deps).mail);
