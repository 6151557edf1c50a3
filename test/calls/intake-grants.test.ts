import { afterEach, describe, expect, it } from 'vitest';
import { callIdFor } from '../../functions/calls/model.ts';
import { endpointIds, endpointKey } from '../../functions/webhooks/endpoint.ts';
import { FUNCTION_ACCESS } from '../../lib/access.ts';
import type { ItemAction, TableAccess } from '../../lib/access.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

/**
 * The intake's grants (lib/access.ts, `intake`) were read off the code; here the code runs and every
 * request it sends is checked against them: every DynamoDB action on every table (each item of a
 * transaction counts as its own action), the partition keys where the grant limits them, every queue it
 * sends to. A request outside the grant would be AccessDenied on AWS; here it fails the test.
 */

interface Request {
  /** An ItemAction, or another command's name (which no grant has). */
  action: string;
  table: string;
  partitionKey?: string;
  /** The attributes a read asks for (its ProjectionExpression), or every attribute an update names (its key's and its expressions'). */
  attributes?: string[];
  returnValues?: string;
}

/** The attribute names a ProjectionExpression asks for. */
const projected = (input: { ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> }): string[] | undefined =>
  input.ProjectionExpression?.split(',').map((part) => {
    const name = part.trim();
    return input.ExpressionAttributeNames?.[name] ?? name;
  });

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

const pkOf = (item: Record<string, unknown> | undefined): string | undefined => {
  const pk = item?.['pk'];
  if (typeof pk === 'string') return pk;
  if (pk && typeof pk === 'object' && 'S' in pk) return (pk as { S: string }).S;
  return undefined;
};

/** Records what the system's DynamoDB client and dispatch transport send while `record` is on. */
function recorder(fx: CallsFixture) {
  const tableKeys = Object.fromEntries(Object.entries(fx.tableNames).map(([key, name]) => [name, key]));
  const requests: Request[] = [];
  const sends: string[] = [];
  let on = false;
  const host = fx.clients.dynamo as unknown as {
    middlewareStack: { add(mw: (next: (a: unknown) => Promise<unknown>, ctx: { commandName?: string }) => (a: unknown) => Promise<unknown>, o: { step: 'initialize'; name: string }): void };
  };
  host.middlewareStack.add(
    (next, ctx) => (args) => {
      if (on) {
        const input = (args as { input: Record<string, unknown> }).input;
        const command = (ctx.commandName ?? '').replace(/Command$/, '');
        if (command === 'TransactWriteItems') {
          for (const item of input['TransactItems'] as Record<string, { TableName: string; Key?: Record<string, unknown>; Item?: Record<string, unknown> }>[]) {
            const [type, body] = Object.entries(item)[0]!;
            const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[type] ?? type;
            requests.push({ action, table: tableKeys[body.TableName] ?? body.TableName, partitionKey: pkOf(body.Item ?? body.Key) ?? '' });
          }
        } else if (command === 'BatchGetItem') {
          for (const [name, request] of Object.entries(input['RequestItems'] as Record<string, { Keys: Record<string, unknown>[]; ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> }>)) {
            const attributes = projected(request);
            for (const key of request.Keys) requests.push({ action: 'BatchGetItem', table: tableKeys[name] ?? name, partitionKey: pkOf(key) ?? '', ...(attributes ? { attributes } : {}) });
          }
        } else {
          const name = input['TableName'] as string;
          const index = input['IndexName'] as string | undefined;
          const values = input['ExpressionAttributeValues'] as Record<string, unknown> | undefined;
          // A Query's partition: the value its key condition compares pk with.
          const queried = command === 'Query' ? Object.values(values ?? {}).find((v): v is string => typeof v === 'string' && /^[A-Z]+#/.test(v)) : undefined;
          const attributes =
            command === 'UpdateItem'
              ? [...Object.keys(input['Key'] as Record<string, unknown>), ...Object.values((input['ExpressionAttributeNames'] ?? {}) as Record<string, string>)]
              : projected(input);
          requests.push({
            action: command,
            table: `${tableKeys[name] ?? name}${index ? `/index/${index}` : ''}`,
            partitionKey: queried ?? pkOf((input['Item'] ?? input['Key']) as Record<string, unknown>) ?? '',
            ...(attributes ? { attributes } : {}),
            ...(typeof input['ReturnValues'] === 'string' ? { returnValues: input['ReturnValues'] } : {}),
          });
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'intakeGrantRecorder' },
  );
  const transport = fx.transport as unknown as { sendMessage(queue: string, ...rest: unknown[]): Promise<void>; createSchedule(...args: unknown[]): Promise<void> };
  const sendMessage = transport.sendMessage.bind(transport);
  transport.sendMessage = (queue, ...rest) => {
    if (on) sends.push(`sqs:${queue}`);
    return sendMessage(queue, ...rest);
  };
  const createSchedule = transport.createSchedule.bind(transport);
  transport.createSchedule = (...args) => {
    if (on) sends.push('scheduler:CreateSchedule');
    return createSchedule(...args);
  };
  return {
    requests,
    sends,
    async during<T>(work: () => Promise<T>): Promise<T> {
      on = true;
      try {
        return await work();
      } finally {
        on = false;
      }
    },
  };
}

/** `dynamodb:LeadingKeys` StringLike `<prefix>*`, as IAM reads it: a `*` in the prefix matches any run of characters. */
const leadingKey = (prefix: string): RegExp => new RegExp(`^${prefix.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}`);

/** Whether a request is inside one of the intake's grants (lib/access.ts): action, key prefix, and the attributes it may read. */
function allowed(request: Request): boolean {
  const [table, , index] = request.table.split('/');
  const grants = ([] as TableAccess[]).concat(FUNCTION_ACCESS.intake.tables[table as keyof typeof FUNCTION_ACCESS.intake.tables] ?? []);
  return grants.some((grant) => {
    if (index !== undefined) return request.action === 'Query' && (grant.indexes ?? []).includes(index);
    if (!grant.actions.includes(request.action as ItemAction)) return false;
    if (grant.partitionKeyPrefixes && !grant.partitionKeyPrefixes.some((prefix) => leadingKey(prefix).test(request.partitionKey ?? ''))) return false;
    if (grant.returnValues && request.returnValues !== undefined && !(grant.returnValues as readonly string[]).includes(request.returnValues)) return false;
    return !grant.attributes || (request.attributes !== undefined && request.attributes.every((a) => grant.attributes!.includes(a)));
  });
}

/** A result for the contact's round-1 call (its callId is the one the dialer gave the placer: its list position, the batch's `numbers(…)` order). */
const result = (batchId: string, contactNumber: string, overrides: Record<string, unknown> = {}) => ({
  batchId,
  contactNumber,
  callId: callIdFor(batchId, contactNumber, { round: 1, page: 0, pos: Number(contactNumber.slice(-4)) - 1000 }),
  code: 'NO_PICKUP',
  emptyTranscription: true,
  durationSeconds: 0,
  ...overrides,
});

/** Registers an endpoint of the tenant straight in the store (no URL vetting: nothing is sent here); `busy` holds its lease. */
async function endpoint(fx: CallsFixture, tenantId: string, n: number, busy = false): Promise<string> {
  const endpointId = endpointIds.make(tenantId, String(n).padStart(32, '0'));
  const store = fx.system.webhooks.deps.store;
  await store.createEndpoint({ ...endpointKey(endpointId), endpointId, tenantId, url: 'https://hooks.example.com/h', createdAt: new Date(fx.clock.now()).toISOString(), disabled: false, secretCiphertext: 'sealed' });
  if (busy) await store.acquire(endpointId, 'webhook.deliver:elsewhere', fx.clock.now(), fx.clock.now() + 3_600_000);
  return endpointId;
}

describe('the intake, run, stays inside its grants', () => {
  it('ApplyingIgnoringAndRefusingResultsSendsNothingOutsideTheIntakesGrant', async () => {
    // Results that would come in an hour, a clock that stands still: nothing runs but what the test sends.
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(4);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 4 });
    // One endpoint free (its delivery is a job), one busy (its delivery waits in the list, and is looked at again after the commit).
    await endpoint(fx, 'acme', 1);
    await endpoint(fx, 'acme', 2, true);
    await fx.quiesce();
    const seen = recorder(fx);

    const outcomes = await seen.during(async () => [
      (await fx.webhook(result(batchId, contacts[0]!))).body.outcome, // applied (the first: reads the batch)
      (await fx.webhook(result(batchId, contacts[0]!))).body.outcome, // a duplicate: ignored
      (await fx.webhook(result(batchId, contacts[1]!, { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 40 }))).body.outcome,
      (await fx.webhook(result('b_unknown', contacts[2]!))).body.outcome, // no such batch: ignored
      (await fx.webhook({ batchId })).status, // invalid: 400, writes nothing
    ]);
    expect(outcomes).toEqual(['applied', 'ignored', 'applied', 'ignored', 400]);

    expect(seen.requests.length).toBeGreaterThan(0);
    expect(seen.requests.filter((r) => !allowed(r)), JSON.stringify(seen.requests.filter((r) => !allowed(r)))).toEqual([]);
    // Reads of the webhooks table named only routing attributes (never the secret).
    expect(seen.requests.filter((r) => r.table === 'webhooks' && r.action !== 'PutItem').every((r) => r.attributes !== undefined && !r.attributes.includes('secretCiphertext'))).toBe(true);
    // And the grant is not wider than this run needed, but for the last call's finaliser (calls queue) and
    // a fanout or restart (webhooks queue: a tenant with more than five endpoints, a lease let go meanwhile).
    expect([...new Set(seen.requests.map((r) => `${r.action} ${r.table}`))].sort()).toEqual(
      ['GetItem calls', 'UpdateItem calls', 'PutItem jobs', 'Query webhooks', 'BatchGetItem webhooks', 'UpdateItem webhooks', 'PutItem webhooks', 'GetItem webhooks'].sort(),
    );
    expect([...new Set(seen.sends)]).toEqual(['sqs:deliveries']);
    expect(seen.sends.every((send) => FUNCTION_ACCESS.intake.sendTo.some((q) => send === `sqs:${q}`))).toBe(true);
  });

  it('TheRoundsLastResultAlsoWakesTheFinaliserOnTheCallsQueue', async () => {
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(1);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 1 });
    await endpoint(fx, 'acme', 1);
    await fx.quiesce();
    const seen = recorder(fx);
    const response = await seen.during(() => fx.webhook(result(batchId, contacts[0]!)));
    expect(response.body.outcome).toBe('applied');
    // The intake wakes the event's delivery and the finaliser together, before it answers; the finaliser
    // then runs in the calls worker (in-process here), whose own sends come after these two.
    expect(seen.sends.slice(0, 2).sort()).toEqual(['sqs:calls', 'sqs:deliveries']);
    expect(FUNCTION_ACCESS.intake.sendTo.slice().sort()).toEqual(['calls', 'deliveries', 'webhooks']);
  });
});
