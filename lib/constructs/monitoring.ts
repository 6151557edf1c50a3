import { Aws, Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { MAX_SQS_DELAY_SECONDS } from '../../functions/jobs/dispatch.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { METRICS_NAMESPACE } from '../../functions/platform/metrics.ts';
import { DELIVERY_METRIC } from '../../functions/webhooks/delivery.ts';
import { CALL_RESULT_METRIC } from '../../functions/calls/metrics.ts';
import { RESCUED_METRIC, RESCUER_BEHIND_METRIC, RESCUER_REPORT_MESSAGE } from '../../functions/ops/rescuer-report.ts';
import { VISIBILITY_TIMEOUT_FACTOR } from './job-queue.ts';

/** The runbook every alarm points to; each alarm's description names its section. */
export const RUNBOOK = 'docs/operations.md';

/** The runbook sections, one per kind of alarm (anchors of docs/operations.md). */
export const RunbookSection = {
  jobDiscarded: 'job-discarded',
  lambdaErrors: 'lambda-errors',
  lambdaThrottles: 'lambda-throttles',
  queueAge: 'queue-age',
  dynamodbThrottles: 'dynamodb-throttles',
  api5xx: 'api-5xx',
  schedulerTargetErrors: 'scheduler-target-errors',
  schedulerDropped: 'scheduler-dropped',
  rescuerNotRunning: 'rescuer-not-running',
  rescuerErrors: 'rescuer-errors',
  rescuerBehind: 'rescuer-behind',
} as const;
export type RunbookSection = (typeof RunbookSection)[keyof typeof RunbookSection];

/** The metric the rescuer's ERROR log lines become (a metric filter on its log group). */
export const RESCUER_ERRORS_METRIC = 'RescuerErrorsLogged';

/** A job queue and the worker timeout that sets its visibility. */
export interface MonitoredQueue {
  readonly queue: sqs.IQueue;
  readonly workerTimeoutSeconds: number;
}

/** A table and the names of its secondary indexes (each has throttle metrics of its own). */
export interface MonitoredTable {
  readonly table: dynamodb.ITableV2;
  readonly indexes: readonly string[];
}

/** Properties of {@link Monitoring}. */
export interface MonitoringProps {
  /** Every function, by a short name used in alarm and widget labels. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  readonly queues: Readonly<Record<string, MonitoredQueue>>;
  readonly tables: Readonly<Record<string, MonitoredTable>>;
  readonly api: apigw.IHttpApi;
  /** The job wake-up schedule group (Scheduler's metrics are per group). */
  readonly scheduleGroupName: string;
  /** The rescuer and its log group (its report and errors are read from the logs). */
  readonly rescuer: { readonly fn: lambda.IFunction; readonly logGroup: logs.ILogGroup };
  /** An address subscribed to the alarm topic. @default - no subscription */
  readonly alarmEmail?: string;
}

/**
 * What an on-call engineer watches: an alarm per failure signal (each pointing at its runbook section in
 * docs/operations.md), all to one encrypted SNS topic, and a dashboard of the figures behind them.
 *
 * | alarm | fires when (5-minute periods) |
 * |---|---|
 * | JobDiscarded | a job was discarded with an alert (attempts ran out) |
 * | <fn>Errors | a function failed an invocation (crash, timeout, failed cold start) |
 * | <fn>Throttles | Lambda refused to run a function |
 * | <queue>QueueAge | the oldest message waited longer than a delayed wake-up plus one redelivery, 3 periods running |
 * | <table>Throttles | DynamoDB throttled the table or one of its indexes in 2 of 3 periods |
 * | Api5xx | ≥ 1 % of API requests failed with 5xx (and at least 5 did) |
 * | SchedulerTargetErrors / SchedulerDropped | a job wake-up schedule could not send, or gave up |
 * | RescuerNotRunning | fewer than 3 rescuer passes in 5 minutes (missing data breaches) |
 * | RescuerLoggedErrors | the rescuer logged an error (a write or a send it could not make) |
 * | RescuerBehind | every rescuer pass for 15 minutes ended with a backlog left for the next |
 */
export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  /** Every alarm, by construct id. */
  readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  readonly dashboard: cloudwatch.Dashboard;

  private readonly alarmsById: Record<string, cloudwatch.Alarm> = {};

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.topic = this.alarmTopic(props.alarmEmail);
    this.alarms = this.alarmsById;

    const fiveMinutes = Duration.minutes(5);
    const sum = (metric: cloudwatch.Metric) => metric.with({ statistic: cloudwatch.Stats.SUM, period: fiveMinutes });

    this.alarm('JobDiscarded', RunbookSection.jobDiscarded, 'A job was discarded with an alert: its attempts ran out.', {
      // Powertools adds a `service` dimension to every metric, and each function has its own service name;
      // a Metrics Insights query sums the metric over all of them, so a new worker needs no new alarm.
      metric: insights(`SELECT SUM(${DISCARD_ALERT_METRIC}) FROM "${METRICS_NAMESPACE}"`, DISCARD_ALERT_METRIC, fiveMinutes),
      threshold: 1,
    });

    for (const [name, fn] of Object.entries(props.functions)) {
      this.alarm(`${pascal(name)}Errors`, RunbookSection.lambdaErrors, `The ${name} function failed an invocation (an uncaught error, a timeout or a failed cold start).`, {
        metric: sum(fn.metricErrors()),
        threshold: 1,
      });
      this.alarm(`${pascal(name)}Throttles`, RunbookSection.lambdaThrottles, `Lambda throttled the ${name} function (its reserved or the account's concurrency ran out).`, {
        metric: sum(fn.metricThrottles()),
        threshold: 1,
      });
    }

    for (const [name, { queue, workerTimeoutSeconds }] of Object.entries(props.queues)) {
      // A message may wait out its SQS delay (up to 15 minutes) and, once, a visibility timeout after a
      // worker could not record an outcome. Older than both plus 5 minutes, three periods running: the
      // worker is not taking messages.
      const thresholdSeconds = MAX_SQS_DELAY_SECONDS + VISIBILITY_TIMEOUT_FACTOR * workerTimeoutSeconds + 300;
      this.alarm(`${pascal(name)}QueueAge`, RunbookSection.queueAge, `The ${name} queue's oldest message is older than ${thresholdSeconds} s: its worker is not taking messages.`, {
        metric: queue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, period: fiveMinutes }),
        threshold: thresholdSeconds,
        evaluationPeriods: 3,
        datapointsToAlarm: 3,
      });
    }

    for (const [name, { table, indexes }] of Object.entries(props.tables)) {
      this.alarm(`${pascal(name)}TableThrottles`, RunbookSection.dynamodbThrottles, `DynamoDB throttled the ${name} table or one of its indexes (${indexes.join(', ') || 'none'}).`, {
        metric: new cloudwatch.MathExpression({
          expression: 'SUM(METRICS())',
          label: `${name} throttle events`,
          period: fiveMinutes,
          usingMetrics: throttleMetrics(name, table, indexes, fiveMinutes),
        }),
        threshold: 1,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      });
    }

    this.alarm('Api5xx', RunbookSection.api5xx, 'At least 1 % of HTTP API requests (and at least 5) failed with a 5xx.', {
      metric: new cloudwatch.MathExpression({
        expression: 'IF(errors >= 5, 100 * errors / requests, 0)',
        label: '5xx %',
        period: fiveMinutes,
        usingMetrics: { errors: sum(props.api.metricServerError()), requests: sum(props.api.metricCount()) },
      }),
      threshold: 1,
    });

    const schedulerMetric = (metricName: string) =>
      new cloudwatch.Metric({ namespace: 'AWS/Scheduler', metricName, dimensionsMap: { ScheduleGroup: props.scheduleGroupName }, statistic: cloudwatch.Stats.SUM, period: fiveMinutes });
    this.alarm('SchedulerTargetErrors', RunbookSection.schedulerTargetErrors, 'A job wake-up schedule failed to send its message to a job queue.', {
      metric: schedulerMetric('TargetErrorCount'),
      threshold: 1,
    });
    this.alarm('SchedulerDropped', RunbookSection.schedulerDropped, 'Scheduler gave up on a job wake-up (dropped the invocation).', {
      metric: schedulerMetric('InvocationDroppedCount'),
      threshold: 1,
    });

    this.alarm('RescuerNotRunning', RunbookSection.rescuerNotRunning, 'The rescuer ran fewer than 3 times in 5 minutes (it should run every minute).', {
      metric: sum(props.rescuer.fn.metricInvocations()),
      threshold: 3,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    const rescuerErrors = props.rescuer.logGroup.addMetricFilter('ErrorsLogged', {
      filterPattern: logs.FilterPattern.stringValue('$.level', '=', 'ERROR'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: RESCUER_ERRORS_METRIC,
      metricValue: '1',
      defaultValue: 0,
    });
    this.alarm('RescuerLoggedErrors', RunbookSection.rescuerErrors, 'The rescuer logged an error: a rescue write or a wake-up it could not make.', {
      metric: sum(rescuerErrors.metric()),
      threshold: 1,
    });

    this.alarm('RescuerBehind', RunbookSection.rescuerBehind, 'The rescuer ended its passes with work left for the next one for 15 minutes: it is not catching up.', {
      // One pass left behind is a crash wave being worked off (each pass goes on from the last one's
      // watermark); three 5-minute periods running means it is falling behind.
      metric: insights(`SELECT SUM(${RESCUER_BEHIND_METRIC}) FROM "${METRICS_NAMESPACE}"`, RESCUER_BEHIND_METRIC, fiveMinutes),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
    });

    this.dashboard = this.buildDashboard(props, sum);
  }

  /** An alarm to the topic whose description ends with its runbook section. */
  private alarm(
    id: string,
    section: RunbookSection,
    what: string,
    options: Pick<cloudwatch.AlarmProps, 'metric' | 'threshold'> & Partial<Pick<cloudwatch.AlarmProps, 'evaluationPeriods' | 'datapointsToAlarm' | 'comparisonOperator' | 'treatMissingData'>>,
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmDescription: `${what} Runbook: ${RUNBOOK}#${section}`,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      ...options,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    this.alarmsById[id] = alarm;
    return alarm;
  }

  /**
   * The alarm topic, encrypted with a key of its own: CloudWatch cannot publish to a topic under the
   * AWS-managed SNS key. CloudWatch may use the key only for alarms of this account and region.
   */
  private alarmTopic(alarmEmail: string | undefined): sns.Topic {
    // It encrypts nothing that outlives the stack (alarm messages in flight), so it goes with the stack.
    const key = new kms.Key(this, 'TopicKey', {
      description: 'Encrypts the redial alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    const fromOurAlarms = {
      StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
      ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*` },
    };
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromOurAlarms,
      }),
    );
    const topic = new sns.Topic(this, 'Topic', { displayName: 'redial alarms', enforceSSL: true, masterKey: key });
    if (alarmEmail) topic.addSubscription(new EmailSubscription(alarmEmail));
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromOurAlarms,
      }),
    );
    return topic;
  }

  /** The figures an operator watches, a row per question. */
  private buildDashboard(props: MonitoringProps, sum: (metric: cloudwatch.Metric) => cloudwatch.Metric): cloudwatch.Dashboard {
    const minute = Duration.minutes(1);
    const perMinute = (query: string, label: string) => insights(query, label, minute);
    const graph = (title: string, left: cloudwatch.IMetric[], width = 12) => new cloudwatch.GraphWidget({ title, left, width, height: 6 });
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    const functions = Object.entries(props.functions);

    dashboard.addWidgets(
      graph('Call results per minute, by outcome (applied, ignored, unavailable)', [
        perMinute(`SELECT SUM(${CALL_RESULT_METRIC}) FROM "${METRICS_NAMESPACE}" GROUP BY outcome`, CALL_RESULT_METRIC),
      ]),
      graph('Webhook deliveries per minute, by outcome', [perMinute(`SELECT SUM(${DELIVERY_METRIC}) FROM "${METRICS_NAMESPACE}" GROUP BY result`, DELIVERY_METRIC)]),
    );
    dashboard.addWidgets(
      graph('Discards per minute, by kind and reason', [perMinute(`SELECT SUM(${DISCARD_METRIC}) FROM "${METRICS_NAMESPACE}" GROUP BY kind, reason`, DISCARD_METRIC)]),
      graph(
        'Age of the oldest message per queue (s)',
        Object.entries(props.queues).map(([name, { queue }]) => queue.metricApproximateAgeOfOldestMessage({ label: name, statistic: cloudwatch.Stats.MAXIMUM, period: minute })),
      ),
    );
    dashboard.addWidgets(
      graph(
        'Lambda throttles and errors',
        functions.flatMap(([name, fn]) => [fn.metricThrottles({ label: `${name} throttles`, period: minute }), fn.metricErrors({ label: `${name} errors`, period: minute })]),
      ),
      graph(
        'DynamoDB throttle events (tables and indexes)',
        Object.entries(props.tables).map(
          ([name, { table, indexes }]) =>
            new cloudwatch.MathExpression({ expression: 'SUM(METRICS())', label: name, period: minute, usingMetrics: throttleMetrics(name, table, indexes, minute) }),
        ),
      ),
    );
    dashboard.addWidgets(
      graph('Rescuer: jobs rescued per minute, by action', [
        perMinute(`SELECT SUM(${RESCUED_METRIC}) FROM "${METRICS_NAMESPACE}" GROUP BY action`, RESCUED_METRIC),
        props.rescuer.fn.metricInvocations({ label: 'passes', period: minute }),
      ]),
      new cloudwatch.LogQueryWidget({
        title: 'Rescuer reports that did something (latest first)',
        logGroupNames: [props.rescuer.logGroup.logGroupName],
        queryLines: [`fields @timestamp, expired, rewoken, periodic`, `filter message = "${RESCUER_REPORT_MESSAGE}" and (expired > 0 or rewoken > 0 or periodic > 0)`, 'sort @timestamp desc', 'limit 50'],
        width: 12,
        height: 6,
      }),
    );
    dashboard.addWidgets(
      graph('HTTP API: requests, 4xx and 5xx', [
        sum(props.api.metricCount({ label: 'requests' })),
        sum(props.api.metricClientError({ label: '4xx' })),
        sum(props.api.metricServerError({ label: '5xx' })),
      ]),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarmsById), width: 12, height: 6 }),
    );
    return dashboard;
  }
}

/** A Metrics Insights query as a metric (sums a metric over every dimension set, `service` included). */
function insights(expression: string, label: string, period: Duration): cloudwatch.MathExpression {
  return new cloudwatch.MathExpression({ expression, label, period, usingMetrics: {} });
}

/** Read and write throttle events of a table and of each of its indexes (index metrics are separate), with ids prefixed by `id`. */
function throttleMetrics(id: string, table: dynamodb.ITableV2, indexes: readonly string[], period: Duration): Record<string, cloudwatch.IMetric> {
  const metric = (metricName: string, index?: string) =>
    new cloudwatch.Metric({
      namespace: 'AWS/DynamoDB',
      metricName,
      dimensionsMap: { TableName: table.tableName, ...(index ? { GlobalSecondaryIndexName: index } : {}) },
      statistic: cloudwatch.Stats.SUM,
      period,
    });
  const metrics: Record<string, cloudwatch.IMetric> = { [`${id}_r`]: metric('ReadThrottleEvents'), [`${id}_w`]: metric('WriteThrottleEvents') };
  indexes.forEach((index, i) => {
    metrics[`${id}_i${i}_r`] = metric('ReadThrottleEvents', index);
    metrics[`${id}_i${i}_w`] = metric('WriteThrottleEvents', index);
  });
  return metrics;
}

/** `calls` → `Calls`, `publicLinks` → `PublicLinks`. */
const pascal = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);
