import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import type { CfnElement } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { callsConfigFromEnv, requireDialling } from '../../functions/calls/config.ts';
import { jobsAwsConfig } from '../../functions/jobs/aws.ts';
import { queueNames, queues } from '../../functions/jobs/queues.ts';
import { tableNamesFromEnv } from '../../functions/ops/aws.ts';
import { allKinds, allRoutes, tables } from '../../functions/ops/system.ts';
import type { SystemDeps, TableKey } from '../../functions/ops/system.ts';
import { parseConfig } from '../../functions/platform/config.ts';
import { createTableInput } from '../../functions/platform/tables.ts';
import { JobQueue } from '../../lib/constructs/job-queue.ts';
import { PUBLIC_ROUTES, RedialStack, workerEntry } from '../../lib/redial-stack.ts';

const root = join(import.meta.dirname, '..', '..');
const PLACER_URL = 'https://placer.example.com/calls';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
}
type Intrinsic = string | { Ref: string } | { 'Fn::GetAtt': [string, string] } | { 'Fn::Join': [string, Intrinsic[]] };
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

/**
 * The app as `cdk synth` builds it (cdk.json's feature flags), without bundling and without CDK's built-in
 * CloudFormation validation (a WASM engine that takes seconds to start; `npm run synth` still runs it).
 */
function newApp(): App {
  const { context } = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  return new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
}

let app: App;
let stack: RedialStack;
let template: Template;
let resources: Record<string, Resource>;

beforeAll(() => {
  app = newApp();
  stack = new RedialStack(app, 'RedialTest', { callPlacerUrl: PLACER_URL });
  template = Template.fromStack(stack);
  resources = template.toJSON().Resources as Record<string, Resource>;
});

const idOf = (construct: IConstruct): string => stack.getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);
const actions = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: Statement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

/** The statements of every policy attached to a role. */
function roleStatements(roleId: string): Statement[] {
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties['Roles'] as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap(([, p]) => (p.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement);
}

const allows = (statements: Statement[], action: string, resource: unknown): boolean =>
  statements.some((s) => s.Effect === 'Allow' && actions(s).includes(action) && resourcesOf(s).some((r) => JSON.stringify(r) === JSON.stringify(resource)));

/** Stands a CloudFormation value in for what it becomes at deploy time: a queue URL, an ARN, a name. */
function fakeResolve(value: Intrinsic): string {
  if (typeof value === 'string') return value;
  if ('Ref' in value) return `https://sqs.eu-west-1.amazonaws.com/123456789012/${value.Ref}`;
  if ('Fn::GetAtt' in value) return `arn:aws:test:eu-west-1:123456789012:${value['Fn::GetAtt'][0]}`;
  return value['Fn::Join'][1].map(fakeResolve).join(value['Fn::Join'][0]);
}

describe('job queues', () => {
  it('have no redrive policy: the job layer is the only retry owner', () => {
    const found = ofType('AWS::SQS::Queue');
    expect(found.length).toBe(queueNames.length);
    expect(found.length).toBeGreaterThan(0);
    for (const [id, queue] of found) expect(queue.Properties, id).not.toHaveProperty('RedrivePolicy');
  });

  it('are read by workers that report batch item failures, with the batch size and concurrency of their QueueSpec', () => {
    const mappings = ofType('AWS::Lambda::EventSourceMapping');
    expect(mappings.length).toBe(queueNames.length);
    for (const [id, mapping] of mappings) expect(mapping.Properties['FunctionResponseTypes'], id).toEqual(['ReportBatchItemFailures']);
    for (const name of queueNames) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [idOf(stack.jobQueues[name].queue), 'Arn'] },
        FunctionName: { Ref: idOf(stack.jobQueues[name].worker) },
        BatchSize: queues[name].batchSize,
        ScalingConfig: { MaximumConcurrency: queues[name].maxConcurrency },
      });
      template.hasResourceProperties('AWS::Lambda::Function', Match.objectLike({ Timeout: queues[name].timeoutSeconds, Description: Match.stringLikeRegexp(name) }));
    }
  });

  it('hide a message for at least six timeouts of the worker that reads it', () => {
    for (const [id, mapping] of ofType('AWS::Lambda::EventSourceMapping')) {
      const queueId = (mapping.Properties['EventSourceArn'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const functionId = (mapping.Properties['FunctionName'] as { Ref: string }).Ref;
      const visibility = resources[queueId]?.Properties['VisibilityTimeout'] as number;
      const timeout = resources[functionId]?.Properties['Timeout'] as number;
      expect(timeout, `${id}: worker timeout`).toBeGreaterThan(0);
      expect(visibility, `${id}: visibility of ${queueId}`).toBeGreaterThanOrEqual(6 * timeout);
    }
  });

  it('refuse plain HTTP and are encrypted', () => {
    for (const name of queueNames) {
      template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, VisibilityTimeout: Match.anyValue() });
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: idOf(stack.jobQueues[name].queue) }],
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
      });
    }
  });
});

describe('tables', () => {
  it('are the definitions the local runtime creates: same keys, indexes, on-demand billing', () => {
    expect(ofType('AWS::DynamoDB::GlobalTable').length).toBe(Object.keys(tables).length);
    for (const [key, definition] of Object.entries(tables)) {
      const local = createTableInput(definition, 'local');
      const table = resources[idOf(stack.tables[key as TableKey])];
      expect(table?.Properties['KeySchema']).toEqual(local.KeySchema);
      expect(table?.Properties['BillingMode']).toBe('PAY_PER_REQUEST');
      expect(new Set(table?.Properties['AttributeDefinitions'] as unknown[])).toEqual(new Set(local.AttributeDefinitions));
      expect(table?.Properties['GlobalSecondaryIndexes'] ?? []).toEqual(local.GlobalSecondaryIndexes ?? []);
    }
  });

  it('have TTL on, point-in-time recovery on and are retained on stack deletion', () => {
    for (const [key, definition] of Object.entries(tables)) {
      const table = resources[idOf(stack.tables[key as TableKey])];
      expect(table?.Properties['TimeToLiveSpecification']).toEqual({ AttributeName: definition.ttlAttribute, Enabled: true });
      expect(table?.DeletionPolicy).toBe('Retain');
    }
    for (const [id, table] of ofType('AWS::DynamoDB::GlobalTable')) {
      expect(table.Properties['TimeToLiveSpecification'], id).toMatchObject({ Enabled: true });
      const replicas = table.Properties['Replicas'] as { PointInTimeRecoverySpecification?: { PointInTimeRecoveryEnabled: boolean } }[];
      expect(replicas.length, id).toBeGreaterThan(0);
      for (const replica of replicas) expect(replica.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled, id).toBe(true);
    }
  });
});

describe('scheduler', () => {
  it('assumes a role that may send to every job queue, and only EventBridge Scheduler of this group may assume it', () => {
    const roleId = idOf(stack.schedulerRole);
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [idOf(stack.scheduleGroup), 'Arn'] } } },
          }),
        ],
      },
    });
    const statements = roleStatements(roleId);
    for (const name of queueNames) {
      expect(allows(statements, 'sqs:SendMessage', { 'Fn::GetAtt': [idOf(stack.jobQueues[name].queue), 'Arn'] }), name).toBe(true);
    }
    expect([...new Set(statements.flatMap(actions))]).toEqual(['sqs:SendMessage']);
  });

  it('runs the rescuer every minute, once: neither Scheduler nor Lambda retries a missed pass', () => {
    const rescuerId = idOf(stack.rescuerFunction);
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [rescuerId, 'Arn'] }, RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 0 }) }),
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { FunctionName: { Ref: rescuerId }, MaximumRetryAttempts: 0 });
  });
});

describe('functions', () => {
  it('each get a configuration the job layer accepts at cold start, naming every queue and table', () => {
    const functions = ofType('AWS::Lambda::Function');
    expect(functions.length).toBe(queueNames.length + 2);
    for (const [id, fn] of functions) {
      const variables = (fn.Properties['Environment'] as { Variables: Record<string, Intrinsic> }).Variables;
      const env = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, fakeResolve(v)]));
      const config = parseConfig(jobsAwsConfig, env);
      expect(Object.keys(config.JOB_QUEUES).sort(), id).toEqual([...queueNames].sort());
      for (const name of queueNames) expect(config.JOB_QUEUES[name]?.arn, `${id} ${name}`).toContain(idOf(stack.jobQueues[name].queue));
      expect(config.SCHEDULER_GROUP, id).toBe(stack.scheduleGroup.scheduleGroupName);
      expect(config.SCHEDULER_ROLE_ARN, id).toContain(idOf(stack.schedulerRole));
      const names = tableNamesFromEnv(env);
      for (const key of Object.keys(tables) as TableKey[]) expect(names[key], `${id} ${key}`).toContain(idOf(stack.tables[key]));
    }
  });

  it('each may use the tables, send to every queue, create schedules in the job group and pass the Scheduler role, nothing wider', () => {
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const roleId = (fn.Properties['Role'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const statements = roleStatements(roleId);
      for (const key of Object.keys(tables) as TableKey[]) {
        const arn = { 'Fn::GetAtt': [idOf(stack.tables[key]), 'Arn'] };
        for (const action of ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem']) expect(allows(statements, action, arn), `${id} ${action}`).toBe(true);
      }
      for (const name of queueNames) {
        expect(allows(statements, 'sqs:SendMessage', { 'Fn::GetAtt': [idOf(stack.jobQueues[name].queue), 'Arn'] }), id).toBe(true);
      }
      expect(allows(statements, 'iam:PassRole', { 'Fn::GetAtt': [idOf(stack.schedulerRole), 'Arn'] }), id).toBe(true);
      const create = statements.filter((s) => actions(s).includes('scheduler:CreateSchedule'));
      expect(JSON.stringify(create.map(resourcesOf)), id).toContain(`:schedule/${stack.scheduleGroup.scheduleGroupName}/*`);
      expect(statements.flatMap(resourcesOf), id).not.toContain('*');
    }
  });

  it('run Node.js 22 on ARM and log to their own log group with a retention', () => {
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      expect(fn.Properties['Runtime'], id).toBe('nodejs22.x');
      expect(fn.Properties['Architectures'], id).toEqual(['arm64']);
      const logGroupId = (fn.Properties['LoggingConfig'] as { LogGroup: { Ref: string } }).LogGroup.Ref;
      expect(resources[logGroupId]?.Properties['RetentionInDays'], id).toBeGreaterThan(0);
    }
  });

  it('are built from entry files that exist and export a handler', () => {
    const entries = Object.entries(stack.entries);
    expect(entries.length).toBe(ofType('AWS::Lambda::Function').length);
    for (const [path, file] of entries) {
      expect(existsSync(join(root, file)), `${path}: ${file}`).toBe(true);
      expect(readFileSync(join(root, file), 'utf8'), file).toMatch(/^export const handler\b/m);
    }
    for (const name of queueNames) expect(stack.entries[stack.jobQueues[name].worker.node.path]).toBe(workerEntry(name));
  });
});

describe('HTTP API', () => {
  const authOf = () =>
    Object.fromEntries(ofType('AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties['RouteKey'] as string, (r.Properties['AuthorizationType'] as string | undefined) ?? 'NONE']));

  it('asks for an IAM signature on every route except the public ones', () => {
    const auth = authOf();
    expect(auth['ANY /{proxy+}']).toBe('AWS_IAM');
    expect(auth['GET /healthz']).toBe('NONE');
    const publicKeys = new Set(PUBLIC_ROUTES.map((r) => `${r.method} ${r.path}`));
    for (const [key, type] of Object.entries(auth)) expect(type, key).toBe(publicKeys.has(key) ? 'NONE' : 'AWS_IAM');
    expect(Object.keys(auth).length).toBe(PUBLIC_ROUTES.length + 1);
  });

  it("keeps the public routes and the functions' `auth: 'none'` routes the same list", () => {
    const deps = {
      jobs: { client: {} },
      clock: { now: () => 0 },
      tableNames: { jobs: 'j', webhooks: 'w', calls: 'c' },
      calls: { webhookSecret: undefined },
    } as unknown as SystemDeps;
    const declared = allRoutes(deps)
      .filter((r) => r.auth === 'none')
      .map((r) => `${r.method} ${r.path}`);
    expect(declared.sort()).toEqual(PUBLIC_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('writes access logs', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context\\.requestId') },
    });
  });
});

describe('calls configuration', () => {
  const envOf = (fn: { node: { defaultChild?: unknown } } & IConstruct) => {
    const variables = (resources[idOf(fn)]?.Properties['Environment'] as { Variables: Record<string, Intrinsic> }).Variables;
    return { raw: variables, resolved: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, fakeResolve(v)])) };
  };

  it('gives the calls worker what it needs to dial: the placer, the intake as callbackUrl, the call timeout', () => {
    const { raw, resolved } = envOf(stack.jobQueues.calls.worker);
    const config = requireDialling(callsConfigFromEnv(resolved));
    expect(config.placerUrl).toBe(PLACER_URL);
    expect(config.callTimeoutSeconds).toBe(600);
    // The callbackUrl is this stack's own API, at the intake's path.
    expect(JSON.stringify(raw['CALL_WEBHOOK_URL'])).toContain(idOf(stack.api));
    expect(config.callbackUrl).toMatch(/\/v1\/calls\/webhook$/);
  });

  it('keeps the intake secret in Secrets Manager: only the API may read it, and no function has it in its environment', () => {
    const secretId = idOf(stack.callWebhookSecret);
    expect(envOf(stack.apiFunction).raw['CALL_WEBHOOK_SECRET_ARN']).toEqual({ Ref: secretId });
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const variables = (fn.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables;
      expect(Object.keys(variables), id).not.toContain('CALL_WEBHOOK_SECRET');
      const roleId = (fn.Properties['Role'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      expect(allows(roleStatements(roleId), 'secretsmanager:GetSecretValue', { Ref: secretId }), id).toBe(id === idOf(stack.apiFunction));
    }
  });

  it('refuses a placer URL that is not https', () => {
    expect(() => new RedialStack(newApp(), 'Plain', { callPlacerUrl: 'http://placer.example.com/calls' })).toThrow(/https/);
  });

  it('serves the call-result intake without IAM: its signature is its authentication', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'POST /v1/calls/webhook', AuthorizationType: 'NONE' });
  });
});

describe('discard alarm', () => {
  it('fires on one alerting discard in five minutes, across every function, to an encrypted SSL-only topic', () => {
    const topicId = idOf(stack.alarmTopic);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [Match.objectLike({ Expression: 'SELECT SUM(JobDiscardedAlert) FROM "Redial"', Period: 300, ReturnData: true })],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: topicId }],
    });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId }],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('finds nothing that is not fixed or acknowledged with a reason', () => {
    const report = new AwsSolutionsChecks(undefined, { verbose: false }).validateScope(app);
    const findings = report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
    expect(findings).toEqual([]);
    expect(Annotations.fromStack(stack).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
  });

  it('would report an unacknowledged finding (the check is live)', () => {
    const bare = new Stack(newApp(), 'Bare');
    new sqs.Queue(bare, 'PlainQueue');
    new JobQueue(bare, 'Jobs', { queueName: 'ops', spec: queues.ops, entry: join(root, workerEntry('ops')) });
    Template.fromStack(bare);
    const rules = new AwsSolutionsChecks().validateScope(bare).violations.map((v) => v.ruleName);
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
    // The JobQueue's own queue is acknowledged (SQS3) and fixed (SQS4): only the plain queue is reported.
    const paths = new AwsSolutionsChecks().validateScope(bare).violations.flatMap((v) => v.violatingResources.map((r) => r.constructPath));
    expect(paths.filter((p) => p?.includes('Jobs/Queue'))).toEqual([]);
  });
});

describe('webhooks', () => {
  it('deliver from a worker outside any VPC: customer URLs are on the internet, the SSRF guard keeps private ranges out', () => {
    const worker = resources[idOf(stack.jobQueues.webhooks.worker)];
    expect(worker?.Type).toBe('AWS::Lambda::Function');
    expect(worker?.Properties).not.toHaveProperty('VpcConfig');
    expect(ofType('AWS::EC2::VPC')).toEqual([]);
    // Every webhooks kind's timeout fits in the worker's, so a run is never cut short by Lambda first.
    for (const kind of allKinds.filter((k) => k.queue === 'webhooks')) expect(kind.timeoutSeconds, kind.kind).toBeLessThanOrEqual(worker?.Properties['Timeout'] as number);
  });

  it('keep the sparse byWatch index keys-only, so lease updates write nothing to it', () => {
    const table = resources[idOf(stack.tables.webhooks)];
    expect(table?.Properties['GlobalSecondaryIndexes']).toEqual([
      { IndexName: 'byWatch', KeySchema: [{ AttributeName: 'watch', KeyType: 'HASH' }, { AttributeName: 'pk', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
    ]);
  });
});
