import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import { writeFileAtomic } from '../platform/local/files.ts';
import { mailKinds, ownerNotifyKind } from '../mail/kinds.ts';
import { DemoApi } from './client.ts';
import { DemoReceivers, demoReceivers } from './receivers.ts';
import type { ReceiverStats } from './receivers.ts';
import { roundContacts } from './progress.ts';
import type { ContactSeen, DemoProgress } from './progress.ts';
import { lineView } from './progress-view.ts';
import { controlLines, controlState, controlStep, controlSummary } from './control.ts';
import type { ControlContact, ControlSummary } from './control.ts';
import type { ProgressView } from './progress-view.ts';

/** The demo's tenant and owner: a client of redial, as far as the API can tell. */
export const DEMO_TENANT = 'demo';
export const DEMO_OWNER = 'owner@demo.redial.local';
export const DEMO_CONTACTS = 40;
const DEMO_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken'];
/** The demo's default TIME_SCALE: its campaign (about 40 minutes of job time) runs in about a minute. */
export const DEMO_TIME_SCALE = 0.025;

interface Batch {
  batchId: string;
  status: string;
  pausedAt: string | null;
  pausedFrom: string | null;
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
  cursor?: string;
}
interface Contacts {
  contacts: (ContactSeen & ControlContact)[];
  cursor?: string;
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
  /** The demo tenant's API key (issued through the operator route, shown once): every tenant route the demo calls presents it. */
  apiKey: z.string().optional(),
  endpoints: z.array(z.object({ name: z.string(), endpointId: z.string(), secret: z.string() })),
});
type DemoStart = z.infer<typeof demoStart>;

/** What the demo remembers in .data/demo.json, so a second `npm start` resumes it instead of starting another. */
const demoState = demoStart.partial({ idempotencyKey: true }).extend({
  batchId: z.string(),
  finishedAt: z.string().optional(),
  summary: z.unknown().optional(),
  /** The pause and the suppression (control.ts), as far as they went. */
  control: controlState.optional(),
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
  /** Each endpoint as the API shows it; `delivered`: the deliveries to it that succeeded (with a job of their own or not). */
  endpoints: { name: string; endpointId: string; disabled: boolean; disabledReason: string | null; failingSince: string | null; delivered: number }[];
  receivers: ReceiverStats[];
  mail: { sent: number; notices: Record<string, number> };
  discardedJobs: Record<string, number>;
  /** The export's first lines (`GET /v1/batches/{id}/export?format=csv&limit=3`): its header and three contacts. */
  exportHead: string[];
  /** The pause and the suppression, checked against the API's counts (absent in a summary kept from before them). */
  control?: ControlSummary;
}

export interface DemoOptions {
  api: DemoApi;
  receivers: DemoReceivers;
  /** .data/demo.json; undefined (--memory) remembers nothing. */
  stateFile: string | undefined;
  print: (line: string) => void;
  /** Where the live progress goes; by default a short line through `print` every few seconds. */
  progress?: ProgressView;
  /** Aborted when the process is stopping (Ctrl-C): the progress is left as it was shown, and the demo ends. */
  signal?: AbortSignal;
  /** Real ms between progress checks. */
  pollMs?: number;
  /** Give up waiting after this many real ms. */
  timeoutMs?: number;
  /** The runtime's TIME_SCALE (real s per job s): how long the pause lasts in real time. @default 1 */
  timeScale?: number;
}

/** The mail kinds, whose snoozed jobs (a recipient's cap reached) the progress counts. */
const MAIL_KINDS = mailKinds.map((k) => k.kind);
const pending = ['scheduled', 'available', 'running', 'retryable', 'snoozed'];
/** Pages read at most when the demo lists jobs or contacts (200 jobs a page; the demo has a few hundred). */
const MAX_PAGES = 50;
const tally = (values: string[]) => values.reduce<Record<string, number>>((acc, v) => ((acc[v] = (acc[v] ?? 0) + 1), acc), {});
const list = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';

/**
 * The demo campaign (README, "What the demo shows"), run through the public API only, as a client would: a tenant with an owner
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
    const summary = (saved.summary as DemoSummary | undefined) ?? (await summarise(api, options.receivers, await withKey(options, saved), options.timeScale ?? 1));
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
    state = await withKey(options, saved);
  } else {
    print('demo: resuming: the batch request was sent, its answer not saved; sending it again with the same Idempotency-Key');
    restoreSecrets(options.receivers, saved);
    state = await createBatch(options, await withKey(options, saved));
  }
  await follow(options, state);
  const summary = await summarise(api, options.receivers, state, options.timeScale ?? 1);
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

  const apiKey = await issueKey(options);
  const tenant = api.as(apiKey);
  const endpoints: DemoState['endpoints'] = [];
  for (const receiver of demoReceivers) {
    const created = await tenant.post<{ endpointId: string; secret: string }>(
      '/v1/endpoints',
      { url: `${api.baseUrl}${DemoReceivers.path(receiver.name)}` },
      { 'idempotency-key': `demo-endpoint-${receiver.name}` },
    );
    options.receivers.setSecret(receiver.name, created.secret);
    endpoints.push({ name: receiver.name, endpointId: created.endpointId, secret: created.secret });
    print(`demo: POST /v1/endpoints → ${created.endpointId} (${receiver.name}: ${receiver.description})`);
  }

  const begun: DemoStart = { idempotencyKey: `demo-${randomUUID()}`, startedAt: new Date().toISOString(), baseUrl: api.baseUrl, apiKey, endpoints };
  save(options.stateFile, begun);
  return createBatch(options, begun);
}

/**
 * The demo tenant's API key, issued the way an operator issues one to a customer (`POST
 * /v1/tenants/{tenantId}/keys`, an operator route), and printed: the key is shown once, here.
 */
async function issueKey(options: DemoOptions): Promise<string> {
  const { keyId, key } = await options.api.post<{ keyId: string; key: string }>(`/v1/tenants/${DEMO_TENANT}/keys`);
  options.print(`demo: POST /v1/tenants/${DEMO_TENANT}/keys → ${keyId}: the demo tenant's API key (shown once; the demo keeps it in .data/demo.json)`);
  options.print(`demo:   ${key}`);
  options.print(`demo:   try it: curl -H 'Authorization: Bearer ${key}' ${options.api.baseUrl}/v1/batches`);
  return key;
}

/** A state saved before the demo kept a key: one is issued now. */
async function withKey<S extends DemoStart | DemoState>(options: DemoOptions, state: S): Promise<S & { apiKey: string }> {
  if (state.apiKey) return state as S & { apiKey: string };
  const keyed = { ...state, apiKey: await issueKey(options) };
  save(options.stateFile, keyed);
  return keyed;
}

/** The API as the demo tenant: its key on every request. */
const tenantApi = (options: DemoOptions, state: { apiKey?: string | undefined }): DemoApi => {
  if (!state.apiKey) throw new Error('the demo has no API key for its tenant');
  return options.api.as(state.apiKey);
};

/** POST /v1/batches with the saved Idempotency-Key: sent again after a crash, it answers with the batch the first one created. */
async function createBatch(options: DemoOptions, begun: DemoStart): Promise<DemoState> {
  // Contacts as a CRM would give them: the customer's own key and the agent's prompt variables. (555-01xx
  // numbers are possible but in no assigned range: accepted, and flagged as such on each contact.)
  const contacts = Array.from({ length: DEMO_CONTACTS }, (_, i) => ({
    number: `+1555010${String(i).padStart(4, '0')}`,
    externalId: `crm-${String(1001 + i)}`,
    variables: { first_name: DEMO_NAMES[i % DEMO_NAMES.length]!, plan: i % 3 === 0 ? 'pro' : 'basic' },
  }));
  const batch = await tenantApi(options, begun).post<{ batchId: string }>(
    '/v1/batches',
    { contacts, maxAttempts: 3, retry: { baseSeconds: 60, capSeconds: 600 } },
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

/** Shows the progress about once a second until the batch is finalised and deliveries settle. */
async function follow(options: DemoOptions, state: DemoState): Promise<void> {
  const view = options.progress ?? lineView(options.print);
  const { signal } = options;
  // A stop (Ctrl-C) leaves the progress as shown, at once: what the process prints next goes below it.
  const stop = () => view.stop();
  signal?.addEventListener('abort', stop, { once: true });
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 10 * 60_000;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const { progress, settled, batch, contacts } = await readProgress(options, state, started);
      if (settled) return view.finish(progress);
      // The pause, the resume and the suppression, each once, when the batch is ready for it (control.ts).
      const tenant = tenantApi(options, state);
      const control = await controlStep(state.control ?? {}, {
        tenant,
        batchId: state.batchId,
        batch,
        contacts,
        readContacts: () => pages(tenant, `/v1/batches/${state.batchId}/contacts`, (p: Contacts) => p.contacts),
        nowRealMs: Date.now(),
        timeScale: options.timeScale ?? 1,
        print: (line) => view.note(line),
      });
      if (control) {
        state.control = control;
        save(options.stateFile, state);
      }
      view.update(progress);
      if (Date.now() - started > timeoutMs) throw new Error(`the demo did not settle within ${timeoutMs / 1000} s`);
      await sleep(options.pollMs ?? 1000, undefined, signal ? { signal } : {});
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    view.stop();
  }
}

/** One look at the demo through the API: what the progress shows, and whether everything has settled. */
async function readProgress(options: DemoOptions, state: DemoState, started: number): Promise<{ progress: DemoProgress; settled: boolean; batch: Batch; contacts: (ContactSeen & ControlContact)[] }> {
  const { api } = options;
  const tenant = tenantApi(options, state);
  const batch = await tenant.get<Batch>(`/v1/batches/${state.batchId}`);
  const contacts = await pages(tenant, `/v1/batches/${state.batchId}/contacts`, (p: Contacts) => p.contacts);
  const deliveries = await api.get<JobCounts>('/v1/ops/job-counts?kind=webhook.deliver');
  const endpoints = await deliveriesByEndpoint(api, tenant, state.endpoints, deliveries.counts);
  const mail = await api.get<Mail>('/v1/ops/mail?limit=1');
  const mailJobs = await Promise.all(MAIL_KINDS.map((kind) => api.get<JobCounts>(`/v1/ops/job-counts?kind=${kind}`)));
  const notify = mailJobs[MAIL_KINDS.indexOf(ownerNotifyKind.kind)]!;
  const notices = await api.get<Notices>(`/v1/tenants/${DEMO_TENANT}/notices`);
  const discarded = await pages(api, '/v1/ops/jobs?state=discarded&limit=200', (p: JobList) => p.jobs);
  const discards: DemoProgress['discards'] = {};
  for (const job of discarded) {
    const reasons = (discards[job.kind] ??= {});
    reasons[job.discardReason ?? 'unknown'] = (reasons[job.discardReason ?? 'unknown'] ?? 0) + 1;
  }
  const answers = options.receivers.snapshot();
  const progress: DemoProgress = {
    elapsedMs: Date.now() - started,
    batchId: batch.batchId,
    status: batch.status,
    round: batch.round,
    maxAttempts: batch.maxAttempts,
    roundContacts: roundContacts(batch.round, contacts),
    contactsByStatus: batch.counts.byStatus,
    contactsByCode: batch.counts.byCode,
    endpoints: endpoints.map((e) => ({ name: e.name, byState: e.byState, answers: answers.find((r) => r.name === e.name)?.byStatus ?? {} })),
    mail: {
      sent: mail.total,
      snoozed: mailJobs.reduce((n, c) => n + (c.counts['snoozed'] ?? 0), 0),
      dropped: notices.notices.filter((n) => n.status === 'dropped').length,
    },
    discards,
  };
  const settled =
    batch.status === 'Finalised' &&
    pending.every((s) => !deliveries.counts[s]) &&
    endpoints.every((e) => e.waiting === 0) &&
    pending.every((s) => !notify.counts[s]) &&
    (notify.counts['completed'] ?? 0) > 0;
  return { progress, settled, batch, contacts };
}

/**
 * The demo's deliveries counted per endpoint: the jobs of each state that has any, listed, and told apart
 * by their ids (`webhook.deliver:<event>:<endpoint>`, as the ops API shows them); and, from the endpoint
 * itself, the deliveries that succeeded (`delivered`: most have no job, sent within the run of the one
 * before them) and those waiting in its list (`waiting`, shown as pending).
 */
async function deliveriesByEndpoint(
  api: DemoApi,
  tenant: DemoApi,
  endpoints: DemoState['endpoints'],
  counts: Record<string, number>,
): Promise<{ name: string; byState: Record<string, number>; waiting: number }[]> {
  const byEndpoint: { name: string; endpointId: string; byState: Record<string, number>; waiting: number }[] = endpoints.map((e) => ({ ...e, byState: {}, waiting: 0 }));
  const states = Object.keys(counts).filter((s) => (counts[s] ?? 0) > 0 && s !== 'completed');
  const lists = await Promise.all(states.map((s) => pages(api, `/v1/ops/jobs?state=${s}&kind=webhook.deliver&limit=200`, (p: JobList) => p.jobs)));
  for (const job of lists.flat()) {
    const endpoint = byEndpoint.find((e) => job.id.endsWith(`:${e.endpointId}`));
    if (endpoint) endpoint.byState[job.state] = (endpoint.byState[job.state] ?? 0) + 1;
  }
  await Promise.all(
    byEndpoint.map(async (e) => {
      const shown = await tenant.get<{ delivered: number; waiting: number }>(`/v1/endpoints/${e.endpointId}`);
      e.byState['completed'] = shown.delivered;
      // A parked job is listed among the jobs already; what waits with no job is the rest of the list.
      const parked = (e.byState['snoozed'] ?? 0) + (e.byState['scheduled'] ?? 0) + (e.byState['available'] ?? 0);
      e.waiting = Math.max(0, shown.waiting - parked);
      if (e.waiting > 0) e.byState['waiting'] = e.waiting;
    }),
  );
  return byEndpoint.map((e) => ({ name: e.name, byState: e.byState, waiting: e.waiting }));
}

/** Every item of a paginated list, following its cursor (at most MAX_PAGES pages). */
async function pages<P extends { cursor?: string }, T>(api: DemoApi, path: string, items: (page: P) => T[]): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < MAX_PAGES; n++) {
    const page = await api.get<P>(cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}` : path);
    all.push(...items(page));
    cursor = page.cursor;
    if (!cursor) break;
  }
  return all;
}

async function summarise(api: DemoApi, receivers: DemoReceivers, state: DemoState, timeScale: number): Promise<DemoSummary> {
  const tenant = api.as(state.apiKey ?? '(no key)');
  const batch = await tenant.get<Batch>(`/v1/batches/${state.batchId}`);
  const contacts = await pages(tenant, `/v1/batches/${state.batchId}/contacts`, (p: Contacts) => p.contacts);
  const deliveries = await api.get<JobCounts>('/v1/ops/job-counts?kind=webhook.deliver');
  const discardedDeliveries = await api.get<JobList>('/v1/ops/jobs?state=discarded&kind=webhook.deliver&limit=200');
  const allDiscarded = await api.get<JobList>('/v1/ops/jobs?state=discarded&limit=200');
  const notices = await api.get<Notices>(`/v1/tenants/${DEMO_TENANT}/notices`);
  const mail = await api.get<Mail>('/v1/ops/mail?limit=1');
  const exported = await tenant.text(`/v1/batches/${state.batchId}/export?format=csv&limit=3`);
  const endpoints = await Promise.all(
    state.endpoints.map(async (e) => {
      const shown = await tenant.get<{ disabled: boolean; disabledReason: string | null; failingSince: string | null; delivered: number }>(`/v1/endpoints/${e.endpointId}`);
      return { name: e.name, endpointId: e.endpointId, disabled: shown.disabled, disabledReason: shown.disabledReason, failingSince: shown.failingSince, delivered: shown.delivered };
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
    exportHead: exported.split('\r\n').filter((line) => line !== ''),
    control: controlSummary(state.control ?? {}, contacts, timeScale),
  };
}

function printSummary(print: (line: string) => void, s: DemoSummary, note?: string): void {
  print('');
  print(`demo summary${note ? ` (${note})` : ''}`);
  print(`  batch ${s.batchId}: ${s.status} after ${s.rounds} round${s.rounds === 1 ? '' : 's'}`);
  print(`  contacts by status: ${list(s.contactsByStatus)}`);
  print(`  contacts by code: ${list(s.contactsByCode)}`);
  print(
    `  webhook deliveries: ${s.endpoints.reduce((n, e) => n + e.delivered, 0)} delivered (webhook.deliver jobs: ${list(s.deliveries)}; the rest sent within the run of the delivery before them); discarded by reason: ${list(s.deliveriesDiscardedByReason)}`,
  );
  for (const e of s.endpoints) {
    const r = s.receivers.find((x) => x.name === e.name);
    print(
      `  endpoint ${e.name} (${e.endpointId}): ${e.disabled ? `disabled (${e.disabledReason ?? ''})` : 'enabled'}, ${e.delivered} delivered` +
        (r ? `; received ${r.requests} requests (${list(r.byStatus)}), ${r.delivered} events delivered, ${r.verified} signatures verified` : ''),
    );
  }
  print(`  mail: ${s.mail.sent} sent to the SMTP sink; owner notices ${list(s.mail.notices)}`);
  print(`  discarded jobs: ${list(s.discardedJobs)}`);
  // A summary kept by a demo from before the export has none.
  if (s.exportHead?.length) {
    print(`  export (npm run -s ops -- batches export ${s.batchId} --format csv), its first rows:`);
    for (const line of s.exportHead) print(`    ${line}`);
  }
  if (s.control) for (const line of controlLines(s.control)) print(line);
  const control = s.control && {
    dialsWhilePaused: s.control.pause?.dialsWhilePaused ?? null,
    suppressed: s.control.suppression && { number: s.control.suppression.number, at: s.control.suppression.at, dialsThen: s.control.suppression.dialsThen, final: s.control.suppression.final, dialsAfter: s.control.suppression.dialsAfter },
  };
  print(`  summary JSON: ${JSON.stringify({ batchId: s.batchId, status: s.status, rounds: s.rounds, contactsByCode: s.contactsByCode, deliveries: s.deliveries, ...(control ? { control } : {}) })}`);
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
