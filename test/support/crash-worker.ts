// A worker process for the crash test: it claims one job and runs a handler that never returns, after
// telling its parent it is running. The parent kills it with SIGKILL.
import { z } from 'zod';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { defineKind, handle, policies } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';

const [endpoint, table, jobId] = process.argv.slice(2) as [string, string, string];
const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials });
const runtime = createJobRuntime({
  db: clients.dynamo,
  jobsTable: table,
  transport: { sendMessage: () => Promise.resolve(), createSchedule: () => Promise.resolve() },
  clock: systemClock,
  rng: seededRng(1),
  logger: createLogger('crash-worker'),
  metrics: new MemoryMetrics(),
});
const kind = defineKind({ kind: 'test.crash', queue: 'ops', policy: policies['ops.probe'], args: z.object({}), description: 'hangs' });
const hang = handle(kind, async () => {
  process.stdout.write('running\n');
  await new Promise(() => undefined);
});
await runtime.executor([hang as unknown as JobHandler<never>]).execute({ jobId, seq: 1 }, 'ops');
