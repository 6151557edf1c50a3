import { mailPolicy } from '../functions/mail/kinds.ts';
import { compliancePlan, drawPlan, importPlan, lostAttemptsPlan, withFaults } from './plan.ts';
import type { CompliancePlanName, Plan } from './plan.ts';
import { calendarPlan } from './bugs-calendar.ts';
import type { CalendarPlanName } from './bugs-calendar.ts';

/**
 * Where each planted bug (sim/bugs.ts) is caught: the plans that reported it, and the invariants that
 * count as catching it. One table for both proofs: `npm test` (test/sim/bugs.test.ts) runs each bug's first
 * plan, and the next only if the first missed it (a run's interleaving varies a little); `npm run simulate
 * -- --bugs` runs every plan of every bug, with the bug and without it. The first plan of each is the one
 * measured to catch it at the least cost (docs/simulation.md, "Bugs put back"), preferring a seed the suite
 * already runs clean (test/support/sim-seeds.ts), whose clean run it then need not repeat.
 */
export interface ProofPlan {
  /** How the report names it: `seed 13`, or what the targeted plan is. */
  label: string;
  /** The drawn seed, when the plan is one (its clean run may already be in the suite). */
  seed?: number;
  plan: () => Plan;
}

export interface BugProof {
  bug: string;
  /** A violation of any of these on a plan is the bug caught. */
  caughtBy: readonly string[];
  /** Cheapest measured catch first. */
  plans: readonly ProofPlan[];
}

const seed = (s: number): ProofPlan => ({ label: `seed ${s}`, seed: s, plan: () => drawPlan(s) });

/** No drawn plan reaches a job's last attempt: seed 1's campaign with every attempt of its one owner confirmation lost. */
export const RESCUER_DISCARD_PLAN: ProofPlan = {
  label: `seed 1's campaign, all ${mailPolicy.maxAttempts} attempts of owner.email_confirmation lost`,
  plan: () => lostAttemptsPlan(1, 'owner.email_confirmation', mailPolicy.maxAttempts),
};

/** Seed 97 shrunk to its one fault (a crash between an intake's lease take and its transaction). */
export const STRANDED_LEASE_PLAN: ProofPlan = { label: 'seed 97, fault 9 only', plan: () => withFaults(drawPlan(97), [9]) };

/** An import of 1,050 contacts (3 pages, one a run) whose job's first page transaction answer is lost (sim/plan.ts importPlan). */
export const IMPORT_PLAN: ProofPlan = { label: 'the import plan (a lost answer of the first page transaction)', plan: () => importPlan() };

/** A targeted plan for a calendar bug (sim/bugs-calendar.ts calendarPlan): one tenant, one calendar, agents that book. */
const calendarTargeted = (name: CalendarPlanName): ProofPlan => ({ label: `the calendar ${name} plan`, plan: () => calendarPlan(name) });

/** A targeted plan for a control or compliance bug (sim/plan.ts compliancePlan): a campaign the rule decides, no faults. */
const targeted = (name: CompliancePlanName): ProofPlan => ({ label: `the ${name} plan`, plan: () => compliancePlan(name) });

// Costs measured one run at a time over a shared DynamoDB Local (2026-12-03, load average 4–10 on 2 cores;
// node + DynamoDB Local CPU seconds of the run with the bug): docs/simulation.md has the table.
export const bugProofs: readonly BugProof[] = [
  { bug: 'rescuer-uncounted-discards', caughtBy: ['jobs.discards-counted'], plans: [RESCUER_DISCARD_PLAN] },
  // 4 (3.7 s, clean in the suite); 19 (5.6 s); 13 (18 s).
  { bug: 'intake-ignores-call-binding', caughtBy: ['calls.one-result-per-call', 'calls.result-is-its-own'], plans: [seed(4), seed(19), seed(13)] },
  // Each of 1–4 caught it in 2026-12-03's runs (1: 4 of 4); 2026-12-01's idle replay of 1 did not.
  { bug: 'tenant-slot-released-at-dial', caughtBy: ['calls.within-concurrency-limit'], plans: [seed(1), seed(2), seed(3)] },
  // 78 (7 s, 60 simulated minutes) caught it in 3 of 3; 60 and 75 did not on 2026-12-03 (they did in the scan of 1–80).
  {
    bug: 'outbox-outside-transaction',
    caughtBy: ['calls.batches-end', 'calls.one-result-per-call', 'jobs.none-stuck', 'webhooks.every-event-delivered', 'calls.tenant-slots-return', 'mail.every-finalised-batch-notified'],
    plans: [seed(78), seed(60), seed(75)],
  },
  // 1 (1.4 s, 2 of 2, clean in the suite); 4 (4.8 s, clean in the suite), 12 (2.8 s), 9 (5.1 s): caught.
  { bug: 'attempt-outside-transaction', caughtBy: ['calls.one-attempt-per-result'], plans: [seed(1), seed(4), seed(12), seed(9)] },
  // 5 (1.5 s, 4 of 4) with its clean run costs less than 4 (4.5 s) without one.
  { bug: 'mail-transport-retries', caughtBy: ['retries.one-send-per-run'], plans: [seed(5), seed(4)] },
  { bug: 'sweep-skips-expired-lease', caughtBy: ['webhooks.every-event-delivered'], plans: [STRANDED_LEASE_PLAN] },
  // 124 (2 s, 3 of 3); 27 missed on 2026-12-03; 122 simulates 19 hours (50 s).
  { bug: 'webhook-lease-unscaled', caughtBy: ['webhooks.one-in-flight-per-endpoint'], plans: [seed(124), seed(27), seed(122)] },
  // Plans that rotate an endpoint's secret (not expireOldNow) before events flow to it: 29 (e2 at 72 s), 38 (e1 at 85 s), 17.
  { bug: 'rotation-drops-old-signature', caughtBy: ['webhooks.signed-with-live-secrets'], plans: [seed(29), seed(38), seed(17)] },
  // 12 (1.5 s, 3 of 3), 17, 18; 4 and 6 of the first scan missed it when run alone.
  { bug: 'webhook-client-retries', caughtBy: ['retries.one-send-per-run'], plans: [seed(12), seed(17), seed(18)] },
  // Issue 27's rules: each on a targeted plan of one tenant and no faults (docs/simulation.md has their costs).
  { bug: 'dial-ignores-pause', caughtBy: ['control.no-dial-while-paused'], plans: [targeted('pause')] },
  { bug: 'dial-skips-suppression-check', caughtBy: ['compliance.no-dial-after-suppression'], plans: [targeted('suppress')] },
  { bug: 'cap-keyed-by-batch', caughtBy: ['compliance.cap-per-24h'], plans: [targeted('cap')] },
  { bug: 'window-ignores-contact-zone', caughtBy: ['compliance.local-window'], plans: [targeted('window')] },
  { bug: 'start-job-ignores-start-at', caughtBy: ['control.no-early-start'], plans: [targeted('start')] },
  // Issue 26's import: the targeted plan (a lost answer of the import job's first page transaction).
  { bug: 'import-cursor-before-page', caughtBy: ['imports.exact'], plans: [IMPORT_PLAN] },
  // Issue 29's booking: each on a targeted plan of one tenant and one calendar (sim/bugs-calendar.ts calendarPlan).
  { bug: 'hold-ignores-cells', caughtBy: ['calendar.one-holder-per-cell'], plans: [calendarTargeted('race')] },
  { bug: 'settle-keeps-pending', caughtBy: ['calendar.kept-exactly'], plans: [calendarTargeted('crash')] },
  { bug: 'insert-resent-on-unknown', caughtBy: ['calendar.sent-once'], plans: [calendarTargeted('lost-insert')] },
];

export function proofOf(bug: string): BugProof {
  const proof = bugProofs.find((p) => p.bug === bug);
  if (!proof) throw new Error(`no proof for bug ${bug}`);
  return proof;
}
