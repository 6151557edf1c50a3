import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { dayContactData } from './kinds.ts';
import { batchKey } from '../../functions/calls/model.ts';
import type { BatchRow } from '../../functions/calls/model.ts';
import { pendingStates } from '../../functions/jobs/states.ts';
import { DemoApi } from '../../functions/demo/client.ts';
import { tables } from '../../functions/app/system.ts';
import type { TableKey } from '../../functions/app/system.ts';
import type { TableDefinition } from '../../functions/platform/tables.ts';
import { inIndex, itemSize, projection } from '../../functions/platform/item-size.ts';
import type { CapacityHost } from './host.ts';
import { pricedItemKinds } from './kinds.ts';

/** One tenant of the day: its share of the contacts, split into batches, and its webhook endpoints. */
export interface TenantPlan {
  tenantId: string;
  /** Each batch's share of all contacts. */
  batches: number[];
  endpoints: number;
  /** How each endpoint behaves (by position; `normal` where none is given): see {@link EndpointProfile}. */
  profiles?: EndpointProfile[];
}

/**
 * How a customer's endpoint answers in the day. Answers come at once (no real delay is injected: a
 * slow endpoint is slow in the duration model, bill.ts `ENDPOINT_LATENCY`); what a profile changes in
 * the day itself is the status:
 * - `normal`, `slow`: 200;
 * - `down`: 503 without Retry-After for {@link DOWN_FOR_JOB_MINUTES} of job time from its first request (retryable: its
 *   deliveries probe on their backoff and the rest wait in the endpoint's list), then 200;
 * - `throttling`: 429 with `Retry-After: 30` to every third request (a snooze, no attempt spent), else 200.
 */
export type EndpointProfile = 'normal' | 'slow' | 'down' | 'throttling';

/**
 * How long the `down` endpoint is down, in job time. An hour, as the issue has it, would outlast the day's
 * ~60 minutes of calling and its backoff (5 s, 5 min, 30 min, then 2 h) would keep the miniature running
 * two more hours of job time for one probe; 20 minutes is a third of the day, as an hour is of a
 * three-hour calling window, and recovers at the 30-minute probe.
 */
export const DOWN_FOR_JOB_MINUTES = 20;
/** Every how many requests the `throttling` endpoint answers 429, and its Retry-After, seconds. */
export const THROTTLE_EVERY = 3;
export const THROTTLE_RETRY_AFTER_SECONDS = 30;

/**
 * A representative day in miniature: eight tenants, the largest with 20 % of the contacts in two batches
 * of 10 % (the largest batches: the skew docs/capacity.md models), every other batch at most 9 %, the
 * tenants from 16 % down to 9 %; one webhook endpoint each, three for three tenants of 9 % (27 % of the
 * contacts); every batch up to three rounds, as the demo's. Call outcomes come from the built-in simulator's default mix, so about
 * half of the calls are retryable and are called again: a batch's share of the results varies around its
 * share of the contacts, and the report says what the largest drew.
 */
export const representativeDay: readonly TenantPlan[] = [
  { tenantId: 'acme', batches: [0.1, 0.1], endpoints: 1 },
  { tenantId: 'globex', batches: [0.09, 0.07], endpoints: 1, profiles: ['slow'] },
  { tenantId: 'initech', batches: [0.08, 0.06], endpoints: 1 },
  { tenantId: 'tyrell', batches: [0.08, 0.06], endpoints: 1 },
  { tenantId: 'umbrella', batches: [0.09], endpoints: 3, profiles: ['normal', 'normal', 'down'] },
  { tenantId: 'hooli', batches: [0.09], endpoints: 3, profiles: ['normal', 'throttling', 'normal'] },
  { tenantId: 'stark', batches: [0.09], endpoints: 3, profiles: ['slow', 'normal', 'normal'] },
  { tenantId: 'wayne', batches: [0.09], endpoints: 1 },
];

/** The profile of a day's endpoint, by the path it was registered with (`/hooks/<tenant>/<n>`). */
export function profileOf(path: string): EndpointProfile {
  const [, , tenantId, n] = path.split('/');
  return representativeDay.find((t) => t.tenantId === tenantId)?.profiles?.[Number(n)] ?? 'normal';
}

export const ROUNDS = 3;
const RETRY = { baseSeconds: 60, capSeconds: 600 };

/** What the day did, observed outside the recorder. */
export interface DayOutcome {
  batches: { batchId: string; tenantId: string; contacts: number; status: string; rounds: number }[];
  /** Calls placed, per tenant and per batch: every call ends in exactly one result. */
  resultsByTenant: Record<string, number>;
  resultsByBatch: Record<string, number>;
  results: number;
  mails: number;
  deliveries: number;
  /** Schedules still waiting when the day's jobs were done, fired at its end. */
  leftoverSchedules: number;
  /** What the day left stored, per table and index (`jobs.byCheck`): bytes billed (100 per item on top) and items. */
  stored: Record<string, { bytes: number; items: number }>;
  /** Of that, each priced kind's (kinds.ts): its items and their index entries. */
  storedByKind: Record<string, { bytes: number; items: number }>;
  /** The attempt log's rows the day left, by who sent the attempt, and how many delivered. */
  attemptRows: { job: number; waitList: number; delivered: number };
  /** Requests the endpoints received, by profile and status, and the bytes they received (request lines, headers, bodies). */
  endpointRequests: Record<EndpointProfile, { requests: number; byStatus: Record<string, number> }>;
  /** Requests each endpoint received, by the path it was registered with. */
  endpointRequestsByPath: Record<string, number>;
  deliveryBytes: number;
  /** Bytes the call placer received, and the calls it was asked to place. */
  placerBytes: number;
  /** This process's CPU time over the day (user and system), ms: every stretch of JavaScript here, the simulator's and receivers' too. */
  processCpuMs: number;
  realSeconds: number;
  jobTimeSeconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Customer endpoints on 127.0.0.1: each answers at once as its profile says, and counts what it received. */
async function startReceivers(jobMinutes: () => number): Promise<{ url: string; received: () => number; byProfile: DayOutcome['endpointRequests']; byPath: Record<string, number>; bytes: () => number; close: () => Promise<void> }> {
  let received = 0;
  const byPath: Record<string, number> = {};
  let bytes = 0;
  // The outage starts with the endpoint's first request (its batch may be dialled late in the day).
  let downSince: number | undefined;
  const byProfile = Object.fromEntries((['normal', 'slow', 'down', 'throttling'] as const).map((p) => [p, { requests: 0, byStatus: {} }])) as DayOutcome['endpointRequests'];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      byPath[req.url ?? ''] = (byPath[req.url ?? ''] ?? 0) + 1;
      const profile = profileOf(req.url ?? '');
      const entry = byProfile[profile];
      entry.requests++;
      if (profile === 'down') downSince ??= jobMinutes();
      const status = profile === 'down' && jobMinutes() - downSince! < DOWN_FOR_JOB_MINUTES ? 503 : profile === 'throttling' && entry.requests % THROTTLE_EVERY === 1 ? 429 : 200;
      entry.byStatus[status] = (entry.byStatus[status] ?? 0) + 1;
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': String(THROTTLE_RETRY_AFTER_SECONDS) } : {}) }).end(status === 200 ? '{"ok":true}' : '{"ok":false}');
    });
  });
  const open = new Set<Socket>();
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => {
      bytes += socket.bytesRead;
      open.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => received,
    byProfile,
    byPath,
    bytes: () => bytes + [...open].reduce((n, socket) => n + socket.bytesRead, 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Sets the day up (tenants with confirmed owners, endpoints), clears the recorder so setup is not counted,
 * then runs it: every batch created through the API at once, dialled, called, retried and finalised, every
 * event delivered and every mail sent. Returns when nothing is pending, observed with unrecorded clients.
 */
export async function runDay(host: CapacityHost, contacts: number, options: { timeoutMs: number; log: (line: string) => void }): Promise<DayOutcome> {
  const api = new DemoApi(host.url);
  let dayStartedAt: number | undefined;
  const receivers = await startReceivers(() => (dayStartedAt === undefined ? Infinity : (host.clock.now() - dayStartedAt) / 60_000));
  // Each tenant's back end calls the tenant routes with an API key of its own (an operator issued it).
  const tenants = new Map<string, DemoApi>();
  try {
    for (const tenant of representativeDay) {
      const owner = `owner@${tenant.tenantId}.capacity.local`;
      await api.put(`/v1/tenants/${tenant.tenantId}`, { concurrencyLimit: 1000, ownerEmail: owner });
      await api.post(await confirmationPath(host, owner));
      const { key } = await api.post<{ key: string }>(`/v1/tenants/${tenant.tenantId}/keys`);
      const as = api.as(key);
      tenants.set(tenant.tenantId, as);
      for (let e = 0; e < tenant.endpoints; e++) {
        await as.post('/v1/endpoints', { url: `${receivers.url}/hooks/${tenant.tenantId}/${e}` });
      }
    }
    await Promise.all(host.localQueues.map((q) => q.idle()));
    const mailsBefore = host.smtpSink.messages().length;
    host.recorder.clear();
    const cpuBefore = process.cpuUsage();

    const startedReal = Date.now();
    const startedJob = host.clock.now();
    dayStartedAt = startedJob;
    const placerBytesBefore = host.placerBytes();
    const created = await Promise.all(
      representativeDay.flatMap((tenant, t) =>
        tenant.batches.map(async (share, b) => {
          const count = Math.round(share * contacts);
          // Contacts as a CRM exports them: the customer's key and a few prompt variables each (kinds.ts prices them).
          const numbers = Array.from({ length: count }, (_, i) => ({ number: `+1${2 + t}${String(b).padStart(2, '0')}${String(i).padStart(7, '0')}`, ...dayContactData(i) }));
          const { batchId } = await tenants.get(tenant.tenantId)!.post<{ batchId: string }>('/v1/batches', { contacts: numbers, maxAttempts: ROUNDS, retry: RETRY });
          return { batchId, tenantId: tenant.tenantId, contacts: count };
        }),
      ),
    );
    options.log(`${created.length} batches, ${created.reduce((n, b) => n + b.contacts, 0)} contacts, ${representativeDay.length} tenants`);

    let lastPhase = '';
    let lastLogged = 0;
    for (;;) {
      const batches = await Promise.all(created.map((b) => readBatch(host, b.batchId)));
      const finalised = batches.filter((b) => b?.status === 'Finalised').length;
      const pending = finalised === batches.length ? await pendingJobs(host) : -1;
      const line = `  … ${finalised}/${batches.length} batches finalised, ${host.simulator.calls.length} calls, ${pending >= 0 ? `${pending} jobs pending` : 'calling'} (${((Date.now() - startedReal) / 1000).toFixed(0)} s)`;
      // A line when a batch finalises or the day moves to its last phase, and every ten seconds besides.
      const phase = `${finalised}/${pending >= 0}`;
      if (phase !== lastPhase || Date.now() - lastLogged >= 10_000) {
        options.log(line);
        lastPhase = phase;
        lastLogged = Date.now();
      }
      if (pending === 0 && host.simulator.inProgress === 0) {
        await host.simulator.idle();
        await Promise.all(host.localQueues.map((q) => q.idle()));
        if ((await pendingJobs(host)) === 0) break;
      }
      if (Date.now() - startedReal > options.timeoutMs) throw new Error(`the day did not settle within ${options.timeoutMs / 1000} s: ${line}`);
      await sleep(500);
    }

    // Schedules that outlived their jobs fire later on AWS (a parked delivery's six-hour wake-up, after the
    // lease was handed to it): fired now, so what they cost is in the day.
    const leftover = host.firePendingSchedules();
    await sleep(100);
    await Promise.all(host.localQueues.map((q) => q.idle()));
    const pendingAfter = await pendingJobs(host);
    if (pendingAfter > 0) throw new Error(`${pendingAfter} jobs pending after the ${leftover} leftover schedules fired`);
    options.log(`${leftover} schedules were still waiting at the end of the day: fired, as they would be on AWS`);

    const tenantOf = new Map(created.map((b) => [b.batchId, b.tenantId]));
    const resultsByTenant: Record<string, number> = {};
    const resultsByBatch: Record<string, number> = {};
    for (const call of host.simulator.calls) {
      resultsByBatch[call.batchId] = (resultsByBatch[call.batchId] ?? 0) + 1;
      const tenant = tenantOf.get(call.batchId) ?? 'unknown';
      resultsByTenant[tenant] = (resultsByTenant[tenant] ?? 0) + 1;
    }
    const final = await Promise.all(created.map((b) => readBatch(host, b.batchId)));
    const stillCalling = final.reduce((n, b) => n + (b?.nCalling ?? 0), 0);
    if (stillCalling > 0) throw new Error(`${stillCalling} calls still in progress after the day settled`);
    return {
      batches: created.map((b, i) => ({ ...b, status: final[i]?.status ?? 'missing', rounds: final[i]?.round ?? 0 })),
      resultsByTenant,
      resultsByBatch,
      results: host.simulator.calls.length,
      mails: host.smtpSink.messages().length - mailsBefore,
      deliveries: receivers.received(),
      endpointRequests: receivers.byProfile,
      endpointRequestsByPath: receivers.byPath,
      deliveryBytes: receivers.bytes(),
      placerBytes: host.placerBytes() - placerBytesBefore,
      leftoverSchedules: leftover,
      ...(await storedBytes(host)),
      processCpuMs: ((cpu) => (cpu.user + cpu.system) / 1000)(process.cpuUsage(cpuBefore)),
      realSeconds: (Date.now() - startedReal) / 1000,
      jobTimeSeconds: (host.clock.now() - startedJob) / 1000,
    };
  } finally {
    await receivers.close();
  }
}

/** The owner confirms the address from the mail the sink caught (the link's path and token). */
async function confirmationPath(host: CapacityHost, owner: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const message = host.smtpSink.messages().find((m) => m.envelope.to.includes(owner) && /confirm-email\?token=/.test(m.text ?? ''));
    const link = message?.text?.match(/https?:\/\/\S+\/confirm-email\?token=[A-Za-z0-9_-]+/)?.[0];
    if (link) return new URL(link).pathname + new URL(link).search;
    await sleep(50);
  }
  throw new Error(`no confirmation mail for ${owner} within 30 s`);
}

async function readBatch(host: CapacityHost, batchId: string): Promise<BatchRow | undefined> {
  const { clients, tableNames } = host.observer;
  const result = await clients.dynamo.send(new GetCommand({ TableName: tableNames.calls, Key: batchKey(batchId), ConsistentRead: true }));
  return result.Item as BatchRow | undefined;
}

/**
 * Jobs not yet finished (watchdogs waiting for their time included): a Scan of the jobs table on the
 * observer's unrecorded client (the day's table is small; the job layer keeps no index of every state).
 */
async function pendingJobs(host: CapacityHost): Promise<number> {
  const { clients, tableNames } = host.observer;
  let count = 0;
  const pages = paginateScan(
    { client: clients.dynamo },
    {
      TableName: tableNames.jobs,
      FilterExpression: `#s IN (${pendingStates.map((_, i) => `:s${i}`).join(', ')})`,
      ExpressionAttributeNames: { '#s': 'state' },
      ExpressionAttributeValues: Object.fromEntries(pendingStates.map((state, i) => [`:s${i}`, state])),
      Select: 'COUNT',
    },
  );
  for await (const page of pages) count += page.Count ?? 0;
  return count;
}

/**
 * Storage the day left behind, read with a Scan on unrecorded clients: each item's size plus the 100 bytes
 * DynamoDB adds per item, in the table and in every index it appears in (its projection); the priced kinds'
 * (kinds.ts) apart too, and the attempt rows counted by sender and result.
 */
async function storedBytes(host: CapacityHost): Promise<Pick<DayOutcome, 'stored' | 'storedByKind' | 'attemptRows'>> {
  const { clients, tableNames } = host.observer;
  const stored: Record<string, { bytes: number; items: number }> = {};
  const storedByKind: Record<string, { bytes: number; items: number }> = {};
  const attemptRows = { job: 0, waitList: 0, delivered: 0 };
  const add = (to: Record<string, { bytes: number; items: number }>, label: string, bytes: number) => {
    const entry = (to[label] ??= { bytes: 0, items: 0 });
    entry.bytes += bytes + 100;
    entry.items++;
  };
  for (const [key, definition] of Object.entries(tables)) {
    for await (const page of paginateScan({ client: clients.dynamo }, { TableName: tableNames[key as TableKey] })) {
      for (const native of page.Items ?? []) {
        // Back to DynamoDB's own form, to be sized as stored.
        const item = marshall(native, { removeUndefinedValues: true });
        const pk = String(native[definition.partitionKey]);
        const sortKey = (definition as TableDefinition).sortKey;
        const sk = sortKey === undefined ? undefined : String(native[sortKey]);
        // Stored items go to the kind that writes them (not a kind of reads or of ConditionChecks only).
        const kind = pricedItemKinds.find((k) => k.only !== 'reads' && (k.actions === undefined || k.actions.includes('put')) && k.pk.test(pk) && (k.sk === undefined || (sk !== undefined && k.sk.test(sk))));
        const size = itemSize(item);
        add(stored, definition.name, size);
        if (kind) add(storedByKind, kind.name, size);
        for (const index of definition.indexes) {
          if (!inIndex(item, index)) continue;
          const entry = itemSize(projection(item, definition, index));
          add(stored, `${definition.name}.${index.name}`, entry);
          if (kind) add(storedByKind, `${kind.name}.${index.name}`, entry);
        }
        if (kind?.name === 'attemptRows') {
          if (native['source'] === 'wait_list') attemptRows.waitList++;
          else attemptRows.job++;
          if (native['result'] === 'delivered') attemptRows.delivered++;
        }
      }
    }
  }
  return { stored, storedByKind, attemptRows };
}
