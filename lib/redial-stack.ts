import { join } from 'node:path';
import { Aws, CfnOutput, Duration, Stack, Validations } from 'aws-cdk-lib';
import type { CfnElement, StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ses from 'aws-cdk-lib/aws-ses';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ScheduleTargetBaseProps } from 'aws-cdk-lib/aws-scheduler-targets';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { DEFAULT_CALL_TIMEOUT_SECONDS } from '../functions/calls/config.ts';
import { DISCARD_ALERT_METRIC } from '../functions/jobs/executor.ts';
import { queueNames, queues } from '../functions/jobs/queues.ts';
import type { QueueName } from '../functions/jobs/queues.ts';
import { tableEnvName } from '../functions/ops/aws.ts';
import { tables } from '../functions/ops/system.ts';
import type { TableKey } from '../functions/ops/system.ts';
import { METRICS_NAMESPACE } from '../functions/platform/metrics.ts';
import { linkPaths } from '../functions/mail/links.ts';
import { RedialFunction } from './constructs/function.ts';
import { JobQueue } from './constructs/job-queue.ts';
import { definedTable } from './constructs/table.ts';

const root = join(import.meta.dirname, '..');

/**
 * Scheduler's Lambda target, allowed to invoke the function itself only. CDK's own target grants every
 * version and alias too (`<arn>:*`); the schedule invokes the unqualified function, so that is all it gets.
 */
class UnqualifiedLambdaInvoke extends LambdaInvoke {
  private readonly target: lambda.IFunction;

  constructor(target: lambda.IFunction, props: ScheduleTargetBaseProps) {
    super(target, props);
    this.target = target;
  }

  protected override addTargetActionToRole(role: iam.IRole): void {
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [this.target.functionArn] }));
  }
}

/** A route API Gateway serves without IAM auth; the route itself authenticates its caller. */
export interface PublicRoute {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  readonly path: string;
  /** Why no IAM signature is asked for; shown to cdk-nag as the APIG4 acknowledgement. */
  readonly reason: string;
}

/**
 * The routes API Gateway serves without IAM auth (brief §7); every other route needs a SigV4 signature.
 * The call-result intake (signed webhooks) and the links sent by mail (single-use tokens) belong here;
 * each must be declared `auth: 'none'` in functions/ too, and a test holds the two lists together.
 */
export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  { method: 'GET', path: '/healthz', reason: 'Liveness probe for load balancers and uptime checks; it reads and reveals nothing.' },
  {
    method: 'POST',
    path: '/v1/calls/webhook',
    reason:
      'Call-result intake for the AI call handler, an outside service without AWS credentials: every request must carry a Standard Webhooks signature (HMAC-SHA256 with CALL_WEBHOOK_SECRET, timestamp within 5 minutes), checked before the body is parsed; unsigned requests get 401 and change nothing.',
  },
  {
    method: 'GET',
    path: linkPaths.confirmEmail,
    reason: 'The link in the owner-address confirmation mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.confirmEmail,
    reason: 'The link in the owner-address confirmation mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
  {
    method: 'GET',
    path: linkPaths.approveAccess,
    reason: 'The approve link in an access-request mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.approveAccess,
    reason: 'The approve link in an access-request mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
  {
    method: 'GET',
    path: linkPaths.denyAccess,
    reason: 'The deny link in an access-request mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.denyAccess,
    reason: 'The deny link in an access-request mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
];

/**
 * Worker entry files of queues whose folder is not `functions/<queue>/lambda/worker.ts`, relative to the
 * repository root.
 */
export const WORKER_ENTRY_OVERRIDES: Partial<Record<QueueName, string>> = {};

/** The entry file of a queue's worker: `functions/<queue>/lambda/worker.ts` unless overridden. */
export const workerEntry = (queue: QueueName): string => WORKER_ENTRY_OVERRIDES[queue] ?? `functions/${queue}/lambda/worker.ts`;

/** Mail on AWS: SES v2 sends, from a verified identity. */
export interface RedialMailProps {
  /** The right-hand side of every Message-ID (`<event id@domain>`), and the default SES identity. */
  readonly domain: string;
  /** The From header. @default `redial <no-reply@domain>` */
  readonly from?: string;
  /** The verified SES identity (a domain or an address) the mail worker may send as. @default domain */
  readonly sesIdentity?: string;
  /** An SES configuration set to send through (event publishing, suppression). @default - none */
  readonly configurationSet?: string;
  /** Where the links in mails point. @default - the HTTP API's own endpoint */
  readonly publicBaseUrl?: string;
}

/** Properties of the {@link RedialStack}. */
export interface RedialStackProps extends StackProps {
  /**
   * Mail settings. The identity must be verified in SES (and the account out of the SES sandbox to mail
   * unverified recipients) before mail goes out.
   * @default { domain: 'example.com' } - synthesizes, but SES will refuse to send; set it to deploy
   */
  readonly mail?: RedialMailProps;
  /** An address subscribed to the alarm topic. @default - no subscription; subscribe later */
  readonly alarmEmail?: string;
  /** How long every function's logs and the API access logs are kept. @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /**
   * The call placer's URL (`POST {batchId, contactNumber, round, callbackUrl}`, brief §8), https.
   * @default - none: the calls worker refuses to start until it is set (`cdk deploy -c callPlacerUrl=https://…`)
   */
  readonly callPlacerUrl?: string;
  /** A call with no result after this long is ended by its watchdog with TIMEOUT. @default 600 */
  readonly callTimeoutSeconds?: number;
}

/**
 * redial on AWS: the tables, one SQS queue and worker per job queue, the Scheduler group and role for
 * long delays, the rescuer on a one-minute schedule, the HTTP API and the discard alarm.
 */
export class RedialStack extends Stack {
  readonly tables: Record<TableKey, dynamodb.TableV2>;
  readonly jobQueues: Record<QueueName, JobQueue>;
  readonly schedulerRole: iam.Role;
  readonly scheduleGroup: scheduler.ScheduleGroup;
  readonly apiFunction: NodejsFunction;
  readonly rescuerFunction: NodejsFunction;
  readonly api: apigw.HttpApi;
  readonly alarmTopic: sns.Topic;
  /**
   * The call-result intake's Standard Webhooks signing secret, shared with the AI call handler. Generated
   * at deploy (32 base64 characters, which the verifier takes as a key); put the handler's own `whsec_…`
   * value in instead if it has one. Only the API function may read it, once per cold start.
   */
  readonly callWebhookSecret: secretsmanager.Secret;
  /** Every function's entry file, relative to the repository root, by construct path. */
  readonly entries: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: RedialStackProps = {}) {
    super(scope, id, props);
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const entries: Record<string, string> = {};
    const entry = (file: string) => join(root, file);

    this.tables = Object.fromEntries(
      Object.entries(tables).map(([key, definition]) => [key, definedTable(this, `${pascal(key)}Table`, definition)]),
    ) as Record<TableKey, dynamodb.TableV2>;

    // Egress: the webhooks worker (webhook.deliver) sends to customer URLs on the internet, so no worker
    // runs in a VPC; Lambda's own internet egress carries it. What keeps deliveries off private, link-local
    // and metadata addresses is the SSRF guard in functions/webhooks (resolve, vet, connect to the vetted
    // address), not the network. In a VPC it would need a NAT gateway, and the guard would matter more.
    this.jobQueues = Object.fromEntries(
      queueNames.map((name) => {
        const queue = new JobQueue(this, `${pascal(name)}Jobs`, { queueName: name, spec: queues[name], entry: entry(workerEntry(name)), logRetention });
        entries[queue.worker.node.path] = workerEntry(name);
        return [name, queue];
      }),
    ) as Record<QueueName, JobQueue>;

    // Scheduler delivers wake-ups due later than SQS's 15-minute delay; it assumes this role to send them.
    this.scheduleGroup = new scheduler.ScheduleGroup(this, 'JobSchedules');
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: 'EventBridge Scheduler sends job wake-ups to the job queues',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
        ArnLike: { 'aws:SourceArn': this.scheduleGroup.scheduleGroupArn },
      }),
    });
    for (const { queue } of Object.values(this.jobQueues)) queue.grant(this.schedulerRole, 'sqs:SendMessage');

    this.apiFunction = new RedialFunction(this, 'Api', {
      entry: entry('functions/ops/lambda/api.ts'),
      description: 'redial HTTP API: every route, behind API Gateway',
      timeout: Duration.seconds(15),
      logRetention,
    }).function;
    entries[this.apiFunction.node.path] = 'functions/ops/lambda/api.ts';

    this.rescuerFunction = new RedialFunction(this, 'Rescuer', {
      entry: entry('functions/ops/lambda/rescuer.ts'),
      description: 'redial rescuer: re-wakes lost jobs and expired leases, enqueues periodic jobs',
      timeout: Duration.seconds(50),
      logRetention,
    }).function;
    entries[this.rescuerFunction.node.path] = 'functions/ops/lambda/rescuer.ts';
    new scheduler.Schedule(this, 'RescuerSchedule', {
      description: 'Runs the job rescuer every minute',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
      // Not retried: the next minute's pass is the retry.
      target: new UnqualifiedLambdaInvoke(this.rescuerFunction, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
    });

    for (const fn of [this.apiFunction, this.rescuerFunction, ...Object.values(this.jobQueues).map((q) => q.worker)]) this.grantJobs(fn);
    this.entries = entries;

    const { api, stage } = this.httpApi(this.apiFunction, logRetention);
    this.api = api;
    this.callWebhookSecret = this.callsConfiguration(props);
    this.configureMail(props.mail ?? { domain: 'example.com' }, [this.apiFunction, this.rescuerFunction, ...Object.values(this.jobQueues).map((q) => q.worker)]);
    this.alarmTopic = this.discardAlarm(props.alarmEmail);

    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'HTTP API base URL' });
    new CfnOutput(this, 'JobsTableName', { value: this.tables.jobs.tableName, description: 'The jobs table' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.alarmTopic.topicArn, description: 'Subscribe here for job discard alerts' });
  }

  /**
   * What a function that enqueues or runs jobs needs (functions/jobs/aws.ts `jobsAwsConfig`): the table
   * names, every queue's address, the Scheduler group and role, and the least privilege to use them.
   */
  private grantJobs(fn: NodejsFunction): void {
    if (!fn.role) throw new Error(`${fn.node.path} has no role to grant job access to`);
    for (const [key, table] of Object.entries(this.tables)) {
      fn.addEnvironment(tableEnvName(key), table.tableName);
      table.grantReadWriteData(fn);
    }
    fn.addEnvironment(
      'JOB_QUEUES',
      this.toJsonString(Object.fromEntries(Object.entries(this.jobQueues).map(([name, { queue }]) => [name, { url: queue.queueUrl, arn: queue.queueArn }]))),
    );
    for (const { queue } of Object.values(this.jobQueues)) queue.grant(fn, 'sqs:SendMessage');
    fn.addEnvironment('SCHEDULER_GROUP', this.scheduleGroup.scheduleGroupName);
    fn.addEnvironment('SCHEDULER_ROLE_ARN', this.schedulerRole.roleArn);
    const schedulesInGroup = this.formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${this.scheduleGroup.scheduleGroupName}/*` });
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['scheduler:CreateSchedule'], resources: [schedulesInGroup] }));

    this.schedulerRole.grantPassRole(fn.role);

    // The findings sit on the role's default policy; an acknowledgement covers the construct and its children.
    const acknowledge = Validations.of(fn.role);
    for (const table of Object.values(this.tables)) {
      acknowledge.acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${this.logicalIdOf(table)}.Arn>/index/*]`,
        reason: "Queries the table's own secondary indexes (the jobs table's byState: rescuer passes and ops listings); the wildcard covers index names of this one table.",
      });
    }
    acknowledge.acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/${this.scheduleGroup.scheduleGroupName}/*]`,
      reason: 'Creates one-time job wake-up schedules, named per job and attempt at run time; the wildcard stays inside the job schedule group.',
    });
  }

  /**
   * The calls context's configuration: the intake's secret for the API (by ARN, read at cold start, never
   * in an environment variable), and for the calls worker the placer's URL, the intake's public URL
   * (its callbackUrl) and the call timeout.
   */
  private callsConfiguration(props: RedialStackProps): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, 'CallWebhookSecret', {
      description: 'redial: Standard Webhooks secret the AI call handler signs call results with',
      generateSecretString: { passwordLength: 32, excludePunctuation: true, includeSpace: false },
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Shared with an outside signer (the AI call handler); rotating it is a coordinated change with that vendor, not an automatic one. The intake accepts several signatures, so a rotation can overlap.',
    });
    secret.grantRead(this.apiFunction);
    this.apiFunction.addEnvironment('CALL_WEBHOOK_SECRET_ARN', secret.secretArn);

    const worker = this.jobQueues.calls.worker;
    if (props.callPlacerUrl !== undefined) {
      const url = new URL(props.callPlacerUrl);
      if (url.protocol !== 'https:') throw new Error(`callPlacerUrl must be https, got ${props.callPlacerUrl}`);
      worker.addEnvironment('CALL_PLACER_URL', url.toString());
    }
    worker.addEnvironment('CALL_WEBHOOK_URL', `${this.api.apiEndpoint}/v1/calls/webhook`);
    worker.addEnvironment('CALL_TIMEOUT_SECONDS', String(props.callTimeoutSeconds ?? DEFAULT_CALL_TIMEOUT_SECONDS));
    return secret;
  }

  /**
   * What functions/mail/config.ts parses at every cold start (MAIL_DOMAIN, MAIL_FROM, PUBLIC_BASE_URL,
   * MAIL_TRANSPORT=ses, SES_CONFIGURATION_SET), and for the mail worker alone, leave to send as the one
   * configured SES identity (and through the configured configuration set).
   */
  private configureMail(mail: RedialMailProps, functions: NodejsFunction[]): void {
    for (const fn of functions) {
      fn.addEnvironment('MAIL_DOMAIN', mail.domain);
      if (mail.from) fn.addEnvironment('MAIL_FROM', mail.from);
      fn.addEnvironment('MAIL_TRANSPORT', 'ses');
      fn.addEnvironment('PUBLIC_BASE_URL', mail.publicBaseUrl ?? this.api.apiEndpoint);
      if (mail.configurationSet) fn.addEnvironment('SES_CONFIGURATION_SET', mail.configurationSet);
    }
    const sender = this.jobQueues.mail.worker;
    ses.EmailIdentity.fromEmailIdentityName(this, 'MailIdentity', mail.sesIdentity ?? mail.domain).grantSendEmail(sender);
    if (mail.configurationSet) {
      sender.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['ses:SendEmail', 'ses:SendRawEmail'],
          resources: [this.formatArn({ service: 'ses', resource: 'configuration-set', resourceName: mail.configurationSet })],
        }),
      );
    }
  }

  /** The logical id of a construct's CloudFormation resource, as cdk-nag names it in a finding. */
  private logicalIdOf(construct: Construct): string {
    return this.getLogicalId(construct.node.defaultChild as CfnElement);
  }

  /** The HTTP API: one Lambda behind it; IAM auth on every route except {@link PUBLIC_ROUTES}. */
  private httpApi(handler: NodejsFunction, logRetention: logs.RetentionDays): { api: apigw.HttpApi; stage: apigw.HttpStage } {
    const api = new apigw.HttpApi(this, 'HttpApi', { description: 'redial ops and tenant API', createDefaultStage: false });
    const accessLogs = new logs.LogGroup(this, 'HttpApiAccessLogs', { retention: logRetention });
    const stage = api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            caller: '$context.identity.userArn',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
            authorizerError: '$context.authorizer.error',
          }),
        ),
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', handler);
    api.addRoutes({ path: '/{proxy+}', methods: [apigw.HttpMethod.ANY], integration, authorizer: new HttpIamAuthorizer() });
    for (const route of PUBLIC_ROUTES) {
      const added = api.addRoutes({ path: route.path, methods: [apigw.HttpMethod[route.method]], integration, authorizer: new apigw.HttpNoneAuthorizer() });
      for (const r of added) Validations.of(r).acknowledge({ id: 'AwsSolutions-APIG4', reason: `Public by design (brief §7): ${route.reason}` });
    }
    return { api, stage };
  }

  /** An alarm on any discard with an alert (attempts exhausted), notifying an encrypted SNS topic. */
  private discardAlarm(alarmEmail: string | undefined): sns.Topic {
    // CloudWatch cannot publish to a topic under the AWS-managed SNS key; it needs a key that lets it in.
    const key = new kms.Key(this, 'AlarmTopicKey', { description: 'Encrypts the redial alarm topic', enableKeyRotation: true });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', { displayName: 'redial alarms', enforceSSL: true, masterKey: key });
    if (alarmEmail) topic.addSubscription(new EmailSubscription(alarmEmail));

    // Powertools adds a `service` dimension to every metric, and each function has its own service name;
    // a Metrics Insights query sums the metric over all of them, so a new worker needs no new alarm.
    const alarm = new cloudwatch.Alarm(this, 'JobDiscardedAlarm', {
      alarmDescription: 'A job was discarded with an alert (its attempts ran out); inspect and retry it from the ops CLI or panel.',
      metric: new cloudwatch.MathExpression({
        expression: `SELECT SUM(${DISCARD_ALERT_METRIC}) FROM "${METRICS_NAMESPACE}"`,
        period: Duration.minutes(5),
        label: DISCARD_ALERT_METRIC,
        usingMetrics: {},
      }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new SnsAction(topic));
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: { ArnLike: { 'aws:SourceArn': alarm.alarmArn }, StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
    );
    return topic;
  }
}

/** `ops` → `Ops`, `webhookDeliver` → `WebhookDeliver`: construct ids from logical names. */
const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);
