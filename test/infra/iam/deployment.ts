import { queueNames, tables } from '../../../functions/app/system.ts';
import type { QueueName, TableKey } from '../../../functions/app/system.ts';
import { BASE_PROPS, synth } from '../synth.ts';
import type { Resource, Statement } from '../synth.ts';

/**
 * The synthesized stack as AWS would see it once deployed: every CloudFormation value resolved to the
 * name or ARN it becomes (each resource's physical name is its logical id, in account 123456789012 and
 * eu-west-1), each function's role with the policies attached to it, and the resource policies that
 * take part in a decision (the queues' and the keys'). Requests name resources by what they are
 * (`table:jobs`, `queue:deliveries`, a logical id, or the value a function was given) and get ARNs here.
 */

export const ACCOUNT = '123456789012';
export const REGION = 'eu-west-1';
const PARTITION = 'aws';

/** An IAM policy document, as the template has it with every value resolved. */
export interface PolicyDocument {
  Version: string;
  Statement: ResolvedStatement[];
}

export interface ResolvedStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
  Principal?: unknown;
}

/** Something that makes requests under a role: a deployed function, or a role AWS itself assumes (Scheduler's). */
export interface Principal {
  /** As lib/redial-stack.ts names functions (`intake`, `dialWorker`, …); `schedulerRole`, `rescuerScheduleRole` for the others. */
  name: string;
  /** The role's logical id. */
  roleId: string;
  /** The session's ARN (`assumed-role/<role>/<session>`), as the request's principal. */
  arn: string;
  /** The policies attached to the role, each statement with a Sid naming its policy and position. */
  policies: { name: string; policy: PolicyDocument }[];
}

export interface DeployedFunction extends Principal {
  /** The function's logical id. */
  functionId: string;
  /** Its log group's ARN (`…:log-group:<name>:*`). */
  logGroupArn: string;
  /** The queue whose event source mapping invokes it (workers only). */
  queue?: QueueName;
}

/** What a resource reference is, once resolved. */
export interface ResolvedResource {
  arn: string;
  /** How people say it: `table:jobs`, `table:jobs/index/byCheck`, `queue:mail`, `key:webhookSecrets`. */
  label: string;
}

type Intrinsic = string | { Ref: string } | { 'Fn::GetAtt': [string, string] } | { 'Fn::Join': [string, Intrinsic[]] };

const arn = (service: string, resource: string, region = REGION, account = ACCOUNT) => `arn:${PARTITION}:${service}:${region}:${account}:${resource}`;

/** The value each resource's `Ref` and `Fn::GetAtt` become, by type (physical name = logical id). */
/** `attribute`: `Ref`, or a `Fn::GetAtt` attribute (`Arn`, `QueueUrl`, …). */
function attributeOf(resources: Record<string, Resource>, id: string, attribute: string): string {
  const resource = resources[id];
  if (!resource) throw new Error(`the template has no resource ${id}`);
  const by: Record<string, Record<string, () => string>> = {
    'AWS::DynamoDB::GlobalTable': { Ref: () => id, Arn: () => arn('dynamodb', `table/${id}`) },
    'AWS::SQS::Queue': { Ref: () => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${id}`, Arn: () => arn('sqs', id), QueueName: () => id, QueueUrl: () => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${id}` },
    'AWS::Logs::LogGroup': { Ref: () => `/aws/lambda/${id}`, Arn: () => arn('logs', `log-group:/aws/lambda/${id}:*`) },
    'AWS::IAM::Role': { Ref: () => id, Arn: () => `arn:${PARTITION}:iam::${ACCOUNT}:role/${id}` },
    'AWS::Scheduler::ScheduleGroup': { Ref: () => id, Arn: () => arn('scheduler', `schedule-group/${id}`) },
    'AWS::SecretsManager::Secret': { Ref: () => arn('secretsmanager', `secret:${id}-AbCdEf`) },
    'AWS::KMS::Key': { Ref: () => keyIdOf(id), Arn: () => arn('kms', `key/${keyIdOf(id)}`) },
    'AWS::Lambda::Function': { Ref: () => id, Arn: () => arn('lambda', `function:${id}`) },
    'AWS::SNS::Topic': { Ref: () => arn('sns', id), TopicName: () => id },
    // A bucket's name is global and lower case; its ARN names no region or account.
    'AWS::S3::Bucket': { Ref: () => id.toLowerCase(), Arn: () => `arn:${PARTITION}:s3:::${id.toLowerCase()}` },
  };
  const value = by[resource.Type]?.[attribute];
  if (!value) throw new Error(`no deployed value for ${attribute} of ${id} (${resource.Type}): add it to test/infra/iam/deployment.ts`);
  return value();
}

/** A key id of the right shape, stable per logical id. */
function keyIdOf(id: string): string {
  const hex = Buffer.from(id).toString('hex').padEnd(32, '0').slice(0, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function resolveWith(resources: Record<string, Resource>) {
  const pseudo: Record<string, string> = { 'AWS::Partition': PARTITION, 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT, 'AWS::URLSuffix': 'amazonaws.com' };
  const resolve = (value: unknown): unknown => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
    if (Array.isArray(value)) return value.map(resolve);
    const object = value as Record<string, unknown>;
    if ('Ref' in object) {
      const ref = object['Ref'] as string;
      return pseudo[ref] ?? attributeOf(resources, ref, 'Ref');
    }
    if ('Fn::GetAtt' in object) {
      const [id, attribute] = object['Fn::GetAtt'] as [string, string];
      return attributeOf(resources, id, attribute);
    }
    if ('Fn::Join' in object) {
      const [separator, parts] = object['Fn::Join'] as [string, Intrinsic[]];
      return parts.map((part) => resolve(part)).join(separator);
    }
    return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, resolve(inner)]));
  };
  return resolve;
}

export type Deployment = ReturnType<typeof deploy>;

/** The stack of BASE_PROPS (or `s`), deployed in the mind: see the file's comment. */
export function deploy(s: ReturnType<typeof synth> = synth()) {
  const { resources, stack } = s;
  const resolve = resolveWith(resources);
  const statementsOf = (roleId: string): { name: string; policy: PolicyDocument }[] =>
    s
      .ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties['Roles'] as { Ref: string }[]).some((r) => r.Ref === roleId))
      .map(([policyId, p]) => {
        const document = resolve(p.Properties['PolicyDocument']) as PolicyDocument;
        // Each statement named by its policy and position, so a decision can say which one allowed it.
        return { name: policyId, policy: { ...document, Statement: document.Statement.map((st, i) => ({ ...st, Sid: `${policyId.replace(/[^A-Za-z0-9]/g, '')}${i}` })) } };
      });
  const principal = (name: string, roleId: string, session: string): Principal => ({
    name,
    roleId,
    arn: `arn:${PARTITION}:sts::${ACCOUNT}:assumed-role/${roleId}/${session}`,
    policies: statementsOf(roleId),
  });

  const functions: Record<string, DeployedFunction> = {};
  for (const [name, fn] of Object.entries(stack.functions)) {
    const functionId = s.idOf(fn);
    const resource = resources[functionId]!;
    const logGroupId = (resource.Properties['LoggingConfig'] as { LogGroup: { Ref: string } }).LogGroup.Ref;
    const queue = queueNames.find((q) => stack.jobQueues[q].worker === fn);
    functions[name] = { ...principal(name, s.roleOf(resource), functionId), functionId, logGroupArn: attributeOf(resources, logGroupId, 'Arn'), ...(queue ? { queue } : {}) };
  }

  // The roles AWS assumes on redial's behalf: Scheduler sending job wake-ups, and invoking the rescuer.
  const rescuerTargetRole = s
    .ofType('AWS::Scheduler::Schedule')
    .map(([, schedule]) => (schedule.Properties['Target'] as { RoleArn: { 'Fn::GetAtt': [string, string] } }).RoleArn['Fn::GetAtt'][0])[0];
  if (!rescuerTargetRole) throw new Error('the template has no rescuer schedule');
  const services: Record<string, Principal> = {
    schedulerRole: principal('schedulerRole', s.idOf(stack.schedulerRole), 'scheduler'),
    rescuerScheduleRole: principal('rescuerScheduleRole', rescuerTargetRole, 'scheduler'),
  };

  // `<kind>:<name>` references, and the logical ids they stand for.
  const refs: Record<string, ResolvedResource> = {};
  const byLogicalId: Record<string, string> = {};
  const name = (ref: string, logicalId: string, value: string) => {
    refs[ref] = { arn: value, label: ref };
    byLogicalId[logicalId] = ref;
  };
  for (const key of Object.keys(tables) as TableKey[]) {
    const id = s.idOf(stack.tables[key]);
    name(`table:${key}`, id, attributeOf(resources, id, 'Arn'));
    for (const index of tables[key].indexes) refs[`table:${key}/index/${index.name}`] = { arn: `${attributeOf(resources, id, 'Arn')}/index/${index.name}`, label: `table:${key}/index/${index.name}` };
  }
  for (const queue of queueNames) {
    const id = s.idOf(stack.jobQueues[queue].queue);
    name(`queue:${queue}`, id, attributeOf(resources, id, 'Arn'));
  }
  name('secret:callWebhook', s.idOf(stack.callWebhookSecret), attributeOf(resources, s.idOf(stack.callWebhookSecret), 'Ref'));
  name('key:webhookSecrets', s.idOf(stack.webhookSecretsKey), attributeOf(resources, s.idOf(stack.webhookSecretsKey), 'Arn'));
  name('role:scheduler', s.idOf(stack.schedulerRole), attributeOf(resources, s.idOf(stack.schedulerRole), 'Arn'));
  const uploads = attributeOf(resources, s.idOf(stack.uploadsBucket), 'Arn');
  name('bucket:uploads', s.idOf(stack.uploadsBucket), uploads);
  refs['bucket:uploads/*'] = { arn: `${uploads}/*`, label: 'bucket:uploads/*' };
  name('scheduleGroup:jobs', s.idOf(stack.scheduleGroup), attributeOf(resources, s.idOf(stack.scheduleGroup), 'Arn'));
  // The stack of BASE_PROPS sends as its mail domain (test/infra/synth.ts).
  const mail = BASE_PROPS.mail;
  refs['identity:mail'] = { arn: arn('ses', `identity/${mail.sesIdentity ?? mail.domain}`), label: 'identity:mail' };
  for (const [fnName, fn] of Object.entries(functions)) {
    refs[`function:${fnName}`] = { arn: attributeOf(resources, fn.functionId, 'Arn'), label: `function:${fnName}` };
    refs[`logGroup:${fnName}`] = { arn: fn.logGroupArn, label: `logGroup:${fnName}` };
  }

  // Resource policies: each queue's (TLS only), each key's (its account's IAM policies decide).
  const resourcePolicies = new Map<string, PolicyDocument>();
  for (const [, policy] of s.ofType('AWS::SQS::QueuePolicy')) {
    for (const queue of policy.Properties['Queues'] as { Ref: string }[]) resourcePolicies.set(attributeOf(resources, queue.Ref, 'Arn'), resolve(policy.Properties['PolicyDocument']) as PolicyDocument);
  }
  for (const [id, key] of s.ofType('AWS::KMS::Key')) resourcePolicies.set(attributeOf(resources, id, 'Arn'), resolve(key.Properties['KeyPolicy']) as PolicyDocument);

  /** What a reference stands for: `<kind>:<name>`, a logical id, or a value the template resolves to (an ARN, a name, a URL). */
  const resource = (ref: string): ResolvedResource | undefined => {
    if (refs[ref]) return refs[ref];
    const named = byLogicalId[ref];
    if (named) return refs[named];
    const found = Object.entries(byLogicalId).find(([id]) => {
      const type = resources[id]!.Type;
      const attributes = type === 'AWS::SQS::Queue' ? ['Ref', 'Arn', 'QueueName'] : ['Ref', 'Arn'];
      return attributes.some((a) => {
        try {
          return attributeOf(resources, id, a) === ref;
        } catch {
          return false;
        }
      });
    });
    return found ? refs[found[1]] : undefined;
  };

  /** A schedule's ARN in a group (`schedule/<group name>/<name>`). */
  const scheduleArn = (group: ResolvedResource, scheduleName: string) => arn('scheduler', `schedule/${group.arn.split('/').pop()!}/${scheduleName}`);

  /** How people say a granted resource pattern: its reference's label, `schedule:jobs/*` for the schedule group's schedules. */
  const labelOf = (pattern: string): string => {
    if (pattern === '*') return '*';
    const known = Object.values(refs).find((r) => r.arn === pattern);
    if (known) return known.label;
    if (pattern === scheduleArn(refs['scheduleGroup:jobs']!, '*')) return 'schedule:jobs/*';
    const identity = /:identity\/(.+)$/.exec(pattern);
    if (identity) return `identity:${identity[1]}`;
    return pattern;
  };

  return {
    functions,
    labelOf,
    /** Every principal: the functions, and the roles AWS assumes for redial. */
    principals: { ...functions, ...services } as Record<string, Principal>,
    resource,
    /** The resource policy of an ARN that has one. */
    resourcePolicy: (arnOf: string): PolicyDocument | undefined => resourcePolicies.get(arnOf),
    scheduleArn,
    /** An SES identity's or configuration set's ARN. */
    sesArn: (kind: 'identity' | 'configuration-set', nameOf: string) => arn('ses', `${kind}/${nameOf}`),
    /** The statements of a principal's policies, Sid and all. */
    statementsOf: (principalName: string): ResolvedStatement[] => ({ ...functions, ...services })[principalName]!.policies.flatMap((p) => p.policy.Statement),
  };
}

export type { Statement };
