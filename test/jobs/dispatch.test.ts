import { ConflictException, CreateScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/platform/clock.ts';
import { AwsDispatchTransport, Dispatcher, scheduleName } from '../../functions/jobs/dispatch.ts';

const QUEUE = { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/redial-ops', arn: 'arn:aws:sqs:eu-west-1:123456789012:redial-ops' };
const ROLE = 'arn:aws:iam::123456789012:role/redial-scheduler';
const NOW = Date.parse('2026-03-29T00:30:00.000Z');

describe('dispatch: SQS timers up to 15 minutes, EventBridge Scheduler beyond', () => {
  const sqs = mockClient(SQSClient);
  const scheduler = mockClient(SchedulerClient);
  let dispatcher: Dispatcher;

  beforeEach(() => {
    sqs.reset();
    scheduler.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
    scheduler.on(CreateScheduleCommand).resolves({ ScheduleArn: 'arn:aws:scheduler:eu-west-1:123456789012:schedule/redial-jobs/x' });
    const transport = new AwsDispatchTransport({
      sqs: new SQSClient({ region: 'eu-west-1', maxAttempts: 1 }),
      scheduler: new SchedulerClient({ region: 'eu-west-1', maxAttempts: 1 }),
      queues: { ops: QUEUE },
      scheduleGroup: 'redial-jobs',
      schedulerRoleArn: ROLE,
    });
    dispatcher = new Dispatcher(transport, new ManualClock(NOW));
  });

  it.each([
    [0, 0],
    [1, 1],
    [4_200, 5],
    [899_001, 900],
    [900_000, 900],
  ])('a wake-up due in %i ms is an SQS message with DelaySeconds %i', async (delayMs, delaySeconds) => {
    await dispatcher.dispatch({ jobId: 'job-1', seq: 3, queue: 'ops', at: NOW + delayMs });
    expect(sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input)).toEqual([
      { QueueUrl: QUEUE.url, MessageBody: '{"jobId":"job-1","seq":3}', DelaySeconds: delaySeconds },
    ]);
    expect(scheduler.commandCalls(CreateScheduleCommand)).toHaveLength(0);
  });

  it('a wake-up in the past is sent at once', async () => {
    await dispatcher.dispatch({ jobId: 'job-1', seq: 1, queue: 'ops', at: NOW - 60_000 });
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.DelaySeconds).toBe(0);
  });

  it('a wake-up due in more than 900 s is a one-time schedule: at(...) in UTC, flexible window off, deleted after completion', async () => {
    const at = NOW + 900_001 + 36_000_000; // 10 h and a bit, across the 29 March DST change in Europe: UTC is unaffected
    await dispatcher.dispatch({ jobId: 'job-1', seq: 4, queue: 'ops', at });
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
    expect(scheduler.commandCalls(CreateScheduleCommand).map((c) => c.args[0].input)).toEqual([
      {
        Name: scheduleName('job-1', 4),
        GroupName: 'redial-jobs',
        ScheduleExpression: 'at(2026-03-29T10:45:01)',
        ScheduleExpressionTimezone: 'UTC',
        FlexibleTimeWindow: { Mode: 'OFF' },
        ActionAfterCompletion: 'DELETE',
        Target: { Arn: QUEUE.arn, RoleArn: ROLE, Input: '{"jobId":"job-1","seq":4}', RetryPolicy: { MaximumRetryAttempts: 0 } },
      },
    ]);
  });

  it('rounds a schedule up to the whole second, never early', async () => {
    await dispatcher.dispatch({ jobId: 'job-1', seq: 1, queue: 'ops', at: NOW + 3_600_000 + 1 });
    expect(scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input.ScheduleExpression).toBe('at(2026-03-29T01:30:01)');
  });

  it('schedule names are deterministic per job and seq, valid for Scheduler, and distinct across seqs', () => {
    const name = scheduleName('calls.finalise:batch-0193:round-2', 7);
    expect(name).toMatch(/^[0-9a-zA-Z\-_.]{1,64}$/);
    expect(scheduleName('calls.finalise:batch-0193:round-2', 7)).toBe(name);
    expect(scheduleName('calls.finalise:batch-0193:round-2', 8)).not.toBe(name);
    expect(scheduleName('other', 7)).not.toBe(name);
  });

  it('dispatching the same wake-up twice is idempotent: a ConflictException means it is already scheduled', async () => {
    scheduler.on(CreateScheduleCommand).rejectsOnce(new ConflictException({ message: 'exists', Message: 'exists', $metadata: {} }));
    await expect(dispatcher.dispatch({ jobId: 'job-1', seq: 2, queue: 'ops', at: NOW + 7_200_000 })).resolves.toBeUndefined();
  });

  it('any other failure reaches the caller, sent once (the rescuer resends later)', async () => {
    sqs.on(SendMessageCommand).rejects(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }));
    await expect(dispatcher.dispatch({ jobId: 'job-1', seq: 1, queue: 'ops', at: NOW })).rejects.toThrow('throttled');
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(1);
  });

  it('an unknown queue is a configuration error, not a silent drop', async () => {
    await expect(dispatcher.dispatch({ jobId: 'job-1', seq: 1, queue: 'nope', at: NOW })).rejects.toThrow(/no address configured/);
  });
});
