import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { FINALISE_CHUNK } from '../../functions/calls/finaliser.ts';
import { jobIds } from '../../functions/calls/model.ts';
import type { JobContext } from '../../functions/jobs/index.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

describe('finaliser: pages through the round, idempotent, resumable', () => {
  it('ACrashMidwayAndTwoDuplicateRunsStillPromoteEachRetryableContactExactlyOnce', async () => {
    // 150 contacts: two steps of at most 100. Every third completes; the rest do not pick up.
    const all = numbers(150);
    const retryable = all.filter((_, i) => i % 3 !== 0);
    const fx = await callsFixture({ script: ({ contactNumber, round }) => (round === 1 && retryable.includes(contactNumber) ? 'noPickup' : 'completed'), resultDelayMs: () => 30_000 });
    fixtures.push(fx);
    expect(all.length).toBeGreaterThan(FINALISE_CHUNK);
    const batchId = await fx.createBatch({ numbers: all, maxAttempts: 2, concurrencyLimit: 150, retry: { baseSeconds: 600, capSeconds: 3600 } });

    // The finaliser's second step fails as if its worker lost DynamoDB midway (the first step committed).
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let promotionSteps = 0;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand && JSON.stringify(command.input).includes('"finPos"') && ++promotionSteps === 2) {
        return Promise.reject(Object.assign(new Error('We encountered an internal error. Please try again.'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } }));
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };

    const finalise = fx.handlers.find((h) => h.kind.kind === 'calls.finalise')!;
    const ctx = (): JobContext => ({
      id: jobIds.finalise(batchId, 1),
      kind: 'calls.finalise',
      attempt: 1,
      maxAttempts: 10,
      policy: finalise.kind.policy,
      isLastAttempt: false,
      createdAt: new Date(fx.clock.now()).toISOString(),
      signal: new AbortController().signal,
      logger: createLogger('test'),
      now: () => fx.clock.now(),
      runNext: async () => 'declined',
    });
    let halfway: any;
    let halfwayContacts: Map<string, { status: string; code: string | null }> | undefined;
    let duplicates: PromiseSettledResult<void>[] | undefined;
    await fx.settle(undefined, async () => {
      if (duplicates) return;
      const job = await fx.jobs.store.get(jobIds.finalise(batchId, 1));
      if (job?.state !== 'retryable') return;
      halfway = await fx.store.getBatch(batchId);
      halfwayContacts = await fx.contactViews(batchId);
      // While the job waits for its backoff, two more workers run the same finaliser at once.
      duplicates = await Promise.allSettled([finalise.run({ batchId, round: 1 }, ctx()), finalise.run({ batchId, round: 1 }, ctx())]);
    });

    // Halfway: the first step's promotions committed with the cursor, the second's did not.
    expect(halfway).toMatchObject({ round: 1, finPage: 0, finPos: FINALISE_CHUNK, nextPages: 1 });
    expect(halfway.nRetryEligible).toBe(retryable.filter((n) => all.indexOf(n) < FINALISE_CHUNK).length);
    // No contact was written by the promotion: the API derives RetryEligible for those the committed step
    // passed (their round-1 code is retryable, the finaliser's cursor is past them), as the counts say.
    for (const [i, n] of all.entries()) {
      const status = retryable.includes(n) && i < FINALISE_CHUNK ? 'RetryEligible' : 'Completed';
      expect(halfwayContacts!.get(n), n).toMatchObject({ status, code: retryable.includes(n) ? 'NO_PICKUP' : 'COMPLETED' });
    }
    expect(duplicates!.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);

    // The job's own retry found the round done and did nothing; round 2 dialled each retryable contact once.
    const job = await fx.jobs.store.mustGet(jobIds.finalise(batchId, 1));
    expect(job.state).toBe('completed');
    expect(job.attempts.map((a) => a.outcome)).toEqual(['retryable', 'completed']);
    const round2 = fx.simulator.calls.filter((c) => c.round === 2).map((c) => c.contactNumber);
    expect(round2).toEqual(retryable);
    const events = await fx.allEvents();
    expect(events.filter((e) => e.type === 'batch.round_scheduled').map((e) => e.data['contacts'])).toEqual([retryable.length]);
    expect(events.filter((e) => e.type === 'batch.finalised')).toHaveLength(1);
    const final = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(final).toMatchObject({ status: 'Finalised', round: 2, counts: { byStatus: { Completed: 150, RetryEligible: 0, Calling: 0, Queued: 0 }, byCode: { COMPLETED: 150 } } });
    const contacts = (await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts;
    expect(contacts.map((c: any) => c.attempts)).toEqual(all.map((n) => (retryable.includes(n) ? 2 : 1)));
  });

  it('RunningAFinaliserAgainAfterTheBatchMovedOnChangesNothing', async () => {
    const fx = await callsFixture({ script: () => 'noPickup' });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: numbers(3), maxAttempts: 2 });
    await fx.settle();
    const before = { calls: await fx.callsItems(), jobs: await fx.allJobs(), events: await fx.allEvents() };
    expect(before.calls.find((i) => i['sk'] === 'BATCH')).toMatchObject({ status: 'Finalised', round: 2 });
    const finalise = fx.handlers.find((h) => h.kind.kind === 'calls.finalise')!;
    for (const round of [1, 2]) {
      await finalise.run({ batchId, round }, {
        id: jobIds.finalise(batchId, round),
        kind: 'calls.finalise',
        attempt: 2,
        maxAttempts: 10,
        policy: finalise.kind.policy,
        isLastAttempt: false,
        createdAt: new Date(fx.clock.now()).toISOString(),
        signal: new AbortController().signal,
        logger: createLogger('test'),
        now: () => fx.clock.now(),
        runNext: async () => 'declined',
      });
    }
    expect({ calls: await fx.callsItems(), jobs: await fx.allJobs(), events: await fx.allEvents() }).toEqual(before);
  });
});
