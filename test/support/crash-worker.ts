// A worker process for the crash test: it claims one job and runs a handler that never returns, after
// telling its parent it is running. The parent kills it with SIGKILL.
import * as z from 'zod';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { defaultPolicy, defineKind, handle } from '../../functions/jobs/index.ts';
import { createLocalHost } from '../../functions/local/host.ts';

const [endpoint, table, jobId] = process.argv.slice(2) as [string, string, string];
const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials });
const kind = defineKind({ kind: 'test.crash', queue: 'ops', policy: defaultPolicy, args: z.object({}), description: 'hangs' });
const hang = handle(kind, async () => {
  process.stdout.write('running\n');
  await new Promise(() => undefined);
});
const host = await createLocalHost({
  db: clients.dynamo,
  // Only the jobs table is touched here.
  tableNames: { jobs: table, mail: 'unused', calls: 'unused', webhooks: 'unused', calendar: 'unused' },
  clock: systemClock,
  rng: seededRng(1),
  logger: createLogger('crash-worker'),
  metrics: new MemoryMetrics(),
  transport: { sendMessage: () => Promise.resolve(), createSchedule: () => Promise.resolve(), deleteSchedule: () => Promise.resolve() },
  workers: [],
});
await host.jobs.executor('ops', [hang]).execute({ jobId, seq: 1 });
