import { request as httpRequest } from 'node:http';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { INTAKE_MAX_BODY_BYTES } from '../../functions/calls/config.ts';
import { ManualClock } from '../../functions/platform/clock.ts';
import { signCallWebhook } from '../../functions/calls/signature.ts';
import { callIdFor, jobIds } from '../../functions/calls/model.ts';
import { callsFixture, numbers, TEST_SECRET, runByHand } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A batch whose contacts are all Calling: dialled, with results that will not come while the clock stands still. */
async function callingBatch(count: number, options: { concurrencyLimit?: number; start?: number } = {}) {
  const fx = await callsFixture({ resultDelayMs: () => 3_600_000, ...(options.start ? { start: options.start } : {}) });
  fixtures.push(fx);
  const contacts = numbers(count);
  const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: options.concurrencyLimit ?? count });
  await fx.quiesce();
  const batch = await fx.api('GET', `/v1/batches/${batchId}`);
  expect(batch.body.counts.byStatus.Calling).toBe(count);
  return { fx, batchId, contacts };
}

/** A contact's position in a list of `numbers(…)` (each list here is in that order). */
const positionOf = (contactNumber: string) => Math.max(0, Number(contactNumber.slice(-4)) - 1000);

/**
 * A result for the contact's call of `round` (default 1) at its list position: its callId is the one the
 * dialer gave the placer (one slot shard here, so no slot suffix).
 */
const result = (batchId: string, contactNumber: string, overrides: Record<string, unknown> = {}, round = 1) => ({
  batchId,
  contactNumber,
  callId: callIdFor(batchId, contactNumber, { round, page: 0, pos: positionOf(contactNumber) }),
  code: 'NO_PICKUP',
  emptyTranscription: true,
  durationSeconds: 0,
  ...overrides,
});

/** Everything the intake could write: calls items, jobs and events. */
async function snapshot(fx: CallsFixture) {
  return { calls: await fx.callsItems(), jobs: await fx.allJobs(), events: await fx.allEvents() };
}

describe('intake: one transaction per applied result', () => {
  it('AppliedResultCompletesTheContactReleasesTheSlotCountsTheCodeAndRecordsTheEvent_WritingNoWatchdog', async () => {
    const { fx, batchId, contacts } = await callingBatch(3);
    const response = await fx.webhook(result(batchId, contacts[1]!, { code: ' failed ', durationSeconds: 4 }));
    expect(response).toEqual({ status: 200, body: { outcome: 'applied', code: 'FAILED_NO_CONVERSATION', retryable: true } });

    const contact = await fx.store.getContact(batchId, contacts[1]!);
    expect(contact).toMatchObject({ status: 'Completed', code: 'FAILED_NO_CONVERSATION', retryable: true, reportedCode: ' failed ', durationSeconds: 4, source: 'webhook', round: 1 });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(2);
    const batch = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(batch.counts).toEqual({ byStatus: { Queued: 0, Calling: 2, Completed: 1, RetryEligible: 0, Suppressed: 0 }, deferred: 0, byCode: { FAILED_NO_CONVERSATION: 1 } });
    // The dial run's one watchdog is left alone: it finds this call Completed when it runs.
    const watchdog = await fx.jobs.store.mustGet(jobIds.watchdog(batchId, 1, 1));
    expect(watchdog).toMatchObject({ kind: 'calls.watchdog', state: 'scheduled', args: { batchId, round: 1, seq: 1, page: 0, pos: 0, count: 3, shard: 0 } });
    // The contact's item is the completion, written once: its round, its call, its dial count.
    expect(contact).toMatchObject({ attempts: 1, callId: result(batchId, contacts[1]!).callId });
    expect(watchdog.cancelRequestedAt).toBeUndefined();
    const events = await fx.allEvents();
    expect(events.map((e) => [e.type, e.data['contactNumber'], e.data['code']])).toEqual([['call.completed', contacts[1], 'FAILED_NO_CONVERSATION']]);
    // The tenant has no endpoint: publishing it wrote nothing (no job, no entry: functions/webhooks/publish.ts).
    expect((await fx.allJobs()).filter((j) => j.kind.startsWith('webhook.'))).toEqual([]);
  });

  it('AnAppliedResultCostsOneTransactWriteItemsAndNoReadOnceTheBatchIsKnown', async () => {
    const { fx, batchId, contacts } = await callingBatch(3);
    // The first result for a batch in this process reads its settings once; publishing its event reads the
    // tenant's endpoints (one Query here: it has none); nothing else is read.
    fx.counter.reset();
    expect((await fx.webhook(result(batchId, contacts[0]!))).body.outcome).toBe('applied');
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.GetItem': 1, 'DynamoDB.Query': 1, 'DynamoDB.TransactWriteItems': 1 });
    fx.counter.reset();
    expect((await fx.webhook(result(batchId, contacts[1]!))).body.outcome).toBe('applied');
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.Query': 1, 'DynamoDB.TransactWriteItems': 1 });
    // A duplicate costs one refused transaction, and still no read of the calls table.
    fx.counter.reset();
    expect((await fx.webhook(result(batchId, contacts[1]!))).body.outcome).toBe('ignored');
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.Query': 1, 'DynamoDB.TransactWriteItems': 1 });
  });

  it('FiftyConcurrentIdenticalResultsApplyExactlyOnceAndCountOnce', async () => {
    const { fx, batchId, contacts } = await callingBatch(4);
    const body = result(batchId, contacts[2]!, { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 80 });
    const responses = await Promise.all(Array.from({ length: 50 }, () => fx.webhook(body, { id: 'msg_same' })));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(responses.filter((r) => r.body.outcome === 'applied')).toHaveLength(1);
    expect(responses.filter((r) => r.body.outcome === 'ignored')).toHaveLength(49);

    const batch = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(batch.counts).toEqual({ byStatus: { Queued: 0, Calling: 3, Completed: 1, RetryEligible: 0, Suppressed: 0 }, deferred: 0, byCode: { COMPLETED: 1 } });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(3);
    expect(await fx.allEvents()).toHaveLength(1);
    expect((await fx.allJobs()).filter((j) => j.kind.startsWith('webhook.'))).toEqual([]);
  });

  it('ALateOrDuplicateResultForAFinishedContactIsIgnoredAndChangesNothing', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    expect((await fx.webhook(result(batchId, contacts[0]!))).body.outcome).toBe('applied');
    const before = await snapshot(fx);
    expect(await fx.webhook(result(batchId, contacts[0]!, { code: 'COMPLETED' }))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await fx.webhook(result(batchId, '+4930123456'))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await fx.webhook(result('b_nosuchbatch', contacts[1]!))).toEqual({ status: 200, body: { outcome: 'ignored' } });
    expect(await snapshot(fx)).toEqual(before);
  });
});

describe('intake: what the refused condition says, it acts on', () => {
  it('TheRoundsLastResultEnqueuesTheFinaliser_AndALaterRoundsResultNeedsNoReadToFindItsRound_ItsCallIdNamesIt', async () => {
    // No worker: the jobs run by hand, so the counter sees the intake's requests alone.
    const fx = await callsFixture({ script: () => 'noPickup', resultDelayMs: () => 3_600_000, callTimeoutSeconds: 7200, workers: false });
    fixtures.push(fx);
    const run = (id: string) => runByHand(fx, id);
    const [contact] = numbers(1);
    const batchId = await fx.createBatch({ numbers: [contact!], maxAttempts: 2, retry: { baseSeconds: 10, capSeconds: 60 } });
    expect(await run(jobIds.dial(batchId, 1))).toBe('completed');

    // Round 1's only call: the common case is refused as "the last call", and the last-call variant commits.
    fx.counter.reset();
    expect((await fx.webhook(result(batchId, contact!))).body).toEqual({ outcome: 'applied', code: 'NO_PICKUP', retryable: true });
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.GetItem': 1, 'DynamoDB.Query': 1, 'DynamoDB.TransactWriteItems': 2 });

    // The finaliser promotes it; round 2 dials it again.
    expect(await run(jobIds.finalise(batchId, 1))).toBe('completed');
    expect(await run(jobIds.dial(batchId, 2))).toBe('completed');
    expect(await fx.contactView(batchId, contact!)).toMatchObject({ status: 'Calling', attempts: 2 });

    // Round 2's call: its id says round 2, so the first transaction is round 2's; it is the last call.
    fx.counter.reset();
    expect((await fx.webhook(result(batchId, contact!, { code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 }, 2))).body.outcome).toBe('applied');
    expect(fx.counter.toJSON()).toEqual({ 'DynamoDB.Query': 1, 'DynamoDB.TransactWriteItems': 2 });
    expect(await run(jobIds.finalise(batchId, 2))).toBe('completed');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', round: 2, counts: { byCode: { COMPLETED: 1 } } });
  });
});

describe('intake: nothing half-written', () => {
  it('ATransactionForcedToFailAnswers503AndLeavesContactCountersAndJobsAsTheyWere', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    const before = await snapshot(fx);
    // DynamoDB itself cancels the real transaction: one more item, whose condition cannot hold, joins it.
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let forced = 0;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand && forced-- > 0) {
        command.input.TransactItems!.push({ ConditionCheck: { TableName: fx.tableNames.calls, Key: { pk: 'FORCED', sk: 'FAILURE' }, ConditionExpression: 'attribute_exists(pk)' } });
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    forced = 1;
    const response = await fx.webhook(result(batchId, contacts[0]!));
    expect(response.status).toBe(503);
    expect(response.body.error).toBe('unavailable');
    expect(await snapshot(fx)).toEqual(before);

    // The caller tries again: it applies, once.
    expect((await fx.webhook(result(batchId, contacts[0]!))).body.outcome).toBe('applied');
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts.byStatus).toMatchObject({ Calling: 1, Completed: 1 });
  });

  it('AConflictWithAnotherTransactionIs503WhileTheContactIsCallingAndIgnoredOnceItIsNot', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let conflicts = 0;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand && conflicts-- > 0) {
        // What DynamoDB answers when another transaction holds one of the items (DynamoDB Local never does).
        const reasons = command.input.TransactItems!.map((_, i) => ({ Code: i === 2 ? 'TransactionConflict' : 'None' }));
        return Promise.reject(new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: reasons }));
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    const before = await snapshot(fx);
    conflicts = 1;
    expect((await fx.webhook(result(batchId, contacts[0]!))).status).toBe(503);
    expect(await snapshot(fx)).toEqual(before);

    expect((await fx.webhook(result(batchId, contacts[0]!))).body.outcome).toBe('applied');
    conflicts = 1;
    // The duplicate that lost to a conflict: the contact is Completed, so it is ignored, not retried.
    expect(await fx.webhook(result(batchId, contacts[0]!))).toEqual({ status: 200, body: { outcome: 'ignored' } });
  });
});

describe('intake: refused before anything is read', () => {
  it('SignatureFailuresAre401AndWriteNothing', async () => {
    const { fx, batchId, contacts } = await callingBatch(1);
    const body = result(batchId, contacts[0]!);
    const now = Math.floor(fx.clock.now() / 1000);
    const before = await snapshot(fx);
    const drop = (name: string) => (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => k !== name));
    const attempts = {
      'no webhook-id': await fx.webhook(body, { headers: drop('webhook-id') }),
      'no webhook-timestamp': await fx.webhook(body, { headers: drop('webhook-timestamp') }),
      'no webhook-signature': await fx.webhook(body, { headers: drop('webhook-signature') }),
      'wrong secret': await fx.webhook(body, { secret: 'whsec_' + Buffer.from('not the intake secret, 32 bytes').toString('base64') }),
      'truncated signature': await fx.webhook(body, { headers: (h) => ({ ...h, 'webhook-signature': h['webhook-signature']!.slice(0, -4) }) }),
      '301 s old': await fx.webhook(body, { timestampSeconds: now - 301 }),
      '301 s ahead': await fx.webhook(body, { timestampSeconds: now + 301 }),
    };
    for (const [what, response] of Object.entries(attempts)) {
      expect(response.status, what).toBe(401);
      expect(response.body.error, what).toBe('invalid_signature');
    }
    expect(await snapshot(fx)).toEqual(before);
    // At the edge of the tolerance, the same result is accepted.
    expect((await fx.webhook(body, { timestampSeconds: now - 300 })).body.outcome).toBe('applied');
  });

  it('ASignatureSentAsTwoHeaderLinesIsAcceptedWhicheverLineHoldsTheValidOne', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    /** POSTs `body` with each `webhook-signature` value on a line of its own (node:http sends them as given). */
    const twoLines = (body: string, signatures: string[]) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const signed = signCallWebhook(TEST_SECRET, `msg_${contacts.length}${signatures.length}${body.length}`, Math.floor(fx.clock.now() / 1000), body);
        const url = new URL(fx.url);
        const req = httpRequest({ host: url.hostname, port: url.port, method: 'POST', path: '/v1/calls/webhook' }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.setHeader('content-type', 'application/json');
        req.setHeader('webhook-id', signed['webhook-id']!);
        req.setHeader('webhook-timestamp', signed['webhook-timestamp']!);
        req.setHeader('webhook-signature', signatures.map((s) => (s === 'valid' ? signed['webhook-signature']! : s)));
        req.end(body);
      });
    const rotated = 'v1,' + Buffer.from('a signature of the previous secret').toString('base64');
    expect(await twoLines(JSON.stringify(result(batchId, contacts[0]!)), ['valid', rotated])).toEqual({ status: 200, body: { outcome: 'applied', code: 'NO_PICKUP', retryable: true } });
    expect(await twoLines(JSON.stringify(result(batchId, contacts[1]!)), [rotated, 'valid'])).toEqual({ status: 200, body: { outcome: 'applied', code: 'NO_PICKUP', retryable: true } });
    expect((await twoLines(JSON.stringify(result(batchId, contacts[1]!)), [rotated, rotated])).status).toBe(401);
  });

  it('ABodyOneByteOverTheCapIs413EvenWhenSigned', async () => {
    const { fx, batchId, contacts } = await callingBatch(1);
    const base = JSON.stringify({ ...result(batchId, contacts[0]!), pad: '' });
    const padded = (size: number) => base.replace('"pad":""', `"pad":"${'x'.repeat(size - base.length)}"`);
    const before = await snapshot(fx);
    const over = await fx.webhook(padded(INTAKE_MAX_BODY_BYTES + 1));
    expect(over.status).toBe(413);
    expect(over.body.error).toBe('payload_too_large');
    expect(await snapshot(fx)).toEqual(before);
    // At the cap exactly, the body is read (unknown keys are dropped) and the result applies.
    expect(await fx.webhook(padded(INTAKE_MAX_BODY_BYTES))).toMatchObject({ status: 200, body: { outcome: 'applied' } });
  });

  it('ASchemaErrorIs400NamingTheFieldAndWritesNothing', async () => {
    const { fx, batchId, contacts } = await callingBatch(1);
    const before = await snapshot(fx);
    const cases: [Record<string, unknown>, string][] = [
      [result(batchId, '0049301234'), 'body.contactNumber'],
      [result(batchId, contacts[0]!, { durationSeconds: 'ten' }), 'body.durationSeconds'],
      [result(batchId, contacts[0]!, { emptyTranscription: 'yes' }), 'body.emptyTranscription'],
      [result(batchId, contacts[0]!, { code: 'NO PICKUP!' }), 'body.code'],
      [{ contactNumber: contacts[0], callId: callIdFor('b', contacts[0]!, { round: 1, page: 0, pos: 0 }), code: 'NO_PICKUP', emptyTranscription: true, durationSeconds: 0 }, 'body.batchId'],
      [result(batchId, contacts[0]!, { callId: '' }), 'body.callId'],
    ];
    for (const [body, path] of cases) {
      const response = await fx.webhook(body);
      expect(response.status, path).toBe(400);
      expect(response.body.issues.map((i: { path: string }) => i.path), path).toEqual([path]);
    }
    const notJson = await fx.webhook('{"batchId":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error).toBe('invalid_json');
    expect(await snapshot(fx)).toEqual(before);
  });

  it('UnderScaledJobTimeSignaturesAreCheckedAgainstTheWallClock', async () => {
    // The local runtime's TIME_SCALE moves job time ahead; the AI handler still signs with the wall clock.
    const wall = new ManualClock(Date.parse('2026-01-05T09:00:00Z'));
    const fx = await callsFixture({ start: Date.parse('2026-03-01T00:00:00Z'), wallClock: wall, resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const [contact] = numbers(1);
    const batchId = await fx.createBatch({ numbers: [contact!], maxAttempts: 1 });
    await fx.quiesce();
    const body = result(batchId, contact!);
    expect((await fx.webhook(body, { timestampSeconds: Math.floor(fx.clock.now() / 1000) })).status).toBe(401);
    expect((await fx.webhook(body)).body.outcome).toBe('applied');
  });

  it('ThePublishedTestVectorPassesTheSignatureCheck', async () => {
    // At the vector's own time, its signature is accepted: the request reaches the schema (400), not 401.
    const fx = await callsFixture({ start: 1614265330_000 });
    fixtures.push(fx);
    expect(TEST_SECRET).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const response = await fetch(`${fx.url}/v1/calls/webhook`, {
      method: 'POST',
      body: '{"test": 2432232314}',
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' },
    });
    expect(response.status).toBe(400);
    const tampered = await fetch(`${fx.url}/v1/calls/webhook`, {
      method: 'POST',
      body: '{"test": 2432232315}',
      headers: { 'content-type': 'application/json', 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' },
    });
    expect(tampered.status).toBe(401);
  });
});
