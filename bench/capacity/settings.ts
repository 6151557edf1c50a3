import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { queueNames } from '../../functions/app/system.ts';
import type { HttpFunction, QueueName } from '../../functions/app/system.ts';
import { stackPropsFromContext } from '../../lib/context.ts';
import { DEFAULT_THROTTLING, RedialStack } from '../../lib/redial-stack.ts';

/** What the deployed stack gives each function and each queue's event source: what capacity is priced and sized from. */
export interface DeployedSettings {
  /** Memory per function: `intake`, `publicLinks`, `tenantApi`, `api`, `rescuer`, `worker:<queue>`. */
  memoryMb: Record<string, number>;
  /** Concurrency reserved for (and capping) a function, where one is set. */
  reservedConcurrency: Record<string, number>;
  /** Per queue, its worker's event source mapping: batch size and maximum concurrency. */
  queues: Record<QueueName, { batchSize: number; maxConcurrency: number; timeoutSeconds: number }>;
  /** API Gateway's request limit per HTTP function's routes, per second (steady rate and burst). */
  throttling?: Record<HttpFunction, { rateLimit: number; burstLimit: number }>;
  /** What the synthesized template holds that is billed by the month or by the byte it keeps (bill.ts). */
  template?: TemplateFacts;
}

/** Counted off the synthesized template: the resources CloudWatch, KMS and Secrets Manager bill by the month. */
export interface TemplateFacts {
  /** Every log group's retention, days (null: never expires). */
  logGroups: { id: string; retentionDays: number | null }[];
  /** CloudWatch alarms, and the metrics they evaluate (a metric-math alarm is billed per metric in its expression). */
  alarms: number;
  alarmMetrics: number;
  dashboards: number;
  /** Customer-managed KMS keys (each billed monthly) and Secrets Manager secrets. */
  kmsKeys: number;
  secrets: number;
  /** Lambda functions in the template (CDK's own custom-resource helpers included). */
  functions: number;
}

const root = join(import.meta.dirname, '..', '..');

/** The two values a deployable stack requires and a model does not care about (as `npm run synth` passes them). */
const PLACEHOLDERS: Record<string, string> = { callPlacerUrl: 'https://placer.example.invalid/calls', mailDomain: 'mail.example.invalid' };

/**
 * The settings as `cdk synth` would deploy them: the stack is built from lib/ with cdk.json's context read
 * as bin/app.ts reads it (no bundling), and each function's memory and reserved concurrency and each event
 * source's batch size and concurrency are read off the constructs. So the model follows lib/ (and the CDK
 * context lib/ reads them from) with no copy of its own.
 */
export function deployedSettings(): DeployedSettings {
  const { context } = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
  const props = stackPropsFromContext((key) => context[key] ?? PLACEHOLDERS[key]);
  const stack = new RedialStack(app, 'CapacityModel', props);
  const cfn = (fn: NodejsFunction) => fn.node.defaultChild as lambda.CfnFunction;
  const memory = (fn: NodejsFunction) => {
    const value = cfn(fn).memorySize;
    if (typeof value !== 'number') throw new Error(`${fn.node.path}: memory size is not a number in the synthesized stack`);
    return value;
  };
  const functions: Record<string, NodejsFunction> = {
    intake: stack.intakeFunction,
    publicLinks: stack.publicLinksFunction,
    tenantApi: stack.tenantApiFunction,
    api: stack.apiFunction,
    rescuer: stack.rescuerFunction,
    ...Object.fromEntries(queueNames.map((name) => [`worker:${name}`, stack.jobQueues[name].worker])),
  };
  const memoryMb: Record<string, number> = {};
  const reservedConcurrency: Record<string, number> = {};
  for (const [name, fn] of Object.entries(functions)) {
    memoryMb[name] = memory(fn);
    const reserved = cfn(fn).reservedConcurrentExecutions;
    if (typeof reserved === 'number') reservedConcurrency[name] = reserved;
  }
  const queues = {} as DeployedSettings['queues'];
  for (const name of queueNames) {
    const worker = stack.jobQueues[name].worker;
    // The queue's event source: wherever lib/ puts it, the one mapping whose target is this worker.
    const esm = stack.node
      .findAll()
      .filter((c): c is lambda.CfnEventSourceMapping => c instanceof lambda.CfnEventSourceMapping)
      .find((m) => m.functionName === worker.functionName);
    const scaling = esm?.scalingConfig as lambda.CfnEventSourceMapping.ScalingConfigProperty | undefined;
    const timeout = cfn(worker).timeout;
    if (!esm || typeof esm.batchSize !== 'number' || typeof scaling?.maximumConcurrency !== 'number' || typeof timeout !== 'number') {
      throw new Error(`the ${name} worker has no event source mapping with a batch size and a maximum concurrency`);
    }
    queues[name] = { batchSize: esm.batchSize, maxConcurrency: scaling.maximumConcurrency, timeoutSeconds: timeout };
  }
  return { memoryMb, reservedConcurrency, queues, throttling: { ...DEFAULT_THROTTLING, ...props.throttling }, template: templateFacts(Template.fromStack(stack).toJSON() as CfnTemplate) };
}

interface CfnTemplate {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

/** The billed-by-the-month resources of a synthesized template. */
export function templateFacts(template: CfnTemplate): TemplateFacts {
  const resources = Object.entries(template.Resources);
  const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);
  const alarms = ofType('AWS::CloudWatch::Alarm');
  // A metric-math alarm lists its metrics (and expressions) under Metrics; only the entries with a MetricStat are metrics.
  const metricsOf = (p: Record<string, unknown> | undefined) => {
    const list = p?.['Metrics'] as { MetricStat?: unknown }[] | undefined;
    return list ? list.filter((m) => m.MetricStat !== undefined).length : 1;
  };
  return {
    logGroups: ofType('AWS::Logs::LogGroup').map(([id, r]) => ({ id, retentionDays: typeof r.Properties?.['RetentionInDays'] === 'number' ? (r.Properties['RetentionInDays']) : null })),
    alarms: alarms.length,
    alarmMetrics: alarms.reduce((n, [, r]) => n + metricsOf(r.Properties), 0),
    dashboards: ofType('AWS::CloudWatch::Dashboard').length,
    kmsKeys: ofType('AWS::KMS::Key').length,
    secrets: ofType('AWS::SecretsManager::Secret').length,
    functions: ofType('AWS::Lambda::Function').length,
  };
}
