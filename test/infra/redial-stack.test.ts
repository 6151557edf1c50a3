import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { callsConfigFromEnv, requireDialling } from '../../functions/calls/config.ts';
import { jobsAwsConfig } from '../../functions/jobs/aws.ts';
import { queueNames, queues } from '../../functions/app/system.ts';
import { tableNamesFromEnv } from '../../functions/app/aws.ts';
import { allKinds, System, tables } from '../../functions/app/system.ts';
import type { TableKey } from '../../functions/app/system.ts';
import { parseConfig } from '../../functions/platform/config.ts';
import { createTableInput } from '../../functions/platform/tables.ts';
import { JobQueue } from '../../lib/constructs/job-queue.ts';
import { DEFAULT_QUEUE_SETTINGS, DEFAULT_THROTTLING, PUBLIC_ROUTES, RedialStack, TENANT_ROUTES, workerEntry } from '../../lib/redial-stack.ts';
import { actionsOf, BASE_PROPS, fakeResolve, newApp, PLACER_URL, root, synth } from './synth.ts';
import type { Resource } from './synth.ts';

let s: ReturnType<typeof synth>;

beforeAll(() => {
  s = synth();
});

describe('job queues', () => {
  it('have no redrive policy: the job layer is the only retry owner', () => {
    const found = s.ofType('AWS::SQS::Queue');
    expect(found.length).toBe(queueNames.length);
    for (const [id, queue] of found) expect(queue.Properties, id).not.toHaveProperty('RedrivePolicy');
  });

  it('are read by workers that report batch item failures, with the default batch size and concurrency of the deployment and the timeout of their QueueSpec', () => {
    const mappings = s.ofType('AWS::Lambda::EventSourceMapping');
    expect(mappings.length).toBe(queueNames.length);
    for (const [id, mapping] of mappings) expect(mapping.Properties['FunctionResponseTypes'], id).toEqual(['ReportBatchItemFailures']);
    for (const name of queueNames) {
      s.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [s.idOf(s.stack.jobQueues[name].queue), 'Arn'] },
        FunctionName: { Ref: s.idOf(s.stack.jobQueues[name].worker) },
        BatchSize: DEFAULT_QUEUE_SETTINGS[name].batchSize,
        ScalingConfig: { MaximumConcurrency: DEFAULT_QUEUE_SETTINGS[name].maxConcurrency },
      });
      s.template.hasResourceProperties('AWS::Lambda::Function', Match.objectLike({ Timeout: queues[name].timeoutSeconds, Description: Match.stringLikeRegexp(name) }));
    }
  });

  it('take each queue\'s batch size and concurrency from the stack properties, one queue at a time', () => {
    const custom = synth({ queues: { deliveries: { maxConcurrency: 7 }, calls: { batchSize: 3, maxConcurrency: 9 } } });
    const mapping = (name: 'deliveries' | 'calls' | 'webhooks') =>
      custom.ofType('AWS::Lambda::EventSourceMapping').find(([, m]) => (m.Properties['FunctionName'] as { Ref: string }).Ref === custom.idOf(custom.stack.jobQueues[name].worker))![1].Properties;
    expect(mapping('deliveries')).toMatchObject({ BatchSize: DEFAULT_QUEUE_SETTINGS.deliveries.batchSize, ScalingConfig: { MaximumConcurrency: 7 } });
    expect(mapping('calls')).toMatchObject({ BatchSize: 3, ScalingConfig: { MaximumConcurrency: 9 } });
    expect(mapping('webhooks')).toMatchObject({ BatchSize: DEFAULT_QUEUE_SETTINGS.webhooks.batchSize, ScalingConfig: { MaximumConcurrency: DEFAULT_QUEUE_SETTINGS.webhooks.maxConcurrency } });
  });

  it('refuse at synth a batch size or a concurrency an SQS event source would not take, naming the queue', () => {
    expect(() => synth({ queues: { dial: { batchSize: 11 } } })).toThrow(/queues\.dial\.batchSize must be a whole number from 1 to 10, got 11/);
    expect(() => synth({ queues: { mail: { maxConcurrency: 1 } } })).toThrow(/queues\.mail\.maxConcurrency must be a whole number from 2 to 1000, got 1/);
  });

  it('run the kinds that wait on the outside world on queues of their own, apart from the quick ones', () => {
    for (const [queue, kinds] of [['dial', ['calls.dial']], ['deliveries', ['webhook.deliver']], ['mail', ['access_request.approval_mail', 'owner.email_confirmation', 'owner.notify']]] as const) {
      expect(allKinds.filter((k) => k.queue === queue).map((k) => k.kind).sort(), queue).toEqual([...kinds]);
    }
  });

  it('hide a message for at least six timeouts of the worker that reads it', () => {
    for (const [id, mapping] of s.ofType('AWS::Lambda::EventSourceMapping')) {
      const queueId = (mapping.Properties['EventSourceArn'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      const functionId = (mapping.Properties['FunctionName'] as { Ref: string }).Ref;
      const visibility = s.resources[queueId]?.Properties['VisibilityTimeout'] as number;
      const timeout = s.resources[functionId]?.Properties['Timeout'] as number;
      expect(timeout, `${id}: worker timeout`).toBeGreaterThan(0);
      expect(visibility, `${id}: visibility of ${queueId}`).toBeGreaterThanOrEqual(6 * timeout);
    }
  });

  it('refuse plain HTTP and are encrypted', () => {
    for (const name of queueNames) {
      s.template.hasResourceProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true, VisibilityTimeout: Match.anyValue() });
      s.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: s.idOf(s.stack.jobQueues[name].queue) }],
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
      });
    }
  });
});

describe('tables', () => {
  it('are the definitions the local runtime creates: same keys, indexes, on-demand billing', () => {
    expect(s.ofType('AWS::DynamoDB::GlobalTable').length).toBe(Object.keys(tables).length);
    for (const [key, definition] of Object.entries(tables)) {
      const local = createTableInput(definition, 'local');
      const table = s.resources[s.idOf(s.stack.tables[key as TableKey])];
      expect(table?.Properties['KeySchema']).toEqual(local.KeySchema);
      expect(table?.Properties['BillingMode']).toBe('PAY_PER_REQUEST');
      expect(new Set(table?.Properties['AttributeDefinitions'] as unknown[])).toEqual(new Set(local.AttributeDefinitions));
      expect(table?.Properties['GlobalSecondaryIndexes'] ?? []).toEqual(local.GlobalSecondaryIndexes ?? []);
    }
  });

  it('have TTL on, point-in-time recovery and deletion protection on, and are retained on stack deletion', () => {
    for (const [key, definition] of Object.entries(tables)) {
      const table = s.resources[s.idOf(s.stack.tables[key as TableKey])];
      expect(table?.Properties['TimeToLiveSpecification']).toEqual({ AttributeName: definition.ttlAttribute, Enabled: true });
      expect(table?.DeletionPolicy).toBe('Retain');
    }
    for (const [id, table] of s.ofType('AWS::DynamoDB::GlobalTable')) {
      const replicas = table.Properties['Replicas'] as { PointInTimeRecoverySpecification?: { PointInTimeRecoveryEnabled: boolean }; DeletionProtectionEnabled?: boolean }[];
      expect(replicas.length, id).toBeGreaterThan(0);
      for (const replica of replicas) {
        expect(replica.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled, id).toBe(true);
        expect(replica.DeletionProtectionEnabled, id).toBe(true);
      }
    }
  });

  it('lose deletion protection, and go with the stack, only when a test stack asks (deletionProtection: false)', () => {
    const test = synth({ deletionProtection: false });
    for (const [id, table] of test.ofType('AWS::DynamoDB::GlobalTable')) {
      expect(table.DeletionPolicy, id).toBe('Delete');
      for (const replica of table.Properties['Replicas'] as { DeletionProtectionEnabled?: boolean }[]) expect(replica.DeletionProtectionEnabled, id).toBe(false);
    }
  });
});

describe('a redeploy after a destroy', () => {
  /**
   * Names CloudFormation scopes to something this stack owns (a policy to its role, a stage to its API),
   * or that need not be unique (labels); every other fixed name could collide with one left behind.
   */
  const SCOPED_NAMES: Record<string, string[]> = {
    'AWS::SNS::Topic': ['DisplayName'],
    // The metric it watches, not a name of its own.
    'AWS::CloudWatch::Alarm': ['MetricName'],
    'AWS::IAM::Policy': ['PolicyName'],
    'AWS::ApiGatewayV2::Stage': ['StageName'],
    'AWS::ApiGatewayV2::Api': ['Name'],
    'AWS::Lambda::Function': ['Handler'],
  };

  it('finds no resource with a fixed physical name: the schedule group, tables, secret, keys and log groups are named by CloudFormation', () => {
    for (const [id, resource] of Object.entries(s.resources)) {
      const named = Object.entries(resource.Properties ?? {}).filter(([prop, value]) => /Name$/.test(prop) && typeof value === 'string' && !(SCOPED_NAMES[resource.Type] ?? []).includes(prop));
      expect(named, `${id} (${resource.Type})`).toEqual([]);
    }
    const group = s.resources[s.idOf(s.stack.scheduleGroup)] as Resource;
    expect(group.Type).toBe('AWS::Scheduler::ScheduleGroup');
    expect(group.Properties ?? {}).not.toHaveProperty('Name');
  });

  it('deletes the schedule group with the stack (its wake-ups are recoverable: the rescuer wakes due, idle jobs)', () => {
    expect(s.resources[s.idOf(s.stack.scheduleGroup)]?.DeletionPolicy).toBe('Delete');
  });
});

describe('scheduler', () => {
  it('assumes a role that may send to every job queue, and only EventBridge Scheduler of this group may assume it', () => {
    const roleId = s.idOf(s.stack.schedulerRole);
    s.template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [s.idOf(s.stack.scheduleGroup), 'Arn'] } } },
          }),
        ],
      },
    });
    const statements = s.roleStatements(roleId);
    expect(statements.flatMap(actionsOf)).toEqual(['sqs:SendMessage']);
    const resources = JSON.stringify(statements.map((st) => st.Resource));
    for (const name of queueNames) expect(resources, name).toContain(`"${s.idOf(s.stack.jobQueues[name].queue)}"`);
  });

  it('may be passed only to Scheduler: every PassRole of it carries iam:PassedToService', () => {
    const passes = s
      .ofType('AWS::IAM::Policy')
      .flatMap(([, p]) => (p.Properties['PolicyDocument'] as { Statement: { Action: string | string[]; Condition?: unknown }[] }).Statement)
      .filter((st) => ([] as string[]).concat(st.Action).includes('iam:PassRole'));
    expect(passes.length).toBeGreaterThan(0);
    for (const pass of passes) expect(pass.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
  });

  it('runs the rescuer every minute, once: neither Scheduler nor Lambda retries a missed pass', () => {
    const rescuerId = s.idOf(s.stack.rescuerFunction);
    s.template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      FlexibleTimeWindow: { Mode: 'OFF' },
      Target: Match.objectLike({ Arn: { 'Fn::GetAtt': [rescuerId, 'Arn'] }, RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 0 }) }),
    });
    s.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { FunctionName: { Ref: rescuerId }, MaximumRetryAttempts: 0 });
  });
});

describe('functions', () => {
  it('each get a configuration the job layer accepts at cold start, naming every queue and table', () => {
    const functions = s.ofType('AWS::Lambda::Function');
    // The HTTP functions (intake, calendarTools, publicLinks, tenantApi, api) and the rescuer, beside one worker per queue.
    expect(functions.length).toBe(queueNames.length + 6);
    for (const [id] of functions) {
      const env = Object.fromEntries(Object.entries(s.envOf(id)).map(([k, v]) => [k, fakeResolve(v)]));
      const config = parseConfig(jobsAwsConfig, env);
      expect(Object.keys(config.JOB_QUEUES).sort(), id).toEqual([...queueNames].sort());
      for (const name of queueNames) expect(config.JOB_QUEUES[name]?.arn, `${id} ${name}`).toContain(s.idOf(s.stack.jobQueues[name].queue));
      expect(s.envOf(id)['SCHEDULER_GROUP'], id).toEqual({ Ref: s.idOf(s.stack.scheduleGroup) });
      expect(config.SCHEDULER_ROLE_ARN, id).toContain(s.idOf(s.stack.schedulerRole));
      const names = tableNamesFromEnv(env);
      for (const key of Object.keys(tables) as TableKey[]) expect(names[key], `${id} ${key}`).toContain(s.idOf(s.stack.tables[key]));
    }
  });

  it('run Node.js 22 on ARM, traced by X-Ray, and log to their own log group with a retention', () => {
    for (const [id, fn] of s.ofType('AWS::Lambda::Function')) {
      expect(fn.Properties['Runtime'], id).toBe('nodejs22.x');
      expect(fn.Properties['Architectures'], id).toEqual(['arm64']);
      expect(fn.Properties['TracingConfig'], id).toEqual({ Mode: 'Active' });
      const logGroupId = (fn.Properties['LoggingConfig'] as { LogGroup: { Ref: string } }).LogGroup.Ref;
      expect(s.resources[logGroupId]?.Properties['RetentionInDays'], id).toBeGreaterThan(0);
    }
  });

  it('are built from entry files that exist and export a handler', () => {
    const entries = Object.entries(s.stack.entries);
    expect(entries.length).toBe(s.ofType('AWS::Lambda::Function').length);
    for (const [path, file] of entries) {
      expect(existsSync(join(root, file)), `${path}: ${file}`).toBe(true);
      expect(readFileSync(join(root, file), 'utf8'), file).toMatch(/^export const handler\b/m);
    }
    for (const name of queueNames) expect(s.stack.entries[s.stack.jobQueues[name].worker.node.path]).toBe(workerEntry(name));
  });
});

describe('HTTP API', () => {
  const authOf = () =>
    Object.fromEntries(s.ofType('AWS::ApiGatewayV2::Route').map(([, r]) => [r.Properties['RouteKey'] as string, (r.Properties['AuthorizationType'] as string | undefined) ?? 'NONE']));
  const stageOf = (t = s) => t.ofType('AWS::ApiGatewayV2::Stage')[0]!;

  it('asks for an IAM signature on every route except the public ones and the tenant routes (their function checks the API key)', () => {
    const auth = authOf();
    expect(auth['ANY /{proxy+}']).toBe('AWS_IAM');
    expect(auth['GET /healthz']).toBe('NONE');
    const unsigned = new Set([...PUBLIC_ROUTES, ...TENANT_ROUTES].map((r) => `${r.method} ${r.path}`));
    for (const [key, type] of Object.entries(auth)) expect(type, key).toBe(unsigned.has(key) ? 'NONE' : 'AWS_IAM');
    expect(Object.keys(auth).length).toBe(PUBLIC_ROUTES.length + TENANT_ROUTES.length + 1);
    // Operators' copies of the tenant routes, and tenant administration, fall to the IAM catch-all.
    expect(Object.keys(auth).filter((key) => key.includes('/v1/ops/'))).toEqual([]);
    expect(auth['GET /v1/tenants/{tenantId}']).toBe('NONE');
    expect(auth['PUT /v1/tenants/{tenantId}']).toBeUndefined();
  });

  it("takes the tenant routes from the functions' `auth: 'tenant'` routes, every one of them", () => {
    const system = new System(() => {
      throw new Error('listing routes must not build the system');
    });
    const declared = system.routes().filter((r) => r.auth === 'tenant').map((r) => `${r.method} ${r.path}`);
    expect(declared.length).toBeGreaterThan(0);
    expect(TENANT_ROUTES.map((r) => `${r.method} ${r.path}`).sort()).toEqual(declared.sort());
  });

  it("keeps the public routes and the functions' `auth: 'none'` routes the same list", () => {
    // Listing the routes builds no context: a host that cannot be built is never asked for.
    const system = new System(() => {
      throw new Error('listing routes must not build the system');
    });
    const declared = system.routes()
      .filter((r) => r.auth === 'none')
      .map((r) => `${r.method} ${r.path}`);
    expect(declared.sort()).toEqual(PUBLIC_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  });

  it('writes access logs', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('\\$context\\.requestId') },
    });
  });

  it('throttles every route: IAM routes at the stage default, each public route at its function’s own limit', () => {
    const [, stage] = stageOf();
    expect(stage.Properties['DefaultRouteSettings']).toEqual({ ThrottlingRateLimit: DEFAULT_THROTTLING.api.rateLimit, ThrottlingBurstLimit: DEFAULT_THROTTLING.api.burstLimit });
    const settings = stage.Properties['RouteSettings'] as Record<string, unknown>;
    expect(Object.keys(settings).sort()).toEqual([...PUBLIC_ROUTES, ...TENANT_ROUTES].map((r) => `${r.method} ${r.path}`).sort());
    for (const route of PUBLIC_ROUTES) {
      const limit = DEFAULT_THROTTLING[route.servedBy];
      expect(settings[`${route.method} ${route.path}`], route.path).toEqual({ ThrottlingRateLimit: limit.rateLimit, ThrottlingBurstLimit: limit.burstLimit });
    }
    for (const route of TENANT_ROUTES) {
      expect(settings[`${route.method} ${route.path}`], route.path).toEqual({ ThrottlingRateLimit: DEFAULT_THROTTLING.tenantApi.rateLimit, ThrottlingBurstLimit: DEFAULT_THROTTLING.tenantApi.burstLimit });
    }
    // The design's burst of 1,000 results a second fits the intake's limit; a mailed link is a person.
    expect(settings['POST /v1/calls/webhook']).toEqual({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 });
    expect(DEFAULT_THROTTLING.publicLinks.rateLimit).toBeLessThan(DEFAULT_THROTTLING.api.rateLimit);
  });

  it('creates the public and tenant routes before the stage that names them in its route settings', () => {
    const [, stage] = stageOf();
    const routeIds = s
      .ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => r.Properties['RouteKey'] !== 'ANY /{proxy+}')
      .map(([id]) => id);
    expect(routeIds.length).toBe(PUBLIC_ROUTES.length + TENANT_ROUTES.length);
    for (const id of routeIds) expect(stage.DependsOn ?? [], id).toContain(id);
  });

  it('takes other limits from the stack properties', () => {
    const custom = synth({ throttling: { intake: { rateLimit: 50, burstLimit: 60 } } });
    const [, stage] = stageOf(custom);
    expect((stage.Properties['RouteSettings'] as Record<string, unknown>)['POST /v1/calls/webhook']).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 60 });
    expect(stage.Properties['DefaultRouteSettings']).toEqual({ ThrottlingRateLimit: DEFAULT_THROTTLING.api.rateLimit, ThrottlingBurstLimit: DEFAULT_THROTTLING.api.burstLimit });
  });
});

describe('calls configuration', () => {
  it('gives the dial worker what it needs to dial: the placer, the intake as callbackUrl, the call timeout', () => {
    const raw = s.envOf(s.idOf(s.stack.jobQueues.dial.worker));
    const config = requireDialling(callsConfigFromEnv(Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, fakeResolve(v)]))));
    expect(config.placerUrl).toBe(PLACER_URL);
    expect(config.callTimeoutSeconds).toBe(600);
    // The callbackUrl is this stack's own API, at the intake's path.
    expect(JSON.stringify(raw['CALL_WEBHOOK_URL'])).toContain(s.idOf(s.stack.api));
    expect(config.callbackUrl).toMatch(/\/v1\/calls\/webhook$/);
  });

  it('gives the calls worker (watchdogs) the call timeout and no placer: it dials nothing', () => {
    const raw = s.envOf(s.idOf(s.stack.jobQueues.calls.worker));
    const config = callsConfigFromEnv(Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, fakeResolve(v)])));
    expect(config.callTimeoutSeconds).toBe(600);
    expect(config.placerUrl).toBeUndefined();
  });

  it('serves the call-result intake without IAM: its signature is its authentication', () => {
    s.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: 'POST /v1/calls/webhook', AuthorizationType: 'NONE' });
  });
});

describe('configuration a deploy would discover too late', () => {
  const build = (props: Partial<typeof BASE_PROPS>) => () => new RedialStack(newApp(), 'Refused', { ...BASE_PROPS, ...props });

  it('refuses a placer URL that is missing, not a URL, or not https, at synth', () => {
    expect(build({ callPlacerUrl: 'http://placer.example.com/calls' })).toThrow(/callPlacerUrl must be https/);
    expect(build({ callPlacerUrl: '' })).toThrow(/callPlacerUrl must be an https URL/);
    expect(build({ callPlacerUrl: 'placer' })).toThrow(/callPlacerUrl must be an https URL/);
  });

  it('refuses a mail domain or From the mail worker would refuse at every cold start', () => {
    expect(build({ mail: { domain: '' } })).toThrow(/mail domain/);
    expect(build({ mail: { domain: 'not a domain' } })).toThrow(/mail domain "not a domain": not a domain name/);
    expect(build({ mail: { domain: 'mail.example.org', from: 'x' } })).toThrow(/mail from "x"/);
  });

  it('refuses a dead-letter retention that is not a whole number of days from 1 to 365', () => {
    expect(build({ discardedRetentionDays: 0 })).toThrow(/discardedRetentionDays/);
    expect(build({ discardedRetentionDays: 1.5 })).toThrow(/discardedRetentionDays/);
    expect(build({ discardedRetentionDays: 14 })).not.toThrow();
  });

  it('refuses a call timeout the calls worker would refuse', () => {
    expect(build({ callTimeoutSeconds: 5 })).toThrow(/callTimeoutSeconds/);
    expect(build({ callTimeoutSeconds: 600 })).not.toThrow();
  });

  it('names every problem at once', () => {
    expect(build({ callPlacerUrl: 'http://p.example.com', mail: { domain: 'bad domain' } })).toThrow(/callPlacerUrl[\s\S]*mail domain/);
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('finds nothing that is not fixed or acknowledged with a reason', () => {
    const report = new AwsSolutionsChecks(undefined, { verbose: false }).validateScope(s.app);
    const findings = report.violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
    expect(findings).toEqual([]);
    expect(Annotations.fromStack(s.stack).findError('*', Match.anyValue())).toEqual([]);
    expect(Annotations.fromStack(s.stack).findWarning('*', Match.anyValue())).toEqual([]);
  });

  it('would report an unacknowledged finding (the check is live)', () => {
    const bare = new Stack(newApp(), 'Bare');
    new sqs.Queue(bare, 'PlainQueue');
    new JobQueue(bare, 'Jobs', { queueName: 'ops', spec: queues.ops, entry: join(root, workerEntry('ops')) });
    const rules = new AwsSolutionsChecks().validateScope(bare).violations.map((v) => v.ruleName);
    expect(rules).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
    // The JobQueue's own queue is acknowledged (SQS3) and fixed (SQS4): only the plain queue is reported.
    const paths = new AwsSolutionsChecks().validateScope(bare).violations.flatMap((v) => v.violatingResources.map((r) => r.constructPath));
    expect(paths.filter((p) => p?.includes('Jobs/Queue'))).toEqual([]);
  });
});

describe('the jobs table', () => {
  it('keeps the rescuer\'s byCheck index keys-only and sharded, and the dead letters in a sparse byDeadLetter index with the whole row', () => {
    const table = s.resources[s.idOf(s.stack.tables.jobs)];
    expect(table?.Properties['GlobalSecondaryIndexes']).toEqual([
      { IndexName: 'byCheck', KeySchema: [{ AttributeName: 'checkShard', KeyType: 'HASH' }, { AttributeName: 'checkAt', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
      { IndexName: 'byDeadLetter', KeySchema: [{ AttributeName: 'deadLetter', KeyType: 'HASH' }, { AttributeName: 'deadAt', KeyType: 'RANGE' }], Projection: { ProjectionType: 'ALL' } },
    ]);
  });

  it('tells every function how long dead letters stay: 30 days unless the context says otherwise', () => {
    for (const fn of Object.values(s.stack.functions)) expect(s.envOf(s.idOf(fn))['DISCARDED_RETENTION_DAYS'], fn.node.path).toBe('30');
    const custom = synth({ discardedRetentionDays: 14 });
    for (const fn of Object.values(custom.stack.functions)) expect(custom.envOf(custom.idOf(fn))['DISCARDED_RETENTION_DAYS'], fn.node.path).toBe('14');
  });
});

describe('webhooks', () => {
  it('deliver from a worker outside any VPC: customer URLs are on the internet, the SSRF guard keeps private ranges out', () => {
    const worker = s.resources[s.idOf(s.stack.jobQueues.webhooks.worker)];
    expect(worker?.Type).toBe('AWS::Lambda::Function');
    expect(worker?.Properties).not.toHaveProperty('VpcConfig');
    expect(s.ofType('AWS::EC2::VPC')).toEqual([]);
    // Every webhooks kind's timeout fits in the worker's, so a run is never cut short by Lambda first.
    for (const kind of allKinds.filter((k) => k.queue === 'webhooks')) expect(kind.timeoutSeconds, kind.kind).toBeLessThanOrEqual(worker?.Properties['Timeout'] as number);
  });

  it('keep the sparse byWatch and byReceived indexes keys-only, so lease updates write nothing to them and an attempt that delivered only its keys', () => {
    const table = s.resources[s.idOf(s.stack.tables.webhooks)];
    expect(table?.Properties['GlobalSecondaryIndexes']).toEqual([
      { IndexName: 'byWatch', KeySchema: [{ AttributeName: 'watch', KeyType: 'HASH' }, { AttributeName: 'pk', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
      { IndexName: 'byReceived', KeySchema: [{ AttributeName: 'receivedBy', KeyType: 'HASH' }, { AttributeName: 'receivedEvent', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
    ]);
  });
});
