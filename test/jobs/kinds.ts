import * as z from 'zod';
import { defineKind, discard, handle, snooze } from '../../functions/jobs/index.ts';
import type { JobContext, JobHandler, Policy } from '../../functions/jobs/index.ts';
import { DefaultBackoff } from '../../functions/jobs/policies.ts';
import { opsModule } from '../../functions/ops/module.ts';

/** The queue the test kinds run on (the ops context's): its timeout sets a claim's lease. */
export const testQueue = opsModule.queues.ops;

/** Test kinds on the ops queue, with a recorder of every run. */
export function testKinds(policy: Partial<Policy> = {}) {
  const fullPolicy: Policy = { maxAttempts: 5, backoff: DefaultBackoff, jitter: 0.1, onExhausted: 'discard_alert', ...policy };
  const runs: { kind: string; id: string; attempt: number; args: unknown }[] = [];
  const record = (kind: string, args: unknown, ctx: JobContext) => runs.push({ kind, id: ctx.id, attempt: ctx.attempt, args });

  const flakyKind = defineKind({
    kind: 'test.flaky',
    queue: 'ops',
    policy: fullPolicy,
    args: z.object({ failTimes: z.number().int() }),
    description: 'fails N times',
  });
  const flaky = handle(flakyKind, async (args, ctx) => {
    record('test.flaky', args, ctx);
    if (ctx.attempt <= args.failTimes) throw new Error(`failure ${ctx.attempt}`);
  });

  const snoozyKind = defineKind({
    kind: 'test.snoozy',
    queue: 'ops',
    policy: fullPolicy,
    args: z.object({ snoozes: z.number().int(), thenFail: z.boolean() }),
    description: 'snoozes N times, then fails or succeeds',
  });
  let snoozeCount = 0;
  const snoozy = handle(snoozyKind, async (args, ctx) => {
    record('test.snoozy', args, ctx);
    if (snoozeCount < args.snoozes) {
      snoozeCount++;
      throw snooze({ delayMs: 30_000 }, `busy ${snoozeCount}`);
    }
    if (args.thenFail) throw new Error('still failing');
  });

  const pickyKind = defineKind({
    kind: 'test.picky',
    queue: 'ops',
    policy: fullPolicy,
    args: z.object({ status: z.number().int() }),
    description: 'discards on 4xx',
  });
  const picky = handle(pickyKind, async (args, ctx) => {
    record('test.picky', args, ctx);
    if (args.status >= 400) throw discard('http_4xx', `receiver answered ${args.status}`);
  });

  const slowKind = defineKind({
    kind: 'test.slow',
    queue: 'ops',
    policy: fullPolicy,
    timeoutSeconds: 0.2,
    args: z.object({}),
    description: 'hangs past its timeout',
  });
  const slow = handle(slowKind, async (args, ctx) => {
    record('test.slow', args, ctx);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  });

  const handlers = [flaky, snoozy, picky, slow] as unknown as JobHandler<never>[];
  return { flakyKind, snoozyKind, pickyKind, slowKind, handlers, runs, runsOf: (id: string) => runs.filter((r) => r.id === id) };
}
