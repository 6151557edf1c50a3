import type { Deployment } from './deployment.ts';
import type { IamRequest } from './requests.ts';

/**
 * The requests AWS makes with a function's role on its behalf rather than the code calling them, each
 * with its reason. They are decided like the recorded ones; the only implied request that depends on what
 * the code did (a schedule's `iam:PassRole`, and Scheduler's send when it fires) comes from the recorded
 * CreateSchedule itself (requests.ts).
 *
 * Implied by AWS but not made with any role redial owns, so not here: API Gateway invoking a function
 * (the function's resource policy, `AWS::Lambda::Permission`), and encryption at rest of the queues
 * (SSE-SQS, keys SQS owns) and tables (keys DynamoDB owns), which needs no KMS permission of anyone.
 */
export function impliedRequests(deployment: Deployment): IamRequest[] {
  const requests: IamRequest[] = [];
  for (const fn of Object.values(deployment.functions)) {
    const stream = { arn: `${fn.logGroupArn.replace(/:\*$/, '')}:log-stream:2026/01/05/[$LATEST]0123456789abcdef0123456789abcdef`, label: `logGroup:${fn.name}` };
    const implied = (action: string, resource: { arn: string; label: string }, reason: string) => requests.push({ function: fn.name, action, resource, context: {}, from: `implied: ${reason}` });
    implied('logs:CreateLogStream', stream, 'the Lambda runtime opens a log stream in the function’s own log group');
    implied('logs:PutLogEvents', stream, 'the Lambda runtime writes the function’s logs');
    implied('xray:PutTraceSegments', { arn: '*', label: '*' }, 'active tracing: Lambda sends the invocation’s segments (X-Ray takes no resource)');
    implied('xray:PutTelemetryRecords', { arn: '*', label: '*' }, 'active tracing: Lambda reports the X-Ray daemon’s telemetry');
    if (fn.queue) {
      const queue = deployment.resource(`queue:${fn.queue}`)!;
      for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) implied(action, queue, 'the event source mapping polls the worker’s own queue with its role, and deletes what the batch completed');
    }
  }
  requests.push({
    function: 'rescuerScheduleRole',
    action: 'lambda:InvokeFunction',
    resource: deployment.resource('function:rescuer')!,
    context: {},
    from: 'implied: the rescuer’s one-minute schedule invokes it with its own role',
  });
  return requests;
}
