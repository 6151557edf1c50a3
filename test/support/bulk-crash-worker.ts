// A process for the bulk-retry crash test: it retries every discarded job up to `until` and, once it has
// written `crashAfter` of the retries, stops hearing back from DynamoDB (the write is made, its answer never
// arrives) and tells its parent, which kills it with SIGKILL: a crash half-way, with writes in flight.
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { createLocalHost } from '../../functions/local/host.ts';

const [endpoint, table, until, crashAfter] = process.argv.slice(2) as [string, string, string, string];
const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials });
let retries = 0;
clients.dynamo.middlewareStack.add(
  (next, context) => async (args) => {
    // The document client's Key, before or after it is marshalled.
    const key = (args.input as { Key?: { id?: string | { S?: string } } }).Key?.id;
    const id = typeof key === 'string' ? key : (key?.S ?? '');
    const result = await next(args);
    // A job's own write (not a counter, not a rescuer's watermark).
    if (/^Update/.test(context.commandName ?? '') && id !== '' && !/^(count|dead|rescuer)#/.test(id) && ++retries >= Number(crashAfter)) {
      process.stdout.write(`crashing after ${retries}\n`);
      return new Promise<never>(() => undefined);
    }
    return result;
  },
  { step: 'initialize', name: 'crashHalfWay' },
);
const host = await createLocalHost({
  db: clients.dynamo,
  // Only the jobs table is touched here.
  tableNames: { jobs: table, mail: 'unused', calls: 'unused', webhooks: 'unused', calendar: 'unused' },
  clock: systemClock,
  rng: seededRng(1),
  logger: createLogger('bulk-crash-worker'),
  metrics: new MemoryMetrics(),
  transport: { sendMessage: () => Promise.resolve(), createSchedule: () => Promise.resolve(), deleteSchedule: () => Promise.resolve() },
  workers: [],
});
await host.jobs.client.retryMatching({ state: 'discarded', until: Number(until), limit: 1000 });
process.stdout.write('finished without crashing\n');
