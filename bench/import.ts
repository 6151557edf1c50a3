// npm run bench -- import: a 100,000-contact CSV (number, external_id and 5 variable columns, about 17 MB)
// imported end to end on DynamoDB Local, against the raw BatchWriteItem rate of the same data items in the
// same run. Each measurement runs in a child process of its own (its peak RSS is its own):
//   raw     the file's contacts read and their data items (store.ts contactDataItems) written with
//           store.putItems, page by page (500 items, 25 a request, 8 requests at a time): only the writes
//           are timed — the rate a loader that did nothing but BatchWriteItem would reach;
//   import  the local host (functions/local/host.ts) with its calls worker: POST /v1/uploads, the file PUT
//           to its URL, POST /v1/batches/imports (the whole file read, validated and staged), then the
//           calls.import job until the batch is Pending; timed from the import request to Pending.
// Figures: contacts/s of each, their ratio (goal ≥ 0.7), the import's peak RSS (goal ≤ 256 MB), DynamoDB
// requests per contact (every request the child sent while importing, the job layer's included).
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { fmt } from './support.ts';

const ROWS = 100_000;
/** The heap cap of the second import run. */
const CAPPED_HEAP_MB = 96;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const file = join(root, '.bench', 'import', `contacts-${ROWS}.csv`);

/** Distinct valid numbers: London and San Francisco, alternately. */
const numberOf = (i: number): string => (i % 2 === 0 ? `+44 20 ${70_000_000 + i}` : `+1 415 ${2_000_000 + i}`);
const WORDS = ['alpha', 'Zoë', 'Müller', 'O\'Brien', 'north, east', 'said "yes"', 'plan B; later', '00123', '=1+1'];

async function writeFixture(): Promise<void> {
  if (existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  const out = createWriteStream(file);
  const quote = (cell: string) => (/[",\n;]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell);
  out.write('number,external_id,first_name,plan,amount,note,segment\r\n');
  for (let i = 0; i < ROWS; i++) {
    const word = (k: number) => WORDS[(i * 7 + k * 3) % WORDS.length]!;
    const cells = [numberOf(i), `crm-${String(i).padStart(8, '0')}`, `${word(1)} ${i}`, word(2), String((i * 37) % 10_000), `${word(3)} ${word(4)} ${i % 977}`, `seg-${i % 12}`];
    if (!out.write(cells.map(quote).join(',') + '\r\n')) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

interface ChildResult {
  ms: number;
  contacts: number;
  items?: number;
  requests: Record<string, number>;
  maxRssMb: number;
  stageMs?: number;
  acceptedRssMb?: number;
}

function child(mode: 'raw' | 'import', endpoint: string, ...flags: string[]): ChildResult {
  const result = spawnSync(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', mode, endpoint, file], { encoding: 'utf8', maxBuffer: 1 << 22, env: { ...process.env, LOG_LEVEL: 'ERROR' } });
  if (result.status !== 0) throw new Error(`import child ${mode} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as ChildResult;
}

const maxRssMb = () => process.resourceUsage().maxRSS / 1024;

async function runChild(mode: string, endpoint: string, path: string): Promise<ChildResult> {
  const { benchTables } = await import('./support.ts');
  const { clients, tableNames, counter } = await benchTables(endpoint);
  const { CallsStore } = await import('../functions/calls/store.ts');
  const store = new CallsStore(clients.dynamo, tableNames.calls);
  if (mode === 'raw') {
    const { readContactsCsv } = await import('../functions/calls/contacts/csv-import.ts');
    const batchId = 'b_acme.00000000000000000000000000000001';
    let ms = 0;
    let items = 0;
    let contacts = 0;
    counter.reset();
    for await (const event of readContactsCsv(createReadStream(path), {})) {
      if (event.type !== 'page') continue;
      const data = CallsStore.contactDataItems(batchId, event.contacts, Date.now()) as unknown as Record<string, unknown>[];
      const started = performance.now();
      const written = await store.putItems(data);
      ms += performance.now() - started;
      if (written.unprocessed > 0) throw new Error('DynamoDB Local left items unprocessed');
      items += data.length;
      contacts += event.contacts.length;
    }
    return { ms, contacts, items, requests: counter.toJSON(), maxRssMb: maxRssMb() };
  }

  const { createLocalHost } = await import('../functions/local/host.ts');
  const { systemClock } = await import('../functions/platform/clock.ts');
  const { seededRng } = await import('../functions/platform/rng.ts');
  const { createLogger } = await import('../functions/platform/logger.ts');
  const { callsDefaults } = await import('../functions/calls/config.ts');
  const { freePort } = await import('../functions/platform/local/dynamodb-local.ts');
  const { createAwsClients, localCredentials } = await import('../functions/platform/aws.ts');
  const port = await freePort();
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock: systemClock,
    rng: seededRng(26),
    logger: createLogger('bench-import'),
    // The import job runs on the calls queue; nothing dials (the dialer it leaves waits on `dial`).
    workers: ['calls'],
    contexts: { calls: { ...callsDefaults, placerUrl: 'http://127.0.0.1:9/calls', callbackUrl: `http://127.0.0.1:${port}/v1/calls/webhook`, webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', callTimeoutSeconds: 600 } },
    serve: { port },
  });
  try {
    const url = host.url!;
    const call = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${url}${route}`, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    if ((await call('PUT', '/v1/tenants/acme', { concurrencyLimit: 10 })).status !== 200) throw new Error('tenant');
    const key = (await call('POST', '/v1/tenants/acme/keys')).body['key'] as string;
    const auth = { authorization: `Bearer ${key}` };
    const upload = await call('POST', '/v1/uploads', undefined, auth);
    // Streamed from disk, as a client would send a 50 MB file.
    const put = await fetch(upload.body['url'] as string, { method: 'PUT', body: Readable.toWeb(createReadStream(path)) as ReadableStream, duplex: 'half' });
    if (put.status !== 200) throw new Error(`upload PUT: ${put.status}`);
    counter.reset();
    const started = performance.now();
    const accepted = await call('POST', '/v1/batches/imports', { uploadId: upload.body['uploadId'], maxAttempts: 1 }, auth);
    const stageMs = performance.now() - started;
    const acceptedRssMb = maxRssMb();
    if (accepted.status !== 202) throw new Error(`import: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    const batchId = accepted.body['batchId'] as string;
    // Watched through clients of its own, so the watching is not counted as the import's requests.
    const watcher = new CallsStore(createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials }).dynamo, tableNames.calls);
    for (;;) {
      const batch = await watcher.getBatch(batchId);
      if (batch?.status === 'Pending') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const ms = performance.now() - started;
    const batch = (await store.getBatch(batchId))!;
    if (batch.contactCount !== ROWS) throw new Error(`imported ${batch.contactCount} of ${ROWS}`);
    return { ms, stageMs, acceptedRssMb, contacts: batch.contactCount, requests: counter.toJSON(), maxRssMb: maxRssMb() };
  } finally {
    await host.stop();
  }
}

export async function benchImport(endpoint: string): Promise<{ lines: string[] }> {
  await writeFixture();
  const raw = child('raw', endpoint);
  const imported = child('import', endpoint);
  // Again with the heap capped as a Lambda's memory size would cap it (NODE_OPTIONS on a 256 MB function).
  const capped = child('import', endpoint, `--max-old-space-size=${CAPPED_HEAP_MB}`);
  const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  // Both in contacts/s: the raw loader writes exactly the data items the import writes (a contact's DATA#
  // item and its XID# entry), so the ratio is what staging, list pages, transactions and the job layer cost.
  const rawRate = raw.contacts / (raw.ms / 1000);
  const importRate = imported.contacts / (imported.ms / 1000);
  const calls = Object.entries(imported.requests).filter(([op]) => op.startsWith('DynamoDB.'));
  return {
    lines: [
      `file: ${ROWS.toLocaleString('en-GB')} rows, 7 columns (${fmt(readFileSync(file).byteLength / 2 ** 20, 1)} MB), every contact with an external_id and variables`,
      `raw BatchWriteItem of the same data items (${fmt(raw.items!)} for ${fmt(raw.contacts)} contacts): ${fmt(raw.ms / 1000, 1)} s, ${fmt(rawRate)} contacts/s (${total(raw.requests)} requests)`,
      `import, request to Pending: ${fmt(imported.ms / 1000, 1)} s, ${fmt(importRate)} contacts/s — ${fmt(importRate / rawRate, 2)} of the raw rate (goal ≥ 0.7)`,
      `  of which the import request (read, validate, stage; 202): ${fmt(imported.stageMs! / 1000, 1)} s; the job: ${fmt((imported.ms - imported.stageMs!) / 1000, 1)} s`,
      `peak RSS of the importing process (API and job in one): ${fmt(imported.maxRssMb)} MB (${fmt(imported.acceptedRssMb!)} MB by the 202), goal ≤ 256; raw loader's ${fmt(raw.maxRssMb)} MB`,
      `  with --max-old-space-size=${CAPPED_HEAP_MB}: ${fmt(capped.maxRssMb)} MB (${fmt(capped.acceptedRssMb!)} MB by the 202), ${fmt(capped.contacts / (capped.ms / 1000))} contacts/s (${fmt(capped.ms / 1000, 1)} s)`,
      `DynamoDB requests per contact: ${fmt(total(Object.fromEntries(calls)) / imported.contacts, 3)} (${calls.map(([op, n]) => `${op.replace('DynamoDB.', '')} ${n}`).join(', ')})`,
    ],
  };
}

if (process.argv[2] === '--child') {
  const [mode, endpoint, path] = process.argv.slice(3) as [string, string, string];
  const result = await runChild(mode, endpoint, path);
  console.log(JSON.stringify(result));
  process.exit(0);
}
