import { afterEach, describe, expect, it } from 'vitest';
import { callIdFor } from '../../functions/calls/model.ts';
import { FUNCTION_ACCESS } from '../../lib/access.ts';
import type { ItemAction } from '../../lib/access.ts';
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
}

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
          for (const [name, { Keys }] of Object.entries(input['RequestItems'] as Record<string, { Keys: Record<string, unknown>[] }>)) {
            for (const key of Keys) requests.push({ action: 'BatchGetItem', table: tableKeys[name] ?? name, partitionKey: pkOf(key) ?? '' });
          }
        } else {
          const name = input['TableName'] as string;
          const index = input['IndexName'] as string | undefined;
          requests.push({ action: command, table: `${tableKeys[name] ?? name}${index ? `/index/${index}` : ''}`, partitionKey: pkOf((input['Item'] ?? input['Key']) as Record<string, unknown>) ?? '' });
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

/** Whether a request is inside the intake's grant (lib/access.ts). */
function allowed(request: Request): boolean {
  const [table, , index] = request.table.split('/');
  const grant = FUNCTION_ACCESS.intake.tables[table as keyof typeof FUNCTION_ACCESS.intake.tables];
  if (!grant) return false;
  if (index !== undefined) return request.action === 'Query' && (grant.indexes ?? []).includes(index);
  if (!grant.actions.includes(request.action as ItemAction)) return false;
  return !grant.partitionKeyPrefixes || grant.partitionKeyPrefixes.some((prefix) => request.partitionKey?.startsWith(prefix));
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

describe('the intake, run, stays inside its grants', () => {
  it('ApplyingIgnoringAndRefusingResultsSendsNothingOutsideTheIntakesGrant', async () => {
    // Results that would come in an hour, a clock that stands still: nothing runs but what the test sends.
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(4);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 4 });
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
    expect(seen.requests.filter((r) => !allowed(r))).toEqual([]);
    // And the grant is not wider than this run needed, but for the last call's finaliser (calls queue).
    expect([...new Set(seen.requests.map((r) => `${r.action} ${r.table}`))].sort()).toEqual(
      ['GetItem calls', 'UpdateItem calls', 'PutItem jobs', 'PutItem webhooks'].sort(),
    );
    expect([...new Set(seen.sends)]).toEqual(['sqs:webhooks']);
    expect(seen.sends.every((send) => FUNCTION_ACCESS.intake.sendTo.some((q) => send === `sqs:${q}`))).toBe(true);
  });

  it('TheRoundsLastResultAlsoWakesTheFinaliserOnTheCallsQueue', async () => {
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(1);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 1 });
    await fx.quiesce();
    const seen = recorder(fx);
    const response = await seen.during(() => fx.webhook(result(batchId, contacts[0]!)));
    expect(response.body.outcome).toBe('applied');
    // The intake wakes fanout and the finaliser together, before it answers; the finaliser then runs in
    // the calls worker (in-process here), whose own sends come after these two.
    expect(seen.sends.slice(0, 2).sort()).toEqual(['sqs:calls', 'sqs:webhooks']);
    expect(FUNCTION_ACCESS.intake.sendTo.slice().sort()).toEqual(['calls', 'webhooks']);
  });
});
