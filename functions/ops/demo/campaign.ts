import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../../platform/local/files.ts';
import { mailKinds, ownerNotifyKind } from '../../mail/kinds.ts';
import { DemoApi } from './client.ts';
import { DemoReceivers, demoReceivers } from './receivers.ts';
import type { ReceiverStats } from './receivers.ts';

/** The demo's tenant and owner: a client of redial, as far as the API can tell. */
export const DEMO_TENANT = 'demo';
export const DEMO_OWNER = 'owner@demo.redial.local';
export const DEMO_CONTACTS = 40;
/** The demo's default TIME_SCALE: its campaign (about 40 minutes of job time) runs in about a minute. */
export const DEMO_TIME_SCALE = 0.025;

interface Batch {
  batchId: string;
  status: string;
  round: number;
  maxAttempts: number;
  counts: { byStatus: Record<string, number>; byCode: Record<string, number> };
}
interface JobCounts {
  counts: Record<string, number>;
}
interface Mail {
  messages: { kind: string | null; to: string[]; text: string }[];
  total: number;
}
interface Notices {
  notices: { status: string }[];
}
interface JobList {
  jobs: { id: string; kind: string; state: string; discardReason: string | null }[];
}

/**
 * What the demo remembers before it asks for its batch: the `Idempotency-Key` it sends, so a demo that
 * stopped before saving the answer sends the same request again and gets the same batch, not a second one.
 */
const demoStart = z.object({
  idempotencyKey: z.string(),
  startedAt: z.string(),
  /** The runtime's URL when the endpoints were registered: they point at it. */
  baseUrl: z.string().optional(),
  endpoints: z.array(z.object({ name: z.string(), endpointId: z.string(), secret: z.string() })),
});
type DemoStart = z.infer<typeof demoStart>;

/** What the demo remembers in .data/demo.json, so a second `npm start` resumes it instead of starting another. */
const demoState = demoStart.partial({ idempotencyKey: true }).extend({
  batchId: z.string(),
  finishedAt: z.string().optional(),
  summary: z.unknown().optional(),
});
type DemoState = z.infer<typeof demoState>;

/** The demo's final numbers, each read from the API. */
export interface DemoSummary {
  batchId: string;
  status: string;
  rounds: number;
  contactsByStatus: Record<string, number>;
  contactsByCode: Record<string, number>;
  deliveries: Record<string, number>;
  deliveriesDiscardedByReason: Record<string, number>;
  endpoints: { name: string; endpointId: string; disabled: boolean; disabledReason: string | null; failingSince: string | null }[];
  receivers: ReceiverStats[];
  mail: { sent: number; notices: Record<string, number> };
  discardedJobs: Record<string, number>;
}

export interface DemoOptions {
  api: DemoApi;
  receivers: DemoReceivers;
  /** .data/demo.json; undefined (--memory) remembers nothing. */
  stateFile: string | undefined;
  print: (line: string) => void;
  /** Real ms between progress checks. */
  pollMs?: number;
  /** Give up waiting after this many real ms. */
  timeoutMs?: number;
}

/** The mail kinds, whose snoozed jobs (a recipient's cap reached) the progress line counts. */
const MAIL_KINDS = mailKinds.map((k) => k.kind);
const pending = ['scheduled', 'available', 'running', 'retryable', 'snoozed'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tally = (values: string[]) => values.reduce<Record<string, number>>((acc, v) => ((acc[v] = (acc[v] ?? 0) + 1), acc), {});
const list = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';

/**
 * The demo campaign (brief §8), run through the public API only, as a client would: a tenant with an owner
 * who confirms the address from the mail the sink caught, four customer endpoints served by the runtime
 * (healthy, fails twice then recovers, throttles with Retry-After, gone), and a batch of 40 contacts with
 * three rounds. It prints progress until the batch is finalised and every delivery has settled, then a
 * summary, and remembers what it did so a restart resumes rather than repeats it.
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const { api, print } = options;
  const saved = load(options.stateFile);
  if (saved && 'batchId' in saved && saved.finishedAt) {
    print(`demo: ran before (batch ${saved.batchId}, finished ${saved.finishedAt}); its data is kept in ${dirname(options.stateFile ?? '.data/demo.json')}/. Delete that directory to run it again.`);
    restoreSecrets(options.receivers, saved);
    // The receivers' and the sink's counts lived in the last process; the summary kept them.
    const summary = (saved.summary as DemoSummary | undefined) ?? (await summarise(api, options.receivers, saved));
    printSummary(print, summary, `as it ended at ${saved.finishedAt}`);
    return summary;
  }
  if (saved?.baseUrl && saved.baseUrl !== api.baseUrl) {
    const port = new URL(saved.baseUrl).port;
    print(`demo: warning: its endpoints were registered at ${saved.baseUrl}, and this run listens on ${api.baseUrl}: deliveries to them fail until you start it with PORT=${port}`);
  }
  let state: DemoState;
  if (!saved) state = await start(options);
  else if ('batchId' in saved) {
    print(`demo: resuming batch ${saved.batchId} from .data/`);
    restoreSecrets(options.receivers, saved);
    state = saved;
  } else {
    print('demo: resuming: the batch request was sent, its answer not saved; sending it again with the same Idempotency-Key');
    restoreSecrets(options.receivers, saved);
    state = await createBatch(options, saved);
  }
  await follow(options, state);
  const summary = await summarise(api, options.receivers, state);
  save(options.stateFile, { ...state, finishedAt: new Date().toISOString(), summary });
  printSummary(print, summary);
  return summary;
}

/**
 * The demo's setup, safe to run again after a crash part-way (before demo.json has anything): the tenant
 * PUT is idempotent, a confirmed owner is not asked again, and each endpoint is registered with a fixed
 * Idempotency-Key, so a second run gets the same endpoints (and their secrets) back instead of new ones.
 */
async function start(options: DemoOptions): Promise<DemoState> {
  const { api, print } = options;
  print(`demo: PUT /v1/tenants/${DEMO_TENANT} (concurrency limit 5, owner ${DEMO_OWNER})`);
  await api.put(`/v1/tenants/${DEMO_TENANT}`, { concurrencyLimit: 5, ownerEmail: DEMO_OWNER });
  const owner = await api.get<{ email: string | null }>(`/v1/tenants/${DEMO_TENANT}/owner-email`);
  if (owner.email === DEMO_OWNER) {
    print('demo: the owner address was confirmed before');
  } else {
    const link = await confirmationLink(options);
    await api.post(new URL(link).pathname + new URL(link).search);
    print('demo: the owner confirmed the address from the mail (a link with a single-use token)');
  }

  const endpoints: DemoState['endpoints'] = [];
  for (const receiver of demoReceivers) {
    const created = await api.post<{ endpointId: string; secret: string }>(
      '/v1/endpoints',
      { tenantId: DEMO_TENANT, url: `${api.baseUrl}${DemoReceivers.path(receiver.name)}` },
      { 'idempotency-key': `demo-endpoint-${receiver.name}` },
    );
    options.receivers.setSecret(receiver.name, created.secret);
    endpoints.push({ name: receiver.name, endpointId: created.endpointId, secret: created.secret });
    print(`demo: POST /v1/endpoints → ${created.endpointId} (${receiver.name}: ${receiver.description})`);
  }

  const begun: DemoStart = { idempotencyKey: `demo-${randomUUID()}`, startedAt: new Date().toISOString(), baseUrl: api.baseUrl, endpoints };
  save(options.stateFile, begun);
  return createBatch(options, begun);
}

/** POST /v1/batches with the saved Idempotency-Key: sent again after a crash, it answers with the batch the first one created. */
async function createBatch(options: DemoOptions, begun: DemoStart): Promise<DemoState> {
  const contacts = Array.from({ length: DEMO_CONTACTS }, (_, i) => ({ number: `+1555010${String(i).padStart(4, '0')}` }));
  const batch = await options.api.post<{ batchId: string }>(
    '/v1/batches',
    { tenantId: DEMO_TENANT, contacts, maxAttempts: 3, retry: { baseSeconds: 60, capSeconds: 600 } },
    { 'idempotency-key': begun.idempotencyKey },
  );
  options.print(`demo: POST /v1/batches → ${batch.batchId} (${DEMO_CONTACTS} contacts, 3 rounds at most)`);
  const state: DemoState = { ...begun, batchId: batch.batchId };
  save(options.stateFile, state);
  return state;
}

async function confirmationLink(options: DemoOptions): Promise<string> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const mail = await options.api.get<Mail>(`/v1/ops/mail?to=${encodeURIComponent(DEMO_OWNER)}`);
    const message = mail.messages.find((m) => m.kind === 'owner.email_confirmation');
    const link = message?.text.match(/https?:\/\/\S+\/confirm-email\?token=[A-Za-z0-9_-]+/)?.[0];
    if (link) return link;
    await sleep(100);
  }
  throw new Error('the confirmation mail did not reach the sink within 30 s');
}

/** Prints a progress line whenever something changed, until the batch is finalised and deliveries settle. */
async function follow(options: DemoOptions, state: DemoState): Promise<void> {
  const { api, print } = options;
  const started = Date.now();
  let last = '';
  for (;;) {
    const batch = await api.get<Batch>(`/v1/batches/${state.batchId}`);
    const deliveries = await api.get<JobCounts>('/v1/ops/job-counts?kind=webhook.deliver');
    const mail = await api.get<Mail>('/v1/ops/mail?limit=1');
    const mailJobs = await Promise.all(MAIL_KINDS.map((kind) => api.get<JobCounts>(`/v1/ops/job-counts?kind=${kind}`)));
    const notify = mailJobs[MAIL_KINDS.indexOf(ownerNotifyKind.kind)]!;
    const notices = await api.get<Notices>(`/v1/tenants/${DEMO_TENANT}/notices`);
    const discarded = await api.get<JobCounts>('/v1/ops/job-counts');
    const line = [
      `round ${batch.round}/${batch.maxAttempts} ${batch.status}`,
      `contacts ${list(batch.counts.byStatus)}`,
      `codes ${list(batch.counts.byCode)}`,
      `deliveries ${list(deliveries.counts)}`,
      `mail sent ${mail.total}, snoozed ${mailJobs.reduce((n, c) => n + (c.counts['snoozed'] ?? 0), 0)}, dropped ${notices.notices.filter((n) => n.status === 'dropped').length}`,
      `discarded jobs ${discarded.counts['discarded'] ?? 0}`,
    ].join(' · ');
    if (line !== last) {
      print(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);
      last = line;
    }
    const settled =
      batch.status === 'Finalised' &&
      pending.every((s) => !deliveries.counts[s]) &&
      pending.every((s) => !notify.counts[s]) &&
      (notify.counts['completed'] ?? 0) > 0;
    if (settled) return;
    if (Date.now() - started > (options.timeoutMs ?? 10 * 60_000)) throw new Error(`the demo did not settle within ${(options.timeoutMs ?? 600_000) / 1000} s`);
    await sleep(options.pollMs ?? 1000);
  }
}

async function summarise(api: DemoApi, receivers: DemoReceivers, state: DemoState): Promise<DemoSummary> {
  const batch = await api.get<Batch>(`/v1/batches/${state.batchId}`);
  const deliveries = await api.get<JobCounts>('/v1/ops/job-counts?kind=webhook.deliver');
  const discardedDeliveries = await api.get<JobList>('/v1/ops/jobs?state=discarded&kind=webhook.deliver&limit=200');
  const allDiscarded = await api.get<JobList>('/v1/ops/jobs?state=discarded&limit=200');
  const notices = await api.get<Notices>(`/v1/tenants/${DEMO_TENANT}/notices`);
  const mail = await api.get<Mail>('/v1/ops/mail?limit=1');
  const endpoints = await Promise.all(
    state.endpoints.map(async (e) => {
      const shown = await api.get<{ disabled: boolean; disabledReason: string | null; failingSince: string | null }>(`/v1/endpoints/${e.endpointId}`);
      return { name: e.name, endpointId: e.endpointId, disabled: shown.disabled, disabledReason: shown.disabledReason, failingSince: shown.failingSince };
    }),
  );
  return {
    batchId: batch.batchId,
    status: batch.status,
    rounds: batch.round,
    contactsByStatus: batch.counts.byStatus,
    contactsByCode: batch.counts.byCode,
    deliveries: deliveries.counts,
    deliveriesDiscardedByReason: tally(discardedDeliveries.jobs.map((j) => j.discardReason ?? 'unknown')),
    endpoints,
    receivers: receivers.snapshot(),
    mail: { sent: mail.total, notices: tally(notices.notices.map((n) => n.status)) },
    discardedJobs: tally(allDiscarded.jobs.map((j) => `${j.kind}: ${j.discardReason ?? 'unknown'}`)),
  };
}

function printSummary(print: (line: string) => void, s: DemoSummary, note?: string): void {
  print('');
  print(`demo summary${note ? ` (${note})` : ''}`);
  print(`  batch ${s.batchId}: ${s.status} after ${s.rounds} round${s.rounds === 1 ? '' : 's'}`);
  print(`  contacts by status: ${list(s.contactsByStatus)}`);
  print(`  contacts by code: ${list(s.contactsByCode)}`);
  print(`  webhook deliveries: ${list(s.deliveries)}; discarded by reason: ${list(s.deliveriesDiscardedByReason)}`);
  for (const e of s.endpoints) {
    const r = s.receivers.find((x) => x.name === e.name);
    print(
      `  endpoint ${e.name} (${e.endpointId}): ${e.disabled ? `disabled (${e.disabledReason ?? ''})` : 'enabled'}` +
        (r ? `; received ${r.requests} requests (${list(r.byStatus)}), ${r.delivered} events delivered, ${r.verified} signatures verified` : ''),
    );
  }
  print(`  mail: ${s.mail.sent} sent to the SMTP sink; owner notices ${list(s.mail.notices)}`);
  print(`  discarded jobs: ${list(s.discardedJobs)}`);
  print(`  summary JSON: ${JSON.stringify({ batchId: s.batchId, status: s.status, rounds: s.rounds, contactsByCode: s.contactsByCode, deliveries: s.deliveries })}`);
}

function restoreSecrets(receivers: DemoReceivers, state: DemoState | DemoStart): void {
  for (const e of state.endpoints) receivers.setSecret(e.name, e.secret);
}

function load(file: string | undefined): DemoState | DemoStart | undefined {
  if (!file || !existsSync(file)) return undefined;
  const parsed = z.union([demoState, demoStart]).safeParse(JSON.parse(readFileSync(file, 'utf8')));
  return parsed.success ? parsed.data : undefined;
}

/** Written whole or not at all, so a crash never leaves half a state. */
function save(file: string | undefined, state: DemoState | DemoStart): void {
  if (file) writeFileAtomic(file, `${JSON.stringify(state, null, 2)}\n`);
}
