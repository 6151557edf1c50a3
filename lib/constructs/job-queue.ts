import { Duration, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VISIBILITY_FACTOR, visibilitySeconds } from '../../functions/jobs/queues.ts';
import type { QueueSpec } from '../../functions/jobs/queues.ts';
import { RedialFunction } from './function.ts';

/** How many worker timeouts fit in the queue's visibility timeout (AWS's advice for SQS event sources); the local host uses the same. */
export const VISIBILITY_TIMEOUT_FACTOR = VISIBILITY_FACTOR;

/** Properties of a {@link JobQueue}. */
export interface JobQueueProps {
  /** The job queue's name, as its context declares it (`ops`, …); used in descriptions. */
  readonly queueName: string;
  /** Timeout, batch size and concurrency of the queue's worker. */
  readonly spec: QueueSpec;
  /** The worker's entry file (exports `handler`, built with `runtime.worker(...)`). */
  readonly entry: string;
  /** @default {} */
  readonly environment?: Record<string, string>;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * One job queue: an SQS queue that only wakes jobs and the worker function that runs them.
 *
 * The queue has no redrive policy and no dead-letter queue: the job layer owns retries, and the job row
 * (not the message) is the truth. The worker reports batch item failures, so only a message whose outcome
 * could not be recorded comes back, after a visibility timeout of six worker timeouts.
 */
export class JobQueue extends Construct {
  /** The queue job wake-ups are sent to (SendMessage with a delay, or a Scheduler one-time schedule). */
  readonly queue: sqs.Queue;
  /** The worker: runs every kind on this queue. */
  readonly worker: NodejsFunction;

  constructor(scope: Construct, id: string, props: JobQueueProps) {
    super(scope, id);
    const timeout = Duration.seconds(props.spec.timeoutSeconds);

    this.queue = new sqs.Queue(this, 'Queue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(visibilitySeconds(props.spec)),
    });
    Validations.of(this.queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'No DLQ by design: the job layer owns retries and keeps discarded jobs (the DLQ equivalent) in the jobs table for ops to inspect and retry; a redrive policy would add a second retry owner.',
    });

    this.worker = new RedialFunction(this, 'Worker', {
      entry: props.entry,
      description: `redial job worker for the ${props.queueName} queue`,
      timeout,
      ...(props.memorySize !== undefined ? { memorySize: props.memorySize } : {}),
      ...(props.logRetention !== undefined ? { logRetention: props.logRetention } : {}),
      ...(props.environment ? { environment: props.environment } : {}),
    }).function;
    new lambda.EventSourceMapping(this, 'Messages', {
      target: this.worker,
      eventSourceArn: this.queue.queueArn,
      batchSize: props.spec.batchSize,
      maxConcurrency: props.spec.maxConcurrency,
      reportBatchItemFailures: true,
    });
    // What Lambda's poller needs and nothing more (AWSLambdaSQSQueueExecutionRole's three actions; CDK's
    // SqsEventSource would add ChangeMessageVisibility and GetQueueUrl, which nothing here calls).
    this.queue.grant(this.worker, 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes');
  }
}
