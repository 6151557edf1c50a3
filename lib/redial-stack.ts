import { join } from 'node:path';
import { Aws, CfnOutput, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { CfnElement, StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { ScheduleTargetBaseProps } from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct } from 'constructs';
import { DEFAULT_DISCARDED_RETENTION_DAYS } from '../functions/jobs/index.ts';
import { callsEnv, DEFAULT_CALL_TIMEOUT_SECONDS } from '../functions/calls/config.ts';

import { mailEnv } from '../functions/mail/config.ts';
import { SECRET_CONTEXT_KEYS } from '../functions/webhooks/secrets.ts';
import { CALENDAR_CONTEXT_KEYS } from '../functions/calendar/credentials.ts';
import { UPLOAD_RETENTION_DAYS } from '../functions/calls/imports/uploads.ts';
import { linkPaths } from '../functions/mail/links.ts';
import { tableEnvName } from '../functions/app/aws.ts';
import { queueNames, queues, System, tables } from '../functions/app/system.ts';
import type { HttpFunction, QueueName, TableKey } from '../functions/app/system.ts';
import { FUNCTION_ACCESS, WORKER_ACCESS } from './access.ts';
import type { FunctionAccess, TableAccess } from './access.ts';
import { RedialFunction } from './constructs/function.ts';
import { JobQueue } from './constructs/job-queue.ts';
import { Monitoring } from './constructs/monitoring.ts';
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
  /** The function that serves it (functions/app/system.ts `routesServedBy`). */
  readonly servedBy: Exclude<HttpFunction, 'api' | 'tenantApi'>;
  /** Why no IAM signature is asked for; shown to cdk-nag as the APIG4 acknowledgement. */
  readonly reason: string;
}

/**
 * The routes API Gateway serves without IAM auth (docs/operations.md, "What each function may do"); every
 * other route needs a SigV4 signature and goes to the API function. The call-result intake (signed webhooks) and the links sent by mail (single-use
 * tokens) belong here; each must be declared `auth: 'none'` in functions/ too, and a test holds the two
 * lists together.
 */
export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  { method: 'GET', path: '/healthz', servedBy: 'publicLinks', reason: 'Liveness probe for load balancers and uptime checks; it reads and reveals nothing.' },
  {
    method: 'GET',
    path: '/v1/openapi.json',
    servedBy: 'publicLinks',
    reason: 'The API described (OpenAPI 3.1, generated from the same schemas that validate requests), for tenants’ developers, who hold no AWS credentials; it reads and reveals no data.',
  },
  {
    method: 'POST',
    path: '/v1/calls/webhook',
    servedBy: 'intake',
    reason:
      'Call-result intake for the AI call handler, an outside service without AWS credentials: every request must carry a Standard Webhooks signature (HMAC-SHA256 with CALL_WEBHOOK_SECRET, timestamp within 5 minutes), checked before the body is parsed; unsigned requests get 401 and change nothing.',
  },
  { method: 'POST', path: '/v1/calls/availability', servedBy: 'calendarTools', reason: 'The agent’s calendar tool during a call, sent by the AI call handler (an outside service without AWS credentials): signed as call results are (Standard Webhooks, CALL_WEBHOOK_SECRET, checked before the body is parsed; unsigned → 401, nothing read), and it acts only for a call the intake would still apply (409 otherwise).' },
  { method: 'POST', path: '/v1/calls/appointments', servedBy: 'calendarTools', reason: 'The agent’s calendar tool during a call, sent by the AI call handler (an outside service without AWS credentials): signed as call results are (Standard Webhooks, CALL_WEBHOOK_SECRET, checked before the body is parsed; unsigned → 401, nothing read), and it acts only for a call the intake would still apply (409 otherwise).' },
  { method: 'POST', path: '/v1/calls/appointments/cancel', servedBy: 'calendarTools', reason: 'The agent’s calendar tool during a call, sent by the AI call handler (an outside service without AWS credentials): signed as call results are (Standard Webhooks, CALL_WEBHOOK_SECRET, checked before the body is parsed; unsigned → 401, nothing read), and it acts only for a call the intake would still apply (409 otherwise).' },
  {
    method: 'GET',
    path: linkPaths.confirmEmail,
    servedBy: 'publicLinks',
    reason: 'The link in the owner-address confirmation mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.confirmEmail,
    servedBy: 'publicLinks',
    reason: 'The link in the owner-address confirmation mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
  {
    method: 'GET',
    path: linkPaths.approveAccess,
    servedBy: 'publicLinks',
    reason: 'The approve link in an access-request mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.approveAccess,
    servedBy: 'publicLinks',
    reason: 'The approve link in an access-request mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
  {
    method: 'GET',
    path: linkPaths.denyAccess,
    servedBy: 'publicLinks',
    reason: 'The deny link in an access-request mail, opened: a page with a button; it changes nothing and reveals nothing but the button.',
  },
  {
    method: 'POST',
    path: linkPaths.denyAccess,
    servedBy: 'publicLinks',
    reason: 'The deny link in an access-request mail, used: its single-use, expiring, 256-bit token (stored only as a hash) is its auth.',
  },
];

/** The entry file of each HTTP function and the rescuer, relative to the repository root. */
export const FUNCTION_ENTRIES: Readonly<Record<HttpFunction | 'rescuer', string>> = {
  intake: 'functions/app/lambda/intake.ts',
  calendarTools: 'functions/app/lambda/calendar-tools.ts',
  publicLinks: 'functions/app/lambda/links.ts',
  tenantApi: 'functions/app/lambda/tenant-api.ts',
  api: 'functions/app/lambda/api.ts',
  rescuer: 'functions/app/lambda/rescuer.ts',
};

/**
 * The tenant routes (`auth: 'tenant'`, functions/): API Gateway asks for no IAM signature on them and hands
 * them to the tenant API function, which refuses any request without a valid API key of a tenant (401)
 * before anything else runs, and acts for that key's tenant alone. Read off the code, so a new tenant route
 * cannot fall into the IAM catch-all by being forgotten here.
 */
export const TENANT_ROUTES: readonly { readonly method: PublicRoute['method']; readonly path: string }[] = new System(() => {
  throw new Error('listing the routes builds nothing');
})
  .routes()
  .filter((r) => r.auth === 'tenant')
  .map((r) => ({ method: r.method, path: r.path }));

/** The entry file of a queue's worker, relative to the repository root. */
export const workerEntry = (queue: QueueName): string => `functions/app/lambda/${queue}-worker.ts`;

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

/** A token bucket of API Gateway: `rateLimit` requests a second on average, bursts up to `burstLimit`. */
export interface Throttle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/** Request limits per HTTP function's routes (each route of a function gets this limit of its own). */
export type ApiThrottling = Readonly<Record<HttpFunction, Throttle>>;

/**
 * Default request limits (API Gateway answers 429 above them, before any Lambda runs):
 * - `intake`: the design carries bursts of 1,000 results a second; the steady rate allows them, the
 *   bucket holds two seconds' worth.
 * - `calendarTools`: the agent's calendar tools, a few requests per call that books (each route its own bucket).
 * - `publicLinks`: people clicking links in mails (and an uptime probe on /healthz).
 * - `tenantApi`: each tenant route, for tenants' back ends (and what an unauthenticated flood may cost:
 *   each refused request is one invocation, and a well-formed key one GetItem).
 * - `api`: the stage default, for every IAM route: operators.
 */
export const DEFAULT_THROTTLING: ApiThrottling = {
  intake: { rateLimit: 1000, burstLimit: 2000 },
  calendarTools: { rateLimit: 200, burstLimit: 400 },
  publicLinks: { rateLimit: 10, burstLimit: 20 },
  tenantApi: { rateLimit: 100, burstLimit: 200 },
  api: { rateLimit: 100, burstLimit: 200 },
};

/**
 * Concurrency reserved for the intake, and its ceiling. 1,000 results a second at ≈ 50–100 ms each is
 * 50–100 invocations at once; a flood of unsigned POSTs can take no more than this from the workers.
 * The account keeps at least 100 unreserved, so this needs an account concurrency limit of 200 or more.
 */
export const DEFAULT_INTAKE_RESERVED_CONCURRENCY = 100;

/** A queue's event source on AWS: messages per worker invocation and worker invocations at once. */
export interface QueueSettings {
  /** SQS batch size, 1–10. A batch's records run side by side and the invocation lasts as long as the slowest. */
  readonly batchSize: number;
  /** The event source's maximum concurrency, 2–1,000 (the poller never runs more invocations at once). */
  readonly maxConcurrency: number;
}

/**
 * Each queue's event source, derived from the capacity model (docs/capacity.md, "Settings"): at 1,000
 * results a second with the measured messages per result and record durations, every queue carries at
 * least twice its demand (`capacity = maxConcurrency × batchSize ÷ E[slowest record of a batch]`).
 * Kinds that wait on the outside world have queues of their own, so a slow placer or endpoint never holds
 * back a quick kind: `dial` (calls.dial waits on the placer) and `deliveries` (webhook.deliver waits on a
 * customer's endpoint, then runs the endpoint's next parked delivery in the same invocation). A batch's
 * records run side by side, so a slow one holds back no other record's work, only its invocation's slot:
 * every queue takes batches of ten, which divides the concurrency it needs by up to ten. The concurrencies
 * are sized from the durations measured on DynamoDB Local on a loaded 2-core machine (several times AWS's),
 * so on AWS they are ceilings rarely reached, not reservations. Every value can be set
 * from the CDK context (lib/context.ts: `<queue>BatchSize`, `<queue>Concurrency`). Their sum and the
 * intake's reserved concurrency need an account concurrency quota above it (docs/capacity.md).
 */
export const DEFAULT_QUEUE_SETTINGS: Readonly<Record<QueueName, QueueSettings>> = {
  ops: { batchSize: 10, maxConcurrency: 2 },
  dial: { batchSize: 10, maxConcurrency: 300 },
  calls: { batchSize: 10, maxConcurrency: 200 },
  deliveries: { batchSize: 10, maxConcurrency: 1000 },
  webhooks: { batchSize: 10, maxConcurrency: 1000 },
  mail: { batchSize: 10, maxConcurrency: 200 },
  // supplier.invoke: one settle per booking attempt, each a token exchange and two calendar requests.
  calendar: { batchSize: 10, maxConcurrency: 20 },
};

/** Properties of the {@link RedialStack}. */
export interface RedialStackProps extends StackProps {
  /**
   * The call placer's URL (`POST {batchId, contactNumber, round, callId, callbackUrl}`, docs/calls.md), https.
   * Required: a stack that cannot dial is refused at synth, not discovered by every dial for days.
   */
  readonly callPlacerUrl: string;
  /**
   * Mail settings. Required, for the same reason. The identity must be verified in SES (and the account
   * out of the SES sandbox to mail unverified recipients) before mail goes out.
   */
  readonly mail: RedialMailProps;
  /** An address subscribed to the alarm topic. @default - no subscription; subscribe later */
  readonly alarmEmail?: string;
  /** How long every function's logs and the API access logs are kept. @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** A call with no result after this long is ended by its watchdog with TIMEOUT. @default 600 */
  readonly callTimeoutSeconds?: number;
  /**
   * How long a discarded job (a dead letter) stays listable and retryable before DynamoDB's TTL removes it
   * (DISCARDED_RETENTION_DAYS on every function; docs/job-layer.md, "The jobs table").
   * @default DEFAULT_DISCARDED_RETENTION_DAYS (30)
   */
  readonly discardedRetentionDays?: number;
  /** Request limits of the HTTP API, per function's routes. @default DEFAULT_THROTTLING */
  readonly throttling?: Partial<ApiThrottling>;
  /** @default DEFAULT_INTAKE_RESERVED_CONCURRENCY */
  readonly intakeReservedConcurrency?: number;
  /** Each queue's event source, where it differs from the default. @default DEFAULT_QUEUE_SETTINGS */
  readonly queues?: Partial<Record<QueueName, Partial<QueueSettings>>>;
  /**
   * Deletion protection on the tables, which are then kept when the stack is deleted. Turn it off for
   * throw-away test stacks only: their tables are deleted with them.
   * @default true
   */
  readonly deletionProtection?: boolean;
}

/**
 * redial on AWS: the tables, one SQS queue and worker per job queue, the Scheduler group and role for
 * long delays, the rescuer on a one-minute schedule, the HTTP API (the intake, the mail links and the
 * IAM routes each in a function of their own), and the alarms and dashboard an operator watches.
 *
 * Every function gets only what lib/access.ts says its code touches.
 */
export class RedialStack extends Stack {
  readonly tables: Record<TableKey, dynamodb.TableV2>;
  readonly jobQueues: Record<QueueName, JobQueue>;
  readonly schedulerRole: iam.Role;
  /** The job wake-up schedule group. Its name is CloudFormation's (`Ref`), never fixed. */
  readonly scheduleGroup: scheduler.CfnScheduleGroup;
  readonly apiFunction: NodejsFunction;
  readonly tenantApiFunction: NodejsFunction;
  readonly intakeFunction: NodejsFunction;
  /** The agent's calendar tools (functions/app/lambda/calendar-tools.ts). */
  readonly calendarToolsFunction: NodejsFunction;
  readonly publicLinksFunction: NodejsFunction;
  readonly rescuerFunction: NodejsFunction;
  readonly api: apigw.HttpApi;
  readonly stage: apigw.HttpStage;
  readonly monitoring: Monitoring;
  /**
   * The call-result intake's Standard Webhooks signing secret, shared with the AI call handler. Generated
   * at deploy (32 base64 characters, which the verifier takes as a key); put the handler's own `whsec_…`
   * value in instead if it has one. Only the intake function may read it, once per cold start.
   */
  readonly callWebhookSecret: secretsmanager.Secret;
  /**
   * The key webhook endpoint secrets are encrypted with at rest (functions/webhooks/secrets.ts): the API
   * may encrypt (register) and decrypt (an idempotent replay shows the secret again), the webhooks worker
   * only decrypt (to sign); each only with an endpoint's encryption context. No other function may use it.
   */
  readonly webhookSecretsKey: kms.Key;
  /**
   * Large contacts files, uploaded by tenants with presigned PUTs and read by their import request
   * (functions/calls/imports): private (public access blocked, owner-enforced), TLS only, encrypted, each
   * object kept UPLOAD_RETENTION_DAYS. Only the API functions may put (sign URLs) and get objects.
   */
  readonly uploadsBucket: s3.Bucket;
  /** Every function by the name lib/access.ts grants it under: intake, publicLinks, tenantApi, api, rescuer, `<queue>Worker`. */
  readonly functions: Readonly<Record<string, NodejsFunction>>;
  /** Every function's entry file, relative to the repository root, by construct path. */
  readonly entries: Readonly<Record<string, string>>;

  private readonly mail: RedialMailProps;

  constructor(scope: Construct, id: string, props: RedialStackProps) {
    super(scope, id, props);
    const { callPlacerUrl, mail } = checkedConfiguration(props);
    this.mail = mail;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const entries: Record<string, string> = {};
    const entry = (file: string) => join(root, file);

    this.tables = Object.fromEntries(
      Object.entries(tables).map(([key, definition]) => [key, definedTable(this, `${pascal(key)}Table`, definition, { protect: props.deletionProtection ?? true })]),
    ) as Record<TableKey, dynamodb.TableV2>;

    // Egress: the webhooks worker (webhook.deliver) sends to customer URLs on the internet, so no worker
    // runs in a VPC; Lambda's own internet egress carries it. What keeps deliveries off private, link-local
    // and metadata addresses is the SSRF guard in functions/webhooks (resolve, vet, connect to the vetted
    // address), not the network. In a VPC it would need a NAT gateway, and the guard would matter more.
    this.jobQueues = Object.fromEntries(
      queueNames.map((name) => {
        // The worker's timeout is the queue's own (its kinds' budgets); the event source is the deployment's.
        const spec = { timeoutSeconds: queues[name].timeoutSeconds, ...DEFAULT_QUEUE_SETTINGS[name], ...props.queues?.[name] };
        const queue = new JobQueue(this, `${pascal(name)}Jobs`, { queueName: name, spec, entry: entry(workerEntry(name)), logRetention });
        entries[queue.worker.node.path] = workerEntry(name);
        return [name, queue];
      }),
    ) as Record<QueueName, JobQueue>;

    // Scheduler delivers wake-ups due later than SQS's 15-minute delay; it assumes this role to send them.
    // The group has no fixed name and is deleted with the stack (with the wake-ups in it): a redeploy after
    // a destroy creates a new one instead of colliding with a kept one. A deleted wake-up loses nothing:
    // the job row is the truth, and the rescuer wakes any job that is due and idle.
    this.scheduleGroup = new scheduler.CfnScheduleGroup(this, 'JobSchedules');
    this.scheduleGroup.applyRemovalPolicy(RemovalPolicy.DESTROY);
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      description: 'EventBridge Scheduler sends job wake-ups to the job queues',
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
        ArnLike: { 'aws:SourceArn': this.scheduleGroup.attrArn },
      }),
    });
    this.schedulerRole.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: Object.values(this.jobQueues).map((q) => q.queue.queueArn) }));

    const httpFunction = (name: HttpFunction | 'rescuer', description: string, timeout: Duration, reservedConcurrentExecutions?: number) => {
      const built = new RedialFunction(this, pascal(name), {
        entry: entry(FUNCTION_ENTRIES[name]),
        description,
        timeout,
        logRetention,
        ...(reservedConcurrentExecutions !== undefined ? { reservedConcurrentExecutions } : {}),
      });
      entries[built.function.node.path] = FUNCTION_ENTRIES[name];
      return built;
    };
    this.intakeFunction = httpFunction(
      'intake',
      'redial call-result intake: POST /v1/calls/webhook (signed, public)',
      Duration.seconds(10),
      props.intakeReservedConcurrency ?? DEFAULT_INTAKE_RESERVED_CONCURRENCY,
    ).function;
    this.calendarToolsFunction = httpFunction('calendarTools', 'redial calendar tools: the agent checks and books appointments during a call (signed, public)', Duration.seconds(10)).function;
    this.publicLinksFunction = httpFunction('publicLinks', 'redial mail links and /healthz (public, token-authenticated)', Duration.seconds(10)).function;
    this.apiFunction = httpFunction('api', 'redial operator API: every IAM route', Duration.seconds(15)).function;
    this.tenantApiFunction = httpFunction('tenantApi', 'redial tenant API: the tenant routes, each request acting for its API key’s tenant', Duration.seconds(15)).function;
    const rescuer = httpFunction('rescuer', 'redial rescuer: re-wakes lost jobs and expired leases, enqueues periodic jobs', Duration.seconds(50));
    this.rescuerFunction = rescuer.function;
    new scheduler.Schedule(this, 'RescuerSchedule', {
      description: 'Runs the job rescuer every minute',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
      // Not retried: the next minute's pass is the retry.
      target: new UnqualifiedLambdaInvoke(this.rescuerFunction, { retryAttempts: 0, maxEventAge: Duration.minutes(1) }),
    });
    this.entries = entries;

    this.functions = {
      intake: this.intakeFunction,
      calendarTools: this.calendarToolsFunction,
      publicLinks: this.publicLinksFunction,
      tenantApi: this.tenantApiFunction,
      api: this.apiFunction,
      rescuer: this.rescuerFunction,
      ...Object.fromEntries(queueNames.map((name) => [`${name}Worker`, this.jobQueues[name].worker])),
    };

    const { api, stage } = this.httpApi(logRetention, { ...DEFAULT_THROTTLING, ...props.throttling });
    this.api = api;
    this.stage = stage;

    this.callWebhookSecret = new secretsmanager.Secret(this, 'CallWebhookSecret', {
      description: 'redial: Standard Webhooks secret the AI call handler signs call results with',
      generateSecretString: { passwordLength: 32, excludePunctuation: true, includeSpace: false },
    });
    Validations.of(this.callWebhookSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Shared with an outside signer (the AI call handler); rotating it is a coordinated change with that vendor, not an automatic one. The intake accepts several signatures, so a rotation can overlap.',
    });
    this.webhookSecretsKey = new kms.Key(this, 'WebhookSecretsKey', { description: 'Encrypts webhook endpoint signing secrets at rest', enableKeyRotation: true });
    this.uploadsBucket = new s3.Bucket(this, 'UploadsBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      lifecycleRules: [{ id: 'uploads-expire', expiration: Duration.days(UPLOAD_RETENTION_DAYS), abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      // Its objects expire within days; kept on a stack deletion as the tables are, for whoever deletes it by hand.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.uploadsBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'Uploads live two days and are reached only through presigned URLs the tenant API signs for the tenant it authenticated (each logged in the API access log with its upload id); a server access log bucket would keep more than the files themselves.',
    });

    for (const fn of Object.values(this.functions)) {
      this.configureEnvironment(fn, mail);
      fn.addEnvironment('DISCARDED_RETENTION_DAYS', String(props.discardedRetentionDays ?? DEFAULT_DISCARDED_RETENTION_DAYS));
    }
    for (const [name, access] of Object.entries(FUNCTION_ACCESS)) this.grantAccess(this.functions[name]!, access);
    for (const name of queueNames) this.grantAccess(this.jobQueues[name].worker, WORKER_ACCESS[name]);

    // The dial worker places calls (and names the run's watchdog's due time); the calls worker's watchdog
    // ends calls still Calling after the same timeout.
    const dial = this.jobQueues.dial.worker;
    dial.addEnvironment('CALL_PLACER_URL', callPlacerUrl);
    dial.addEnvironment('CALL_WEBHOOK_URL', `${this.api.apiEndpoint}/v1/calls/webhook`);
    for (const worker of [dial, this.jobQueues.calls.worker]) worker.addEnvironment('CALL_TIMEOUT_SECONDS', String(props.callTimeoutSeconds ?? DEFAULT_CALL_TIMEOUT_SECONDS));

    this.monitoring = new Monitoring(this, 'Monitoring', {
      functions: this.functions,
      queues: Object.fromEntries(queueNames.map((name) => [name, { queue: this.jobQueues[name].queue, workerTimeoutSeconds: queues[name].timeoutSeconds }])),
      tables: Object.fromEntries(Object.entries(tables).map(([key, definition]) => [key, { table: this.tables[key as TableKey], indexes: definition.indexes.map((i) => i.name) }])),
      api: this.api,
      scheduleGroupName: this.scheduleGroup.ref,
      rescuer: { fn: this.rescuerFunction, logGroup: rescuer.logGroup },
      ...(props.alarmEmail ? { alarmEmail: props.alarmEmail } : {}),
    });

    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'HTTP API base URL' });
    new CfnOutput(this, 'JobsTableName', { value: this.tables.jobs.tableName, description: 'The jobs table' });
    new CfnOutput(this, 'WebhooksTableName', { value: this.tables.webhooks.tableName, description: 'The webhooks table (endpoints, events)' });
    new CfnOutput(this, 'WebhookSecretsKeyArn', { value: this.webhookSecretsKey.keyArn, description: 'The key webhook endpoint secrets are encrypted with' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn, description: 'Subscribe here for alarms (runbook: docs/operations.md)' });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName, description: 'The CloudWatch dashboard' });
  }

  /**
   * What every function parses at cold start (functions/app/aws.ts `awsSystem`): the table names, every
   * queue's address, the Scheduler group and role, the mail configuration. Names and addresses only: what a
   * function may do with them is its role's business ({@link grantAccess}).
   */
  private configureEnvironment(fn: NodejsFunction, mail: RedialMailProps): void {
    for (const [key, table] of Object.entries(this.tables)) fn.addEnvironment(tableEnvName(key), table.tableName);
    fn.addEnvironment(
      'JOB_QUEUES',
      this.toJsonString(Object.fromEntries(Object.entries(this.jobQueues).map(([name, { queue }]) => [name, { url: queue.queueUrl, arn: queue.queueArn }]))),
    );
    fn.addEnvironment('SCHEDULER_GROUP', this.scheduleGroup.ref);
    fn.addEnvironment('SCHEDULER_ROLE_ARN', this.schedulerRole.roleArn);
    // functions/mail/config.ts: MAIL_DOMAIN, MAIL_FROM, PUBLIC_BASE_URL, MAIL_TRANSPORT=ses, SES_CONFIGURATION_SET.
    fn.addEnvironment('MAIL_DOMAIN', mail.domain);
    if (mail.from) fn.addEnvironment('MAIL_FROM', mail.from);
    fn.addEnvironment('MAIL_TRANSPORT', 'ses');
    fn.addEnvironment('PUBLIC_BASE_URL', mail.publicBaseUrl ?? this.api.apiEndpoint);
    if (mail.configurationSet) fn.addEnvironment('SES_CONFIGURATION_SET', mail.configurationSet);
  }

  /** Grants a function exactly its {@link FunctionAccess} (lib/access.ts). */
  private grantAccess(fn: NodejsFunction, access: FunctionAccess): void {
    const role = fn.role;
    if (!role) throw new Error(`${fn.node.path} has no role to grant to`);
    const allow = (actions: string[], resources: string[], conditions?: Record<string, unknown>) =>
      role.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources, ...(conditions ? { conditions } : {}) }));

    for (const [key, grants] of Object.entries(access.tables)) {
      const table = this.tables[key as TableKey];
      for (const grant of ([] as TableAccess[]).concat(grants)) {
        const reads = grant.actions.some((a) => a === 'GetItem' || a === 'BatchGetItem' || a === 'Query');
        const ifExists = {
          ...(grant.attributes && reads ? { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } : {}),
          ...(grant.returnValues ? { 'dynamodb:ReturnValues': [...grant.returnValues] } : {}),
        };
        const conditions = {
          ...(grant.partitionKeyPrefixes ? { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': grant.partitionKeyPrefixes.map((p) => `${p}*`) } } : {}),
          ...(grant.attributes ? { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...grant.attributes] } } : {}),
          ...(Object.keys(ifExists).length > 0 ? { StringEqualsIfExists: ifExists } : {}),
        };
        allow(
          grant.actions.map((a) => `dynamodb:${a}`),
          [table.tableArn],
          Object.keys(conditions).length > 0 ? conditions : undefined,
        );
        if (grant.indexes?.length) allow(['dynamodb:Query'], grant.indexes.map((index) => `${table.tableArn}/index/${index}`));
      }
    }
    if (access.sendTo.length) allow(['sqs:SendMessage'], access.sendTo.map((q) => this.jobQueues[q].queue.queueArn));

    const schedules = this.formatArn({ service: 'scheduler', resource: 'schedule', resourceName: `${this.scheduleGroup.ref}/*` });
    if (access.schedules?.create) {
      allow(['scheduler:CreateSchedule'], [schedules]);
      // The role a schedule runs with, handed to Scheduler only.
      allow(['iam:PassRole'], [this.schedulerRole.roleArn], { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } });
    }
    if (access.schedules?.delete) allow(['scheduler:DeleteSchedule'], [schedules]);
    if (access.schedules) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/<${this.logicalIdOf(this.scheduleGroup)}>/*]`,
        reason: 'One-time job wake-up schedules are named per job and attempt at run time; the wildcard stays inside the job schedule group.',
      });
    }

    if (access.callWebhookSecret) {
      allow(['secretsmanager:GetSecretValue'], [this.callWebhookSecret.secretArn]);
      fn.addEnvironment('CALL_WEBHOOK_SECRET_ARN', this.callWebhookSecret.secretArn);
    }
    if (access.webhookSecretsKey?.length) {
      // Only for an endpoint's secret: the encryption context must name an endpoint and its tenant, and
      // nothing else (functions/webhooks/secrets.ts), so the grant cannot encrypt or decrypt anything else.
      allow(
        access.webhookSecretsKey.map((use) => (use === 'encrypt' ? 'kms:Encrypt' : 'kms:Decrypt')),
        [this.webhookSecretsKey.keyArn],
        {
          'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': [...SECRET_CONTEXT_KEYS] },
          StringLike: { 'kms:EncryptionContext:endpointId': 'ep_*', 'kms:EncryptionContext:tenantId': '*' },
        },
      );
      fn.addEnvironment('WEBHOOK_SECRETS_KEY_ARN', this.webhookSecretsKey.keyArn);
    }
    if (access.calendarCredentialsKey?.length) {
      // Only for a calendar's credentials: the encryption context must name a calendar and its tenant, and
      // nothing else (functions/calendar/credentials.ts), so the grant opens no endpoint's secret.
      allow(
        access.calendarCredentialsKey.map((use) => (use === 'encrypt' ? 'kms:Encrypt' : 'kms:Decrypt')),
        [this.webhookSecretsKey.keyArn],
        {
          'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': [...CALENDAR_CONTEXT_KEYS] },
          StringLike: { 'kms:EncryptionContext:calendarId': '*', 'kms:EncryptionContext:tenantId': '*' },
        },
      );
      fn.addEnvironment('WEBHOOK_SECRETS_KEY_ARN', this.webhookSecretsKey.keyArn);
    }
    if (access.uploads?.length) {
      allow(access.uploads.map((use) => (use === 'put' ? 's3:PutObject' : 's3:GetObject')), [this.uploadsBucket.arnForObjects('*')]);
      fn.addEnvironment('UPLOADS_BUCKET', this.uploadsBucket.bucketName);
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${this.logicalIdOf(this.uploadsBucket)}.Arn>/*]`,
        reason: 'Upload object keys are made per upload at run time (`<tenantId>/<id>.csv`); the wildcard stays inside the uploads bucket.',
      });
    }
    if (access.sendMail) {
      // SES API v2's SendEmail (functions/mail/transport.ts), raw content included, is `ses:SendEmail`
      // (`ses:SendRawEmail` is API v1's, which redial does not call; CDK's grantSendEmail grants both).
      allow(['ses:SendEmail'], [this.formatArn({ service: 'ses', resource: 'identity', resourceName: this.mail.sesIdentity ?? this.mail.domain })]);
      if (this.mail.configurationSet) {
        allow(['ses:SendEmail'], [this.formatArn({ service: 'ses', resource: 'configuration-set', resourceName: this.mail.configurationSet })]);
      }
    }
  }

  /** The logical id of a construct's CloudFormation resource, as cdk-nag names it in a finding. */
  private logicalIdOf(construct: Construct): string {
    return this.getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
  }

  /**
   * The HTTP API: every route behind IAM goes to the API function, each {@link PUBLIC_ROUTES} entry to its
   * own function without auth, each {@link TENANT_ROUTES} entry to the tenant API function, which checks its
   * API key. The stage limits requests per route (default: the API's limit; the public
   * routes: their function's), and logs every request.
   */
  private httpApi(logRetention: logs.RetentionDays, throttling: ApiThrottling): { api: apigw.HttpApi; stage: apigw.HttpStage } {
    const api = new apigw.HttpApi(this, 'HttpApi', { description: 'redial ops and tenant API', createDefaultStage: false });
    const accessLogs = new logs.LogGroup(this, 'HttpApiAccessLogs', { retention: logRetention });
    // HTTP APIs have no X-Ray tracing (REST APIs only); each function's active tracing starts the trace.
    const stage = api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: throttling.api,
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
    const integrations: Record<HttpFunction, HttpLambdaIntegration> = {
      api: new HttpLambdaIntegration('ApiIntegration', this.apiFunction),
      tenantApi: new HttpLambdaIntegration('TenantApiIntegration', this.tenantApiFunction),
      intake: new HttpLambdaIntegration('IntakeIntegration', this.intakeFunction),
      calendarTools: new HttpLambdaIntegration('CalendarToolsIntegration', this.calendarToolsFunction),
      publicLinks: new HttpLambdaIntegration('PublicLinksIntegration', this.publicLinksFunction),
    };
    api.addRoutes({ path: '/{proxy+}', methods: [apigw.HttpMethod.ANY], integration: integrations.api, authorizer: new HttpIamAuthorizer() });
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of PUBLIC_ROUTES) {
      const added = api.addRoutes({ path: route.path, methods: [apigw.HttpMethod[route.method]], integration: integrations[route.servedBy], authorizer: new apigw.HttpNoneAuthorizer() });
      for (const r of added) {
        Validations.of(r).acknowledge({ id: 'AwsSolutions-APIG4', reason: `Public by design: ${route.reason}` });
        // A stage's route settings name existing routes: CloudFormation must create the route first.
        stage.node.addDependency(r);
      }
      const limit = throttling[route.servedBy];
      routeSettings[`${route.method} ${route.path}`] = { ThrottlingRateLimit: limit.rateLimit, ThrottlingBurstLimit: limit.burstLimit };
    }
    for (const route of TENANT_ROUTES) {
      const added = api.addRoutes({ path: route.path, methods: [apigw.HttpMethod[route.method]], integration: integrations.tenantApi, authorizer: new apigw.HttpNoneAuthorizer() });
      for (const r of added) {
        Validations.of(r).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: 'A tenant route: the tenant API function authenticates every request by its API key (Authorization: Bearer, checked against its stored hash before anything runs: 401 otherwise) and acts for that key’s tenant alone.',
        });
        stage.node.addDependency(r);
      }
      routeSettings[`${route.method} ${route.path}`] = { ThrottlingRateLimit: throttling.tenantApi.rateLimit, ThrottlingBurstLimit: throttling.tenantApi.burstLimit };
    }
    (stage.node.defaultChild as apigw.CfnStage).routeSettings = routeSettings;
    return { api, stage };
  }
}

/** The stack cannot be deployed as configured; the message names each problem. */
export class StackConfigurationError extends Error {
  override readonly name = 'StackConfigurationError';
}

/**
 * Refuses, at synth, a configuration the functions would refuse at every cold start: no https placer, a
 * mail domain or From that functions/mail/config.ts would not parse, a call timeout out of range.
 */
function checkedConfiguration(props: RedialStackProps): { callPlacerUrl: string; mail: RedialMailProps } {
  const problems: string[] = [];
  let placer: URL | undefined;
  try {
    placer = new URL(props.callPlacerUrl);
  } catch {
    problems.push(`callPlacerUrl must be an https URL, got ${JSON.stringify(props.callPlacerUrl)}`);
  }
  if (placer && placer.protocol !== 'https:') problems.push(`callPlacerUrl must be https, got ${props.callPlacerUrl}`);
  const domain = mailEnv.shape.MAIL_DOMAIN.safeParse(props.mail?.domain);
  if (!domain.success) problems.push(`mail domain ${JSON.stringify(props.mail?.domain)}: ${domain.error.issues[0]?.message ?? 'invalid'}`);
  if (props.mail?.from !== undefined && !mailEnv.shape.MAIL_FROM.safeParse(props.mail.from).success) problems.push(`mail from ${JSON.stringify(props.mail.from)} is not a From header`);
  if (props.discardedRetentionDays !== undefined && (!Number.isInteger(props.discardedRetentionDays) || props.discardedRetentionDays < 1 || props.discardedRetentionDays > 365)) {
    problems.push(`discardedRetentionDays must be a whole number of days from 1 to 365, got ${props.discardedRetentionDays}`);
  }
  if (props.callTimeoutSeconds !== undefined && !callsEnv.shape.CALL_TIMEOUT_SECONDS.safeParse(props.callTimeoutSeconds).success) {
    problems.push(`callTimeoutSeconds must be a whole number of seconds from 10 to 86400, got ${props.callTimeoutSeconds}`);
  }
  for (const [name, settings] of Object.entries(props.queues ?? {})) {
    const { batchSize, maxConcurrency } = settings ?? {};
    if (batchSize !== undefined && !(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= 10)) problems.push(`queues.${name}.batchSize must be a whole number from 1 to 10, got ${batchSize}`);
    if (maxConcurrency !== undefined && !(Number.isInteger(maxConcurrency) && maxConcurrency >= 2 && maxConcurrency <= 1000)) {
      problems.push(`queues.${name}.maxConcurrency must be a whole number from 2 to 1000, got ${maxConcurrency}`);
    }
  }
  if (problems.length > 0) throw new StackConfigurationError(`redial cannot be deployed as configured:\n  - ${problems.join('\n  - ')}`);
  return { callPlacerUrl: placer!.toString(), mail: props.mail };
}

/** `ops` → `Ops`, `publicLinks` → `PublicLinks`: construct ids from logical names. */
const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);
