import type { StackProps } from 'aws-cdk-lib';
import type { RedialStackProps, Throttle } from './redial-stack.ts';
import { DEFAULT_DISCARDED_RETENTION_DAYS } from '../functions/jobs/index.ts';
import { queueNames } from '../functions/app/system.ts';
import type { QueueName } from '../functions/app/system.ts';
import type { QueueSettings } from './redial-stack.ts';
import { DEFAULT_INTAKE_RESERVED_CONCURRENCY, DEFAULT_QUEUE_SETTINGS, DEFAULT_THROTTLING, StackConfigurationError } from './redial-stack.ts';

/** Reads one CDK context value (`-c key=value` or cdk.json), as the CDK app's `node.tryGetContext`. */
export type ContextReader = (key: string) => unknown;

/**
 * The context keys `cdk deploy -c key=value` takes, with what they mean. The two required ones have no
 * default on purpose: a stack without a call placer or a mail domain would deploy, then fail every dial
 * or every mail for days.
 */
export const CONTEXT_KEYS = {
  callPlacerUrl: 'required: https URL of the call placer',
  mailDomain: 'required: the SES-verified domain mail is sent from (Message-ID right-hand side)',
  mailFrom: 'optional: the From header (default redial <no-reply@mailDomain>)',
  sesIdentity: 'optional: the SES identity the mail worker may send as (default mailDomain)',
  sesConfigurationSet: 'optional: an SES configuration set',
  publicBaseUrl: 'optional: where mailed links point (default the API URL)',
  alarmEmail: 'optional: an address subscribed to the alarm topic',
  callTimeoutSeconds: 'optional: watchdog timeout of a call (default 600)',
  discardedRetentionDays: `optional: days a discarded job stays listable and retryable before TTL removes it (default ${DEFAULT_DISCARDED_RETENTION_DAYS})`,
  intakeRateLimit: `optional: POST /v1/calls/webhook requests per second (default ${DEFAULT_THROTTLING.intake.rateLimit})`,
  intakeBurstLimit: `optional: its burst (default ${DEFAULT_THROTTLING.intake.burstLimit})`,
  toolsRateLimit: `optional: each calendar tool route (the agent's, during a call), per second (default ${DEFAULT_THROTTLING.calendarTools.rateLimit})`,
  toolsBurstLimit: `optional: their burst (default ${DEFAULT_THROTTLING.calendarTools.burstLimit})`,
  linksRateLimit: `optional: each mail-link route and /healthz, per second (default ${DEFAULT_THROTTLING.publicLinks.rateLimit})`,
  linksBurstLimit: `optional: their burst (default ${DEFAULT_THROTTLING.publicLinks.burstLimit})`,
  tenantRateLimit: `optional: each tenant route (API key), per second (default ${DEFAULT_THROTTLING.tenantApi.rateLimit})`,
  tenantBurstLimit: `optional: their burst (default ${DEFAULT_THROTTLING.tenantApi.burstLimit})`,
  apiRateLimit: `optional: each IAM route, per second (default ${DEFAULT_THROTTLING.api.rateLimit})`,
  apiBurstLimit: `optional: their burst (default ${DEFAULT_THROTTLING.api.burstLimit})`,
  intakeReservedConcurrency: `optional: concurrency reserved for the intake (default ${DEFAULT_INTAKE_RESERVED_CONCURRENCY})`,
  deletionProtection: 'optional: false for throw-away test stacks (tables unprotected and deleted with the stack; default true)',
  ...queueContextKeys(),
} as const;

/** `<queue>BatchSize` and `<queue>Concurrency` of every job queue, with their defaults (DEFAULT_QUEUE_SETTINGS). */
function queueContextKeys(): Record<`${QueueName}BatchSize` | `${QueueName}Concurrency`, string> {
  return Object.fromEntries(
    queueNames.flatMap((q) => [
      [`${q}BatchSize`, `optional: messages per ${q} worker invocation, 1–10 (default ${DEFAULT_QUEUE_SETTINGS[q].batchSize})`],
      [`${q}Concurrency`, `optional: ${q} worker invocations at once, 2–1000 (default ${DEFAULT_QUEUE_SETTINGS[q].maxConcurrency})`],
    ]),
  ) as Record<`${QueueName}BatchSize` | `${QueueName}Concurrency`, string>;
}

/**
 * The stack's properties from the CDK context. Missing required keys, numbers that are not numbers and
 * unknown flags fail synth with one message that names each problem and how to pass the value.
 *
 * @example
 * new RedialStack(app, 'Redial', stackPropsFromContext((key) => app.node.tryGetContext(key)));
 */
export function stackPropsFromContext(read: ContextReader): Omit<RedialStackProps, keyof StackProps> {
  const problems: string[] = [];
  const text = (key: keyof typeof CONTEXT_KEYS): string | undefined => {
    const value = read(key);
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') {
      problems.push(`${key} must be a string, got ${JSON.stringify(value)}`);
      return undefined;
    }
    return value;
  };
  const integer = (key: keyof typeof CONTEXT_KEYS, min: number): number | undefined => {
    const value = read(key);
    if (value === undefined || value === null || value === '') return undefined;
    const n = typeof value === 'number' ? value : Number(value);
    if (!Number.isInteger(n) || n < min) {
      problems.push(`${key} must be a whole number ≥ ${min}, got ${JSON.stringify(value)}`);
      return undefined;
    }
    return n;
  };
  const flag = (key: keyof typeof CONTEXT_KEYS): boolean | undefined => {
    const value = read(key);
    if (value === undefined || value === null || value === '') return undefined;
    if (value === true || value === 'true') return true;
    if (value === false || value === 'false') return false;
    problems.push(`${key} must be true or false, got ${JSON.stringify(value)}`);
    return undefined;
  };
  const throttle = (rateKey: keyof typeof CONTEXT_KEYS, burstKey: keyof typeof CONTEXT_KEYS, defaults: Throttle): Throttle => ({
    rateLimit: integer(rateKey, 1) ?? defaults.rateLimit,
    burstLimit: integer(burstKey, 1) ?? defaults.burstLimit,
  });

  const callPlacerUrl = text('callPlacerUrl');
  const mailDomain = text('mailDomain');
  if (!callPlacerUrl) problems.push(`callPlacerUrl is missing (${CONTEXT_KEYS.callPlacerUrl}): -c callPlacerUrl=https://placer.example.com/calls`);
  if (!mailDomain) problems.push(`mailDomain is missing (${CONTEXT_KEYS.mailDomain}): -c mailDomain=mail.example.org`);
  const mailFrom = text('mailFrom');
  const sesIdentity = text('sesIdentity');
  const configurationSet = text('sesConfigurationSet');
  const publicBaseUrl = text('publicBaseUrl');
  const alarmEmail = text('alarmEmail');
  const callTimeoutSeconds = integer('callTimeoutSeconds', 10);
  const discardedRetentionDays = integer('discardedRetentionDays', 1);
  const intakeReservedConcurrency = integer('intakeReservedConcurrency', 1);
  const deletionProtection = flag('deletionProtection');
  const throttling = {
    intake: throttle('intakeRateLimit', 'intakeBurstLimit', DEFAULT_THROTTLING.intake),
    calendarTools: throttle('toolsRateLimit', 'toolsBurstLimit', DEFAULT_THROTTLING.calendarTools),
    publicLinks: throttle('linksRateLimit', 'linksBurstLimit', DEFAULT_THROTTLING.publicLinks),
    tenantApi: throttle('tenantRateLimit', 'tenantBurstLimit', DEFAULT_THROTTLING.tenantApi),
    api: throttle('apiRateLimit', 'apiBurstLimit', DEFAULT_THROTTLING.api),
  };
  const queues = Object.fromEntries(
    queueNames.map((q): [QueueName, QueueSettings] => {
      const batchSize = integer(`${q}BatchSize`, 1) ?? DEFAULT_QUEUE_SETTINGS[q].batchSize;
      const maxConcurrency = integer(`${q}Concurrency`, 2) ?? DEFAULT_QUEUE_SETTINGS[q].maxConcurrency;
      if (batchSize > 10) problems.push(`${q}BatchSize must be at most 10 (an SQS event source's batch without a batching window), got ${batchSize}`);
      if (maxConcurrency > 1000) problems.push(`${q}Concurrency must be at most 1000 (an SQS event source's maximum concurrency), got ${maxConcurrency}`);
      return [q, { batchSize, maxConcurrency }];
    }),
  ) as Record<QueueName, QueueSettings>;
  if (problems.length > 0) {
    throw new StackConfigurationError(
      `redial cannot synthesize a deployable stack:\n  - ${problems.join('\n  - ')}\n` +
        'To check the template without real values (tests, CI): npm run synth (it passes placeholder values).',
    );
  }
  return {
    callPlacerUrl: callPlacerUrl!,
    mail: {
      domain: mailDomain!,
      ...(mailFrom ? { from: mailFrom } : {}),
      ...(sesIdentity ? { sesIdentity } : {}),
      ...(configurationSet ? { configurationSet } : {}),
      ...(publicBaseUrl ? { publicBaseUrl } : {}),
    },
    ...(alarmEmail ? { alarmEmail } : {}),
    ...(callTimeoutSeconds !== undefined ? { callTimeoutSeconds } : {}),
    ...(discardedRetentionDays !== undefined ? { discardedRetentionDays } : {}),
    ...(intakeReservedConcurrency !== undefined ? { intakeReservedConcurrency } : {}),
    ...(deletionProtection !== undefined ? { deletionProtection } : {}),
    throttling,
    queues,
  };
}
