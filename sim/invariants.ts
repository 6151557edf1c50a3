import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { baseCallId, batchIdOfPartition, batchPartition, callIdFor, ContactStatus, isDialled, LIST_PAGE_SIZE } from '../functions/calls/model.ts';
import type { AttemptRow, BatchRow, ContactDataRow, ContactRow, ExternalIdRow, ListPage, SlotRow, TenantRow } from '../functions/calls/model.ts';
import { CallCode } from '../functions/calls/codes.ts';
import { DISCARD_METRIC } from '../functions/jobs/discards.ts';
import type { JobRow } from '../functions/jobs/row.ts';
import { isTerminal, JobState } from '../functions/jobs/states.ts';
import { caps, recipientKey, windowOf } from '../functions/mail/caps.ts';
import { MailMetric } from '../functions/mail/context.ts';
import type { Notice } from '../functions/mail/store.ts';
import { deliveryJobId, endpointIdOfPartition, subscribes } from '../functions/webhooks/endpoint.ts';
import type { EndpointRow } from '../functions/webhooks/endpoint.ts';
import type { EventType } from '../functions/webhooks/events.ts';
import type { AppliedCompletion } from './world/writes.ts';
import { eventBody } from '../functions/webhooks/signing.ts';
import { CAP_WINDOW_MS, DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H } from '../functions/calls/compliance/cap.ts';
import { windowOpenFor } from '../functions/calls/compliance/hours.ts';
import { recipientZones } from '../functions/calls/compliance/recipient.ts';
import type { Driver } from './driver.ts';
import type { SimHost } from './host.ts';
import { RESCUE_AFTER_MS, RESCUER_PERIOD_MS } from './host.ts';
import { SimPlacer } from './world/placer.ts';
import { SimReceivers } from './world/endpoints.ts';
import type { ReceivedRequest } from './world/endpoints.ts';
import { DeliveryDiscardReason } from '../functions/webhooks/kinds.ts';
import type { RecoveryRow } from '../functions/webhooks/recover.ts';
import { batchIdForKey } from '../functions/calls/idempotency.ts';
import { importFile } from './world/import-file.ts';
import type { ExpectedContact } from './world/import-file.ts';
import { calendarInvariants } from './invariants-calendar.ts';

/**
 * The invariants: what must hold after any plan, each a named check with a message that says which
 * record broke it. They read the tables (with clients the plan does not touch), the world's records (the
 * placer's calls, the receivers' requests, the SMTP server's mails), the metrics sink and the driver's
 * answers. docs/simulation.md lists them.
 */

export interface Violation {
  invariant: string;
  message: string;
}

/** Everything the checks read, gathered once. */
export interface Observed {
  now: number;
  /** The run came to rest before the horizon: nothing left to do. */
  settled: boolean;
  jobs: JobRow[];
  calls: Record<string, unknown>[];
  webhooks: Record<string, unknown>[];
  mail: Record<string, unknown>[];
  /** The `calendar` table's items, in a plan with calendars (else none). */
  calendar: Record<string, unknown>[];
}

async function scanAll(db: DynamoDBDocumentClient, table: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  for await (const page of paginateScan({ client: db }, { TableName: table, ConsistentRead: true })) items.push(...((page.Items ?? []) as Record<string, unknown>[]));
  return items;
}

/** Reads every table. */
export async function observe(host: SimHost, settled: boolean): Promise<Observed> {
  const { clients, tableNames } = host.observer;
  // A delayed calendar request lands before the calendar is read (sim/world/calendar-agent.ts).
  await host.calendar?.simulator.idle();
  const [jobs, calls, webhooks, mail, calendar] = await Promise.all([
    scanAll(clients.dynamo, tableNames.jobs),
    scanAll(clients.dynamo, tableNames.calls),
    scanAll(clients.dynamo, tableNames.webhooks),
    scanAll(clients.dynamo, tableNames.mail),
    host.calendar ? scanAll(clients.dynamo, tableNames.calendar) : Promise.resolve([]),
  ]);
  return { now: host.clock.now(), settled, jobs: jobs.filter((j) => 'state' in j) as unknown as JobRow[], calls, webhooks, mail, calendar };
}

type Check = (o: Observed, host: SimHost, driver: Driver) => Violation[];

const byPk = (items: Record<string, unknown>[], prefix: string, sk?: string | ((sk: string) => boolean)) =>
  items.filter((i) => String(i['pk']).startsWith(prefix) && (sk === undefined || (typeof sk === 'string' ? i['sk'] === sk : sk(String(i['sk'])))));

// A batch's items (its row, list pages, contacts) are under `TENANT#<tenantId>#BATCH#<hex>` (calls/model.ts).
const ofBatches = (items: Record<string, unknown>[]) => items.filter((i) => batchIdOfPartition(String(i['pk'])) !== undefined);
const batchesOf = (o: Observed) => byPk(ofBatches(o.calls), 'TENANT#', 'BATCH') as unknown as BatchRow[];
const contactsOf = (o: Observed) => byPk(ofBatches(o.calls), 'TENANT#', (sk) => sk.startsWith('CONTACT#')) as unknown as ContactRow[];
const listPagesOf = (o: Observed, batchId: string) => byPk(o.calls, batchPartition(batchId), (sk) => sk.startsWith('LIST#')).filter((i) => i['pk'] === batchPartition(batchId)) as unknown as ListPage[];
const tenantsOf = (o: Observed) => byPk(o.calls, 'TENANT#', 'TENANT') as unknown as TenantRow[];
const endpointsOf = (o: Observed) => byPk(o.webhooks, 'TENANT#', 'ENDPOINT') as unknown as EndpointRow[];

interface Dial {
  batchId: string;
  contactNumber: string;
  round: number;
  callId: string;
}

/**
 * Dials that committed, as the batch rows and list pages record them (a dial writes no contact, only the
 * batch's cursor): every position of an earlier round's list (a round ends fully dialled) and of the
 * current round's behind the dial cursor. A call's id is derived from batch, number, round and list
 * position; the id the placer is given adds the slot shard (`.s<k>`), which {@link baseCallId} takes off.
 */
function dials(o: Observed): Dial[] {
  // Positions the cursor passed without a call: a contact the dialer ended in the round (suppressed, or no
  // window ever open: its item says so, source `dialer`), or one deferred and not dialled since (its mark).
  const ended = new Set(contactsOf(o).filter((c) => (c.source as string | undefined) === 'dialer').map((c) => `${c.batchId} ${c.contactNumber} ${c.round}`));
  const waiting = new Set(
    o.calls
      .filter((i) => String(i['pk']).endsWith('#DEFER') && String(i['sk']).startsWith('P#') && i['dialledAt'] === undefined)
      .map((i) => `${batchIdOfPartition(String(i['pk']).slice(0, -'#DEFER'.length)) ?? '?'} ${String(i['number'])} ${Number(i['round'])}`),
  );
  return batchesOf(o).flatMap((b) =>
    listPagesOf(o, b.batchId)
      .filter((page) => page.round <= b.round)
      .flatMap((page) =>
        page.numbers.flatMap((contactNumber, pos) => {
          const key = `${b.batchId} ${contactNumber} ${page.round}`;
          if (ended.has(key) || waiting.has(key)) return [];
          return page.round < b.round || isDialled(b, page.page, pos) ? [{ batchId: b.batchId, contactNumber, round: page.round, callId: callIdFor(b.batchId, contactNumber, { round: page.round, page: page.page, pos }) }] : [];
        }),
      ),
  );
}

/**
 * Each contact's status, derived here from the tables alone, independently of the API's derivation
 * (functions/calls/status.ts): Completed in the batch's round r (or, while r's finaliser runs, RetryEligible
 * once it is in round r + 1's list pages written so far), Calling when its position in round r's list is
 * behind the cursor, RetryEligible when it is in round r's list and not dialled yet, Completed with an item
 * of an earlier round, Queued otherwise.
 */
function statusesOf(o: Observed, b: BatchRow, items: ReadonlyMap<string, ContactRow>): Map<string, ContactStatus> {
  const pages = listPagesOf(o, b.batchId);
  const inRound = (round: number) => new Set(pages.filter((p) => p.round === round).flatMap((p) => p.numbers));
  // A position the cursor passed but deferred (a mark of the round, not dialled since) waits: not Calling.
  const waiting = new Set(
    o.calls
      .filter((i) => i['pk'] === `${batchPartition(b.batchId)}#DEFER` && String(i['sk']).startsWith(`P#${String(b.round).padStart(3, '0')}#`) && i['dialledAt'] === undefined)
      .map((i) => String(i['number'])),
  );
  const dialled = new Set(pages.filter((p) => p.round === b.round).flatMap((p) => p.numbers.filter((n, pos) => isDialled(b, p.page, pos) && !waiting.has(n))));
  const listed = inRound(b.round);
  const next = b.status === 'InProgress' ? inRound(b.round + 1) : new Set<string>();
  const statuses = new Map<string, ContactStatus>();
  for (const number of pages.filter((p) => p.round === 1).flatMap((p) => p.numbers)) {
    const item = items.get(number);
    let status: ContactStatus;
    if (item?.code === 'SUPPRESSED') status = ContactStatus.Suppressed;
    else if (item && item.round >= b.round) status = next.has(number) ? ContactStatus.RetryEligible : ContactStatus.Completed;
    else if (dialled.has(number)) status = ContactStatus.Calling;
    else if (b.round > 1 && listed.has(number) && b.status !== 'Finalised') status = ContactStatus.RetryEligible;
    else status = item ? ContactStatus.Completed : ContactStatus.Queued;
    statuses.set(number, status);
  }
  return statuses;
}

/** Every batch's contacts' derived statuses, by batch. */
function allStatuses(o: Observed): Map<string, Map<string, ContactStatus>> {
  const items = new Map<string, Map<string, ContactRow>>();
  for (const c of contactsOf(o)) items.set(c.batchId, (items.get(c.batchId) ?? new Map()).set(c.contactNumber, c));
  return new Map(batchesOf(o).map((b) => [b.batchId, statusesOf(o, b, items.get(b.batchId) ?? new Map())]));
}

const countOf = (statuses: ReadonlyMap<string, ContactStatus> | undefined, status: ContactStatus) => [...(statuses?.values() ?? [])].filter((s) => s === status).length;

/** The completions of calls the applied writes made (the contacts keep only their latest: sim/world/writes.ts). */
const completions = (host: SimHost): AppliedCompletion[] => host.writes.completions;

// ─── calls ──────────────────────────────────────────────────────────────────────────────────────────

const oneResultPerCall: Check = (o, host) => {
  const out: Violation[] = [];
  const batches = new Map(batchesOf(o).map((b) => [b.batchId, b]));
  const results = new Map<string, AppliedCompletion[]>();
  for (const c of completions(host)) {
    if (c.callId) results.set(baseCallId(c.callId), [...(results.get(baseCallId(c.callId)) ?? []), c]);
  }
  const placed = new Map([...host.placer.calls.values()].map((call) => [baseCallId(call.callId), call]));
  for (const dial of dials(o)) {
    const batch = batches.get(dial.batchId);
    const recorded = results.get(dial.callId) ?? [];
    // A deleted batch ignores the results of its calls in progress (docs/calls.md): they may end with none.
    const deleted = batch?.status === 'Deleted';
    if (recorded.length > 1) {
      out.push({ invariant: 'calls.one-result-per-call', message: `call ${dial.callId} (${dial.batchId} ${dial.contactNumber} round ${dial.round}) has ${recorded.length} recorded results: ${recorded.map((r) => `${r.code} from ${r.source}`).join(', ')}` });
    }
    if (recorded.length === 0 && !deleted && o.settled) {
      out.push({ invariant: 'calls.one-result-per-call', message: `call ${dial.callId} (${dial.batchId} ${dial.contactNumber} round ${dial.round}) was placed and never got a result (not even TIMEOUT)` });
    }
    for (const r of recorded) {
      const { code, source } = r;
      if (r.round !== dial.round) {
        out.push({ invariant: 'calls.result-is-its-own', message: `call ${dial.callId} of round ${dial.round} recorded a result for round ${r.round}` });
      }
      if (source === 'watchdog' && code !== CallCode.timeout) {
        out.push({ invariant: 'calls.result-is-its-own', message: `call ${dial.callId}: the watchdog recorded ${code}, not TIMEOUT` });
      }
      if (source === 'placer') {
        const call = placed.get(dial.callId);
        if (code !== CallCode.internalError || call?.answer === 'accepted') {
          out.push({ invariant: 'calls.result-is-its-own', message: `call ${dial.callId}: recorded ${code} from the placer, but the placer ${call ? `accepted it and its answer reached the dialer` : 'never saw it'}` });
        }
      }
      if (source === 'webhook') {
        const own = (placed.get(dial.callId)?.reports ?? []).map((report) => SimPlacer.classify(report, batch?.minConversationDurationSeconds ?? 10).code);
        if (!own.includes(code)) {
          out.push({ invariant: 'calls.result-is-its-own', message: `call ${dial.callId} (${dial.contactNumber} round ${dial.round}) recorded ${code}, which no result sent for this call says (its own: ${own.join(', ') || 'none sent'})` });
        }
      }
    }
  }
  // A result for a call never dialled (a callId no dial wrote) is a result applied to something else.
  const dialled = new Set(dials(o).map((d) => d.callId));
  for (const [callId, recorded] of results) {
    if (!dialled.has(callId)) out.push({ invariant: 'calls.result-is-its-own', message: `${recorded.length} result(s) recorded for call ${callId}, which no dial placed` });
  }
  return out;
};

/**
 * Every applied completion left its call's attempt item, with its callId and code, and no attempt item
 * stands for a completion that was never applied (the attempt commits in the completion's transaction:
 * a crash, a conflict or a duplicate result leaves both or neither). Deleted batches' rows are left as
 * they are, so they are checked too.
 */
const oneAttemptPerResult: Check = (o, host) => {
  const out: Violation[] = [];
  const attempts = new Map<string, AttemptRow>();
  for (const item of byPk(ofBatches(o.calls), 'TENANT#', (sk) => sk.startsWith('ATTEMPT#')) as unknown as AttemptRow[]) attempts.set(`${item.batchId} ${item.contactNumber} ${item.round}`, item);
  const applied = new Set<string>();
  for (const c of completions(host)) {
    const key = `${c.batchId} ${c.contactNumber} ${c.round}`;
    applied.add(key);
    const attempt = attempts.get(key);
    if (!attempt) out.push({ invariant: 'calls.one-attempt-per-result', message: `the ${c.code} of ${c.contactNumber} in round ${c.round} of ${c.batchId} (${c.source}) was applied without its attempt item` });
    else if (attempt.code !== c.code || (c.callId !== undefined && attempt.callId !== c.callId)) {
      out.push({ invariant: 'calls.one-attempt-per-result', message: `the attempt item of ${c.contactNumber} in round ${c.round} of ${c.batchId} says ${attempt.code} (${attempt.callId}); the applied completion ${c.code} (${c.callId ?? 'no callId'})` });
    }
  }
  for (const [key, attempt] of attempts) {
    if (!applied.has(key)) out.push({ invariant: 'calls.one-attempt-per-result', message: `an attempt item (${attempt.code}, ${attempt.callId}) stands for no applied completion: ${key}` });
  }
  return out;
};

const roundsWithinMaxAttempts: Check = (o, host) => {
  const out: Violation[] = [];
  const batches = new Map(batchesOf(o).map((b) => [b.batchId, b]));
  for (const c of contactsOf(o)) {
    const batch = batches.get(c.batchId);
    if (batch && c.attempts > batch.maxAttempts) out.push({ invariant: 'calls.rounds-within-max-attempts', message: `contact ${c.contactNumber} of ${c.batchId} was dialled ${c.attempts} times; maxAttempts is ${batch.maxAttempts}` });
  }
  const dialsOf = new Map<string, number>();
  for (const d of dials(o)) dialsOf.set(`${d.batchId} ${d.contactNumber}`, (dialsOf.get(`${d.batchId} ${d.contactNumber}`) ?? 0) + 1);
  for (const [key, n] of dialsOf) {
    const batch = batches.get(key.split(' ')[0]!);
    if (batch && n > batch.maxAttempts) out.push({ invariant: 'calls.rounds-within-max-attempts', message: `${key} was dialled in ${n} rounds' lists; maxAttempts is ${batch.maxAttempts}` });
  }
  const rounds = new Map<string, Set<number>>();
  for (const call of host.placer.calls.values()) {
    const key = `${call.batchId} ${call.contactNumber}`;
    rounds.set(key, (rounds.get(key) ?? new Set()).add(call.round));
    if (call.requests > 1) out.push({ invariant: 'calls.placed-once', message: `call ${call.callId} (${key} round ${call.round}) was asked of the placer ${call.requests} times` });
  }
  for (const [key, set] of rounds) {
    const batch = batches.get(key.split(' ')[0]!);
    if (batch && set.size > batch.maxAttempts) out.push({ invariant: 'calls.rounds-within-max-attempts', message: `${key} was called in ${set.size} rounds; maxAttempts is ${batch.maxAttempts}` });
  }
  return out;
};

const finalisedWithNoCallOut: Check = (o, host) => {
  const out: Violation[] = [];
  const statuses = allStatuses(o);
  const ended = completions(host);
  for (const b of batchesOf(o).filter((b) => b.status === 'Finalised')) {
    const calling = countOf(statuses.get(b.batchId), ContactStatus.Calling);
    if (b.nCalling !== 0 || calling > 0) out.push({ invariant: 'calls.finalised-with-no-call-out', message: `batch ${b.batchId} is Finalised with ${b.nCalling} counted and ${calling} contacts Calling` });
    const later = ended.filter((c) => c.batchId === b.batchId && b.finalisedAt && c.at > Date.parse(b.finalisedAt));
    for (const c of later) out.push({ invariant: 'calls.finalised-with-no-call-out', message: `batch ${b.batchId} was Finalised at ${b.finalisedAt}, before its call ${c.callId ?? '?'} ended at ${new Date(c.at).toISOString()}` });
  }
  return out;
};

const countersMatchContacts: Check = (o) => {
  const out: Violation[] = [];
  const contacts = contactsOf(o);
  const statuses = allStatuses(o);
  for (const b of batchesOf(o)) {
    const mine = statuses.get(b.batchId);
    const items = new Map(contacts.filter((c) => c.batchId === b.batchId).map((c) => [c.contactNumber, c]));
    const expected = {
      nQueued: countOf(mine, ContactStatus.Queued),
      nCalling: countOf(mine, ContactStatus.Calling),
      nCompleted: countOf(mine, ContactStatus.Completed),
      nRetryEligible: countOf(mine, ContactStatus.RetryEligible),
      nSuppressed: countOf(mine, ContactStatus.Suppressed),
    };
    for (const [field, value] of Object.entries(expected)) {
      const stored = b[field as keyof typeof expected] ?? 0;
      if (stored !== value) out.push({ invariant: 'calls.counters-match-contacts', message: `batch ${b.batchId}: ${field} is ${stored}, its contacts say ${value}` });
    }
    const codes = new Map<string, number>();
    for (const [number, status] of mine ?? []) {
      const code = items.get(number)?.code;
      if (status === ContactStatus.Completed && code) codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    const stored = Object.entries(b.byCode ?? {}).filter(([, n]) => n !== 0);
    for (const [code, n] of stored) if (codes.get(code) !== n) out.push({ invariant: 'calls.counters-match-contacts', message: `batch ${b.batchId}: byCode.${code} is ${n}, its Completed contacts say ${codes.get(code) ?? 0}` });
    for (const [code, n] of codes) if (!stored.some(([c]) => c === code)) out.push({ invariant: 'calls.counters-match-contacts', message: `batch ${b.batchId}: byCode has no ${code}, ${n} Completed contacts have it` });
  }
  return out;
};

const tenantSlotsReturn: Check = (o) => {
  const out: Violation[] = [];
  const batches = batchesOf(o);
  const statuses = allStatuses(o);
  // A tenant's slots are held on its slot shards (`TENANT#<id>#S<k>`, calls/model.ts) and, for calls
  // dialled before the limit was sharded, on the tenant row.
  const shards = byPk(o.calls, 'TENANT#', 'SLOTS') as unknown as SlotRow[];
  for (const t of tenantsOf(o)) {
    const live = batches.filter((b) => b.tenantId === t.tenantId && b.status !== 'Deleted');
    const calling = live.reduce((n, b) => n + countOf(statuses.get(b.batchId), ContactStatus.Calling), 0);
    const mine = shards.filter((s) => s.tenantId === t.tenantId);
    const active = (t.active ?? 0) + mine.reduce((n, s) => n + s.active, 0);
    if (active !== calling) out.push({ invariant: 'calls.tenant-slots-return', message: `tenant ${t.tenantId} counts ${active} active calls (${[t.active ?? 0, ...mine.map((s) => s.active)].join(' + ')}); ${calling} of its contacts are Calling` });
    for (const s of [{ shard: 'row', active: t.active ?? 0 }, ...mine]) {
      if (s.active < 0) out.push({ invariant: 'calls.tenant-slots-return', message: `tenant ${t.tenantId} has a negative active count (${s.active}) on ${s.shard === 'row' ? 'its row' : `slot shard ${s.shard}`}` });
    }
  }
  return out;
};

const withinConcurrencyLimit: Check = (_o, host, driver) => {
  const tenantOf = new Map([...driver.batches.values()].map((b) => [b.batchId, b.tenantId]));
  const out: Violation[] = [];
  for (const [tenantId, peak] of host.ledger.peaks((batchId) => tenantOf.get(batchId))) {
    const limit = driver.limitOf(tenantId);
    if (limit !== undefined && peak > limit) out.push({ invariant: 'calls.within-concurrency-limit', message: `tenant ${tenantId} had ${peak} calls out at once; its concurrency limit is ${limit}` });
  }
  return out;
};

const batchesEnd: Check = (o) => {
  if (!o.settled) return [];
  return batchesOf(o)
    .filter((b) => b.status !== 'Finalised' && b.status !== 'Deleted')
    .map((b) => ({ invariant: 'calls.batches-end', message: `batch ${b.batchId} is still ${b.status} (round ${b.round}, ${b.nCalling} calling) with nothing left to run` }));
};

// ─── webhooks ───────────────────────────────────────────────────────────────────────────────────────

/**
 * Every event that had a delivery written (a webhook.deliver job or a wait-list entry, in the publishing
 * transaction or by a fanout: sim/world/writes.ts) reached its endpoint, or its delivery was discarded with
 * the marker redeliver reads; and every event whose tenant had subscribed endpoints had a delivery written
 * for each of them (a fanout's, once it finished).
 */
const everyEventDelivered: Check = (o, host, driver) => {
  const out: Violation[] = [];
  const endpoints = endpointsOf(o);
  const deleted = new Set(endpoints.filter((p) => p.deletedAt !== undefined).map((p) => p.endpointId));
  const markers = new Set(byPk(o.webhooks, 'TENANT#', (sk) => sk.startsWith('DISCARDED#')).map((m) => `${endpointIdOfPartition(String(m['pk'])) ?? '?'} ${String(m['jobId'])}`));
  const waiting = new Set(byPk(o.webhooks, 'TENANT#', (sk) => sk.startsWith('WAIT#')).map((e) => String(e['jobId'])));
  const jobs = new Map(o.jobs.map((j) => [j.id, j]));
  const delivered = new Set(host.receivers.requests.filter((r) => r.status >= 200 && r.status < 300).map((r) => `${r.endpoint} ${r.webhookId}`));
  const { events, targets, fanouts } = host.writes;
  // A recovery's deliveries of an event to an endpoint (it drops the original's discard marker: they stand for it).
  const recoveredOf = new Map<string, string[]>();
  for (const [jobId, r] of host.writes.recovered) recoveredOf.set(`${r.endpointId} ${r.eventId}`, [...(recoveredOf.get(`${r.endpointId} ${r.eventId}`) ?? []), jobId]);
  for (const key of targets) {
    const [endpointId, eventId] = key.split(' ') as [string, string];
    if (delivered.has(`${host.receivers.nameOf(endpointId) ?? '?'} ${eventId}`)) continue;
    const jobId = deliveryJobId(eventId, endpointId);
    const recoveries = (recoveredOf.get(key) ?? []).flatMap((id) => jobs.get(id) ?? []);
    const own = jobs.get(jobId);
    const event = events.get(eventId);
    const what = `event ${eventId} (${event?.type ?? '?'}) to endpoint ${endpointId}`;
    if (!own && recoveries.length === 0) {
      // A delivery with no job waits in the list until the holder sends it; gone from the list unsent, it is lost.
      if (!waiting.has(jobId)) out.push({ invariant: 'webhooks.every-event-delivered', message: `${what} left the wait list without being delivered, and no job was made for it` });
      else if (o.settled) out.push({ invariant: 'webhooks.every-event-delivered', message: `${what} still waits in the list with nothing left to run` });
      continue;
    }
    // Discarded with the marker redeliver reads, or because its endpoint was deleted (the purge's, or the delivery's own when it found the tombstone).
    const accounted = (j: JobRow) => j.state === JobState.discarded && (markers.has(`${endpointId} ${j.id}`) || (j.discardReason === DeliveryDiscardReason.endpoint_deleted && deleted.has(endpointId)));
    const candidates = recoveries.length > 0 ? recoveries : [own!];
    if (candidates.some(accounted)) continue;
    for (const job of candidates) {
      if (job.state === JobState.discarded) {
        out.push({ invariant: 'webhooks.every-event-delivered', message: `delivery ${job.id} was discarded (${job.discardReason ?? '?'}) without the marker redeliver reads${job.discardReason === DeliveryDiscardReason.endpoint_deleted ? ', and its endpoint is not deleted' : ''}: it cannot be brought back` });
        continue;
      }
      if (o.settled || isTerminal(job.state)) out.push({ invariant: 'webhooks.every-event-delivered', message: `${what} never arrived; its delivery ${job.id} is ${job.state}` });
    }
  }
  // Every applied completion and finalisation published its event in the same transaction, to every endpoint
  // of its tenant that subscribed and was enabled (and not deleted) then; a publication written apart from it can be lost.
  const tenantOf = new Map([...driver.batches.values()].map((b) => [b.batchId, b.tenantId]));
  const published = (type: string, match: (data: Record<string, unknown>) => boolean) => [...events.values()].some((e) => e.type === type && match(e.data));
  const routable = (p: EndpointRow, type: string, at: string) =>
    subscribedAt(host, p, type, Date.parse(at)) === true && !(p.disabled && p.disabledAt !== undefined && p.disabledAt <= at) && !(p.deletedAt !== undefined && p.deletedAt <= at);
  const expects = (batchId: string, type: string, at: number) => endpoints.some((p) => p.tenantId === tenantOf.get(batchId) && routable(p, type, new Date(at).toISOString()));
  for (const c of host.writes.completions) {
    if (!expects(c.batchId, 'call.completed', c.at)) continue;
    if (!published('call.completed', (d) => d['batchId'] === c.batchId && d['contactNumber'] === c.contactNumber && d['round'] === c.round))
      out.push({ invariant: 'webhooks.every-event-delivered', message: `the completion of ${c.batchId} ${c.contactNumber} in round ${c.round} (${c.code}) committed without its call.completed event` });
  }
  for (const f of host.writes.finalisations) {
    if (expects(f.batchId, 'batch.finalised', f.at) && !published('batch.finalised', (d) => d['batchId'] === f.batchId))
      out.push({ invariant: 'webhooks.every-event-delivered', message: `batch ${f.batchId} was finalised without its batch.finalised event` });
  }
  for (const event of events.values()) {
    const fanout = fanouts.has(event.id) ? jobs.get(`webhook.fanout:${event.id}`) : undefined;
    // A fanout makes its deliveries when it runs: only a finished one is held to them.
    if (fanouts.has(event.id) && !(fanout && isTerminal(fanout.state))) continue;
    const madeBy = fanout?.finalizedAt ?? event.timestamp;
    // An endpoint disabled or deleted before the event was routed gets no delivery.
    for (const p of endpoints.filter((p) => p.tenantId === event.tenantId && routable(p, event.type, madeBy))) {
      if (!targets.has(`${p.endpointId} ${event.id}`)) out.push({ invariant: 'webhooks.every-event-delivered', message: `event ${event.id} (${event.type}) was published with no delivery to endpoint ${p.endpointId}, which subscribes to it` });
    }
  }
  return out;
};

/**
 * Whether endpoint `p` subscribed to `type` at `at`: as it does now, unless the driver changed its event
 * types (sim/driver.ts): before the change was sent, as it did before; while the change was out (its commit
 * lies somewhere in that span), undefined: either.
 */
function subscribedAt(host: SimHost, p: EndpointRow, type: string, at: number): boolean | undefined {
  const name = host.receivers.nameOf(p.endpointId);
  const change = name === undefined ? undefined : host.receivers.of(name).subscription;
  if (!change) return subscribes(p, type as EventType);
  if (at < change.startedAt) return change.before === undefined || change.before.includes(type);
  if (change.answeredAt !== undefined && at > change.answeredAt) return subscribes(p, type as EventType);
  return undefined;
}

/**
 * The latest end (claim end plus a rescuer pass) of a lost run of a delivery to `endpointId` whose claim
 * overlapped [`from`, `to`], if any: until then the lease may be held for a run nobody works under.
 */
function lostClaimsEnd(o: Observed, endpointId: string, from: number, to: number, claimMs: number): number | undefined {
  let end: number | undefined;
  for (const j of o.jobs) {
    if (j.kind !== 'webhook.deliver' || !j.id.endsWith(`:${endpointId}`)) continue;
    for (const a of j.attempts) {
      if (a.outcome !== 'lost') continue;
      const claimEnd = Date.parse(a.at) + claimMs + RESCUER_PERIOD_MS;
      if (Date.parse(a.at) < to && claimEnd > from) end = Math.max(end ?? from, claimEnd);
    }
  }
  return end;
}

/**
 * A delivery put in an endpoint's wait list is sent within {@link SimHost.strandedWithinMs} of being
 * written, unless its endpoint failed meanwhile (a failing endpoint's list waits for its probe) or its
 * delivery became a job whose own schedule then ran (a lost or failed attempt): a lease left behind by a
 * crash (a publisher that took it and died before its commit, a holder that died) expires, and the sweep
 * gives it to the list within one period; a lease handed to a delivery whose run was lost waits for that
 * run's claim to end and the rescuer to move it on, and the bound starts then. One still waiting at the end is reported by
 * every-event-delivered; one that waited longer and was sent after all, here.
 */
const strandedDeliveredInTime: Check = (o, host) => {
  const out: Violation[] = [];
  const jobs = new Map(o.jobs.map((j) => [j.id, j]));
  for (const [key, writtenAt] of host.writes.entries) {
    const [endpointId, eventId] = key.split(' ') as [string, string];
    const name = host.receivers.nameOf(endpointId);
    const requests = host.receivers.requests.filter((r) => r.endpoint === name && r.at >= writtenAt);
    const sent = requests.find((r) => r.webhookId === eventId && r.status >= 200 && r.status < 300);
    if (!sent) continue;
    // A slow send elsewhere that jumped the clock while this entry waited ran the sweep due inside the jump
    // at its end (seed 289: a stalled list restarted 49 simulated minutes late, twice, behind another
    // endpoint's held requests): the jumps are the simulation's, not redial's, so they extend the bound.
    const jumped = host.slowSendJumps.filter((j) => j.from >= writtenAt && j.from < sent.at).reduce((sum, j) => sum + (j.to - j.from), 0);
    // A delivery to this endpoint whose run was lost while the entry waited stayed `running` to its claim's
    // end; a lease handed to it meanwhile waits for that and a rescuer pass (seed 443: an outcome write
    // refused after a rerun's send), so the bound starts there.
    const from = lostClaimsEnd(o, endpointId, writtenAt, sent.at, host.deliveryClaimMs) ?? writtenAt;
    if (sent.at - from <= host.strandedWithinMs + jumped) continue;
    if (requests.some((r) => r.at <= sent.at && (r.status < 200 || r.status >= 300))) continue;
    const job = jobs.get(deliveryJobId(eventId, endpointId));
    if (job && (job.attempt > 1 || job.attempts.some((a) => a.outcome !== 'completed'))) continue;
    out.push({
      invariant: 'webhooks.stranded-delivered-in-time',
      message: `event ${eventId} waited in endpoint ${endpointId}'s list from ${new Date(writtenAt).toISOString()} and was sent at ${new Date(sent.at).toISOString()}, later than ${host.strandedWithinMs / 60_000} min (+ ${jumped / 60_000} min the clock jumped during slow sends) with the endpoint healthy`,
    });
  }
  return out;
};

const oneInFlightPerEndpoint: Check = (_o, host) =>
  [...host.receivers.maxOpen()].filter(([, n]) => n > 1).map(([endpoint, n]) => ({ invariant: 'webhooks.one-in-flight-per-endpoint', message: `endpoint ${endpoint} had ${n} deliveries in flight at once` }));

const oneWebhookIdPerEvent: Check = (_o, host) => {
  const out: Violation[] = [];
  const events = host.writes.events;
  for (const r of host.receivers.requests) {
    const event = events.get(r.webhookId);
    if (!event) {
      out.push({ invariant: 'webhooks.one-webhook-id-per-event', message: `endpoint ${r.endpoint} got webhook-id ${r.webhookId}, which is no event's id` });
      continue;
    }
    if (r.body !== eventBody(event)) out.push({ invariant: 'webhooks.one-webhook-id-per-event', message: `endpoint ${r.endpoint} got webhook-id ${r.webhookId} with another event's body` });
  }
  return out;
};

/**
 * Every request is signed with the secrets live for its endpoint when it arrived (docs/webhooks.md,
 * "Managing an endpoint"): the secret it was registered with until a rotation was sent; while the rotation
 * was out, the old or the new one; after its answer the new one, and the old one too (a receiver still
 * holding only it verifies) until `previousSecretUntil`, never after it (at once with `expireOldNow`). A
 * rotation answered only after a re-send may have committed a secret the driver never saw on its first
 * try: then the old secret is no longer asked for, or refused, after it.
 */
const signedWithLiveSecrets: Check = (_o, host) => {
  const out: Violation[] = [];
  const bad = (r: ReceivedRequest, why: string) => out.push({ invariant: 'webhooks.signed-with-live-secrets', message: `endpoint ${r.endpoint} got ${r.webhookId} at ${new Date(r.at).toISOString()} ${why}` });
  for (const r of host.receivers.requests) {
    const receiver = host.receivers.of(r.endpoint);
    if (receiver.secret === undefined) {
      bad(r, 'before its secret was known (its registration never answered)');
      continue;
    }
    const old = SimReceivers.signedWith(r, receiver.secret);
    const rotation = receiver.rotation;
    if (!rotation || r.at < rotation.startedAt) {
      if (!old) bad(r, 'with a signature its secret does not verify');
      continue;
    }
    // Never answered: its new secret is not known.
    if (rotation.answeredAt === undefined || rotation.secret === undefined) continue;
    const current = SimReceivers.signedWith(r, rotation.secret);
    if (r.at <= rotation.answeredAt) {
      if (!old && !current && rotation.tries === 1) bad(r, 'while its secret was rotated, signed with neither the old secret nor the new one');
      continue;
    }
    if (!current) bad(r, `after its secret was rotated (answered at ${new Date(rotation.answeredAt).toISOString()}), not signed with the new secret`);
    if (rotation.tries !== 1) continue;
    const until = rotation.previousSecretUntil ?? undefined;
    if (until !== undefined && r.at < until && !old) bad(r, `not signed with the previous secret, which signs until ${new Date(until).toISOString()}`);
    if ((until === undefined || r.at >= until) && old) bad(r, `signed with the previous secret, which stopped signing ${until === undefined ? 'at the rotation (expireOldNow)' : `at ${new Date(until).toISOString()}`}`);
  }
  return out;
};

/** Nothing reaches a deleted endpoint after its DELETE committed (a request already on its way arrives at the commit's moment, never after it). */
const nothingAfterDelete: Check = (o, host) => {
  const out: Violation[] = [];
  for (const p of endpointsOf(o).filter((p) => p.deletedAt !== undefined)) {
    const name = host.receivers.nameOf(p.endpointId);
    const deletedAt = Date.parse(p.deletedAt!);
    for (const r of host.receivers.requests.filter((r) => r.endpoint === name && r.at > deletedAt)) {
      out.push({ invariant: 'webhooks.nothing-after-delete', message: `endpoint ${name ?? p.endpointId} got ${r.webhookId} at ${new Date(r.at).toISOString()}, after it was deleted at ${p.deletedAt}` });
    }
  }
  return out;
};

/** After a URL change was answered, nothing goes to the old URL; nothing went to the new one before the change was sent. */
const sentToCurrentUrl: Check = (_o, host) => {
  const out: Violation[] = [];
  for (const r of host.receivers.requests) {
    const move = host.receivers.of(r.endpoint).move;
    if (r.path === 'moved' && (!move || r.at < move.startedAt)) out.push({ invariant: 'webhooks.sent-to-current-url', message: `endpoint ${r.endpoint} got ${r.webhookId} at its new URL at ${new Date(r.at).toISOString()}, before the change was sent` });
    if (r.path === 'registered' && move?.answeredAt !== undefined && r.at > move.answeredAt)
      out.push({ invariant: 'webhooks.sent-to-current-url', message: `endpoint ${r.endpoint} got ${r.webhookId} at its old URL at ${new Date(r.at).toISOString()}, after its URL change committed (answered at ${new Date(move.answeredAt).toISOString()})` });
  }
  return out;
};

/**
 * Every recovery the driver started ends (completed; failed only when its endpoint was deleted or disabled),
 * with matched ≥ requeued and nothing requeued on a dry run; it wrote exactly the deliveries it counts as
 * requeued (each page commits its deliveries with the row's counters), and each of them reached the endpoint
 * with its event's id as webhook-id, unless discarded with the marker redeliver reads or by the endpoint's
 * deletion.
 */
const recoveriesComplete: Check = (o, host, driver) => {
  const out: Violation[] = [];
  const bad = (message: string) => out.push({ invariant: 'webhooks.recoveries-complete', message });
  const rows = new Map((byPk(o.webhooks, 'TENANT#', (sk) => sk.startsWith('RECOVERY#')) as unknown as RecoveryRow[]).map((r) => [r.recoveryId, r]));
  const endpoints = new Map(endpointsOf(o).map((p) => [p.endpointId, p]));
  const markers = new Set(byPk(o.webhooks, 'TENANT#', (sk) => sk.startsWith('DISCARDED#')).map((m) => String(m['jobId'])));
  const jobs = new Map(o.jobs.map((j) => [j.id, j]));
  for (const started of driver.recoveries) {
    const row = rows.get(started.recoveryId);
    const what = `recovery ${started.recoveryId} of endpoint ${started.endpoint}${started.dryRun ? ' (dry run)' : ''}`;
    if (!row) {
      bad(`${what} was answered 202 and has no row`);
      continue;
    }
    const endpoint = endpoints.get(row.endpointId);
    const gone = endpoint?.deletedAt !== undefined || endpoint?.disabled === true;
    if (row.status === 'running' && o.settled) bad(`${what} is still running with nothing left to run`);
    if (row.status === 'failed' && !gone) bad(`${what} failed (${row.error ?? '?'}) though its endpoint is live`);
    if (row.requeued > row.matched) bad(`${what} requeued ${row.requeued} of ${row.matched} matched`);
    if (row.dryRun && row.requeued !== 0) bad(`${what} is a dry run and requeued ${row.requeued}`);
    const written = [...host.writes.recovered].filter(([, r]) => r.recoveryId === row.recoveryId);
    if (row.status !== 'running' && written.length !== row.requeued) bad(`${what} counts ${row.requeued} requeued; ${written.length} deliveries were written for it`);
    for (const [jobId, r] of written) {
      const arrived = host.receivers.requests.some((q) => q.endpoint === started.endpoint && q.webhookId === r.eventId && q.at >= r.at && q.status >= 200 && q.status < 300);
      if (arrived) continue;
      const job = jobs.get(jobId);
      if (job?.state === JobState.discarded && (markers.has(jobId) || job.discardReason === DeliveryDiscardReason.endpoint_deleted)) continue;
      if (job && !isTerminal(job.state) && !o.settled) continue;
      bad(`${what} requeued event ${r.eventId}, and its delivery ${jobId} (${job?.state ?? 'no job'}) never brought it to the endpoint under its webhook-id`);
    }
  }
  return out;
};

// ─── one owner of retries ───────────────────────────────────────────────────────────────────────────

const oneSendPerRun: Check = (_o, host) => {
  const out: Violation[] = [];
  const count = <K>(keys: K[]) => {
    const map = new Map<K, number>();
    for (const k of keys) map.set(k, (map.get(k) ?? 0) + 1);
    return map;
  };
  // A recovery's delivery of an event is a delivery of its own (same webhook-id): the holder that drains the
  // list sends it in its run, beside the original if that one was still out when the recovery matched it
  // (seed 348: the recovery fell due while the event's send was held by a slow endpoint). One send each.
  const deliveries = count([...host.writes.recovered.values()].map((r) => `${host.receivers.nameOf(r.endpointId) ?? r.endpointId} ${r.eventId}`));
  for (const [key, n] of count(host.receivers.requests.flatMap((r) => r.runs.map((run) => `${run} ${r.endpoint} ${r.webhookId}`)))) {
    const [, endpoint, webhookId] = key.split(' ');
    if (n > 1 + (deliveries.get(`${endpoint} ${webhookId}`) ?? 0)) out.push({ invariant: 'retries.one-send-per-run', message: `run ${key.split(' ')[0]} sent ${key.split(' ')[2]} to endpoint ${key.split(' ')[1]} ${n} times` });
  }
  for (const [key, n] of count(host.smtp.datas.flatMap((d) => d.runs.map((run) => `${run} ${d.messageId}`)))) {
    if (n > 1) out.push({ invariant: 'retries.one-send-per-run', message: `run ${key.split(' ')[0]} handed ${key.split(' ')[1]} to the SMTP server ${n} times` });
  }
  for (const call of host.placer.calls.values()) {
    for (const [run, n] of count(call.runs.flat())) if (n > 1) out.push({ invariant: 'retries.one-send-per-run', message: `run ${run} asked the placer for call ${call.callId} ${n} times` });
  }
  return out;
};

// ─── jobs ───────────────────────────────────────────────────────────────────────────────────────────

const PERIODIC = new Set(['webhook.sweep']);

const noneStuck: Check = (o) => {
  const out: Violation[] = [];
  for (const j of o.jobs) {
    if (isTerminal(j.state)) continue;
    if (j.state === JobState.running) {
      const expired = Date.parse(j.leaseUntil ?? '') + RESCUER_PERIOD_MS;
      if (o.now > expired) out.push({ invariant: 'jobs.none-stuck', message: `job ${j.id} is running on a lease that expired at ${j.leaseUntil}, and the rescuer has passed since` });
      continue;
    }
    const due = Date.parse(j.scheduledAt);
    // The rescuer looks at a waiting job at its check time (byCheck: `<ISO time>#<id>`) and moves it on when
    // it wakes the job again; a check long past means nothing looked.
    const check = Date.parse(j.checkAt.slice(0, j.checkAt.indexOf('#')));
    if (o.now > Math.max(due + RESCUE_AFTER_MS, check) + 2 * RESCUER_PERIOD_MS) {
      out.push({ invariant: 'jobs.none-stuck', message: `job ${j.id} is ${j.state}, due since ${j.scheduledAt}, and nothing woke it (now ${new Date(o.now).toISOString()})` });
    }
  }
  if (o.settled) {
    for (const j of o.jobs) {
      // A pause's expiry is due 30 days on (past the run's horizon): waiting for its time is not stuck.
      if (j.kind === 'calls.pause_expiry' && Date.parse(j.scheduledAt) > o.now) continue;
      // A job asked to stop (a deleted batch's dialer) that sleeps until its time ends cancelled when it wakes.
      if (j.cancelRequestedAt !== undefined && j.state !== JobState.running && Date.parse(j.scheduledAt) > o.now) continue;
      if (!isTerminal(j.state) && !PERIODIC.has(j.kind)) out.push({ invariant: 'jobs.none-stuck', message: `job ${j.id} is ${j.state} with nothing left to wake it` });
    }
  }
  return out;
};

const attemptsWithinMax: Check = (o) =>
  o.jobs
    .filter((j) => j.attempt > j.maxAttempts || j.attempts.length > j.maxAttempts)
    .map((j) => ({ invariant: 'jobs.attempts-within-max', message: `job ${j.id} spent ${j.attempt} attempts (${j.attempts.length} recorded) of ${j.maxAttempts}` }));

const snoozeSpendsNoAttempt: Check = (o) => {
  const out: Violation[] = [];
  for (const j of o.jobs) {
    const expected = j.state === JobState.running ? j.attempts.length + 1 : j.attempts.length;
    if (j.attempt !== expected) out.push({ invariant: 'jobs.snooze-spends-no-attempt', message: `job ${j.id} (${j.state}, ${j.snoozes} snoozes) counts ${j.attempt} attempts but records ${j.attempts.length}` });
    j.attempts.forEach((a, i) => {
      if (a.attempt !== i + 1) out.push({ invariant: 'jobs.snooze-spends-no-attempt', message: `job ${j.id}: its attempt record ${i + 1} says attempt ${a.attempt}` });
    });
  }
  return out;
};

const discardsCounted: Check = (o, host) => {
  const out: Violation[] = [];
  const rows = new Map<string, number>();
  for (const j of o.jobs.filter((j) => j.state === JobState.discarded)) rows.set(`${j.kind} ${j.discardReason ?? '?'}`, (rows.get(`${j.kind} ${j.discardReason ?? '?'}`) ?? 0) + 1);
  const counted = new Map<string, number>();
  for (const m of host.metrics.list().filter((m) => m.name === DISCARD_METRIC)) counted.set(`${m.dimensions['kind']} ${m.dimensions['reason']}`, (counted.get(`${m.dimensions['kind']} ${m.dimensions['reason']}`) ?? 0) + m.value);
  for (const key of new Set([...rows.keys(), ...counted.keys()])) {
    if ((rows.get(key) ?? 0) !== (counted.get(key) ?? 0)) out.push({ invariant: 'jobs.discards-counted', message: `${key}: ${rows.get(key) ?? 0} discarded jobs, ${counted.get(key) ?? 0} counted in ${DISCARD_METRIC}` });
  }
  return out;
};

// ─── mail ───────────────────────────────────────────────────────────────────────────────────────────

const recipientCap: Check = (_o, host) => {
  const out: Violation[] = [];
  const perWindow = new Map<string, Set<string>>();
  for (const m of host.smtp.mails) {
    const dateHeader = /^Date:\s*(.+)$/im.exec(m.text)?.[1];
    const at = dateHeader ? Date.parse(dateHeader) : m.at;
    const key = `${recipientKey(m.to)} ${new Date(windowOf(caps.recipient, at).start).toISOString()}`;
    perWindow.set(key, (perWindow.get(key) ?? new Set()).add(m.messageId));
  }
  for (const [key, ids] of perWindow) if (ids.size > caps.recipient.limit) out.push({ invariant: 'mail.recipient-cap', message: `${key.split(' ')[0]} got ${ids.size} mails in the hour from ${key.split(' ')[1]} (cap ${caps.recipient.limit})` });
  return out;
};

const oneMessageIdPerEvent: Check = (_o, host) => {
  const out: Violation[] = [];
  const byEvent = new Map<string, Set<string>>();
  const byId = new Map<string, Set<string>>();
  for (const m of host.smtp.mails) {
    byEvent.set(m.eventId, (byEvent.get(m.eventId) ?? new Set()).add(m.messageId));
    byId.set(m.messageId, (byId.get(m.messageId) ?? new Set()).add(m.eventId));
  }
  for (const [event, ids] of byEvent) if (ids.size > 1) out.push({ invariant: 'mail.one-message-id-per-event', message: `event ${event} was mailed under ${ids.size} Message-IDs: ${[...ids].join(', ')}` });
  for (const [id, events] of byId) if (events.size > 1) out.push({ invariant: 'mail.one-message-id-per-event', message: `Message-ID ${id} was used for ${events.size} events` });
  return out;
};

const everyFinalisedBatchNotified: Check = (o, host) => {
  const owners = new Set(tenantsOf(o).filter((t) => t.ownerEmail).map((t) => t.tenantId));
  const tenantOf = new Map(batchesOf(o).map((b) => [b.batchId, b.tenantId]));
  // Read off the jobs table, not the transaction: a notice written after the finalising commit is there
  // unless a crash or a lost answer came between them.
  const notified = new Set(o.jobs.filter((j) => j.kind === 'owner.notify').map((j) => String((j.args as { data?: { batchId?: unknown } }).data?.batchId)));
  return host.writes.finalisations
    .filter((f) => owners.has(tenantOf.get(f.batchId) ?? '') && !notified.has(f.batchId))
    .map((f) => ({ invariant: 'mail.every-finalised-batch-notified', message: `batch ${f.batchId} of tenant ${tenantOf.get(f.batchId) ?? '?'} was finalised and no owner.notify job was ever written for it` }));
};

const dropsCounted: Check = (o, host) => {
  const dropped = byPk(o.mail, 'TENANT#', (sk) => sk.startsWith('NOTICE#')).filter((n) => (n as unknown as Notice).status === 'dropped').length;
  const counted = host.metrics.total(MailMetric.dropped, { reason: 'owner_burst_cap' });
  return counted < dropped ? [{ invariant: 'mail.drops-counted', message: `${dropped} owner notices dropped, ${counted} counted in ${MailMetric.dropped}` }] : [];
};

// ─── control and compliance ─────────────────────────────────────────────────────────────────────────

/**
 * A dial that committed: its batch, tenant, number and call; when it was decided (`dialledAt`: the `now`
 * its group was planned at, which its cap claim holds and the placer request carries as `placedAt`, at or
 * before its commit) and a time by which it had committed (`committedBy`: when the world saw its cap claim
 * applied, or else when the placer got the call).
 */
interface DialCommit {
  batchId: string;
  tenantId: string | undefined;
  number: string;
  callId: string;
  dialledAt: number;
  committedBy: number;
}

/**
 * Every dial that committed, as the world saw it: each cap slot claim (one per call a dial committed, in the
 * dial's transaction: a call never placed, or refused by the placer, counts) and each call the placer got
 * (a dial whose claim was not written, if a bug left it out). By base call id, once each.
 */
function dialCommits(o: Observed, host: SimHost): DialCommit[] {
  const tenantOf = new Map(batchesOf(o).map((b) => [b.batchId, b.tenantId]));
  const byCall = new Map<string, DialCommit>();
  for (const c of host.writes.capClaims) {
    const callId = baseCallId(c.callId);
    if (!byCall.has(callId)) byCall.set(callId, { batchId: c.batchId, tenantId: c.tenantId, number: c.number, callId, dialledAt: c.dialledAt, committedBy: c.at });
  }
  for (const call of host.placer.calls.values()) {
    const callId = baseCallId(call.callId);
    if (byCall.has(callId) || call.placedAt === undefined) continue;
    byCall.set(callId, { batchId: call.batchId, tenantId: tenantOf.get(call.batchId), number: call.contactNumber, callId, dialledAt: Date.parse(call.placedAt), committedBy: call.acceptedAt });
  }
  return [...byCall.values()];
}

const at = (ms: number) => new Date(ms).toISOString();

/**
 * No dial commits for a batch between a committed pause and its resume. A dial decided after the pause was
 * seen applied began after the pause committed; one seen committed before the resume was decided committed
 * before the resume: both, and the dial committed while the batch was paused.
 */
const noDialWhilePaused: Check = (o, host) => {
  const out: Violation[] = [];
  const resumes = new Map<string, { pausedAt: number; resumedAt: number }[]>();
  const open = new Map<string, number>();
  for (const c of host.writes.controls) {
    if (c.kind === 'pause' && !open.has(c.batchId)) open.set(c.batchId, c.at);
    if (c.kind === 'resume' && open.has(c.batchId)) {
      resumes.set(c.batchId, [...(resumes.get(c.batchId) ?? []), { pausedAt: open.get(c.batchId)!, resumedAt: c.decidedAt }]);
      open.delete(c.batchId);
    }
  }
  for (const [batchId, pausedAt] of open) resumes.set(batchId, [...(resumes.get(batchId) ?? []), { pausedAt, resumedAt: Number.POSITIVE_INFINITY }]);
  for (const d of dialCommits(o, host)) {
    for (const p of resumes.get(d.batchId) ?? []) {
      if (d.dialledAt > p.pausedAt && d.committedBy < p.resumedAt)
        out.push({ invariant: 'control.no-dial-while-paused', message: `call ${d.callId} (${d.batchId} ${d.number}) was dialled at ${at(d.dialledAt)}, while its batch was paused (pause committed by ${at(p.pausedAt)}, ${p.resumedAt === Number.POSITIVE_INFINITY ? 'never resumed' : `resumed at ${at(p.resumedAt)}`})` });
    }
  }
  return out;
};

/** No dial of a number decided after its suppression entry was seen committed, while the entry stands. */
const noDialAfterSuppression: Check = (o, host) => {
  const out: Violation[] = [];
  for (const d of dialCommits(o, host)) {
    if (d.tenantId === undefined) continue;
    const events = host.writes.suppressions.filter((s) => s.tenantId === d.tenantId && s.number === d.number);
    const added = events.find((s) => s.kind === 'added' && s.at < d.dialledAt && !events.some((r) => r.kind === 'removed' && r.at > s.at && r.at <= d.committedBy));
    if (added) out.push({ invariant: 'compliance.no-dial-after-suppression', message: `call ${d.callId} (${d.batchId}) dialled ${d.number} at ${at(d.dialledAt)}; tenant ${d.tenantId} had suppressed it by ${at(added.at)}` });
  }
  return out;
};

/** No 24 h window holds more dial commits to one number than its tenant's cap (`maxCallsPerNumberPer24h`), across its batches. */
const capPer24h: Check = (o, host) => {
  const out: Violation[] = [];
  const caps = new Map(tenantsOf(o).map((t) => [t.tenantId, t.maxCallsPerNumberPer24h ?? DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H]));
  const byNumber = new Map<string, DialCommit[]>();
  for (const d of dialCommits(o, host)) if (d.tenantId !== undefined) byNumber.set(`${d.tenantId} ${d.number}`, [...(byNumber.get(`${d.tenantId} ${d.number}`) ?? []), d]);
  for (const [key, list] of byNumber) {
    const [tenantId, number] = key.split(' ') as [string, string];
    const cap = caps.get(tenantId) ?? DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H;
    const sorted = list.sort((a, b) => a.dialledAt - b.dialledAt);
    for (let i = 0, from = 0; i < sorted.length; i++) {
      while (sorted[from]!.dialledAt <= sorted[i]!.dialledAt - CAP_WINDOW_MS) from++;
      if (i - from + 1 > cap) {
        const inWindow = sorted.slice(from, i + 1);
        out.push({ invariant: 'compliance.cap-per-24h', message: `tenant ${tenantId} dialled ${number} ${inWindow.length} times within 24 h (cap ${cap}): ${inWindow.map((d) => `${d.callId} at ${at(d.dialledAt)}`).join(', ')}` });
        break;
      }
    }
  }
  return out;
};

/**
 * No call outside its contact's local window: the batch's window as stored, in the zones the contact's own
 * timezone (as the tenant sent it), its number's area code or region give (compliance/recipient.ts; the
 * batch's zone alone when `perContact` is off), open at the dial's time in every one (compliance/hours.ts).
 */
const localWindow: Check = (o, host, driver) => {
  const out: Violation[] = [];
  const batches = new Map(batchesOf(o).map((b) => [b.batchId, b]));
  for (const d of dialCommits(o, host)) {
    const window = batches.get(d.batchId)?.callingWindow;
    if (!window) continue;
    const timezone = driver.batchPlanOf(d.batchId)?.timezones?.[d.number];
    const { zones, source } = recipientZones({ number: d.number, ...(timezone ? { timezone } : {}) }, { timezone: window.timezone, perContact: window.perContact === true }, d.dialledAt);
    if (!windowOpenFor(window, zones, d.dialledAt))
      out.push({ invariant: 'compliance.local-window', message: `call ${d.callId} (${d.batchId}) dialled ${d.number} at ${at(d.dialledAt)}, outside its window ${window.start}–${window.end} in ${zones.join(', ')} (${source})` });
  }
  return out;
};

/** No dial before its batch's `startAt`. */
const noEarlyStart: Check = (o, host) => {
  const out: Violation[] = [];
  const batches = new Map(batchesOf(o).map((b) => [b.batchId, b]));
  for (const d of dialCommits(o, host)) {
    const startAt = batches.get(d.batchId)?.startAt;
    if (startAt !== undefined && d.dialledAt < Date.parse(startAt)) out.push({ invariant: 'control.no-early-start', message: `call ${d.callId} (${d.batchId} ${d.number}) was dialled at ${at(d.dialledAt)}, before its batch's startAt ${startAt}` });
  }
  return out;
};

// ─── imports (issue 26) ─────────────────────────────────────────────────────────────────────────────

const sameData = (a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined) => JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());

/**
 * A batch imported from a CSV file (sim/world/import-file.ts knows which of its rows were valid) holds
 * exactly the file's valid rows, once each, in file order, whatever crashed or was lost while the import
 * ran: its round-1 list pages are pages 0 … importPage − 1 (none missing, none beyond the cursor), page p
 * holding valid contacts 500·p … 500·p + 499; every listed contact with an externalId or variables has its
 * data item saying exactly those; every externalId its index entry naming its contact and position; no
 * data item or index entry for a contact the list does not hold (but those of the two pages from the
 * cursor on, written ahead of their transactions, while the import has not ended); the row's counts (contactCount, and in
 * round 1 listPages and roundSize) agree with its pages, its `duplicatesDropped` with the file, and the
 * import's answer with the file's rows. At rest, an import whose batch was not deleted has ended: every page
 * written and the batch no longer Importing. The batch then dials as any other (the calls.* checks).
 */
const importsExact: Check = (o, _host, driver) => {
  const out: Violation[] = [];
  const report = (message: string) => out.push({ invariant: 'imports.exact', message });
  const plans = driver.importPlans();
  const batches = new Map(batchesOf(o).map((b) => [b.batchId, b as BatchRow & { importPage?: number; importPages?: number }]));
  for (const { tenantId, batch: batchPlan } of plans) {
    const batchId = batchIdForKey(tenantId, batchPlan.key);
    const b = batches.get(batchId);
    const file = importFile(batchPlan.import!);
    const expected = file.expected;
    const answer = driver.imports.get(batchId);
    if (!b) {
      if (answer) report(`import ${batchPlan.key} was answered ${answer.status} with batch ${batchId}, which does not exist`);
      continue;
    }
    if (answer?.accepted !== undefined) {
      const said = { accepted: answer.accepted, duplicatesDropped: answer.duplicatesDropped, refusedRows: answer.refusedRows };
      const truth = { accepted: expected.length, duplicatesDropped: batchPlan.import!.duplicates, refusedRows: batchPlan.import!.invalid };
      if (!sameData(said, truth)) report(`import ${batchPlan.key} (${batchId}) answered ${JSON.stringify(said)}; its file has ${JSON.stringify(truth)}`);
    }
    const pagesWanted = Math.ceil(expected.length / LIST_PAGE_SIZE);
    if (b.importPages !== pagesWanted) report(`batch ${batchId} imports ${b.importPages ?? 'no'} pages; its file's ${expected.length} valid contacts make ${pagesWanted}`);
    const cursor = b.importPage ?? 0;
    const ended = cursor === pagesWanted;
    if (ended && b.status === 'Importing') report(`batch ${batchId} has every page written and is still Importing`);
    if (!ended && b.status !== 'Importing' && b.status !== 'Deleted') report(`batch ${batchId} is ${b.status} with its import cursor at page ${cursor} of ${pagesWanted}`);
    if (!ended && o.settled && b.status !== 'Deleted') report(`batch ${batchId}'s import never ended: at rest, its cursor is at page ${cursor} of ${pagesWanted}`);

    // The list: pages 0 … cursor − 1, each its slice of the file's valid contacts.
    const pages = listPagesOf(o, batchId).filter((p) => p.round === 1);
    const listed: ExpectedContact[] = [];
    for (let p = 0; p < Math.max(cursor, ...pages.map((x) => x.page + 1)); p++) {
      const page = pages.find((x) => x.page === p);
      const want = expected.slice(p * LIST_PAGE_SIZE, (p + 1) * LIST_PAGE_SIZE);
      if (p >= cursor) {
        if (page) report(`batch ${batchId} has list page ${p} of round 1 beyond its import cursor (${cursor}): ${page.numbers.length} contacts written without the cursor passing them`);
        continue;
      }
      if (!page) {
        report(`batch ${batchId}'s import cursor passed page ${p}, which was never written: its ${want.length} contacts (${want[0]?.number} …) are lost`);
        continue;
      }
      listed.push(...want);
      if (page.numbers.length !== want.length || page.numbers.some((n, i) => n !== want[i]!.number)) {
        const at = page.numbers.findIndex((n, i) => n !== want[i]?.number);
        report(`batch ${batchId}'s list page ${p} holds ${page.numbers.length} contacts, not its file's ${want.length}: position ${p * LIST_PAGE_SIZE + (at < 0 ? page.numbers.length : at)} is ${page.numbers[at] ?? 'missing'}, the file's ${want[at]?.number ?? 'nothing'}`);
      }
    }
    const seen = new Map<string, number>();
    for (const p of pages) for (const n of p.numbers) seen.set(n, (seen.get(n) ?? 0) + 1);
    for (const [n, times] of seen) if (times > 1) report(`batch ${batchId} lists ${n} ${times} times in round 1`);

    // The counts.
    const inPages = pages.filter((p) => p.page < cursor).reduce((n, p) => n + p.numbers.length, 0);
    if (b.contactCount !== inPages) report(`batch ${batchId}: contactCount is ${b.contactCount}, its round-1 pages hold ${inPages}`);
    if (b.round === 1 && b.listPages !== cursor) report(`batch ${batchId}: listPages is ${b.listPages}, its import wrote ${cursor}`);
    if (b.round === 1 && b.roundSize !== inPages) report(`batch ${batchId}: roundSize is ${b.roundSize}, its round-1 pages hold ${inPages}`);
    const dropped = (b as { duplicatesDropped?: number }).duplicatesDropped ?? 0;
    if (dropped !== batchPlan.import!.duplicates) report(`batch ${batchId}: duplicatesDropped is ${dropped}, its file repeats ${batchPlan.import!.duplicates} numbers`);

    // The data items and the externalId index: exactly the listed contacts' (and, before the end, the next page's).
    // A run writes page p's data items, then p + 1's while p's transaction commits: a batch deleted (or a run
    // that died) before p's transaction leaves both pages' items behind a cursor still at p.
    const ahead = ended ? [] : expected.slice(cursor * LIST_PAGE_SIZE, (cursor + 2) * LIST_PAGE_SIZE);
    const positions = new Map(expected.map((c, i) => [c.number, i]));
    const mayExist = new Set([...listed, ...ahead].map((c) => c.number));
    const mine = o.calls.filter((i) => i['batchId'] === batchId && String(i['pk']).startsWith(`${batchPartition(batchId)}#C`));
    const data = new Map((mine.filter((i) => String(i['sk']).startsWith('DATA#')) as unknown as ContactDataRow[]).map((d) => [d.contactNumber, d]));
    const xids = new Map((mine.filter((i) => String(i['sk']).startsWith('XID#')) as unknown as (ExternalIdRow & { sk: string })[]).map((x) => [x.sk.slice('XID#'.length), x]));
    for (const c of listed) {
      const item = data.get(c.number);
      if ((c.externalId !== undefined || c.variables !== undefined) && !item) report(`batch ${batchId}: contact ${c.number} (position ${positions.get(c.number)}) is listed without its data item`);
      if (item && (item.externalId !== c.externalId || !sameData(item.variables, c.variables))) {
        report(`batch ${batchId}: the data item of ${c.number} says ${JSON.stringify({ externalId: item.externalId, variables: item.variables })}; its row ${JSON.stringify({ externalId: c.externalId, variables: c.variables })}`);
      }
      if (c.externalId !== undefined) {
        const entry = xids.get(c.externalId);
        if (!entry) report(`batch ${batchId}: externalId ${c.externalId} of listed contact ${c.number} has no index entry`);
        else if (entry.contactNumber !== c.number || entry.position !== positions.get(c.number)) report(`batch ${batchId}: the index entry of ${c.externalId} names ${entry.contactNumber} at position ${entry.position}; the file's contact is ${c.number} at ${positions.get(c.number)}`);
      }
    }
    // Strays are counted, not listed one by one: a lost page leaves hundreds.
    const strayData = [...data].filter(([number, item]) => !mayExist.has(number) && (item.externalId !== undefined || item.variables !== undefined)).map(([number]) => number);
    if (strayData.length > 0) report(`batch ${batchId} has ${strayData.length} data items of contacts its list does not hold (${strayData.slice(0, 3).join(', ')}${strayData.length > 3 ? ' …' : ''}${strayData.some((n) => !positions.has(n)) ? '; some are no valid row of its file' : ''})`);
    const strayIds = [...xids].filter(([, entry]) => !mayExist.has(entry.contactNumber)).map(([externalId]) => externalId);
    if (strayIds.length > 0) report(`batch ${batchId} has ${strayIds.length} externalId index entries of contacts its list does not hold (${strayIds.slice(0, 3).join(', ')}${strayIds.length > 3 ? ' …' : ''})`);
  }
  return out;
};

// ─── the API ────────────────────────────────────────────────────────────────────────────────────────

const expectedAnswers: Check = (_o, host, driver) => {
  const out: Violation[] = [];
  for (const call of driver.calls) {
    for (const status of call.statuses) {
      if (call.allowed?.includes(status)) continue;
      if (status === 500 || (status >= 400 && status < 500 && status !== 404)) out.push({ invariant: 'api.expected-answers', message: `${call.what}: ${call.method} ${call.path} answered ${status}` });
    }
  }
  for (const call of host.placer.calls.values()) {
    for (const report of call.reports) {
      for (const r of report.responses) if (r.status === 500 || (r.status >= 400 && r.status < 500)) out.push({ invariant: 'api.expected-answers', message: `the result of call ${call.callId} was answered ${r.status}` });
    }
  }
  return out;
};

/** Every invariant, by name (docs/simulation.md describes each). */
export const invariants: Readonly<Record<string, Check>> = {
  'calls.one-result-per-call': oneResultPerCall,
  'calls.one-attempt-per-result': oneAttemptPerResult,
  'calls.rounds-within-max-attempts': roundsWithinMaxAttempts,
  'calls.finalised-with-no-call-out': finalisedWithNoCallOut,
  'calls.counters-match-contacts': countersMatchContacts,
  'calls.tenant-slots-return': tenantSlotsReturn,
  'calls.within-concurrency-limit': withinConcurrencyLimit,
  'calls.batches-end': batchesEnd,
  'control.no-dial-while-paused': noDialWhilePaused,
  'control.no-early-start': noEarlyStart,
  'compliance.no-dial-after-suppression': noDialAfterSuppression,
  'compliance.cap-per-24h': capPer24h,
  'compliance.local-window': localWindow,
  'webhooks.every-event-delivered': everyEventDelivered,
  'webhooks.stranded-delivered-in-time': strandedDeliveredInTime,
  'webhooks.one-in-flight-per-endpoint': oneInFlightPerEndpoint,
  'webhooks.one-webhook-id-per-event': oneWebhookIdPerEvent,
  'webhooks.signed-with-live-secrets': signedWithLiveSecrets,
  'webhooks.nothing-after-delete': nothingAfterDelete,
  'webhooks.sent-to-current-url': sentToCurrentUrl,
  'webhooks.recoveries-complete': recoveriesComplete,
  'retries.one-send-per-run': oneSendPerRun,
  'jobs.none-stuck': noneStuck,
  'jobs.attempts-within-max': attemptsWithinMax,
  'jobs.snooze-spends-no-attempt': snoozeSpendsNoAttempt,
  'jobs.discards-counted': discardsCounted,
  'mail.recipient-cap': recipientCap,
  'mail.one-message-id-per-event': oneMessageIdPerEvent,
  'mail.every-finalised-batch-notified': everyFinalisedBatchNotified,
  'mail.drops-counted': dropsCounted,
  'api.expected-answers': expectedAnswers,
  'imports.exact': importsExact,
};

/** Runs every check (the calendar's too: sim/invariants-calendar.ts). */
export function check(o: Observed, host: SimHost, driver: Driver): Violation[] {
  const calendar = host.calendar
    ? Object.values(calendarInvariants).flatMap((c) =>
        c({ now: o.now, settled: o.settled, items: o.calendar, events: host.calendar!.simulator.allEvents(), requests: host.calendar!.simulator.requests, tools: host.calendar!.tools }),
      )
    : [];
  return [...Object.values(invariants).flatMap((c) => c(o, host, driver)), ...calendar];
}
