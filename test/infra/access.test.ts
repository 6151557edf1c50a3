import { beforeAll, describe, expect, it } from 'vitest';
import { queueNames } from '../../functions/app/system.ts';
import type { QueueName } from '../../functions/app/system.ts';
import { httpFunctionsByRoute, System, tables } from '../../functions/app/system.ts';
import type { TableKey } from '../../functions/app/system.ts';
import { PUBLIC_ROUTES, TENANT_ROUTES } from '../../lib/redial-stack.ts';
import { LEASE_ATTRIBUTES, ROUTING_ATTRIBUTES } from '../../functions/webhooks/store.ts';
import { actionsOf, resourcesOf, synth } from './synth.ts';
import type { Intrinsic, Resource, Statement } from './synth.ts';

/**
 * Every role's grants, written out here on their own (not read from lib/access.ts), one line per action
 * and resource: a grant added to the stack that is not on this list fails the test, and so does one
 * taken away. Each line is justified in lib/access.ts and docs/operations.md by the code that needs it.
 */
const ALWAYS = ['logs:CreateLogStream ownLogs', 'logs:PutLogEvents ownLogs', 'xray:PutTelemetryRecords *', 'xray:PutTraceSegments *'];
const consumes = (queue: QueueName) => [`sqs:ReceiveMessage queue:${queue}`, `sqs:DeleteMessage queue:${queue}`, `sqs:GetQueueAttributes queue:${queue}`];
/** The contacts uploads' objects (functions/calls/imports): URLs signed for a PUT, files read for their import. */
const uploads = ['s3:PutObject bucket:uploads/*', 's3:GetObject bucket:uploads/*'];
const sendsTo = (...names: QueueName[]) => names.map((q) => `sqs:SendMessage queue:${q}`);
const createsSchedules = ['scheduler:CreateSchedule scheduler:schedule/jobSchedules/*', 'iam:PassRole schedulerRole if iam:PassedToService=scheduler.amazonaws.com'];
const deletesSchedules = ['scheduler:DeleteSchedule scheduler:schedule/jobSchedules/*'];
/** The endpoint-secrets key, only with an endpoint's encryption context: exactly the keys endpointId (an ep_ id) and tenantId. */
const endpointContext = ' if kms:EncryptionContextKeys=endpointId|tenantId if kms:EncryptionContext:endpointId=ep_* if kms:EncryptionContext:tenantId=*';
/** The same key for a calendar's credentials, only with a calendar's encryption context: exactly the keys calendarId and tenantId. */
const calendarContext = ' if kms:EncryptionContextKeys=calendarId|tenantId if kms:EncryptionContext:calendarId=* if kms:EncryptionContext:tenantId=*';
/** The calendar settings routes (functions/calendar/settings-api.ts) and a batch naming a calendar: the tenant's calendar items. */
const calendarSettings = (prefix: string) => ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:calendar${prefix}`);

/**
 * Publishing an event (functions/webhooks/publish.ts): the tenant's endpoints read for their routing
 * attributes only — never the secret — a delivery's entry put behind a busy endpoint, and the event kept
 * for recovery.
 */
const routing = ' if dynamodb:LeadingKeys=TENANT#* if dynamodb:Attributes=pk|sk|endpointId|tenantId|eventTypes|disabled|holder|busyUntil if dynamodb:Select=SPECIFIC_ATTRIBUTES';
const publishes = [
  ...['GetItem', 'BatchGetItem', 'Query'].map((a) => `dynamodb:${a} table:webhooks${routing}`),
  'dynamodb:UpdateItem table:webhooks if dynamodb:LeadingKeys=TENANT#*#ENDPOINT#* if dynamodb:Attributes=pk|sk|disabled|holder|busyUntil|watch if dynamodb:ReturnValues=NONE',
  'dynamodb:PutItem table:webhooks if dynamodb:LeadingKeys=TENANT#*#WAITLIST#*|TENANT#*#EVENTS#*',
];

const EXPECTED: Record<string, string[]> = {
  intake: [
    'dynamodb:GetItem table:calls',
    // The call's attempt item, put in the completion's transaction.
    'dynamodb:PutItem table:calls',
    'dynamodb:UpdateItem table:calls',
    'dynamodb:PutItem table:jobs',
    ...publishes,
    ...sendsTo('calls', 'deliveries', 'webhooks'),
    'secretsmanager:GetSecretValue secret:callWebhook',
  ],
  calendarTools: [
    ...['GetItem', 'ConditionCheckItem'].map((a) => `dynamodb:${a} table:calls if dynamodb:LeadingKeys=TENANT#*`),
    ...['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:calendar if dynamodb:LeadingKeys=TENANT#*`),
    'dynamodb:PutItem table:jobs',
    ...publishes,
    ...sendsTo('calendar', 'deliveries', 'webhooks'),
    'secretsmanager:GetSecretValue secret:callWebhook',
    `kms:Decrypt key:webhookSecrets${calendarContext}`,
  ],
  publicLinks: ['dynamodb:UpdateItem table:mail if dynamodb:LeadingKeys=TENANT#*'],
  tenantApi: [
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem', 'BatchWriteItem'].map((a) => `dynamodb:${a} table:calls if dynamodb:LeadingKeys=TENANT#*|BATCHES*`),
    ...['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'].map((a) => `dynamodb:${a} table:jobs`),
    'dynamodb:Query table:jobs/index/byCheck',
    'dynamodb:Query table:jobs/index/byDeadLetter',
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:webhooks if dynamodb:LeadingKeys=TENANT#*|ENDPOINTS*`),
    ...calendarSettings(' if dynamodb:LeadingKeys=TENANT#*'),
    ...sendsTo('dial', 'calls', 'deliveries', 'webhooks'),
    ...createsSchedules,
    ...deletesSchedules,
    `kms:Encrypt key:webhookSecrets${endpointContext}`,
    `kms:Decrypt key:webhookSecrets${endpointContext}`,
    `kms:Encrypt key:webhookSecrets${calendarContext}`,
    ...uploads,
  ],
  api: [
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem', 'BatchWriteItem'].map((a) => `dynamodb:${a} table:calls`),
    ...['GetItem', 'Query', 'PutItem', 'UpdateItem'].map((a) => `dynamodb:${a} table:mail`),
    ...['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'].map((a) => `dynamodb:${a} table:jobs`),
    'dynamodb:Query table:jobs/index/byCheck',
    'dynamodb:Query table:jobs/index/byDeadLetter',
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:webhooks`),
    ...calendarSettings(''),
    ...sendsTo('ops', 'dial', 'calls', 'deliveries', 'webhooks', 'mail', 'calendar'),
    ...createsSchedules,
    ...deletesSchedules,
    `kms:Encrypt key:webhookSecrets${endpointContext}`,
    `kms:Decrypt key:webhookSecrets${endpointContext}`,
    `kms:Encrypt key:webhookSecrets${calendarContext}`,
    ...uploads,
  ],
  rescuer: [
    'dynamodb:GetItem table:jobs',
    'dynamodb:BatchGetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    'dynamodb:Query table:jobs/index/byCheck',
    'dynamodb:PutItem table:webhooks if dynamodb:LeadingKeys=TENANT#*#ENDPOINT#*',
    ...sendsTo('ops', 'dial', 'calls', 'deliveries', 'webhooks', 'mail', 'calendar'),
    ...createsSchedules,
  ],
  opsWorker: [...consumes('ops'), 'dynamodb:GetItem table:jobs', 'dynamodb:UpdateItem table:jobs', ...sendsTo('ops')],
  dialWorker: [
    ...consumes('dial'),
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'].map((a) => `dynamodb:${a} table:calls`),
    'dynamodb:GetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...publishes,
    ...sendsTo('dial', 'calls', 'deliveries', 'webhooks'),
    ...createsSchedules,
  ],
  callsWorker: [
    ...consumes('calls'),
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'BatchWriteItem'].map((a) => `dynamodb:${a} table:calls`),
    'dynamodb:GetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...publishes,
    ...sendsTo('dial', 'calls', 'deliveries', 'webhooks', 'mail'),
    ...createsSchedules,
  ],
  deliveriesWorker: [
    ...consumes('deliveries'),
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:webhooks`),
    'dynamodb:GetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...sendsTo('deliveries', 'webhooks'),
    ...createsSchedules,
    ...deletesSchedules,
    `kms:Decrypt key:webhookSecrets${endpointContext}`,
  ],
  webhooksWorker: [
    ...consumes('webhooks'),
    ...['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'].map((a) => `dynamodb:${a} table:webhooks`),
    'dynamodb:Query table:webhooks/index/byWatch',
    'dynamodb:Query table:webhooks/index/byReceived',
    'dynamodb:GetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...sendsTo('webhooks', 'deliveries', 'mail'),
    ...createsSchedules,
    ...deletesSchedules,
  ],
  mailWorker: [
    ...consumes('mail'),
    ...['GetItem', 'PutItem', 'UpdateItem'].map((a) => `dynamodb:${a} table:mail`),
    'dynamodb:GetItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...sendsTo('mail'),
    ...createsSchedules,
    'ses:SendEmail ses:identity/mail.example.org',
  ],
  calendarWorker: [
    ...consumes('calendar'),
    ...['GetItem', 'UpdateItem'].map((a) => `dynamodb:${a} table:calendar if dynamodb:LeadingKeys=TENANT#*`),
    'dynamodb:GetItem table:jobs',
    'dynamodb:PutItem table:jobs',
    'dynamodb:UpdateItem table:jobs',
    ...publishes,
    ...sendsTo('calendar', 'deliveries', 'webhooks'),
    ...createsSchedules,
    `kms:Decrypt key:webhookSecrets${calendarContext}`,
  ],
};

type Synth = ReturnType<typeof synth>;

/** `action resource[ if key=values]` for every action × resource of a role's statements, names in place of logical ids. */
function grantsOf(s: Synth, fnId: string): string[] {
  const fn = s.resources[fnId]!;
  const names: Record<string, string> = {
    'AWS::Partition': '',
    'AWS::Region': '',
    'AWS::AccountId': '',
    [(fn.Properties['LoggingConfig'] as { LogGroup: { Ref: string } }).LogGroup.Ref]: 'ownLogs',
    [s.idOf(s.stack.schedulerRole)]: 'schedulerRole',
    [s.idOf(s.stack.scheduleGroup)]: 'jobSchedules',
    [s.idOf(s.stack.callWebhookSecret)]: 'secret:callWebhook',
    [s.idOf(s.stack.webhookSecretsKey)]: 'key:webhookSecrets',
    [s.idOf(s.stack.uploadsBucket)]: 'bucket:uploads',
  };
  for (const key of Object.keys(tables) as TableKey[]) names[s.idOf(s.stack.tables[key])] = `table:${key}`;
  for (const name of queueNames) names[s.idOf(s.stack.jobQueues[name].queue)] = `queue:${name}`;
  const describe = (value: Intrinsic): string => {
    if (typeof value === 'string') return value;
    if ('Ref' in value) return names[value.Ref] ?? value.Ref;
    if ('Fn::GetAtt' in value) return names[value['Fn::GetAtt'][0]] ?? value['Fn::GetAtt'][0];
    return value['Fn::Join'][1].map(describe).join(value['Fn::Join'][0]);
  };
  const condition = (s: Statement): string =>
    Object.values(s.Condition ?? {})
      .flatMap((byKey) => Object.entries(byKey).map(([key, values]) => ` if ${key}=${([] as unknown[]).concat(values).join('|')}`))
      .join('');
  return s
    .roleStatements(s.roleOf(fn))
    .filter((statement) => statement.Effect === 'Allow')
    .flatMap((statement) =>
      actionsOf(statement).flatMap((action) =>
        resourcesOf(statement).map((r) => `${action} ${describe(r as Intrinsic).replace(/^arn::(\w+):::/, '$1:')}${condition(statement)}`),
      ),
    );
}

/** The functions behind each route key, read from the template (route → integration → function). */
function functionsByRouteKey(s: Synth): Record<string, string> {
  return Object.fromEntries(
    s.ofType('AWS::ApiGatewayV2::Route').map(([, route]) => {
      const target = JSON.stringify(route.Properties['Target']);
      const integrationId = s.ofType('AWS::ApiGatewayV2::Integration').find(([id]) => target.includes(`"${id}"`))?.[0];
      const uri = (s.resources[integrationId!]!.Properties['IntegrationUri'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      return [route.Properties['RouteKey'] as string, uri];
    }),
  );
}

let s: Synth;
let functionIds: Record<string, string>;

beforeAll(() => {
  s = synth();
  functionIds = Object.fromEntries(Object.entries(s.stack.functions).map(([name, fn]) => [name, s.idOf(fn)]));
});

describe('function roles', () => {
  it('exist for exactly the functions the access list names, one role each', () => {
    expect(Object.keys(functionIds).sort()).toEqual(Object.keys(EXPECTED).sort());
    expect(s.ofType('AWS::Lambda::Function').map(([id]) => id).sort()).toEqual(Object.values(functionIds).sort());
    const roles = Object.values(functionIds).map((id) => s.roleOf(s.resources[id]!));
    expect(new Set(roles).size).toBe(roles.length);
  });

  for (const name of Object.keys(EXPECTED)) {
    it(`${name} may do exactly what its code does, nothing more`, () => {
      expect(grantsOf(s, functionIds[name]!).sort()).toEqual([...ALWAYS, ...EXPECTED[name]!].sort());
    });
  }

  it('notices a grant a function does not need (the check is live)', () => {
    const extra = synth({}, undefined, (stack) => stack.tables.jobs.grantReadData(stack.intakeFunction));
    const grants = grantsOf(extra, extra.idOf(extra.stack.intakeFunction));
    expect(grants.sort()).not.toEqual([...ALWAYS, ...EXPECTED['intake']!].sort());
    expect(grants).toContain('dynamodb:Scan table:jobs');
  });
});

describe('functions that serve public routes', () => {
  const publicFunctionIds = () => {
    const byKey = functionsByRouteKey(s);
    return [...new Set(PUBLIC_ROUTES.map((r) => byKey[`${r.method} ${r.path}`]!))];
  };

  it('are the intake, the calendar tools and the mail-links function, never the API function', () => {
    expect(publicFunctionIds().sort()).toEqual([functionIds['intake'], functionIds['calendarTools'], functionIds['publicLinks']].sort());
  });

  it('can neither Scan, Delete nor BatchWrite anything, but the calendar tools Delete in the calendar table alone (a failed booking lets its hold cells go)', () => {
    const calendarTable = s.idOf(s.stack.tables.calendar);
    for (const id of publicFunctionIds()) {
      const statements = s.roleStatements(s.roleOf(s.resources[id]!));
      const actions = statements.flatMap(actionsOf);
      for (const forbidden of ['dynamodb:Scan', 'dynamodb:BatchWriteItem', 'dynamodb:*', 'sqs:*', '*']) expect(actions, `${id} ${forbidden}`).not.toContain(forbidden);
      const deleting = statements.filter((st) => actionsOf(st).includes('dynamodb:DeleteItem'));
      if (id !== functionIds['calendarTools']) expect(deleting, id).toEqual([]);
      for (const st of deleting) expect(resourcesOf(st), id).toEqual([{ 'Fn::GetAtt': [calendarTable, 'Arn'] }]);
    }
  });

  it('cannot read endpoint secrets: in the webhooks table only routing attributes read, wait-list entries and kept events written, and never the secrets key', () => {
    const webhooksTable = s.idOf(s.stack.tables.webhooks);
    const key = s.idOf(s.stack.webhookSecretsKey);
    for (const id of publicFunctionIds()) {
      const statements = s.roleStatements(s.roleOf(s.resources[id]!));
      const onWebhooks = statements.filter((st) => JSON.stringify(resourcesOf(st)).includes(`"${webhooksTable}"`));
      for (const st of onWebhooks) {
        const actions = actionsOf(st);
        if (actions.includes('dynamodb:PutItem')) {
          expect(actions, id).toEqual(['dynamodb:PutItem']);
          expect(st.Condition, id).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TENANT#*#WAITLIST#*', 'TENANT#*#EVENTS#*'] } });
          continue;
        }
        if (actions.includes('dynamodb:UpdateItem')) {
          // The lease alone, and nothing read back (ReturnValues NONE: never the item with its secret).
          expect(actions, id).toEqual(['dynamodb:UpdateItem']);
          expect(st.Condition, id).toEqual({
            'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TENANT#*#ENDPOINT#*'] },
            'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...LEASE_ATTRIBUTES] },
            StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE'] },
          });
          continue;
        }
        expect(actions.sort(), id).toEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query']);
        const attributes = (st.Condition?.['ForAllValues:StringEquals'] as Record<string, string[]> | undefined)?.['dynamodb:Attributes'];
        expect(attributes, id).toEqual([...ROUTING_ATTRIBUTES]);
        expect(attributes, id).not.toContain('secretCiphertext');
        expect(attributes, id).not.toContain('secret');
        expect(st.Condition?.['StringEqualsIfExists'], id).toEqual({ 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' });
      }
      // The calendar tools open a calendar's credentials with the key the endpoint secrets share, only
      // under a calendar's encryption context (an endpoint secret's context names no calendar: refused).
      const onKey = statements.filter((st) => JSON.stringify(st).includes(`"${key}"`));
      if (id !== functionIds['calendarTools']) expect(onKey, id).toEqual([]);
      for (const st of onKey) {
        expect(actionsOf(st), id).toEqual(['kms:Decrypt']);
        expect(st.Condition?.['ForAllValues:StringEquals'], id).toEqual({ 'kms:EncryptionContextKeys': ['calendarId', 'tenantId'] });
      }
    }
  });

  it('serve what functions/ routes to them: lib/ and the composition root agree on every public route', () => {
    // Listing the routes builds no context: a host that cannot be built is never asked for.
    const system = new System(() => {
      throw new Error('listing routes must not build the system');
    });
    const servedBy = httpFunctionsByRoute(system);
    const byKey = functionsByRouteKey(s);
    for (const route of PUBLIC_ROUTES) {
      const key = `${route.method} ${route.path}`;
      expect(servedBy[key], key).toBe(route.servedBy);
      expect(byKey[key], key).toBe(functionIds[route.servedBy]);
    }
    // The tenant routes go to the tenant API function, without IAM (it checks their API key).
    for (const route of TENANT_ROUTES) {
      const key = `${route.method} ${route.path}`;
      expect(servedBy[key], key).toBe('tenantApi');
      expect(byKey[key], key).toBe(functionIds['tenantApi']);
    }
    // Everything else is behind IAM and goes to the API function.
    const iamKeys = Object.entries(servedBy).filter(([, fn]) => fn === 'api');
    expect(iamKeys.length).toBeGreaterThan(0);
    expect(Object.keys(servedBy).length).toBe(iamKeys.length + PUBLIC_ROUTES.length + TENANT_ROUTES.length);
    expect(byKey['ANY /{proxy+}']).toBe(functionIds['api']);
  });
});

describe('the intake', () => {
  it('has concurrency reserved (and capped), so a flood of unsigned POSTs cannot starve the workers', () => {
    expect(s.resources[functionIds['intake']!]?.Properties['ReservedConcurrentExecutions']).toBe(100);
    for (const [name, id] of Object.entries(functionIds)) if (name !== 'intake') expect(s.resources[id]?.Properties, name).not.toHaveProperty('ReservedConcurrentExecutions');
    const custom = synth({ intakeReservedConcurrency: 25 });
    expect(custom.resources[custom.idOf(custom.stack.intakeFunction)]?.Properties['ReservedConcurrentExecutions']).toBe(25);
  });

  it('reads its signing secret from Secrets Manager by ARN (as the calendar tools do, signed with it); no function has the secret itself in its environment', () => {
    for (const name of ['intake', 'calendarTools']) expect(s.envOf(functionIds[name]!)['CALL_WEBHOOK_SECRET_ARN'], name).toEqual({ Ref: s.idOf(s.stack.callWebhookSecret) });
    for (const [name, id] of Object.entries(functionIds)) {
      const env = s.envOf(id);
      expect(Object.keys(env), name).not.toContain('CALL_WEBHOOK_SECRET');
      if (name !== 'intake' && name !== 'calendarTools') expect(Object.keys(env), name).not.toContain('CALL_WEBHOOK_SECRET_ARN');
    }
  });
});

describe('webhook endpoint secrets key', () => {
  it('is handed (by ARN) only to the functions that may use it: the APIs (register an endpoint, seal a calendar), the deliveries worker (it signs), the calendar tools and worker (they open a calendar)', () => {
    const holders = Object.entries(functionIds)
      .filter(([, id]) => s.envOf(id)['WEBHOOK_SECRETS_KEY_ARN'] !== undefined)
      .map(([name]) => name);
    expect(holders.sort()).toEqual(['api', 'calendarTools', 'calendarWorker', 'deliveriesWorker', 'tenantApi']);
    const key = s.resources[s.idOf(s.stack.webhookSecretsKey)] as Resource;
    expect(key.Properties['EnableKeyRotation']).toBe(true);
    // It protects secrets in tables that outlive the stack, so it outlives the stack too.
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('may be used only by the APIs (encrypt, decrypt) and the deliveries worker (decrypt), each only with an endpoint’s encryption context', () => {
    const keyId = s.idOf(s.stack.webhookSecretsKey);
    const uses = Object.fromEntries(
      Object.entries(functionIds).map(([name, id]) => [name, s.roleStatements(s.roleOf(s.resources[id]!)).filter((st) => JSON.stringify(resourcesOf(st)).includes(`"${keyId}"`))]),
    );
    expect(Object.entries(uses).filter(([, statements]) => statements.length > 0).map(([name]) => name).sort()).toEqual(['api', 'calendarTools', 'calendarWorker', 'deliveriesWorker', 'tenantApi']);
    // The intake and the rescuer write to the webhooks table, yet neither may use the key at all.
    for (const name of ['intake', 'rescuer', 'publicLinks', 'callsWorker', 'dialWorker', 'webhooksWorker', 'mailWorker', 'opsWorker']) {
      expect(JSON.stringify(s.roleStatements(s.roleOf(s.resources[functionIds[name]!]!))), name).not.toMatch(/"kms:/);
    }
    const endpoint = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['endpointId', 'tenantId'] },
      StringLike: { 'kms:EncryptionContext:endpointId': 'ep_*', 'kms:EncryptionContext:tenantId': '*' },
    };
    const calendar = {
      'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': ['calendarId', 'tenantId'] },
      StringLike: { 'kms:EncryptionContext:calendarId': '*', 'kms:EncryptionContext:tenantId': '*' },
    };
    // Every statement on the key names one context, an endpoint's or a calendar's; never both, never neither.
    const byContext = (name: string, condition: unknown) => uses[name]!.filter((st) => JSON.stringify(st.Condition) === JSON.stringify(condition)).flatMap(actionsOf).sort();
    for (const name of ['api', 'tenantApi', 'deliveriesWorker', 'calendarTools', 'calendarWorker']) {
      for (const statement of uses[name]!) expect([endpoint, calendar].map((c) => JSON.stringify(c)), name).toContain(JSON.stringify(statement.Condition));
    }
    expect(byContext('api', endpoint)).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    expect(byContext('tenantApi', endpoint)).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    expect(byContext('deliveriesWorker', endpoint)).toEqual(['kms:Decrypt']);
    // Calendars' credentials: the APIs seal them (a PUT), the tools and the settle worker open them.
    expect(byContext('api', calendar)).toEqual(['kms:Encrypt']);
    expect(byContext('tenantApi', calendar)).toEqual(['kms:Encrypt']);
    expect(byContext('calendarTools', calendar)).toEqual(['kms:Decrypt']);
    expect(byContext('calendarWorker', calendar)).toEqual(['kms:Decrypt']);
    expect(byContext('deliveriesWorker', calendar)).toEqual([]);
    expect(byContext('calendarTools', endpoint)).toEqual([]);
    expect(byContext('calendarWorker', endpoint)).toEqual([]);
  });
});
