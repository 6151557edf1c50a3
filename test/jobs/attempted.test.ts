import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, handle, policy, schedule } from '../../functions/jobs/index.ts';
import type { DiscardedJob, JobHandler } from '../../functions/jobs/index.ts';
import { DISCARD_METRIC } from '../../functions/jobs/discards.ts';
import { jobsFixture } from '../support/jobs.ts';

/**
 * JobClient.enqueueAttempted: a job created after its first attempt was made by someone who had the work
 * in hand before the job existed. The job layer decides what the attempt means under the kind's policy
 * (as after a run of its own) and creates the job in that state, with the attempt in its history.
 */
const kind = defineKind({
  kind: 'test.adopted',
  queue: 'ops',
  policy: policy({ maxAttempts: 3, backoff: schedule([10, 60]) }),
  args: z.object({ n: z.number() }),
  discardReasons: ['refused'],
  description: 'a kind whose first attempt may be made before its job exists',
});

async function setup() {
  const hooked: DiscardedJob[] = [];
  let runs = 0;
  const handler = handle(
    kind,
    () => {
      runs++;
      return Promise.resolve();
    },
    {
      onDiscard: (_args, job) => {
        hooked.push(job);
        return Promise.resolve();
      },
    },
  ) as unknown as JobHandler<unknown>;
  const fx = await jobsFixture({ handlers: [handler] });
  const executor = fx.jobs.executor('ops', [handler]);
  const run = async (id: string) => executor.execute({ jobId: id, seq: (await fx.jobs.store.mustGet(id)).seq });
  return { fx, run, hooked, runs: () => runs };
}

describe('a job created after its first attempt (enqueueAttempted)', () => {
  it('ARetryableAttempt_CreatesTheJobRetryableAtItsBackoff_WithTheAttemptAsAttemptOne_AndTheJobLayerRunsItFromThere', async () => {
    const { fx, run, runs } = await setup();
    const at = fx.clock.now();
    fx.clock.advance(250);
    const row = await fx.jobs.client.enqueueAttempted(kind, { n: 1 }, { id: 'test.adopted:1', attempt: { at, durationMs: 250 }, outcome: { type: 'retryable', error: 'HTTP 503' } });
    expect(row).toMatchObject({ state: 'retryable', attempt: 1, maxAttempts: 3, seq: 1, counted: true });
    expect(row!.attempts).toEqual([{ attempt: 1, at: new Date(at).toISOString(), durationMs: 250, outcome: 'retryable', error: 'HTTP 503' }]);
    // The policy's first delay (10 s ± 10 %), from when the job was created.
    const due = Date.parse(row!.scheduledAt) - fx.clock.now();
    expect(due).toBeGreaterThanOrEqual(9_000);
    expect(due).toBeLessThanOrEqual(11_000);
    // Its wake-up is sent for that time, and its rescuer check comes a lease after it.
    expect(fx.recording.last()).toMatchObject({ kind: 'message', queue: 'ops', body: { jobId: 'test.adopted:1', seq: 1 } });
    expect(Date.parse(row!.checkAt.slice(0, row!.checkAt.indexOf('#')))).toBeGreaterThan(Date.parse(row!.scheduledAt));
    // From then on it is a job like any other: its second attempt is the job layer's.
    fx.clock.set(Date.parse(row!.scheduledAt));
    expect((await run('test.adopted:1')).result).toBe('completed');
    expect(runs()).toBe(1);
    expect((await fx.jobs.store.mustGet('test.adopted:1')).attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'retryable'],
      [2, 'completed'],
    ]);
    expect((await fx.jobs.client.count([kind.kind])).byKind[kind.kind]).toMatchObject({ retryable: 0, running: 0, completed: 1 });
  });

  it('ADiscardedOutcome_RunsTheKindsDiscardHookFirst_CreatesADeadLetterOpsCanList_AndCountsIt', async () => {
    const { fx, hooked } = await setup();
    const row = await fx.jobs.client.enqueueAttempted(kind, { n: 2 }, { id: 'test.adopted:2', attempt: { at: fx.clock.now(), durationMs: 5 }, outcome: { type: 'discarded', reason: 'refused', error: 'HTTP 422' } });
    expect(row).toMatchObject({ state: 'discarded', discardReason: 'refused', attempt: 1 });
    expect(hooked.map((j) => [j.id, j.reason])).toEqual([['test.adopted:2', 'refused']]);
    expect((await fx.jobs.client.list({ state: 'discarded', kind: kind.kind, reason: 'refused' })).jobs.map((j) => j.id)).toEqual(['test.adopted:2']);
    expect(fx.metrics.total(DISCARD_METRIC, { kind: kind.kind, reason: 'refused' })).toBe(1);
    const counts = await fx.jobs.client.count([kind.kind]);
    expect(counts.deadLetters).toEqual([{ state: 'discarded', kind: kind.kind, reason: 'refused', count: 1 }]);
    // Ops may retry it like any dead letter, its history kept.
    expect((await fx.jobs.client.retry('test.adopted:2')).state).toBe('available');
  });

  it('ADiscardWithNoAttempt_KeepsAnEmptyHistory_AndASnooze_GivesItsAttemptBack', async () => {
    const { fx } = await setup();
    const discarded = await fx.jobs.client.enqueueAttempted(kind, { n: 3 }, { id: 'test.adopted:3', outcome: { type: 'discarded', reason: 'refused', error: 'never tried' } });
    expect(discarded).toMatchObject({ state: 'discarded', attempt: 0, attempts: [] });
    const until = fx.clock.now() + 3_600_000;
    const snoozed = await fx.jobs.client.enqueueAttempted(kind, { n: 4 }, { id: 'test.adopted:4', attempt: { at: fx.clock.now(), durationMs: 1 }, outcome: { type: 'snoozed', until, delayMs: undefined, reason: 'Retry-After' } });
    expect(snoozed).toMatchObject({ state: 'snoozed', attempt: 0, attempts: [], snoozes: 1, scheduledAt: new Date(until).toISOString(), lastSnooze: { reason: 'Retry-After' } });
  });

  it('AnIdThatExistsAlready_WritesNothing', async () => {
    const { fx, hooked } = await setup();
    await fx.jobs.client.enqueue(kind, { n: 5 }, { id: 'test.adopted:5' });
    const before = await fx.jobs.store.mustGet('test.adopted:5');
    expect(await fx.jobs.client.enqueueAttempted(kind, { n: 5 }, { id: 'test.adopted:5', attempt: { at: fx.clock.now(), durationMs: 1 }, outcome: { type: 'retryable', error: 'x' } })).toBeUndefined();
    expect(await fx.jobs.store.mustGet('test.adopted:5')).toEqual(before);
    // A discard of an existing id runs its hook (as every decided discard does, before the write), then writes nothing.
    expect(await fx.jobs.client.enqueueAttempted(kind, { n: 5 }, { id: 'test.adopted:5', outcome: { type: 'discarded', reason: 'refused', error: 'x' } })).toBeUndefined();
    expect(await fx.jobs.store.mustGet('test.adopted:5')).toEqual(before);
    expect(hooked).toHaveLength(1);
  });
});
