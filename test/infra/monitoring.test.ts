import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { CALL_RESULT_METRIC } from '../../functions/calls/metrics.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { queueNames } from '../../functions/app/system.ts';
import { RESCUED_METRIC, RESCUER_BEHIND_METRIC, RESCUER_REPORT_MESSAGE } from '../../functions/ops/rescuer-report.ts';
import { tables } from '../../functions/app/system.ts';
import type { TableKey } from '../../functions/app/system.ts';
import { DELIVERY_METRIC } from '../../functions/webhooks/delivery.ts';
import { RESCUER_ERRORS_METRIC, RUNBOOK, RunbookSection } from '../../lib/constructs/monitoring.ts';
import { root, synth } from './synth.ts';
import type { Resource, Statement } from './synth.ts';

interface AlarmMetric {
  Id: string;
  Expression?: string;
  Period?: number;
  ReturnData?: boolean;
  MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] }; Stat: string; Period: number };
}

let s: ReturnType<typeof synth>;
let alarms: [string, Resource][];

beforeAll(() => {
  s = synth({ alarmEmail: 'oncall@example.org' });
  alarms = s.ofType('AWS::CloudWatch::Alarm');
});

const topicRef = () => ({ Ref: s.idOf(s.stack.monitoring.topic) });
/** The alarms watching `metricName` in `namespace` (a single-metric alarm, or one metric of a math alarm). */
const alarmsOn = (namespace: string, metricName: string): [string, Resource][] =>
  alarms.filter(([, a]) => {
    if (a.Properties['Namespace'] === namespace && a.Properties['MetricName'] === metricName) return true;
    return ((a.Properties['Metrics'] as AlarmMetric[] | undefined) ?? []).some((m) => m.MetricStat?.Metric.Namespace === namespace && m.MetricStat.Metric.MetricName === metricName);
  });
const dimensionsOf = (alarm: Resource): Record<string, unknown> =>
  Object.fromEntries(((alarm.Properties['Dimensions'] as { Name: string; Value: unknown }[] | undefined) ?? []).map((d) => [d.Name, d.Value]));

/** GitHub's anchors for the headings of a Markdown file. */
function anchorsOf(markdown: string): Map<string, string> {
  const sections = new Map<string, string>();
  const parts = markdown.split(/^(#{2,4} .+)$/m);
  for (let i = 1; i < parts.length; i += 2) {
    const anchor = parts[i]!.replace(/^#+ /, '').trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
    sections.set(anchor, parts[i + 1] ?? '');
  }
  return sections;
}

describe('alarms', () => {
  it('all notify the alarm topic, which the configured address subscribes to', () => {
    expect(alarms.length).toBeGreaterThan(0);
    for (const [id, alarm] of alarms) expect(alarm.Properties['AlarmActions'], id).toEqual([topicRef()]);
    s.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.org', TopicArn: topicRef() });
  });

  it('each name a section of the on-call runbook that says what it means, what to look at and what to do', () => {
    const sections = anchorsOf(readFileSync(join(root, RUNBOOK), 'utf8'));
    const named = new Set<string>();
    for (const [id, alarm] of alarms) {
      const match = new RegExp(`Runbook: ${RUNBOOK.replace('.', '\\.')}#([a-z0-9-]+)$`).exec(alarm.Properties['AlarmDescription'] as string);
      expect(match, id).not.toBeNull();
      const section = sections.get(match![1]!);
      expect(section, `${id}: no section #${match![1]} in ${RUNBOOK}`).toBeDefined();
      for (const part of ['**What it means**', '**Look at**', '**Do**']) expect(section, `${id} #${match![1]}`).toContain(part);
      named.add(match![1]!);
    }
    expect([...named].sort()).toEqual(Object.values(RunbookSection).sort());
  });

  it('tell how to find and retry what was discarded', () => {
    const section = anchorsOf(readFileSync(join(root, RUNBOOK), 'utf8')).get(RunbookSection.jobDiscarded)!;
    expect(section).toContain('npm run ops -- jobs list --state discarded');
    expect(section).toContain('npm run ops -- jobs retry');
    expect(section).toContain('/redeliver');
  });

  it('watch every function for errors and throttles', () => {
    const functionIds = s.ofType('AWS::Lambda::Function').map(([id]) => id);
    for (const metric of ['Errors', 'Throttles']) {
      const watched = alarmsOn('AWS/Lambda', metric).map(([, a]) => (dimensionsOf(a)['FunctionName'] as { Ref: string }).Ref);
      expect(watched.sort(), metric).toEqual(functionIds.sort());
      for (const [id, a] of alarmsOn('AWS/Lambda', metric)) expect([a.Properties['Threshold'], a.Properties['Statistic'], a.Properties['Period']], id).toEqual([1, 'Sum', 300]);
    }
  });

  it('watch the age of the oldest message of every queue, above what a delayed wake-up and one redelivery explain', () => {
    const watched = alarmsOn('AWS/SQS', 'ApproximateAgeOfOldestMessage');
    expect(watched.map(([, a]) => (dimensionsOf(a)['QueueName'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]).sort()).toEqual(
      queueNames.map((n) => s.idOf(s.stack.jobQueues[n].queue)).sort(),
    );
    for (const [id, a] of watched) {
      // 15 minutes of SQS delay + 6 × 60 s of visibility + 5 minutes, three 5-minute periods running.
      expect(a.Properties, id).toMatchObject({ Threshold: 1560, Statistic: 'Maximum', EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    }
  });

  it('watch DynamoDB throttling of every table and of each of its indexes', () => {
    for (const [key, definition] of Object.entries(tables)) {
      const tableRef = { Ref: s.idOf(s.stack.tables[key as TableKey]) };
      const alarm = alarms.find(([, a]) => ((a.Properties['Metrics'] as AlarmMetric[] | undefined) ?? []).some((m) => JSON.stringify(m.MetricStat?.Metric.Dimensions) === JSON.stringify([{ Name: 'TableName', Value: tableRef }])));
      expect(alarm, key).toBeDefined();
      const metrics = (alarm![1].Properties['Metrics'] as AlarmMetric[]).filter((m) => m.MetricStat);
      const watched = metrics.map((m) => {
        const dims = Object.fromEntries((m.MetricStat!.Metric.Dimensions ?? []).map((d) => [d.Name, d.Value]));
        return `${m.MetricStat!.Metric.MetricName} ${(dims['GlobalSecondaryIndexName'] as string | undefined) ?? 'table'}`;
      });
      const expected = ['table', ...definition.indexes.map((i) => i.name)].flatMap((on) => [`ReadThrottleEvents ${on}`, `WriteThrottleEvents ${on}`]);
      expect(watched.sort(), key).toEqual(expected.sort());
      expect((alarm![1].Properties['Metrics'] as AlarmMetric[]).find((m) => m.ReturnData !== false)?.Expression, key).toBe('SUM(METRICS())');
    }
  });

  it('watch the share of API requests that fail with 5xx', () => {
    const [[, alarm]] = alarmsOn('AWS/ApiGateway', '5xx') as [[string, Resource]];
    const metrics = alarm.Properties['Metrics'] as AlarmMetric[];
    expect(metrics.find((m) => m.ReturnData !== false)?.Expression).toBe('IF(errors >= 5, 100 * errors / requests, 0)');
    expect(metrics.map((m) => m.MetricStat?.Metric.MetricName).filter(Boolean).sort()).toEqual(['5xx', 'Count']);
    expect(alarm.Properties['Threshold']).toBe(1);
  });

  it('watch the job wake-up schedule group for target errors and dropped invocations', () => {
    for (const metric of ['TargetErrorCount', 'InvocationDroppedCount']) {
      const watched = alarmsOn('AWS/Scheduler', metric);
      expect(watched.length, metric).toBe(1);
      expect(dimensionsOf(watched[0]![1]), metric).toEqual({ ScheduleGroup: { Ref: s.idOf(s.stack.scheduleGroup) } });
    }
  });

  it('notice a rescuer that stops running (missing data is an alarm) or logs errors', () => {
    const [[, notRunning]] = alarmsOn('AWS/Lambda', 'Invocations') as [[string, Resource]];
    expect(dimensionsOf(notRunning)).toEqual({ FunctionName: { Ref: s.idOf(s.stack.rescuerFunction) } });
    expect(notRunning.Properties).toMatchObject({ Threshold: 3, ComparisonOperator: 'LessThanThreshold', TreatMissingData: 'breaching' });

    const rescuerLogs = (s.resources[s.idOf(s.stack.rescuerFunction)]!.Properties['LoggingConfig'] as { LogGroup: { Ref: string } }).LogGroup.Ref;
    s.template.hasResourceProperties('AWS::Logs::MetricFilter', {
      LogGroupName: { Ref: rescuerLogs },
      FilterPattern: '{ $.level = "ERROR" }',
      MetricTransformations: [Match.objectLike({ MetricName: RESCUER_ERRORS_METRIC, MetricNamespace: 'Redial', MetricValue: '1' })],
    });
    expect(alarmsOn('Redial', RESCUER_ERRORS_METRIC).length).toBe(1);
  });

  it('fire when the rescuer has been behind for three periods running, across every function that reports it', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [Match.objectLike({ Expression: `SELECT SUM(${RESCUER_BEHIND_METRIC}) FROM "Redial"`, Period: 300, ReturnData: true })],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topicRef()],
    });
  });

  it('keep the discard alarm: one alerting discard in five minutes, across every function', () => {
    s.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: [Match.objectLike({ Expression: `SELECT SUM(${DISCARD_ALERT_METRIC}) FROM "Redial"`, Period: 300, ReturnData: true })],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topicRef()],
    });
  });
});

describe('alarm topic', () => {
  it('is encrypted with a key CloudWatch may use only for alarms of this account and region', () => {
    const topic = s.resources[s.idOf(s.stack.monitoring.topic)]!;
    const keyId = (topic.Properties['KmsMasterKeyId'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const statements = ((s.resources[keyId]!.Properties['KeyPolicy'] as { Statement: Statement[] }).Statement).filter((st) => JSON.stringify(st.Principal).includes('amazonaws.com'));
    expect(statements.length).toBeGreaterThan(0);
    for (const statement of statements) {
      expect(statement.Principal).toEqual({ Service: 'cloudwatch.amazonaws.com' });
      expect(statement.Condition).toEqual({
        StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
        ArnLike: { 'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':alarm:*']] } },
      });
    }
  });

  it('takes publications from those alarms only, over TLS only', () => {
    s.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [topicRef()],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Allow', Action: 'sns:Publish', Principal: { Service: 'cloudwatch.amazonaws.com' }, Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }) }),
        ]),
      },
    });
  });
});

describe('dashboard', () => {
  let body: string;
  beforeAll(() => {
    const [[, dashboard]] = s.ofType('AWS::CloudWatch::Dashboard') as [[string, Resource]];
    body = JSON.stringify(dashboard.Properties['DashboardBody']);
  });

  it('shows call results applied and ignored per minute, deliveries by outcome, and discards by kind and reason', () => {
    expect(body).toContain(`SELECT SUM(${CALL_RESULT_METRIC}) FROM \\\\\\"Redial\\\\\\" GROUP BY outcome`);
    expect(body).toContain(`SELECT SUM(${DELIVERY_METRIC}) FROM \\\\\\"Redial\\\\\\" GROUP BY result`);
    expect(body).toContain(`SELECT SUM(${DISCARD_METRIC}) FROM \\\\\\"Redial\\\\\\" GROUP BY kind, reason`);
  });

  it('shows queue age, Lambda and DynamoDB throttles, and the rescuer’s activity and reports', () => {
    for (const metric of ['ApproximateAgeOfOldestMessage', 'Throttles', 'ReadThrottleEvents', 'WriteThrottleEvents', 'GlobalSecondaryIndexName']) expect(body, metric).toContain(metric);
    expect(body).toContain(`SELECT SUM(${RESCUED_METRIC}) FROM \\\\\\"Redial\\\\\\" GROUP BY action`);
    expect(body).toContain(`filter message = \\\\\\"${RESCUER_REPORT_MESSAGE}\\\\\\"`);
  });
});
