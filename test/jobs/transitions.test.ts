import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../functions/platform/clock.ts';
import { TransitionRefusedError } from '../../functions/jobs/errors.ts';
import { checkKey, checkShard } from '../../functions/jobs/row.ts';
import type { JobRow } from '../../functions/jobs/row.ts';
import { allStates, canTransition, transitions } from '../../functions/jobs/states.ts';
import type { JobState, TransitionName } from '../../functions/jobs/states.ts';
import type { ClaimedJob, JobStore } from '../../functions/jobs/store.ts';
import { jobsFixture } from '../support/jobs.ts';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

/** Writes a job row directly in `state`, due, holding an expired lease, so any transition's other conditions hold. */
async function rowIn(fx: Awaited<ReturnType<typeof jobsFixture>>, state: JobState, id: string): Promise<JobRow> {
  const row: JobRow = {
    id,
    kind: 'test.transition',
    queue: 'ops',
    state,
    args: {},
    attempt: 1,
    maxAttempts: 5,
    seq: 1,
    scheduledAt: iso(NOW - 60_000),
    createdAt: iso(NOW - 120_000),
    updatedAt: iso(NOW - 60_000),
    attemptedAt: iso(NOW - 60_000),
    leaseToken: 'lease-1',
    leaseUntil: iso(NOW - 1_000),
    attempts: [],
    snoozes: 0,
    checkShard: checkShard(id),
    checkAt: checkKey(NOW + 120_000, id),
  };
  await fx.clients.dynamo.send(new PutCommand({ TableName: fx.tableNames.jobs, Item: row }));
  return row;
}

/** Runs one named transition through the store's own write for it. */
function run(store: JobStore, name: TransitionName, row: JobRow): Promise<JobRow> {
  const claimed = row as ClaimedJob;
  switch (name) {
    case 'claim':
      return store.claim(row.id, row.seq, NOW, 60_000);
    case 'complete':
      return store.complete(claimed, NOW, 5);
    case 'retry':
      return store.retry(claimed, NOW, NOW + 1000, 'boom', 5);
    case 'snooze':
      return store.snooze(claimed, NOW, NOW + 1000, 'later');
    case 'discard':
      return store.discard(claimed, NOW, 'http_4xx', 'no', 5);
    case 'rescue':
      return store.rescue(row, NOW, { at: NOW + 1000 });
    case 'cancel':
      return store.cancel(row.id, NOW);
    case 'retryNow':
      return store.retryNow(row, NOW);
    case 'wake':
      return store.wake(row.id, NOW);
    case 'claimNext':
      return store.claimNext(row.id, row.queue, NOW, 60_000);
  }
}

describe('job state transitions, on DynamoDB Local', () => {
  let fx: Awaited<ReturnType<typeof jobsFixture>>;
  beforeAll(async () => {
    fx = await jobsFixture();
  });

  const cases = (Object.keys(transitions) as TransitionName[]).flatMap((name) => allStates.map((state) => ({ name, state, legal: canTransition(name, state) })));

  it('covers every transition from every state', () => {
    expect(cases).toHaveLength(Object.keys(transitions).length * 8);
    expect(cases.filter((c) => c.legal).length).toBeGreaterThan(10);
    expect(cases.filter((c) => !c.legal).length).toBeGreaterThan(30);
  });

  it.each(cases.filter((c) => c.legal))('$name from $state is applied and lands in a target state', async ({ name, state }) => {
    const row = await rowIn(fx, state, `legal-${name}-${state}`);
    const after = await run(fx.jobs.store, name, row);
    expect(transitions[name].to as readonly string[]).toContain(after.state);
    expect(after.updatedAt).toBe(iso(NOW));
  });

  it.each(cases.filter((c) => !c.legal))('$name from $state is refused with the stored row, and nothing changes', async ({ name, state }) => {
    const row = await rowIn(fx, state, `illegal-${name}-${state}`);
    const error = await run(fx.jobs.store, name, row).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TransitionRefusedError);
    expect((error as TransitionRefusedError).current?.state).toBe(state);
    expect(await fx.jobs.store.get(row.id)).toEqual(row);
  });

  it('an outcome write without the claim is refused even from running (another worker holds the lease)', async () => {
    const row = await rowIn(fx, 'running', 'foreign-lease');
    await expect(fx.jobs.store.complete({ ...(row as ClaimedJob), leaseToken: 'someone-else' }, NOW, 1)).rejects.toBeInstanceOf(TransitionRefusedError);
    expect((await fx.jobs.store.get(row.id))?.state).toBe('running');
  });

  it('rescue is refused while the lease is still live', async () => {
    const row = await rowIn(fx, 'running', 'live-lease');
    await expect(fx.jobs.store.rescue(row, Date.parse(row.leaseUntil!) - 5_000, { at: NOW + 1000 })).rejects.toBeInstanceOf(TransitionRefusedError);
  });
});
