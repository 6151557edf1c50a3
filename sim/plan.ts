import { createHash } from 'node:crypto';
import { seededRng } from '../functions/platform/rng.ts';
import type { Rng } from '../functions/platform/rng.ts';
import { drawCalendars } from './calendar-plan.ts';

/**
 * A seed's plan: the campaign it runs (tenants, batches, endpoints, mail) and the faults it injects, both
 * drawn from the seed alone, so `--seed S` replays the same plan. The campaign is drawn first and the
 * faults after, from the same generator: dropping faults (`--only`) leaves the campaign as it was.
 */

// ─── The campaign ───────────────────────────────────────────────────────────────────────────────────

export interface EndpointPlan {
  /** The receiver's path: `/e/<name>`. */
  name: string;
  /** Subscribed event types; undefined: every type. */
  eventTypes?: string[];
  /** What its owner does to it while the campaign runs (rarely), in time order: drawn apart (drawEndpointActions). */
  actions?: EndpointAction[];
}

/**
 * An owner's management of an endpoint, through its API key (docs/webhooks.md, "Managing an endpoint",
 * "Recovery"); each at `atMs` after the start:
 * - `rotate`: a new signing secret, the old one signing too for 24 h unless `expireOldNow`;
 * - `update`: a new URL (another path of the same receiver: `/e/<name>/moved`), other event types (every type
 *   for an endpoint that had a few, `batch.finalised` alone for one that had every type), or a description;
 * - `delete`: nothing is sent to it from the commit on; what waited is discarded (`endpoint_deleted`);
 * - `recover`: the events of `[sinceMs, untilMs)` (until: now if absent) it subscribes to and did not
 *   receive are sent again, under their own webhook-id; a dry run only counts them.
 */
export type EndpointAction =
  | { kind: 'rotate'; atMs: number; expireOldNow: boolean }
  | { kind: 'update'; atMs: number; change: 'url' | 'eventTypes' | 'description' }
  | { kind: 'delete'; atMs: number }
  | { kind: 'recover'; atMs: number; sinceMs: number; untilMs?: number; dryRun: boolean };

export interface BatchPlan {
  /** The Idempotency-Key the driver creates it with (so a re-sent POST creates nothing new). */
  key: string;
  contacts: string[];
  maxAttempts: number;
  retry: { baseSeconds: number; capSeconds: number };
  /** When the driver creates it, ms after the start. */
  createAtMs: number;
  /** When the driver deletes it, ms after the start (rarely). */
  deleteAtMs?: number;
  /**
   * A calling window that opens a little after the start (London time; the clock starts at 09:00 UTC on a
   * Monday), or, for a compliance plan, one evaluated in each contact's zone (`perContact`).
   */
  callingWindow?: { timezone: string; start: string; end: string; weekdays: number[]; perContact?: boolean };
  /** Contacts' own zones (the `timezone` of a contact in the create request), by number. */
  timezones?: Record<string, string>;
  /** A scheduled start, ms after the start of the run (`startAt` in the create request). */
  startAtMs?: number;
  /** The tenant pauses it at `atMs` and resumes it at `resumeAtMs` (both ms after the start), through the API. */
  pause?: { atMs: number; resumeAtMs: number };
  /**
   * Created from a CSV file through the large-import path (an upload, then `POST /v1/batches/imports` and its
   * `calls.import` job) instead of a JSON body; `contacts` is then empty (the file's rows: sim/world/import-file.ts).
   */
  import?: ImportPlan;
  /** Its agent books into a calendar of its tenant's during calls (drawn apart: sim/calendar-plan.ts). */
  appointments?: { calendarId: string; durationMinutes: number; bufferMinutes: number; maxDaysAhead: number };
  /** The agent, in a targeted plan (sim/bugs-calendar.ts): talks on every call and books tomorrow's first slot. @default drawn per call */
  agent?: 'books-target';
}

/**
 * A CSV import (issue 26): the file is built from `fileSeed` (sim/world/import-file.ts), with `valid`
 * distinct contacts (more than a list page's 500: several pages), `invalid` rows the import refuses
 * (`skipInvalid`) and `duplicates` of earlier numbers written another way (`dedupe` drops them).
 */
export interface ImportPlan {
  fileSeed: number;
  valid: number;
  invalid: number;
  duplicates: number;
  /** An `external_id` column (each valid row its own id; an invalid row may repeat one). */
  externalIds: boolean;
  /** Variable columns, by name (cells sometimes empty: the variable is absent). */
  variables: string[];
  delimiter: ',' | ';';
  /** The import job's pacing (its body's `pagesPerRun`, `pageDelayMs`). */
  pagesPerRun?: number;
  pageDelayMs?: number;
  /** The tenant deletes the batch this long after it saw the import end (it polls the batch's status); undefined: never. */
  deleteAfterEndMs?: number;
  /** The tenant deletes the batch this long after the import was accepted, whether it ended or not. */
  deleteAfterStartMs?: number;
}

/** A number the tenant puts on its suppression list (PUT /v1/suppressions/{number}) at `atMs`. */
export interface SuppressionPlan {
  number: string;
  atMs: number;
}

export interface TenantPlan {
  id: string;
  concurrencyLimit: number;
  ownerEmail?: string;
  /** Access requests the driver makes once the owner address is confirmed (each mails the owner). */
  accessRequests: number;
  endpoints: EndpointPlan[];
  batches: BatchPlan[];
  /** `maxCallsPerNumberPer24h` on its PUT; undefined: the default (3). */
  maxCallsPerNumberPer24h?: number;
  /** Numbers it suppresses while its batches run. */
  suppressions?: SuppressionPlan[];
  /** Calendars it puts (PUT /v1/calendars/{id}) in the built-in calendar before its batches (sim/calendar-plan.ts). */
  calendars?: string[];
}

export interface Campaign {
  tenants: TenantPlan[];
}

// ─── The faults ─────────────────────────────────────────────────────────────────────────────────────

/** Every kind of fault the simulator injects (docs/simulation.md describes each). */
export const FaultKind = {
  // DynamoDB, at the client: refused before it is applied, or applied with the response lost.
  dynamoConflict: 'dynamo.conflict',
  dynamoThroughput: 'dynamo.throughput',
  dynamoThrottling: 'dynamo.throttling',
  dynamoInternal: 'dynamo.internal',
  dynamoLostResponse: 'dynamo.lostResponse',
  /** A BatchWriteItem applies only part of its items and answers the rest as UnprocessedItems. */
  dynamoUnprocessed: 'dynamo.unprocessed',
  // SQS and Scheduler, at the dispatch transport.
  sqsDuplicate: 'sqs.duplicate',
  sqsLate: 'sqs.late',
  sqsReorder: 'sqs.reorder',
  sqsSendFails: 'sqs.sendFails',
  schedulerCreateFails: 'scheduler.createFails',
  schedulerLate: 'scheduler.late',
  // A worker (or an API function, or the rescuer) dies at a step.
  crashAfterClaim: 'crash.afterClaim',
  crashAfterSideEffect: 'crash.afterSideEffect',
  crashBetweenWrites: 'crash.betweenWrites',
  crashAtRequest: 'crash.atRequest',
  // The clock.
  clockJump: 'clock.jump',
  // The call placer.
  placerTimeout: 'placer.timeout',
  placerRefuse: 'placer.refuse',
  placerNeverReports: 'placer.neverReports',
  placerReportsTwice: 'placer.reportsTwice',
  placerReportsLate: 'placer.reportsLate',
  placerOutOfOrder: 'placer.outOfOrder',
  // Webhook endpoints.
  endpointFlap: 'endpoint.flap',
  endpointStall: 'endpoint.stall',
  endpointThrottle: 'endpoint.throttle',
  endpointGone: 'endpoint.gone',
  /** A send that takes most of its request timeout, on a fast clock: simulated time moves on while it is out. */
  endpointSlow: 'endpoint.slow',
  // The SMTP server.
  smtpTransient: 'smtp.transient',
  smtpReject: 'smtp.reject',
  smtpDropAfterData: 'smtp.dropAfterData',
  // The calendar (the built-in one, Google's shapes), at the tool request whose calendar request it aims at;
  // drawn apart (sim/calendar-plan.ts), so the plans drawn before them are drawn as they were.
  /** The request is applied, then no answer: the route's request times out (an insert: unknown outcome). */
  calendarTimeoutAfterSend: 'calendar.timeoutAfterSend',
  /** A 5xx: before the change (`applied` false) or after it. */
  calendarServerError: 'calendar.serverError',
  /** The answer comes `ms` late: within the route's budget, or after it (a late insert the settle job deletes). */
  calendarSlow: 'calendar.slow',
  /** The request is applied, then the connection drops. */
  calendarLostResponse: 'calendar.lostResponse',
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];
export const faultKinds = Object.values(FaultKind);

/**
 * Which requests of a run a DynamoDB fault looks at: writes, reads, any request, transactions (a domain
 * change with the jobs and events it implies), or, in a job's run, the claim (its first request), the outcome (a later write to its own job row: the recorded result), or a
 * write that discards a job (a job's own outcome, or the rescuer giving up on a lost last attempt).
 */
export type RequestClass = 'write' | 'read' | 'any' | 'transaction' | 'claim' | 'outcome' | 'discard';

/** Which runs a fault looks at: where they run and what they are (a job kind, an API route, the rescuer). */
export interface RunTarget {
  where?: 'job' | 'api' | 'rescuer';
  /** A job kind (`calls.dial`), a route (`POST /v1/calls/webhook`), or `rescuer`. */
  name?: string;
}

/**
 * One fault. It fires once, at the `nth` event that matches it (a request, a send, a call, a delivery, a
 * mail), except the endpoint faults, which last `count` requests.
 */
export type Fault =
  | { id: number; kind: 'dynamo.conflict' | 'dynamo.throughput' | 'dynamo.throttling' | 'dynamo.internal' | 'dynamo.lostResponse'; target: RunTarget; ops: RequestClass; nth: number }
  /** The `nth` BatchWriteItem of the target's runs applies its first `applied` items only; the rest come back unprocessed. */
  | { id: number; kind: 'dynamo.unprocessed'; target: RunTarget; nth: number; applied: number }
  | { id: number; kind: 'sqs.duplicate' | 'sqs.late' | 'sqs.reorder' | 'sqs.sendFails'; queue?: string; nth: number; delayMs: number }
  | { id: number; kind: 'scheduler.createFails' | 'scheduler.late'; nth: number; delayMs: number }
  | { id: number; kind: 'crash.afterClaim' | 'crash.afterSideEffect' | 'crash.betweenWrites'; target: RunTarget; nth: number }
  | { id: number; kind: 'crash.atRequest'; target: RunTarget; nth: number; request: number }
  | { id: number; kind: 'clock.jump'; target: RunTarget; nth: number; jumpMs: number }
  | { id: number; kind: 'placer.timeout' | 'placer.refuse' | 'placer.neverReports' | 'placer.reportsTwice' | 'placer.reportsLate' | 'placer.outOfOrder'; nth: number }
  | { id: number; kind: 'endpoint.flap' | 'endpoint.stall' | 'endpoint.throttle' | 'endpoint.gone'; endpoint: string; nth: number; count: number; retryAfterSeconds?: number }
  /** `fraction` of the request timeout (on the plan's clock) passes while each of `count` requests is out; then 200. */
  | { id: number; kind: 'endpoint.slow'; endpoint: string; nth: number; count: number; fraction: number }
  | { id: number; kind: 'smtp.transient' | 'smtp.reject' | 'smtp.dropAfterData'; nth: number }
  /** At the `nth` calendar request of `op` a tool route sends (freeBusy: availability; insert: a booking; delete: a cancel). */
  | { id: number; kind: 'calendar.timeoutAfterSend' | 'calendar.serverError' | 'calendar.slow' | 'calendar.lostResponse'; op: 'freeBusy' | 'insert' | 'delete'; nth: number; ms?: number; applied?: boolean };

export interface Plan {
  seed: number;
  campaign: Campaign;
  faults: Fault[];
  /**
   * Clock ms per real ms (functions/platform/clock.ts `speed`): 1, or {@link SLOW_SEND_SPEED} for a plan
   * with slow sends, as `npm start` runs at TIME_SCALE 0.001. @default 1
   */
  speed?: number;
}

/**
 * The clock's speed in a plan with slow sends: only on a fast clock can a send (its request timeout of
 * real time at most) outlast a lease measured without the clock's speed (5 min).
 */
export const SLOW_SEND_SPEED = 1000;
/**
 * The deliveries' request timeout (real ms) in a plan with slow sends: long enough for what a slow send's
 * jump of the clock sets off (a sweep, a result published, the delivery either starts) to run while it is
 * out, on a loaded machine. Other plans use 400 ms, so their stalls cost little real time.
 */
export const SLOW_SEND_TIMEOUT_MS = 3_000;

// ─── Drawing a plan ─────────────────────────────────────────────────────────────────────────────────

const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.int(0, items.length - 1)]!;
const chance = (rng: Rng, p: number): boolean => rng.float() < p;

/** Job kinds and routes a campaign runs, the targets a fault may aim at (weighted by how often they run). */
const JOB_TARGETS = ['calls.dial', 'calls.dial', 'calls.watchdog', 'calls.finalise', 'calls.finalise', 'webhook.fanout', 'webhook.deliver', 'webhook.deliver', 'webhook.sweep', 'owner.notify', 'owner.email_confirmation', 'access_request.approval_mail'];
const API_TARGETS = ['POST /v1/calls/webhook', 'POST /v1/calls/webhook', 'PUT /v1/tenants/{tenantId}', 'POST /v1/batches', 'POST /v1/tenants/{tenantId}/access-requests'];

function runTarget(rng: Rng): RunTarget {
  const roll = rng.float();
  if (roll < 0.7) return { where: 'job', name: pick(rng, JOB_TARGETS) };
  if (roll < 0.9) return { where: 'api', name: pick(rng, API_TARGETS) };
  if (roll < 0.95) return { where: 'rescuer', name: 'rescuer' };
  return {};
}

/** Fault kinds by weight: what a plan is made of. */
const FAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = {
  'dynamo.conflict': 3,
  'dynamo.throughput': 2,
  'dynamo.throttling': 2,
  'dynamo.internal': 2,
  'dynamo.lostResponse': 4,
  // Drawn only for imports (drawImports), so the plans drawn before it existed are drawn as they were.
  'dynamo.unprocessed': 0,
  'sqs.duplicate': 3,
  'sqs.late': 2,
  'sqs.reorder': 2,
  'sqs.sendFails': 2,
  'scheduler.createFails': 1,
  'scheduler.late': 1,
  'crash.afterClaim': 2,
  'crash.afterSideEffect': 3,
  'crash.betweenWrites': 3,
  'crash.atRequest': 2,
  'clock.jump': 2,
  'placer.timeout': 2,
  'placer.refuse': 2,
  'placer.neverReports': 2,
  'placer.reportsTwice': 3,
  'placer.reportsLate': 4,
  'placer.outOfOrder': 2,
  'endpoint.flap': 3,
  'endpoint.stall': 2,
  'endpoint.throttle': 2,
  'endpoint.gone': 1,
  // Drawn apart (drawSlowSends), so the plans drawn before it existed are drawn as they were.
  'endpoint.slow': 0,
  'smtp.transient': 2,
  'smtp.reject': 1,
  'smtp.dropAfterData': 2,
  // Drawn apart (sim/calendar-plan.ts), for the plans with appointments.
  'calendar.timeoutAfterSend': 0,
  'calendar.serverError': 0,
  'calendar.slow': 0,
  'calendar.lostResponse': 0,
};

function drawFault(rng: Rng, id: number, campaign: Campaign): Fault | undefined {
  const total = Object.values(FAULT_WEIGHTS).reduce((a, b) => a + b, 0);
  let roll = rng.float() * total;
  let kind: FaultKind = 'dynamo.conflict';
  for (const k of faultKinds) {
    roll -= FAULT_WEIGHTS[k];
    if (roll < 0) {
      kind = k;
      break;
    }
  }
  const nth = rng.int(1, 4);
  // A job's claim and its recorded outcome are the writes whose loss the job layer must survive.
  const jobWrite = (target: RunTarget): RequestClass =>
    target.where === 'job'
      ? pick(rng, ['write', 'transaction', 'claim', 'outcome', 'outcome', 'discard'] as const)
      : target.where === 'rescuer'
        ? pick(rng, ['write', 'discard'] as const)
        : pick(rng, ['write', 'transaction'] as const);
  switch (kind) {
    case 'dynamo.conflict': {
      const target = runTarget(rng);
      return { id, kind, target, ops: jobWrite(target), nth };
    }
    case 'dynamo.lostResponse': {
      const target = runTarget(rng);
      return { id, kind, target, ops: chance(rng, 0.85) ? jobWrite(target) : 'read', nth };
    }
    case 'dynamo.throughput':
    case 'dynamo.throttling':
    case 'dynamo.internal': {
      const target = runTarget(rng);
      return { id, kind, target, ops: chance(rng, 0.6) ? jobWrite(target) : pick(rng, ['read', 'any'] as const), nth };
    }
    case 'sqs.duplicate':
    case 'sqs.late':
    case 'sqs.reorder':
    case 'sqs.sendFails':
      return { id, kind, ...(chance(rng, 0.5) ? { queue: pick(rng, ['calls', 'webhooks', 'mail']) } : {}), nth: rng.int(1, 8), delayMs: rng.int(1, 120) * 1000 };
    case 'scheduler.createFails':
    case 'scheduler.late':
      return { id, kind, nth: rng.int(1, 2), delayMs: rng.int(1, 60) * 1000 };
    case 'crash.afterClaim':
    case 'crash.afterSideEffect':
    case 'crash.betweenWrites':
      return { id, kind, target: kind === 'crash.afterSideEffect' ? { where: 'job', name: pick(rng, ['calls.dial', 'webhook.deliver', 'webhook.deliver', 'owner.notify', 'owner.email_confirmation', 'access_request.approval_mail']) } : runTarget(rng), nth };
    case 'crash.atRequest':
      return { id, kind, target: runTarget(rng), nth, request: rng.int(1, 6) };
    case 'clock.jump':
      // Forward, and shorter than a claim's lease (65 s) plus a rescuer period: docs/simulation.md says why.
      return { id, kind, target: runTarget(rng), nth, jumpMs: rng.int(1, 60) * 1000 };
    case 'placer.timeout':
    case 'placer.refuse':
    case 'placer.neverReports':
    case 'placer.reportsTwice':
    case 'placer.reportsLate':
    case 'placer.outOfOrder':
      return { id, kind, nth: rng.int(1, 6) };
    case 'endpoint.slow':
    case 'dynamo.unprocessed':
    case 'calendar.timeoutAfterSend':
    case 'calendar.serverError':
    case 'calendar.slow':
    case 'calendar.lostResponse':
      return undefined;
    case 'endpoint.flap':
    case 'endpoint.stall':
    case 'endpoint.throttle':
    case 'endpoint.gone': {
      const endpoints = campaign.tenants.flatMap((t) => t.endpoints.map((e) => e.name));
      if (endpoints.length === 0) return undefined;
      return {
        id,
        kind,
        endpoint: pick(rng, endpoints),
        nth: rng.int(1, 4),
        count: kind === 'endpoint.gone' ? 1_000_000 : kind === 'endpoint.stall' ? rng.int(1, 2) : rng.int(1, 5),
        ...(kind === 'endpoint.throttle' ? { retryAfterSeconds: rng.int(1, 600) } : {}),
      };
    }
    case 'smtp.transient':
    case 'smtp.reject':
    case 'smtp.dropAfterData':
      if (!campaign.tenants.some((t) => t.ownerEmail)) return undefined;
      return { id, kind, nth: rng.int(1, 5) };
    default:
      return kind satisfies never;
  }
}

/** Numbers in a seed's own range, so no two contacts of a batch share one. */
const contactNumbers = (rng: Rng, count: number): string[] => {
  const base = rng.int(200, 999);
  return Array.from({ length: count }, (_, i) => `+1${base}555${String(1000 + i).padStart(4, '0')}`);
};

function drawCampaign(rng: Rng): Campaign {
  // A mail-heavy campaign: several tenants share one owner address, which then gets more than the
  // recipient cap (30 an hour) of confirmation, approval and notice mails.
  const mailHeavy = chance(rng, 0.12);
  const tenantCount = mailHeavy ? rng.int(3, 4) : rng.int(1, 2);
  const shared = 'owner@shared.sim.test';
  const tenants: TenantPlan[] = [];
  let endpointNo = 0;
  for (let t = 1; t <= tenantCount; t++) {
    const owner = mailHeavy ? shared : chance(rng, 0.75) ? (chance(rng, 0.2) ? shared : `owner${t}@t${t}.sim.test`) : undefined;
    const endpoints: EndpointPlan[] = [];
    const endpointCount = mailHeavy ? rng.int(0, 1) : rng.int(0, 2);
    for (let e = 0; e < endpointCount; e++) {
      const all = chance(rng, 0.7);
      endpoints.push({ name: `e${++endpointNo}`, ...(all ? {} : { eventTypes: [pick(rng, ['call.completed', 'batch.finalised', 'batch.round_scheduled']), 'batch.finalised'].filter((v, i, a) => a.indexOf(v) === i) }) });
    }
    const batches: BatchPlan[] = [];
    // In a mail-heavy campaign the first tenant finalises more batches in an hour than its owner may be
    // told about (the burst cap, 5 an hour): the rest of the notices are deliberate, counted drops.
    const manyBatches = mailHeavy && t === 1;
    const batchCount = manyBatches ? rng.int(6, 8) : mailHeavy ? 1 : rng.int(1, 2);
    for (let b = 1; b <= batchCount; b++) {
      const size = manyBatches ? 1 : mailHeavy ? rng.int(1, 2) : rng.int(1, 5);
      const createAtMs = rng.int(0, 300) * 1000;
      batches.push({
        key: `t${t}-b${b}`,
        contacts: contactNumbers(rng, size),
        maxAttempts: manyBatches ? 1 : rng.int(1, 3),
        retry: { baseSeconds: rng.int(1, 10), capSeconds: rng.int(30, 120) },
        createAtMs,
        ...(chance(rng, 0.06) ? { deleteAtMs: createAtMs + rng.int(5, 600) * 1000 } : {}),
        ...(chance(rng, 0.1) ? { callingWindow: { timezone: 'Europe/London', start: `09:${String(rng.int(5, 40)).padStart(2, '0')}`, end: '17:00', weekdays: [1, 2, 3, 4, 5] } } : {}),
      });
    }
    tenants.push({
      id: `t${t}`,
      concurrencyLimit: rng.int(1, 3),
      ...(owner ? { ownerEmail: owner } : {}),
      accessRequests: owner ? (mailHeavy ? rng.int(8, 12) : rng.int(0, 2)) : 0,
      endpoints,
      batches,
    });
  }
  return { tenants };
}

/** The plan of `seed`: its campaign, then up to ten faults (a few seeds run without any). */
export function drawPlan(seed: number): Plan {
  const rng = seededRng(seed);
  const campaign = drawCampaign(rng);
  const faults: Fault[] = [];
  const count = chance(rng, 0.05) ? 0 : rng.int(1, 10);
  for (let id = 1; faults.length < count && id <= count * 3; id++) {
    const fault = drawFault(rng, faults.length + 1, campaign);
    if (fault) faults.push(fault);
  }
  const slow = drawSlowSends(seed, campaign, faults.length + 1);
  drawEndpointActions(seed, campaign);
  drawCompliance(seed, campaign);
  const all = slow ? [...faults, slow] : faults;
  all.push(...drawImports(seed, campaign, all.length + 1));
  all.push(...drawCalendars(seed, campaign, all.length + 1));
  return slow ? { seed, campaign, faults: all, speed: SLOW_SEND_SPEED } : { seed, campaign, faults: all };
}

/**
 * Slow sends on a fast clock, for some plans with endpoints, from a generator of their own: the plans
 * drawn before this fault existed are drawn as they were (their campaigns and faults), so the seeds that
 * reported a bug then report it still.
 */
function drawSlowSends(seed: number, campaign: Campaign, id: number): Fault | undefined {
  const rng = seededRng(seed * 31 + 17);
  const endpoints = campaign.tenants.flatMap((t) => t.endpoints.map((e) => e.name));
  if (endpoints.length === 0 || !chance(rng, 0.15)) return undefined;
  return { id, kind: 'endpoint.slow', endpoint: pick(rng, endpoints), nth: rng.int(1, 2), count: rng.int(1, 3), fraction: 0.8 + Math.floor(rng.float() * 19) / 100 };
}

/**
 * The owners' management of their endpoints (a rotation, a change, a deletion, a recovery), for a few
 * endpoints, from a generator of its own, as {@link drawSlowSends}: the campaigns and faults drawn before
 * these actions existed are drawn as they were, and `--only` (which drops faults) keeps them. Rare enough
 * that most events still flow: each endpoint gets each action with a small chance, at a time within the
 * campaign's first quarter hour (batches are created in its first 5 minutes); a deletion comes last.
 */
function drawEndpointActions(seed: number, campaign: Campaign): void {
  const rng = seededRng(seed * 43 + 11);
  for (const endpoint of campaign.tenants.flatMap((t) => t.endpoints)) {
    const actions: EndpointAction[] = [];
    if (chance(rng, 0.15)) actions.push({ kind: 'rotate', atMs: rng.int(30, 900) * 1000, expireOldNow: chance(rng, 0.3) });
    if (chance(rng, 0.12)) actions.push({ kind: 'update', atMs: rng.int(30, 900) * 1000, change: pick(rng, ['url', 'url', 'eventTypes', 'description'] as const) });
    if (chance(rng, 0.15)) {
      // Late, over a window from the campaign's first minutes: most of its events fall in it (a calling window
      // opens up to 40 minutes in, so some do not).
      const atMs = rng.int(600, 1800) * 1000;
      const sinceMs = rng.int(0, 300) * 1000;
      actions.push({ kind: 'recover', atMs, sinceMs, ...(chance(rng, 0.4) ? { untilMs: rng.int(sinceMs / 1000 + 60, atMs / 1000) * 1000 } : {}), dryRun: chance(rng, 0.3) });
      // An endpoint subscribed to a few types that then subscribes to every type, and recovers what it was
      // not sent: most deliveries of a healthy endpoint arrive, so this is the recovery that finds something.
      if (endpoint.eventTypes && !actions.some((a) => a.kind === 'update') && chance(rng, 0.6)) actions.push({ kind: 'update', atMs: atMs - rng.int(10, 60) * 1000, change: 'eventTypes' });
    }
    if (chance(rng, 0.08)) actions.push({ kind: 'delete', atMs: Math.max(rng.int(60, 900) * 1000, ...actions.map((a) => a.atMs + 1000)) });
    if (actions.length > 0) endpoint.actions = actions.sort((a, b) => a.atMs - b.atMs);
  }
}

/**
 * Campaign control and compliance (issue 27), for some plans, from a generator of its own as
 * {@link drawEndpointActions}: the campaigns and faults drawn before these existed are drawn as they were,
 * and the plans it leaves alone (most) run exactly as before. Each batch may be paused and resumed later
 * (through the API, as a tenant would), or get a `startAt` a few minutes ahead; a tenant may suppress one of
 * its numbers mid-campaign; a tenant may set a low cap (1 or 2 calls a number in 24 h) and reuse one
 * batch's numbers in another (the later one is deleted after a while: a number over the cap waits a day,
 * which the run would otherwise simulate); a batch may call contacts of several zones under a per-contact
 * window (New York and Chicago area codes, some with a zone of their own) that opens in each zone at its
 * own hour within the run's first hour or two.
 */
function drawCompliance(seed: number, campaign: Campaign): void {
  const rng = seededRng(seed * 59 + 13);
  if (!chance(rng, 0.35)) return;
  for (const tenant of campaign.tenants) {
    for (const batch of tenant.batches) {
      if (chance(rng, 0.25)) {
        const atMs = batch.createAtMs + rng.int(1, 90) * 1000;
        batch.pause = { atMs, resumeAtMs: atMs + rng.int(30, 600) * 1000 };
      }
      if (chance(rng, 0.15)) batch.startAtMs = batch.createAtMs + rng.int(60, 900) * 1000;
      if (chance(rng, 0.15)) zonedContacts(rng, batch);
    }
    if (tenant.batches.length >= 2 && chance(rng, 0.3)) {
      tenant.maxCallsPerNumberPer24h = rng.int(1, 2);
      const [first, second] = tenant.batches as [BatchPlan, BatchPlan];
      second.contacts = first.contacts.slice(0, rng.int(1, first.contacts.length));
      if (first.timezones) second.timezones = { ...first.timezones };
      if (first.callingWindow) second.callingWindow = { ...first.callingWindow };
      // Over the cap, a number waits 24 h: the tenant gives up on the later batch instead.
      second.deleteAtMs = Math.max(first.createAtMs, second.createAtMs) + rng.int(300, 900) * 1000;
    }
    // After the cap's sharing, so the number is one a batch still calls.
    if (chance(rng, 0.3)) {
      const batch = pick(rng, tenant.batches);
      tenant.suppressions = [{ number: pick(rng, batch.contacts), atMs: batch.createAtMs + rng.int(0, 240) * 1000 }];
    }
  }
}

/** Area codes whose zone opens a window from 04:xx New York time within the run's first hours: New York, Chicago. */
const ZONED_AREA_CODES = ['212', '312'] as const;

/**
 * A batch of contacts in New York and Chicago (by area code; some with a zone of their own, which wins)
 * under a window from 04:xx to 22:00 evaluated per contact: at the run's start (09:00 UTC) it opens in New
 * York a few minutes in, in Chicago an hour later, in Denver two.
 */
function zonedContacts(rng: Rng, batch: BatchPlan): void {
  const base = rng.int(100, 899);
  batch.contacts = batch.contacts.map((_, i) => `+1${pick(rng, ZONED_AREA_CODES)}555${String(base * 10 + i).padStart(4, '0')}`);
  const timezones: Record<string, string> = {};
  for (const number of batch.contacts) if (chance(rng, 0.3)) timezones[number] = pick(rng, ['America/Chicago', 'America/Denver', 'Europe/London']);
  if (Object.keys(timezones).length > 0) batch.timezones = timezones;
  else delete batch.timezones;
  batch.callingWindow = { timezone: 'America/New_York', start: `04:${String(rng.int(2, 20)).padStart(2, '0')}`, end: '22:00', weekdays: [1, 2, 3, 4, 5], perContact: true };
}

// ─── Imports (issue 26) ─────────────────────────────────────────────────────────────────────────────

/** The share of plans that import a batch from a CSV file. */
export const IMPORT_SHARE = 0.1;

/** The runs an import's faults aim at: its job, and the request that stages the file. */
export const IMPORT_JOB: RunTarget = { where: 'job', name: 'calls.import' };
export const IMPORT_ROUTE: RunTarget = { where: 'api', name: 'POST /v1/batches/imports' };

/**
 * A fault aimed at an import: the job killed between its writes, at its nth request or after its claim; a
 * page's transaction conflicted, its answer lost; a BatchWriteItem throttled or left partly unprocessed; the
 * clock jumping mid-run; the import request dying between its staging and its transaction, or its answer
 * lost. The job's lease then runs out and the rescuer (or SQS, for a worker that died) runs it again from
 * its cursor.
 */
function drawImportFault(rng: Rng, id: number): Fault {
  const nth = rng.int(1, 4);
  switch (pick(rng, ['betweenWrites', 'betweenWrites', 'atRequest', 'afterClaim', 'lost', 'lost', 'conflict', 'throttled', 'unprocessed', 'unprocessed', 'jump', 'route'] as const)) {
    case 'betweenWrites':
      return { id, kind: 'crash.betweenWrites', target: IMPORT_JOB, nth: rng.int(1, 60) };
    case 'atRequest':
      return { id, kind: 'crash.atRequest', target: IMPORT_JOB, nth: rng.int(1, 2), request: rng.int(2, 80) };
    case 'afterClaim':
      return { id, kind: 'crash.afterClaim', target: IMPORT_JOB, nth: rng.int(1, 3) };
    case 'lost':
      return { id, kind: 'dynamo.lostResponse', target: IMPORT_JOB, ops: pick(rng, ['transaction', 'transaction', 'write', 'outcome'] as const), nth: rng.int(1, 3) };
    case 'conflict':
      return { id, kind: 'dynamo.conflict', target: IMPORT_JOB, ops: 'transaction', nth: rng.int(1, 3) };
    case 'throttled':
      return { id, kind: pick(rng, ['dynamo.throttling', 'dynamo.throughput', 'dynamo.internal'] as const), target: IMPORT_JOB, ops: pick(rng, ['write', 'read'] as const), nth: rng.int(1, 30) };
    case 'unprocessed':
      return { id, kind: 'dynamo.unprocessed', target: IMPORT_JOB, nth: rng.int(1, 30), applied: rng.int(0, 24) };
    case 'jump':
      return { id, kind: 'clock.jump', target: IMPORT_JOB, nth, jumpMs: rng.int(1, 60) * 1000 };
    case 'route': {
      const roll = rng.float();
      if (roll < 0.4) return { id, kind: 'crash.betweenWrites', target: IMPORT_ROUTE, nth: 1 };
      if (roll < 0.7) return { id, kind: 'dynamo.lostResponse', target: IMPORT_ROUTE, ops: pick(rng, ['write', 'transaction'] as const), nth: 1 };
      return { id, kind: 'dynamo.unprocessed', target: IMPORT_ROUTE, nth: 1, applied: rng.int(0, 24) };
    }
  }
}

/**
 * A batch imported from a CSV file, for {@link IMPORT_SHARE} of the plans, from a generator of its own
 * (seeded `seed × 71 + 43`, as {@link drawCompliance}): every plan's campaign and faults are drawn as
 * before, and the import is a batch added to one tenant, with up to three faults of its own (ids after the
 * plan's). Of the offsets that draw about a tenth of seeds 1–500, 43 is one that leaves every seed `npm
 * test` runs (1–4 and the planted bugs' seeds, sim/bug-proofs.ts) without an import: they run as before
 * (44 of seeds 1–500 import). 501–1,100 valid rows (2 or 3 list pages), a few invalid rows and duplicates, externalIds and
 * variables in most; paced a page or two a run in most, so the job runs several times. The tenant deletes
 * it a few minutes after the import ends in most plans (a few hundred calls cost a seed minutes), or while
 * it imports in some.
 */
function drawImports(seed: number, campaign: Campaign, firstId: number): Fault[] {
  const rng = seededRng(seed * 71 + 43);
  if (!chance(rng, IMPORT_SHARE)) return [];
  const tenant = pick(rng, campaign.tenants);
  const variables = ['first_name', 'plan', 'amount_due', 'notes'].slice(0, rng.int(0, 4));
  const ending = rng.float();
  const plan: ImportPlan = {
    fileSeed: rng.int(1, 2 ** 30),
    valid: rng.int(501, 1_100),
    invalid: chance(rng, 0.7) ? rng.int(1, 8) : 0,
    duplicates: chance(rng, 0.7) ? rng.int(1, 8) : 0,
    externalIds: chance(rng, 0.75),
    variables,
    delimiter: chance(rng, 0.7) ? ',' : ';',
    ...(chance(rng, 0.7) ? { pagesPerRun: rng.int(1, 2) } : {}),
    ...(chance(rng, 0.4) ? { pageDelayMs: rng.int(1, 20) * 1000 } : {}),
    ...(ending < 0.8 ? { deleteAfterEndMs: rng.int(10, 120) * 1000 } : { deleteAfterStartMs: rng.int(1, 60) * 1000 }),
  };
  tenant.batches.push({
    key: `${tenant.id}-import`,
    contacts: [],
    maxAttempts: rng.int(1, 2),
    retry: { baseSeconds: rng.int(1, 10), capSeconds: rng.int(30, 120) },
    createAtMs: rng.int(0, 300) * 1000,
    import: plan,
  });
  return Array.from({ length: rng.int(1, 3) }, (_, i) => drawImportFault(rng, firstId + i));
}

/**
 * The targeted plan of the import bug (sim/bug-proofs.ts): one tenant importing 1,100 rows (3 pages, a
 * page a run) with externalIds and a variable, the answer of the import job's first page transaction lost
 * (its writes applied): the job runs again from the cursor that transaction moved. Deleted half a minute
 * after the import ends.
 */
export function importPlan(): Plan {
  const plan: ImportPlan = { fileSeed: 26, valid: 1_050, invalid: 3, duplicates: 2, externalIds: true, variables: ['first_name'], delimiter: ',', pagesPerRun: 1, deleteAfterEndMs: 30_000 };
  const batch: BatchPlan = { key: 't1-import', contacts: [], maxAttempts: 1, retry: { baseSeconds: 5, capSeconds: 60 }, createAtMs: 0, import: plan };
  return {
    seed: 900_026,
    campaign: { tenants: [{ id: 't1', concurrencyLimit: 3, accessRequests: 0, endpoints: [], batches: [batch] }] },
    faults: [{ id: 1, kind: 'dynamo.lostResponse', target: IMPORT_JOB, ops: 'transaction', nth: 1 }],
  };
}

/**
 * A targeted plan: `seed`'s campaign, and instead of its drawn faults a crash right after the claim of
 * each of the first `attempts` runs of job kind `kind` (the `nth` run for the nth fault). With `attempts`
 * the kind's maxAttempts and one such job in the campaign, every attempt is lost: the rescuer takes each
 * lost attempt, and gives up on the last by discarding the job, a discard only the rescuer counts
 * (test/sim/bugs.test.ts puts back a rescuer that does not). No drawn plan reaches a job's last attempt.
 */
export function lostAttemptsPlan(seed: number, kind: string, attempts: number): Plan {
  const faults: Fault[] = Array.from({ length: attempts }, (_, i) => ({ id: i + 1, kind: 'crash.afterClaim', target: { where: 'job', name: kind }, nth: i + 1 }));
  return { seed, campaign: drawPlan(seed).campaign, faults };
}

/**
 * Targeted plans for the control and compliance bugs (sim/bug-proofs.ts): one tenant, no faults, a campaign
 * built so that the rule decides what is dialled within minutes of simulated time.
 * - `pause`: limit 1, four contacts; paused 5 s in, resumed at 300 s (a call ends meanwhile, so the next
 *   one would be dialled while paused);
 * - `suppress`: limit 1, four contacts; the fourth suppressed 5 s in;
 * - `cap`: cap 1; a batch of three numbers, and a minute later a second batch of the same three (which
 *   waits a day, so it is deleted at 400 s);
 * - `window`: a per-contact window from 04:00 New York time (the run starts at 04:00 there, 03:00 in
 *   Chicago): New York numbers now, Chicago ones an hour later; deleted at 300 s, before Chicago opens;
 * - `start`: a batch with `startAt` 15 minutes ahead.
 */
export type CompliancePlanName = 'pause' | 'suppress' | 'cap' | 'window' | 'start';

export function compliancePlan(name: CompliancePlanName): Plan {
  const numbers = (area: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `+1${area}555${String(2000 + from + i)}`);
  const batch = (key: string, contacts: string[], extra: Partial<BatchPlan> = {}): BatchPlan => ({ key, contacts, maxAttempts: 1, retry: { baseSeconds: 5, capSeconds: 60 }, createAtMs: 0, ...extra });
  const tenant = (batches: BatchPlan[], extra: Partial<TenantPlan> = {}): TenantPlan => ({ id: 't1', concurrencyLimit: 1, accessRequests: 0, endpoints: [], batches, ...extra });
  const seed = 900_000 + ['pause', 'suppress', 'cap', 'window', 'start'].indexOf(name);
  switch (name) {
    case 'pause':
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', numbers('646', 4), { pause: { atMs: 5_000, resumeAtMs: 300_000 } })])] }, faults: [] };
    case 'suppress': {
      const contacts = numbers('646', 4);
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', contacts)], { suppressions: [{ number: contacts[3]!, atMs: 5_000 }] })] }, faults: [] };
    }
    case 'cap': {
      const contacts = numbers('646', 3);
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', contacts), batch('t1-b2', contacts, { createAtMs: 60_000, deleteAtMs: 400_000 })], { concurrencyLimit: 3, maxCallsPerNumberPer24h: 1 })] }, faults: [] };
    }
    case 'window': {
      const window = { timezone: 'America/New_York', start: '04:00', end: '22:00', weekdays: [1, 2, 3, 4, 5], perContact: true };
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', [...numbers('212', 1), ...numbers('312', 2, 10)], { callingWindow: window, deleteAtMs: 300_000 })], { concurrencyLimit: 3 })] }, faults: [] };
    }
    case 'start':
      return { seed, campaign: { tenants: [tenant([batch('t1-b1', numbers('646', 2), { startAtMs: 900_000 })], { concurrencyLimit: 2 })] }, faults: [] };
    default:
      return name satisfies never;
  }
}

/** The plan with only the faults whose ids are listed (a shrunk plan, replayed with `--only`). */
export function withFaults(plan: Plan, ids: readonly number[]): Plan {
  return { ...plan, faults: plan.faults.filter((f) => ids.includes(f.id)) };
}

/** A fault, in one line. */
export function describeFault(fault: Fault): string {
  const target = 'target' in fault ? ` in ${fault.target.where ?? 'any'}${fault.target.name ? ` ${fault.target.name}` : ''}` : '';
  switch (fault.kind) {
    case 'dynamo.conflict':
    case 'dynamo.throughput':
    case 'dynamo.throttling':
    case 'dynamo.internal':
    case 'dynamo.lostResponse':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} ${fault.ops === 'any' ? 'request' : fault.ops === 'write' || fault.ops === 'read' || fault.ops === 'transaction' ? fault.ops : `${fault.ops} write`}${target}`;
    case 'dynamo.unprocessed':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} BatchWriteItem${target} applies ${fault.applied} item(s), the rest unprocessed`;
    case 'sqs.duplicate':
    case 'sqs.late':
    case 'sqs.reorder':
    case 'sqs.sendFails':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} SendMessage${fault.queue ? ` to ${fault.queue}` : ''}${fault.kind === 'sqs.sendFails' || fault.kind === 'sqs.reorder' ? '' : ` (${fault.delayMs / 1000} s)`}`;
    case 'scheduler.createFails':
    case 'scheduler.late':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} CreateSchedule${fault.kind === 'scheduler.late' ? ` (fires ${fault.delayMs / 1000} s late)` : ''}`;
    case 'crash.afterClaim':
    case 'crash.afterSideEffect':
    case 'crash.betweenWrites':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} run${target}`;
    case 'crash.atRequest':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} run${target} that reaches its request ${fault.request}`;
    case 'clock.jump':
      return `#${fault.id} ${fault.kind}: +${fault.jumpMs / 1000} s at the ${ordinal(fault.nth)} request${target}`;
    case 'placer.timeout':
    case 'placer.refuse':
    case 'placer.neverReports':
    case 'placer.reportsTwice':
    case 'placer.reportsLate':
    case 'placer.outOfOrder':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} call`;
    case 'endpoint.flap':
    case 'endpoint.stall':
    case 'endpoint.throttle':
    case 'endpoint.gone':
      return `#${fault.id} ${fault.kind}: endpoint ${fault.endpoint}, ${fault.kind === 'endpoint.gone' ? 'every request' : `${fault.count} request(s)`} from its ${ordinal(fault.nth)}${fault.retryAfterSeconds !== undefined ? ` (Retry-After ${fault.retryAfterSeconds})` : ''}`;
    case 'endpoint.slow':
      return `#${fault.id} ${fault.kind}: endpoint ${fault.endpoint}, ${fault.count} request(s) from its ${ordinal(fault.nth)}, each out for ${Math.round(fault.fraction * 100)} % of its timeout on the fast clock`;
    case 'smtp.transient':
    case 'smtp.reject':
    case 'smtp.dropAfterData':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} message`;
    case 'calendar.timeoutAfterSend':
    case 'calendar.serverError':
    case 'calendar.slow':
    case 'calendar.lostResponse':
      return `#${fault.id} ${fault.kind}: the ${ordinal(fault.nth)} ${fault.op} a tool sends${fault.ms !== undefined ? ` (${fault.ms} ms late)` : ''}${fault.applied !== undefined ? (fault.applied ? ' (after applying it)' : ' (before applying it)') : ''}`;
    default:
      return fault satisfies never;
  }
}

const ordinal = (n: number): string => `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`;

/** The campaign, in one line. */
export function describeCampaign(campaign: Campaign): string {
  return campaign.tenants
    .map((t) => {
      const batches = t.batches
        .map(
          (b) =>
            `${b.import ? `import of ${b.import.valid}+${b.import.invalid} invalid+${b.import.duplicates} duplicate rows` : b.contacts.length}×${b.maxAttempts}${b.callingWindow ? ` (from ${b.callingWindow.start}${b.callingWindow.perContact ? ' per contact' : ''})` : ''}${b.startAtMs !== undefined ? ` (startAt ${b.startAtMs / 1000} s)` : ''}${b.pause ? ` (paused ${b.pause.atMs / 1000}–${b.pause.resumeAtMs / 1000} s)` : ''}${b.deleteAtMs !== undefined ? ' (deleted)' : ''}`,
        )
        .join(', ');
      const compliance = `${t.maxCallsPerNumberPer24h !== undefined ? `, cap ${t.maxCallsPerNumberPer24h}` : ''}${(t.suppressions ?? []).map((s) => `, suppresses ${s.number} at ${s.atMs / 1000} s`).join('')}`;
      const actions = t.endpoints.flatMap((e) => (e.actions ?? []).map((a) => `${e.name} ${describeAction(a)}`));
      return `${t.id}: limit ${t.concurrencyLimit}, batches [${batches}], endpoints ${t.endpoints.length}${actions.length ? ` (${actions.join(', ')})` : ''}${compliance}${t.ownerEmail ? `, owner ${t.ownerEmail}, ${t.accessRequests} access requests` : ''}`;
    })
    .join('; ');
}

/** An endpoint action, in a few words. */
export function describeAction(a: EndpointAction): string {
  const at = `at ${a.atMs / 1000} s`;
  switch (a.kind) {
    case 'rotate':
      return `rotate${a.expireOldNow ? ' (expireOldNow)' : ''} ${at}`;
    case 'update':
      return `update ${a.change} ${at}`;
    case 'delete':
      return `delete ${at}`;
    case 'recover':
      return `recover${a.dryRun ? ' (dry run)' : ''} [${a.sinceMs / 1000} s, ${a.untilMs === undefined ? 'now' : `${a.untilMs / 1000} s`}) ${at}`;
    default:
      return a satisfies never;
  }
}

/** A deterministic draw in [0, 1) from a seed and a name (a call's outcome must not depend on arrival order). */
export function hashDraw(seed: number, name: string): number {
  const digest = createHash('sha256').update(`${seed}\n${name}`).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}
