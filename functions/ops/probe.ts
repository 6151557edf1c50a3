import * as z from 'zod';
import { defaultPolicy, defineKind, handle } from '../jobs/index.ts';

/**
 * ops.probe: a job that fails its first `failTimes` attempts, then succeeds. Ops enqueue it
 * (`npm run ops -- probe --fail 2`) to watch the job layer retry on its schedule, locally or on a
 * deployed stack, without touching any customer-facing pipeline.
 */
export const probeArgs = z.object({
  failTimes: z.number().int().min(0).max(20),
  note: z.string().max(200).optional(),
});

export const probeKind = defineKind({
  kind: 'ops.probe',
  queue: 'ops',
  policy: defaultPolicy,
  timeoutSeconds: 10,
  args: probeArgs,
  description: 'Fails its first failTimes attempts, then completes: a smoke test of retries.',
});

export const probeHandler = handle(probeKind, async (args, ctx) => {
  if (ctx.attempt <= args.failTimes) {
    throw new Error(`probe failure ${ctx.attempt} of ${args.failTimes}`);
  }
  ctx.logger.info('probe completed', { attempt: ctx.attempt });
});
