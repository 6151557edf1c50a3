import { createHash } from 'node:crypto';
import { ConflictException, CreateScheduleCommand, DeleteScheduleCommand, ResourceNotFoundException } from '@aws-sdk/client-scheduler';
import type { SchedulerClient } from '@aws-sdk/client-scheduler';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod';
import type { Clock } from '../platform/clock.ts';
import { noTracing } from '../platform/tracing.ts';
import type { Tracing } from '../platform/tracing.ts';

/** The longest delay an SQS message timer takes; anything later goes to EventBridge Scheduler. */
export const MAX_SQS_DELAY_SECONDS = 900;

/** Whether a wake-up due at `at` (epoch ms), sent at `now`, is a Scheduler schedule rather than an SQS timer. */
export const needsSchedule = (at: number, now: number): boolean => at - now > MAX_SQS_DELAY_SECONDS * 1000;

/** A wake-up for one job at one time: what a queue message carries, plus where and when to send it. */
export interface WakeUp {
  jobId: string;
  seq: number;
  queue: string;
  /** Epoch ms at which the job is due. */
  at: number;
}

/** The body of a job queue message. It names the job and the schedule it was sent for; the row holds the rest. */
export const wakeUpMessage = z.object({ jobId: z.string().min(1).max(200), seq: z.number().int().positive() });
export type WakeUpMessage = z.infer<typeof wakeUpMessage>;

/** The two ways a wake-up reaches a queue: a message with a timer, or a one-time schedule that sends it later. */
export interface DispatchTransport {
  /** Sends `body` to `queue`, visible after `delaySeconds` (0–900). */
  sendMessage(queue: string, body: string, delaySeconds: number): Promise<void>;
  /**
   * Creates the one-time schedule `name` that sends `body` to `queue` at `at` (epoch ms, whole seconds).
   * Idempotent: a schedule that already exists under that name counts as created.
   */
  createSchedule(name: string, at: number, queue: string, body: string): Promise<void>;
  /** Deletes the one-time schedule `name` before it fires. Idempotent: one that is not there (fired, or never made) counts as deleted. */
  deleteSchedule(name: string): Promise<void>;
}

/**
 * Sends wake-ups. Due within 15 minutes → an SQS message with DelaySeconds; later → an EventBridge
 * Scheduler one-time schedule, whose name is derived from the job and its seq so a repeated dispatch
 * of the same wake-up creates nothing new.
 */
export class Dispatcher {
  private readonly transport: DispatchTransport;
  private readonly clock: Clock;
  private readonly tracing: Tracing;

  constructor(transport: DispatchTransport, clock: Clock, tracing: Tracing = noTracing) {
    this.transport = transport;
    this.clock = clock;
    this.tracing = tracing;
  }

  /**
   * Sends one wake-up, in a span of its own (`job.wake`): the job it wakes is in the span's metadata, not
   * an annotation, so a fanout that wakes many deliveries stays within X-Ray's 50 indexed annotations per
   * trace; each run is annotated where it runs (executor.ts).
   */
  dispatch(wakeUp: WakeUp): Promise<void> {
    return this.tracing.span('job.wake', async (span) => {
      const body = JSON.stringify({ jobId: wakeUp.jobId, seq: wakeUp.seq } satisfies WakeUpMessage);
      const now = this.clock.now();
      const viaSqs = !needsSchedule(wakeUp.at, now);
      span.describe('wakeUp', { jobId: wakeUp.jobId, seq: wakeUp.seq, queue: wakeUp.queue, at: new Date(wakeUp.at).toISOString(), via: viaSqs ? 'sqs' : 'scheduler' });
      if (viaSqs) {
        // Rounded up: a message that arrives a moment early finds the job not due and is re-sent.
        await this.transport.sendMessage(wakeUp.queue, body, Math.ceil(Math.max(0, wakeUp.at - now) / 1000));
        return;
      }
      await this.transport.createSchedule(scheduleName(wakeUp.jobId, wakeUp.seq), Math.ceil(wakeUp.at / 1000) * 1000, wakeUp.queue, body);
    });
  }

  /** Deletes the schedule of a job's wake-up `seq` (one the job no longer needs: it moved on first). */
  async unschedule(jobId: string, seq: number): Promise<void> {
    await this.transport.deleteSchedule(scheduleName(jobId, seq));
  }
}

/** The deterministic schedule name of a job's wake-up: at most 64 characters of [0-9a-zA-Z-_.]. */
export function scheduleName(jobId: string, seq: number): string {
  return `job-${createHash('sha256').update(jobId).digest('hex').slice(0, 40)}-${seq}`;
}

/** Scheduler's `at(...)` expression for an epoch-ms time, in UTC without a zone suffix. */
export const atExpression = (atMs: number): string => `at(${new Date(atMs).toISOString().slice(0, 19)})`;

/** Where each job queue lives on AWS. */
export interface AwsQueueAddress {
  url: string;
  arn: string;
}

/**
 * The AWS transport: SQS SendMessage, Scheduler CreateSchedule and DeleteSchedule, each sent once (the clients have
 * retries off). Scheduler's own target retries are off too; a lost wake-up is the rescuer's to find.
 */
export class AwsDispatchTransport implements DispatchTransport {
  private readonly sqs: SQSClient;
  private readonly scheduler: SchedulerClient;
  private readonly queues: Record<string, AwsQueueAddress>;
  private readonly scheduleGroup: string;
  private readonly schedulerRoleArn: string;

  constructor(options: {
    sqs: SQSClient;
    scheduler: SchedulerClient;
    queues: Record<string, AwsQueueAddress>;
    scheduleGroup: string;
    schedulerRoleArn: string;
  }) {
    this.sqs = options.sqs;
    this.scheduler = options.scheduler;
    this.queues = options.queues;
    this.scheduleGroup = options.scheduleGroup;
    this.schedulerRoleArn = options.schedulerRoleArn;
  }

  async sendMessage(queue: string, body: string, delaySeconds: number): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.address(queue).url, MessageBody: body, DelaySeconds: delaySeconds }));
  }

  async createSchedule(name: string, at: number, queue: string, body: string): Promise<void> {
    try {
      await this.scheduler.send(
        new CreateScheduleCommand({
          Name: name,
          GroupName: this.scheduleGroup,
          ScheduleExpression: atExpression(at),
          ScheduleExpressionTimezone: 'UTC',
          FlexibleTimeWindow: { Mode: 'OFF' },
          ActionAfterCompletion: 'DELETE',
          Target: {
            Arn: this.address(queue).arn,
            RoleArn: this.schedulerRoleArn,
            Input: body,
            RetryPolicy: { MaximumRetryAttempts: 0 },
          },
        }),
      );
    } catch (error) {
      if (error instanceof ConflictException) return; // already scheduled under this name
      throw error;
    }
  }

  async deleteSchedule(name: string): Promise<void> {
    try {
      await this.scheduler.send(new DeleteScheduleCommand({ Name: name, GroupName: this.scheduleGroup }));
    } catch (error) {
      if (error instanceof ResourceNotFoundException) return; // fired already (and deleted after completion), or never made
      throw error;
    }
  }

  private address(queue: string): AwsQueueAddress {
    const address = this.queues[queue];
    if (!address) throw new Error(`no address configured for job queue "${queue}"`);
    return address;
  }
}
