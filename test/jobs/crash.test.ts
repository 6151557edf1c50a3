import { spawn } from 'node:child_process';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defaultPolicy, defineKind, handle } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { jobsFixture } from '../support/jobs.ts';

describe('a worker process killed mid-job', () => {
  it('KilledWithSigkillAfterItsClaimTheRescuerRunsTheJobAgainAndItEndsOnce', async () => {
    const runs: string[] = [];
    const kind = defineKind({ kind: 'test.crash', queue: 'ops', policy: defaultPolicy, args: z.object({}), description: 'completes' });
    const handler = handle(kind, async (_args, ctx) => {
      runs.push(ctx.id);
    }) as unknown as JobHandler<never>;
    const fx = await jobsFixture({ handlers: [handler], transport: 'local' });
    fx.clock.set(Date.now()); // the child process runs on the real clock
    const prepared = fx.jobs.client.prepare(kind, {});
    const { TransactWriteCommand } = await import('@aws-sdk/lib-dynamodb');
    await fx.clients.dynamo.send(new TransactWriteCommand({ TransactItems: [prepared.item] }));

    const child = spawn(process.execPath, ['test/support/crash-worker.ts', dynamoEndpoint(), fx.tableNames.jobs, prepared.id], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('running') && resolve());
      child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    const orphan = await fx.jobs.store.mustGet(prepared.id);
    expect(orphan.state).toBe('running');
    expect(orphan.attempt).toBe(1);

    const rescuer = fx.jobs.rescuer([handler], 180_000);
    fx.clock.set(Date.parse(orphan.leaseUntil!) + 1);
    expect(await rescuer.run()).toMatchObject({ expired: 1 });
    await fx.settle();

    const row = await fx.jobs.store.mustGet(prepared.id);
    expect(row.state).toBe('completed');
    expect(row.attempts.map((a) => a.outcome)).toEqual(['lost', 'completed']);
    expect(runs).toEqual([prepared.id]);
    expect(await rescuer.run()).toMatchObject({ expired: 0, rewoken: 0, periodic: 0 });
  });
});
