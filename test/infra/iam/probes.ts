import { queueNames, tables as declared } from '../../../functions/app/system.ts';
import type { QueueName, TableKey } from '../../../functions/app/system.ts';
import type { TableDefinition } from '../../../functions/platform/tables.ts';
import { LEASE_ATTRIBUTES, ROUTING_ATTRIBUTES } from '../../../functions/webhooks/store.ts';
import type { Deployment } from './deployment.ts';
import type { IamRequest } from './requests.ts';


const tables: Readonly<Record<TableKey, TableDefinition>> = declared;
/**
 * Requests that must be denied, whatever the code does: what a compromised or mistaken function could
 * try. Each is written as AWS would see it (action, resource, the condition keys the request carries), and
 * says why it must fail in `from`.
 */

/** The tables of the other contexts, per function: a function may not touch them at all. */
const FOREIGN_TABLES: Readonly<Record<string, readonly TableKey[]>> = {
  intake: ['mail', 'calendar'],
  calendarTools: ['mail'],
  publicLinks: ['calls', 'jobs', 'webhooks', 'calendar'],
  rescuer: ['calls', 'mail', 'calendar'],
  opsWorker: ['calls', 'mail', 'webhooks', 'calendar'],
  dialWorker: ['mail', 'calendar'],
  callsWorker: ['mail', 'calendar'],
  deliveriesWorker: ['calls', 'mail', 'calendar'],
  webhooksWorker: ['calls', 'mail', 'calendar'],
  mailWorker: ['calls', 'webhooks', 'calendar'],
  calendarWorker: ['calls', 'mail'],
};

/** A key of each table's own shape, for the probes' `dynamodb:LeadingKeys`. */
const SAMPLE_KEY: Readonly<Record<TableKey, string>> = { jobs: 'calls.dial:b_1', calls: 'TENANT#t1', mail: 'TENANT#t1', webhooks: 'ENDPOINT#ep_1', calendar: 'TENANT#t1#CAL#c1' };

/** The endpoint-secrets key's context, as functions/webhooks/secrets.ts builds it. */
const endpointContext = { 'kms:EncryptionContextKeys': ['endpointId', 'tenantId'], 'kms:EncryptionContext:endpointId': 'ep_1', 'kms:EncryptionContext:tenantId': 't1' };

/** A calendar's credentials' context, as functions/calendar/credentials.ts builds it. */
const calendarContext = { 'kms:EncryptionContextKeys': ['calendarId', 'tenantId'], 'kms:EncryptionContext:calendarId': 'c1', 'kms:EncryptionContext:tenantId': 't1' };

export function deniedProbes(deployment: Deployment): IamRequest[] {
  const probes: IamRequest[] = [];
  const probe = (fn: string, action: string, ref: string, context: Record<string, string | string[]>, why: string) => {
    const resource = deployment.resource(ref);
    if (!resource) throw new Error(`probe ${why}: ${ref} names nothing`);
    probes.push({ function: fn, action, resource, context, from: `probe: ${why}` });
  };
  const item = (table: TableKey, pk = SAMPLE_KEY[table], attributes: readonly string[] = [tables[table].partitionKey, ...(tables[table].sortKey ? [tables[table].sortKey] : [])]) => ({
    'dynamodb:LeadingKeys': [pk],
    'dynamodb:Attributes': [...attributes],
  });
  const functions = Object.keys(deployment.functions);
  const tableKeys = Object.keys(tables) as TableKey[];

  // No function scans or manages a table, and none batch-writes but the ones that write a batch's contacts'
  // items to the calls table (lib/access.ts); the public ones delete nothing either.
  const batchWrites = new Set(['tenantApi calls', 'api calls', 'callsWorker calls']);
  for (const fn of functions) {
    for (const table of tableKeys) {
      probe(fn, 'dynamodb:Scan', `table:${table}`, { 'dynamodb:Attributes': [tables[table].partitionKey], 'dynamodb:Select': 'ALL_ATTRIBUTES' }, `${fn} scans the ${table} table`);
      if (!batchWrites.has(`${fn} ${table}`)) probe(fn, 'dynamodb:BatchWriteItem', `table:${table}`, item(table), `${fn} batch-writes the ${table} table`);
      probe(fn, 'dynamodb:DeleteTable', `table:${table}`, {}, `${fn} deletes the ${table} table`);
    }
  }
  for (const fn of ['intake', 'publicLinks']) {
    for (const table of tableKeys) probe(fn, 'dynamodb:DeleteItem', `table:${table}`, item(table), `the public ${fn} deletes an item of the ${table} table`);
  }

  // A function touches no table of another context.
  for (const [fn, foreign] of Object.entries(FOREIGN_TABLES)) {
    for (const table of foreign) {
      for (const action of ['GetItem', 'Query', 'PutItem', 'UpdateItem']) {
        probe(fn, `dynamodb:${action}`, `table:${table}`, { ...item(table), ...(action === 'GetItem' || action === 'Query' ? { 'dynamodb:Select': 'ALL_ATTRIBUTES' } : {}) }, `${fn} ${action} on the ${table} table, another context's`);
      }
    }
  }

  // Publishing reads endpoints' routing, writes their lease, and puts wait-list entries: nothing else of the webhooks table.
  const routing = [...ROUTING_ATTRIBUTES];
  for (const fn of ['intake', 'dialWorker', 'callsWorker']) {
    probe(fn, 'dynamodb:GetItem', 'table:webhooks', { ...item('webhooks', 'ENDPOINT#ep_1', ['pk', 'sk']), 'dynamodb:Select': 'ALL_ATTRIBUTES' }, `${fn} reads an endpoint whole (its secret with it)`);
    probe(fn, 'dynamodb:GetItem', 'table:webhooks', { ...item('webhooks', 'ENDPOINT#ep_1', [...routing, 'secretCiphertext']), 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' }, `${fn} reads an endpoint's secret`);
    probe(fn, 'dynamodb:BatchGetItem', 'table:webhooks', { ...item('webhooks', 'ENDPOINT#ep_1', [...routing, 'url']), 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' }, `${fn} reads an endpoint's URL`);
    probe(fn, 'dynamodb:Query', 'table:webhooks', { ...item('webhooks', 'TENANT#t1', ['pk', 'sk']), 'dynamodb:Select': 'ALL_ATTRIBUTES' }, `${fn} lists a tenant's endpoints whole`);
    probe(fn, 'dynamodb:GetItem', 'table:webhooks', { ...item('webhooks', 'EVENT#evt_1', ['pk', 'sk']), 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' }, `${fn} reads a stored event`);
    probe(fn, 'dynamodb:UpdateItem', 'table:webhooks', { ...item('webhooks', 'ENDPOINT#ep_1', [...LEASE_ATTRIBUTES]), 'dynamodb:ReturnValues': 'ALL_NEW' }, `${fn} takes a lease and reads the endpoint back whole`);
    probe(fn, 'dynamodb:UpdateItem', 'table:webhooks', { ...item('webhooks', 'ENDPOINT#ep_1', ['pk', 'sk', 'url']), 'dynamodb:ReturnValues': 'NONE' }, `${fn} changes an endpoint's URL`);
    probe(fn, 'dynamodb:UpdateItem', 'table:webhooks', { ...item('webhooks', 'WAITLIST#ep_1', [...LEASE_ATTRIBUTES]), 'dynamodb:ReturnValues': 'NONE' }, `${fn} updates a wait-list entry`);
    probe(fn, 'dynamodb:PutItem', 'table:webhooks', item('webhooks', 'ENDPOINT#ep_1', ['pk', 'sk', 'url', 'secretCiphertext']), `${fn} overwrites an endpoint`);
    probe(fn, 'dynamodb:DeleteItem', 'table:webhooks', item('webhooks', 'WAITLIST#ep_1'), `${fn} deletes a wait-list entry`);
  }
  // The mail links confirm an address or decide a request: a tenant's rows only, and nothing read.
  probe('publicLinks', 'dynamodb:UpdateItem', 'table:mail', item('mail', 'CAP#owner_notify#t1', ['pk', 'sk', 'holders']), 'the mail links update a cap slot');
  probe('publicLinks', 'dynamodb:GetItem', 'table:mail', { ...item('mail', 'TENANT#t1'), 'dynamodb:Select': 'ALL_ATTRIBUTES' }, 'the mail links read a tenant’s mail rows');
  probe('publicLinks', 'dynamodb:PutItem', 'table:mail', item('mail', 'TENANT#t1', ['pk', 'sk', 'email']), 'the mail links write a new row');

  // A function reads no queue but its own (workers: their event source's), and the public functions send nothing to the workers' queues they do not wake.
  for (const fn of functions) {
    const own = deployment.functions[fn]!.queue;
    for (const queue of queueNames.filter((q) => q !== own)) {
      probe(fn, 'sqs:ReceiveMessage', `queue:${queue}`, {}, `${fn} reads the ${queue} queue, not its own`);
      probe(fn, 'sqs:DeleteMessage', `queue:${queue}`, {}, `${fn} deletes from the ${queue} queue, not its own`);
    }
    for (const action of ['sqs:PurgeQueue', 'sqs:SetQueueAttributes']) for (const queue of queueNames) probe(fn, action, `queue:${queue}`, {}, `${fn} ${action} on the ${queue} queue`);
  }
  for (const queue of ['ops', 'dial', 'mail'] as QueueName[]) probe('intake', 'sqs:SendMessage', `queue:${queue}`, {}, `the public intake sends to the ${queue} queue`);
  for (const queue of queueNames) probe('publicLinks', 'sqs:SendMessage', `queue:${queue}`, {}, `the mail links send to the ${queue} queue`);

  // Secrets: the intake's signing secret is the intake's alone; the endpoint-secrets key the APIs' (tenant and operator) and the signer's.
  for (const fn of functions.filter((f) => f !== 'intake' && f !== 'calendarTools')) probe(fn, 'secretsmanager:GetSecretValue', 'secret:callWebhook', {}, `${fn} reads the intake's signing secret`);
  for (const fn of functions.filter((f) => f !== 'api' && f !== 'tenantApi' && f !== 'deliveriesWorker')) {
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', endpointContext, `${fn} decrypts an endpoint's secret`);
    probe(fn, 'kms:Encrypt', 'key:webhookSecrets', endpointContext, `${fn} encrypts with the endpoint-secrets key`);
  }
  probe('deliveriesWorker', 'kms:Encrypt', 'key:webhookSecrets', endpointContext, 'the signer encrypts a secret (it only decrypts)');
  for (const fn of ['api', 'tenantApi', 'deliveriesWorker']) {
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', {}, `${fn} decrypts without an encryption context`);
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', { 'kms:EncryptionContextKeys': ['purpose'], 'kms:EncryptionContext:purpose': 'backup' }, `${fn} decrypts something that is not an endpoint's secret`);
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', { ...endpointContext, 'kms:EncryptionContextKeys': ['endpointId', 'tenantId', 'extra'], 'kms:EncryptionContext:extra': 'x' }, `${fn} decrypts under a context with a key besides an endpoint's`);
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', { ...endpointContext, 'kms:EncryptionContext:endpointId': 'job_1' }, `${fn} decrypts under a context naming no endpoint id`);
    probe(fn, 'kms:CreateGrant', 'key:webhookSecrets', {}, `${fn} hands the key on`);
  }

  // Calendars' credentials: encrypted by the APIs (a PUT), opened by the tools and the settle worker; each
  // only under a calendar's context, so none of them opens an endpoint's secret with it.
  const calendarUsers = ['api', 'tenantApi', 'calendarTools', 'calendarWorker'];
  for (const fn of functions.filter((f) => !calendarUsers.includes(f))) {
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', calendarContext, `${fn} decrypts a calendar's credentials`);
    probe(fn, 'kms:Encrypt', 'key:webhookSecrets', calendarContext, `${fn} encrypts a calendar's credentials`);
  }
  for (const fn of ['api', 'tenantApi']) probe(fn, 'kms:Decrypt', 'key:webhookSecrets', calendarContext, `${fn} decrypts a calendar's credentials (a PUT only encrypts)`);
  for (const fn of ['calendarTools', 'calendarWorker']) {
    probe(fn, 'kms:Encrypt', 'key:webhookSecrets', calendarContext, `${fn} encrypts a calendar's credentials (it only opens them)`);
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', { ...calendarContext, 'kms:EncryptionContextKeys': ['calendarId', 'tenantId', 'endpointId'], 'kms:EncryptionContext:endpointId': 'ep_1' }, `${fn} decrypts under a context with an endpoint besides a calendar`);
    probe(fn, 'kms:Decrypt', 'key:webhookSecrets', {}, `${fn} decrypts without an encryption context`);
    probe(fn, 'dynamodb:PutItem', 'table:calls', item('calls'), `${fn} writes the calls table (it only checks and reads)`);
  }

  // Schedules: created only by those whose jobs may wait longer than 15 minutes (the APIs: a batch's start
  // and a pause's expiry), and their role passed to Scheduler only.
  for (const fn of ['intake', 'publicLinks']) {
    probe(fn, 'scheduler:CreateSchedule', 'scheduleGroup:jobs', {}, `${fn} creates a schedule`);
    probe(fn, 'iam:PassRole', 'role:scheduler', { 'iam:PassedToService': 'scheduler.amazonaws.com' }, `${fn} passes the Scheduler role`);
  }
  for (const fn of functions) probe(fn, 'iam:PassRole', 'role:scheduler', { 'iam:PassedToService': 'lambda.amazonaws.com' }, `${fn} passes the Scheduler role to another service`);

  // Mail goes out from the mail worker alone, as the configured identity alone.
  for (const fn of functions.filter((f) => f !== 'mailWorker')) probe(fn, 'ses:SendEmail', 'identity:mail', {}, `${fn} sends mail`);
  probes.push({ function: 'mailWorker', action: 'ses:SendEmail', resource: { arn: deployment.sesArn('identity', 'elsewhere.example.com'), label: 'identity:elsewhere.example.com' }, context: {}, from: 'probe: the mail worker sends as another identity' });
  return probes.map((p) => (p.resource.label.startsWith('scheduleGroup:') ? { ...p, resource: { arn: deployment.scheduleArn(p.resource, 'job-x-1'), label: 'schedule:jobs/*' } } : p));
}
