// npm run bench: every benchmark, in one run, against one DynamoDB Local (in memory). Ratios are
// measured in the same run so they survive a slower or faster machine; docs/benchmarks.md records them.
// npm run bench -- <section> [--json FILE] [--records FILE] [--unlimited] [--sent-requests FILE]: one section
// (jobs, calls, webhooks, capacity, import-parse: the CSV import's parsing alone, without DynamoDB; import: a
// 100,000-contact import end to end against raw BatchWriteItem; export: a 100,000-contact batch's export,
// page by page; bundles: each
// deployed function's bundle, bytes and cold import against the commit before per-function bundles); --json
// writes the capacity report (docs/capacity.md), --records every request it recorded, --unlimited runs the
// capacity day with every request and record at once, --sent-requests every AWS request of the day by
// deployed function (`node test/infra/iam/check.ts FILE`).
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoDbLocal } from '../functions/platform/local/dynamodb-local.ts';
import { benchBundles } from './bundles.ts';
import { benchCalls } from './calls.ts';
import { benchCapacity } from './capacity/index.ts';
import { benchImport } from './import.ts';
import { benchImportParse } from './import-parse.ts';
import { benchExport } from './export.ts';
import { benchJobs } from './jobs.ts';
import { benchRescue } from './rescue.ts';
import { benchBacklog, benchDeadEndpoint } from './webhooks.ts';

process.env['LOG_LEVEL'] ??= 'ERROR';
const sections = ['jobs', 'calls', 'webhooks', 'capacity', 'import-parse', 'import', 'export', 'bundles'];
const { values, positionals } = parseArgs({ allowPositionals: true, options: { json: { type: 'string' }, records: { type: 'string' }, unlimited: { type: 'boolean' }, 'sent-requests': { type: 'string' } } });
const only = positionals[0];
if (only !== undefined && !sections.includes(only)) {
  console.error(`unknown section "${only}"; one of: ${sections.join(', ')}`);
  process.exit(2);
}
// import-parse and bundles alone need no database. The JVM's default compilers, as docs/benchmarks.md's figures were taken.
const dynamo = only === 'import-parse' || only === 'bundles' ? { endpoint: '', stop: async () => undefined } : await startDynamoDbLocal({ jit: 'full' });
console.log(`redial benchmarks — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), DynamoDB Local in memory`);
try {
  if (!only || only === 'jobs') {
    console.log('\n## job layer');
    const result = await benchJobs(dynamo.endpoint);
    for (const line of result.lines) console.log(`  ${line}`);
    for (const line of (await benchRescue(dynamo.endpoint)).lines) console.log(`  ${line}`);
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
  if (!only || only === 'capacity') {
    console.log('\n## capacity and cost (docs/capacity.md)');
    const result = await benchCapacity(dynamo.endpoint, { ...(values.json ? { json: values.json } : {}), ...(values.records ? { records: values.records } : {}), ...(values.unlimited ? { unlimited: true } : {}), ...(values['sent-requests'] ? { sentRequests: values['sent-requests'] } : {}) });
    for (const line of result.lines) console.log(`  ${line}`);
  }
  if (!only || only === 'import-parse') {
    console.log('\n## contacts CSV import: parsing and validation (functions/calls/contacts)');
    for (const line of (await benchImportParse()).lines) console.log(`  ${line}`);
  }
  if (!only || only === 'import') {
    console.log('\n## contacts CSV import at campaign size: upload, import request, import job (functions/calls/imports)');
    for (const line of (await benchImport(dynamo.endpoint)).lines) console.log(`  ${line}`);
  }
  if (!only || only === 'export') {
    console.log('\n## results out: GET /v1/batches/{id}/export over a 100,000-contact batch (functions/calls/export-api.ts)');
    for (const line of (await benchExport(dynamo.endpoint)).lines) console.log(`  ${line}`);
  }
  if (!only || only === 'bundles') {
    console.log('\n## Lambda bundles: bytes and cold import, before and after per-function bundles');
    for (const line of (await benchBundles(join(import.meta.dirname, '..'))).lines) console.log(`  ${line}`);
  }
} finally {
  await dynamo.stop();
}
