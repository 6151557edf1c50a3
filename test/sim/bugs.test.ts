import { describe, expect, it } from 'vitest';
import { bugNamed, bugs } from '../../sim/bugs.ts';
import { bugProofs, proofOf, RESCUER_DISCARD_PLAN, STRANDED_LEASE_PLAN } from '../../sim/bug-proofs.ts';
import type { ProofPlan } from '../../sim/bug-proofs.ts';
import { mailPolicy } from '../../functions/mail/kinds.ts';
import { runPlan } from '../../sim/runner.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { CLEAN_SEEDS } from '../support/sim-seeds.ts';

/**
 * A simulation that cannot fail proves nothing: each plausible bug, put back through the host's seams
 * (sim/bugs.ts), must be reported, and the plan that reports it must pass without it. `npm test` runs each
 * bug's first plan in sim/bug-proofs.ts (the one measured to catch it at the least cost), and its next ones
 * only if that one missed; `npm run simulate -- --bugs` runs every plan of every bug both ways
 * (docs/simulation.md, "Bugs put back").
 */
async function expectFound(name: string): Promise<void> {
  const bug = bugNamed(name)!;
  const { caughtBy, plans } = proofOf(name);
  let caughtOn: ProofPlan | undefined;
  for (const proofPlan of plans) {
    const result = await runPlan(proofPlan.plan(), { dynamoEndpoint: dynamoEndpoint(), alterations: bug.alterations });
    if (result.violations.some((v) => caughtBy.includes(v.invariant))) {
      caughtOn = proofPlan;
      break;
    }
  }
  expect(caughtOn, `${name} went unnoticed on ${plans.map((p) => p.label).join(', ')} (expected ${caughtBy.join(' or ')})`).toBeDefined();
  // A seed test/sim/seeds.test.ts runs clean in the same `npm test` is not run clean again here.
  if (caughtOn!.seed !== undefined && CLEAN_SEEDS.includes(caughtOn!.seed)) return;
  const clean = await runPlan(caughtOn!.plan(), { dynamoEndpoint: dynamoEndpoint() });
  expect(clean.violations).toEqual([]);
}

describe('the planted bugs and their proofs', () => {
  it('NamesAPlanToCatchEveryPlantedBugOn', () => {
    expect(bugProofs.map((p) => p.bug).sort()).toEqual(bugs.map((b) => b.name).sort());
    for (const proof of bugProofs) expect(proof.plans.length, proof.bug).toBeGreaterThan(0);
  });
});

// The sixteen run at once (each mostly waits on DynamoDB Local).
describe.concurrent('the simulation finds a bug put back', () => {
  // No drawn plan reaches a job's last attempt (8 to 18 attempts in), so this one runs a targeted plan
  // (sim/plan.ts lostAttemptsPlan): seed 1's campaign, which has one owner address to confirm, and its
  // owner.email_confirmation job's every attempt lost to a crash after the claim; the rescuer discards it.
  it('ARescuerThatDoesNotCountItsDiscardsLeavesTheAlarmBlind', async () => {
    const plan = RESCUER_DISCARD_PLAN.plan();
    expect(plan.campaign.tenants.filter((t) => t.ownerEmail !== undefined)).toHaveLength(1);
    const bug = bugNamed('rescuer-uncounted-discards')!;
    const [buggy, clean] = await Promise.all([runPlan(plan, { dynamoEndpoint: dynamoEndpoint(), alterations: bug.alterations }), runPlan(plan, { dynamoEndpoint: dynamoEndpoint() })]);
    expect(buggy.stats['discards']).toBe(1);
    expect(buggy.violations.map((v) => v.invariant)).toContain('jobs.discards-counted');
    expect(clean.stats['discards']).toBe(1);
    expect(clean.stats['lostAttempts']).toBe(mailPolicy.maxAttempts);
    expect(clean.violations).toEqual([]);
  }, 300_000);

  it('AnIntakeThatIgnoresTheCallBindingAppliesALateResultToTheNextCall', () => expectFound('intake-ignores-call-binding'), 300_000);

  it('ATenantSlotReleasedAtTheDialLetsMoreCallsOutThanTheLimit', () => expectFound('tenant-slot-released-at-dial'), 300_000);

  it('AnOutboxJobWrittenAfterItsTransactionIsLostWithACrashOrALostResponse', () => expectFound('outbox-outside-transaction'), 300_000);

  it('AnAttemptWrittenOutsideItsCompletionsTransactionIsLeftByAResultTheTransactionRefuses', () => expectFound('attempt-outside-transaction'), 300_000);

  it('AMailTransportThatRetriesOnItsOwnSendsAMessageTwiceInOneRun', () => expectFound('mail-transport-retries'), 300_000);

  // Seed 97 shrunk to its one fault: a call result's intake takes a free endpoint's lease for its delivery,
  // then dies before its transaction is sent; the results after it wait behind a lease nobody will use.
  it('ASweepThatTakesOnlyLeasesNobodyHolds_LeavesTheListACrashedPublisherStrandedWaitingForever', async () => {
    const plan = STRANDED_LEASE_PLAN.plan();
    expect(plan.faults.map((f) => f.kind)).toEqual(['crash.betweenWrites']);
    const bug = bugNamed('sweep-skips-expired-lease')!;
    const [buggy, clean] = await Promise.all([runPlan(plan, { dynamoEndpoint: dynamoEndpoint(), alterations: bug.alterations }), runPlan(plan, { dynamoEndpoint: dynamoEndpoint() })]);
    expect(buggy.injections).toHaveLength(1);
    expect(buggy.violations.filter((v) => v.invariant === 'webhooks.every-event-delivered').map((v) => v.message).join('\n')).toMatch(/still waits in the list with nothing left to run/);
    expect(clean.injections).toHaveLength(1);
    expect(clean.violations).toEqual([]);
    expect(clean.settled).toBe(true);
  }, 300_000);

  it('ALeaseMeasuredInRealTimeOnAFastClockExpiresDuringASlowSend_AndASecondDeliveryGoesOutBesideIt', () => expectFound('webhook-lease-unscaled'), 300_000);

  it('ARotationThatDropsTheOldSignatureAtOnceLeavesAReceiverHoldingTheOldSecretUnableToVerify', () => expectFound('rotation-drops-old-signature'), 300_000);

  it('AWebhookClientThatRetriesOnItsOwnSendsADeliveryTwiceInOneRun', () => expectFound('webhook-client-retries'), 300_000);

  // Issue 27's rules, each on a targeted plan (sim/plan.ts compliancePlan): one tenant, no faults.
  it('ADialerThatIgnoresAPauseDialsWhileTheBatchIsPaused', () => expectFound('dial-ignores-pause'), 300_000);

  it('ADialWithoutTheSuppressionCheckCallsANumberSuppressedMidCampaign', () => expectFound('dial-skips-suppression-check'), 300_000);

  it('ACapKeptPerBatchCallsANumberSharedAcrossBatchesOverTheTenantsCap', () => expectFound('cap-keyed-by-batch'), 300_000);

  it('ADialerThatIgnoresPerContactZonesCallsChicagoAtNewYorksHours', () => expectFound('window-ignores-contact-zone'), 300_000);

  it('AStartJobDueAtOnceDialsAScheduledBatchBeforeItsStartAt', () => expectFound('start-job-ignores-start-at'), 300_000);

  // Issue 26's import, on a targeted plan (sim/plan.ts importPlan): 1,050 contacts in 3 pages, the answer of
  // the import job's first page transaction lost; the job runs again from the cursor that transaction moved.
  it('AnImportThatMovesItsCursorBeforeWritingThePageLosesThePagesContactsToALostAnswer', () => expectFound('import-cursor-before-page'), 300_000);

  // Issue 29's booking, each on a targeted plan of one tenant and one calendar (sim/bugs-calendar.ts).
  it('AHoldWithoutItsCellsConditionBooksASlotAnotherBookingHolds', () => expectFound('hold-ignores-cells'), 300_000);

  it('ASettleThatReadsPendingAsBookedLeavesTheEventOfARouteThatDiedAfterItsInsert', () => expectFound('settle-keeps-pending'), 300_000);

  it('ARouteThatResendsAnInsertWhoseAnswerWasLostSendsOneEventIdTwice', () => expectFound('insert-resent-on-unknown'), 300_000);
});
