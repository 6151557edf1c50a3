// npm run bench: every benchmark, in one run, against one DynamoDB Local (in memory). Ratios are
// measured in the same run so they survive a slower or faster machine; docs/benchmarks.md records them.
import { cpus } from 'node:os';
import { startDynamoDbLocal } from '../functions/platform/local/dynamodb-local.ts';
import { benchCalls } from './calls.ts';
import { benchJobs } from './jobs.ts';
import { benchBacklog, benchDeadEndpoint } from './webhooks.ts';

process.env['LOG_LEVEL'] ??= 'ERROR';
const only = process.argv[2];
const dynamo = await startDynamoDbLocal();
console.log(`redial benchmarks — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), DynamoDB Local in memory`);
try {
  if (!only || only === 'jobs') {
    console.log('\n## job layer');
    const result = await benchJobs(dynamo.endpoint);
    for (const line of result.lines) console.log(`  ${line}`);
  }
  if (!only || only === 'calls') {
    console.log('\n## calls intake');
    const result = await benchCalls(dynamo.endpoint);
    for (const line of result.lines) console.log(`  ${line}`);
  }
  if (!only || only === 'webhooks') {
    console.log('\n## webhooks');
    for (const line of (await benchDeadEndpoint(dynamo.endpoint)).lines) console.log(`  ${line}`);
    for (const line of (await benchBacklog(dynamo.endpoint)).lines) console.log(`  ${line}`);
  }
} finally {
  await dynamo.stop();
}
