import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { JobState, pendingStates } from '../functions/jobs/states.ts';
import { Driver } from './driver.ts';
import type { Injection } from './faults.ts';
import { SIM_START, startSimHost } from './host.ts';
import type { Alterations, SimHost } from './host.ts';
import { check, observe } from './invariants.ts';
import type { Violation } from './invariants.ts';
import { drawPlan, withFaults } from './plan.ts';
import type { Fault, Plan } from './plan.ts';
import type { SentRequests } from '../functions/platform/recorder.ts';

/**
 * One seed, run: its plan on a fresh host, the clock moved from timer to timer until the system is at
 * rest (or the horizon is reached), then every invariant checked.
 */

export interface RunOptions {
  dynamoEndpoint: string;
  /** Other implementations of redial's parts (test/sim/bugs.test.ts puts bugs back with them). */
  alterations?: Alterations;
  /** Simulated time after which the run stops even if work is left. @default 3 days */
  horizonMs?: number;
  /** Run every rescuer pass, even those that would find nothing to do (sim/host.ts idlePass). @default false */
  everyPass?: boolean;
  /** Real time the host may take to come to rest after a step before the run is abandoned. @default 60 s */
  stallLimitMs?: number;
  /** Log every AWS request redial sends, by deployed function, into the result's `sentRequests` (test/infra/iam). @default false */
  logRequests?: boolean;
}

export interface SeedResult {
  seed: number;
  plan: Plan;
  injections: Injection[];
  /** Faults of the plan that never found their event. */
  unfired: Fault[];
  violations: Violation[];
  /** The run came to rest before the horizon. */
  settled: boolean;
  /** Simulated ms from the start to the end. */
  simulatedMs: number;
  /** Real ms the run took (tables, servers and checks included). */
  wallMs: number;
  /** Clock steps taken. */
  steps: number;
  /** What the run exercised (for the summary). */
  stats: Record<string, number>;
  /** AWS requests redial sent (the simulator's own reads not counted). */
  requests?: number;
  /** Real ms by phase: the host's start, the run (quiescing, the at-rest checks), the invariants, the stop. */
  phases?: Record<string, number>;
  /** Every AWS request redial sent, by deployed function (with `logRequests`). */
  sentRequests?: SentRequests;
}

const PERIODIC_KINDS = new Set(['webhook.sweep']);
/**
 * Jobs due far beyond any run's horizon, which the run does not wait for: a pause's expiry, 30 days after
 * the pause (it cancels a batch still in that pause, else does nothing; jobs.none-stuck holds it to its due time).
 */
export const BEYOND_HORIZON_KINDS = new Set(['calls.pause_expiry']);
/** A job asked to stop is not waited for when its next run is further off than this. */
const STOPPED_FAR_OFF_MS = 3_600_000;

/**
 * Whether nothing is left to do: the driver has no action left, no call result is due, every job (but the
 * periodic ones) is finished, and no delivery waits in a wait list (`lists`: only that is left; the sweep
 * starts a list whose lease was left behind, within {@link SimHost.strandedWithinMs}). Timers may still
 * wait: a schedule that outlived its job fires into a stale wake-up, which does nothing. Read only when the
 * next timer is a while away (a system at work takes small steps), to spare the queries.
 */
export async function atRest(host: SimHost, driver: Driver): Promise<'busy' | 'lists' | 'rest'> {
  if (!driver.idle || host.placer.pendingResults() > 0 || host.calendar?.busy) return 'busy';
  const next = host.clock.nextTimerAt();
  if (next !== undefined && next - host.clock.now() < 30_000) return 'busy';
  // A Scan on the observer's unrecorded client (the job layer keeps no index by state: its byCheck index
  // holds only the jobs the rescuer looks at, and its counters are flushed after the fact).
  const { clients, tableNames } = host.observer;
  const states = [...pendingStates, JobState.running];
  const pages = paginateScan(
    { client: clients.dynamo },
    {
      TableName: tableNames.jobs,
      FilterExpression: `#state IN (${states.map((_, i) => `:s${i}`).join(', ')})`,
      ProjectionExpression: '#kind, cancelRequestedAt, scheduledAt',
      ExpressionAttributeNames: { '#state': 'state', '#kind': 'kind' },
      ExpressionAttributeValues: Object.fromEntries(states.map((state, i) => [`:s${i}`, state])),
    },
  );
  // A job its domain asked to stop (a deleted batch's dialer, asleep until a deferral a day on) ends cancelled
  // when it wakes: nothing to wait for while that is far off. One due within the hour is waited for: its
  // wake-up may have been lost, and the rescuer's next pass is what ends it (seed 67: a lost SendMessage of
  // a deleted batch's dialer left the run at rest before the rescuer woke it, and jobs.none-stuck said so).
  const now = host.clock.now();
  const stopFarOff = (item: Record<string, unknown>) => item['cancelRequestedAt'] !== undefined && Date.parse(typeof item['scheduledAt'] === 'string' ? item['scheduledAt'] : '') > now + STOPPED_FAR_OFF_MS;
  const waitedFor = (item: Record<string, unknown>) => !PERIODIC_KINDS.has(String(item['kind'])) && !BEYOND_HORIZON_KINDS.has(String(item['kind'])) && !stopFarOff(item);
  for await (const page of pages) if ((page.Items ?? []).some(waitedFor)) return 'busy';
  const entries = paginateScan(
    { client: clients.dynamo },
    { TableName: tableNames.webhooks, FilterExpression: 'begins_with(sk, :wait)', ProjectionExpression: 'pk', ExpressionAttributeValues: { ':wait': 'WAIT#' } },
  );
  for await (const page of entries) if ((page.Items ?? []).length > 0) return 'lists';
  return 'rest';
}

class StallError extends Error {}

async function withinLimit<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StallError(what)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `plan` once. */
export async function runPlan(plan: Plan, options: RunOptions): Promise<SeedResult> {
  const started = performance.now();
  const phases: Record<string, number> = { start: 0, quiesce: 0, atRest: 0, observe: 0, check: 0, stop: 0 };
  const timed = async <T>(phase: string, fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      phases[phase] = (phases[phase] ?? 0) + performance.now() - t;
    }
  };
  const host = await timed('start', () => startSimHost({
      dynamoEndpoint: options.dynamoEndpoint,
      plan,
      ...(options.everyPass ? { everyPass: true } : {}),
      ...(options.alterations ? { alterations: options.alterations } : {}),
      ...(options.logRequests ? { logRequests: true } : {}),
    }));
  const violations: Violation[] = [];
  let settled = false;
  let steps = 0;
  try {
    const driver = new Driver(host, plan.campaign);
    host.calendar?.attach(host.url, (batchId) => driver.batchPlanOf(batchId));
    driver.start();
    const horizon = SIM_START + (options.horizonMs ?? 3 * 86400_000);
    // Since when only deliveries waiting in lists are left: past strandedWithinMs, nothing will send them.
    let listsOnlySince: number | undefined;
    try {
      for (;;) {
        await timed('quiesce', () => withinLimit(host.quiesce(), options.stallLimitMs ?? 60_000, `the host did not come to rest at ${new Date(host.clock.now()).toISOString()}`));
        const rest = await timed('atRest', () => atRest(host, driver));
        listsOnlySince = rest === 'lists' ? (listsOnlySince ?? host.clock.now()) : undefined;
        if (rest === 'rest' || (listsOnlySince !== undefined && host.clock.now() - listsOnlySince > host.strandedWithinMs)) {
          settled = true;
          break;
        }
        if (host.clock.now() >= horizon || !host.advance()) break;
        steps++;
      }
    } catch (error) {
      if (!(error instanceof StallError)) throw error;
      violations.push({ invariant: 'host.comes-to-rest', message: `${error.message}: ${host.activity.inFlight} things in flight for ${(options.stallLimitMs ?? 60_000) / 1000} s` });
    }
    const observed = await timed('observe', () => observe(host, settled));
    const checkedAt = performance.now();
    violations.push(...check(observed, host, driver));
    phases['check'] = performance.now() - checkedAt;
    const stats = {
      calls: host.placer.calls.size,
      rounds: observed.jobs.filter((j) => j.kind === 'calls.finalise').length,
      deliveries: host.receivers.requests.length,
      mails: host.smtp.datas.length,
      capSnoozes: host.metrics.total('MailCapSnoozed'),
      drops: host.metrics.total('MailDropped'),
      discards: observed.jobs.filter((j) => j.state === 'discarded').length,
      lostAttempts: observed.jobs.reduce((n, j) => n + j.attempts.filter((a) => a.outcome === 'lost').length, 0),
      snoozes: observed.jobs.reduce((n, j) => n + j.snoozes, 0),
      passesLeftOut: host.passesLeftOut(),
      // The owners' endpoint actions that were answered with success, and what they set off.
      rotations: host.receivers.all().filter((r) => r.rotation?.answeredAt !== undefined).length,
      urlChanges: host.receivers.all().filter((r) => r.move?.answeredAt !== undefined).length,
      // Requests the changes were then checked on: to a moved URL, signed after a rotation was answered.
      toMovedUrl: host.receivers.requests.filter((r) => r.path === 'moved').length,
      afterRotation: host.receivers.requests.filter((r) => { const at = host.receivers.of(r.endpoint).rotation?.answeredAt; return at !== undefined && r.at > at; }).length,
      deletes: endpointRows(observed).filter((p) => p['deletedAt'] !== undefined).length,
      deletedDiscards: observed.jobs.filter((j) => j.state === 'discarded' && j.discardReason === 'endpoint_deleted').length,
      recoveries: driver.recoveries.length,
      recovered: host.writes.recovered.size,
      // The agent's calendar tools (sim/world/calendar-agent.ts): what it asked, and what came of it.
      ...calendarStats(host.calendar),
    };
    return {
      seed: plan.seed,
      plan,
      injections: host.faults.fired,
      unfired: host.faults.unfired(),
      violations,
      settled,
      simulatedMs: host.clock.now() - SIM_START,
      wallMs: performance.now() - started,
      steps,
      stats,
      requests: host.faults.sent.requests,
      phases,
      ...(host.sentRequests ? { sentRequests: host.sentRequests.toJSON() } : {}),
    };
  } finally {
    await timed('stop', () => host.stop());
  }
}

/** The calendar tools' requests and answers, for the run's summary (zero without calendars). */
function calendarStats(calendar: SimHost['calendar']): Record<string, number> {
  const tools = calendar?.tools ?? [];
  const last = (t: (typeof tools)[number]) => t.statuses.at(-1);
  return {
    toolRequests: tools.length,
    booked: tools.filter((t) => t.tool === 'book' && last(t) === 201).length,
    slotsTaken: tools.filter((t) => t.error === 'slot_taken').length,
    calendarUnavailable: tools.filter((t) => t.statuses.includes(503)).length,
    cancelled: tools.filter((t) => t.tool === 'cancel' && (last(t) === 204 || last(t) === 202)).length,
    notLive: tools.filter((t) => t.error === 'call_not_live').length,
  };
}

const endpointRows = (o: { webhooks: Record<string, unknown>[] }) => o.webhooks.filter((i) => i['sk'] === 'ENDPOINT');

/** Runs the plan of `seed`, or the part of it with only the faults `only` names. */
export function runSeed(seed: number, options: RunOptions & { only?: readonly number[] }): Promise<SeedResult> {
  const plan = drawPlan(seed);
  return runPlan(options.only ? withFaults(plan, options.only) : plan, options);
}
