import { describe, expect, it } from 'vitest';
import { bugNamed } from '../../sim/bugs.ts';
import { runSeed } from '../../sim/runner.ts';
import type { SeedResult } from '../../sim/runner.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

/**
 * A simulation that cannot fail proves nothing: each plausible bug, put back through the host's seams
 * (sim/bugs.ts), must be reported within 50 seeds, and the seed that reports it must pass without it.
 */
async function firstFailing(name: string, seeds = 50): Promise<SeedResult | undefined> {
  const bug = bugNamed(name);
  if (!bug) throw new Error(`no bug ${name}`);
  for (let seed = 1; seed <= seeds; seed++) {
    const result = await runSeed(seed, { dynamoEndpoint: dynamoEndpoint(), alterations: bug.alterations });
    if (result.violations.length > 0) return result;
  }
  return undefined;
}

async function expectFound(name: string, invariants: string[]): Promise<void> {
  const failing = await firstFailing(name);
  expect(failing, `${name} went unnoticed for 50 seeds`).toBeDefined();
  const broken = failing!.violations.map((v) => v.invariant);
  expect(broken.filter((invariant) => invariants.includes(invariant)), `seed ${failing!.seed} broke ${broken.join(', ')}`).not.toEqual([]);
  const clean = await runSeed(failing!.seed, { dynamoEndpoint: dynamoEndpoint() });
  expect(clean.violations).toEqual([]);
}

// The six run at once (each mostly waits on DynamoDB Local), each scanning seeds 1–50 in order.
describe.concurrent('the simulation finds a bug put back', () => {
  it('AnIntakeThatIgnoresTheCallBindingAppliesALateResultToTheNextCall', () => expectFound('intake-ignores-call-binding', ['calls.one-result-per-call', 'calls.result-is-its-own']), 300_000);

  it('ATenantSlotReleasedAtTheDialLetsMoreCallsOutThanTheLimit', () => expectFound('tenant-slot-released-at-dial', ['calls.within-concurrency-limit']), 300_000);

  it('AnOutboxJobWrittenAfterItsTransactionIsLostWithACrashOrALostResponse', () =>
    expectFound('outbox-outside-transaction', ['calls.batches-end', 'calls.one-result-per-call', 'jobs.none-stuck', 'webhooks.every-event-delivered', 'calls.tenant-slots-return']), 300_000);

  it('ARescuerThatDoesNotCountItsDiscardsLeavesTheAlarmBlind', () => expectFound('rescuer-uncounted-discards', ['jobs.discards-counted']), 300_000);

  it('AMailTransportThatRetriesOnItsOwnSendsAMessageTwiceInOneRun', () => expectFound('mail-transport-retries', ['retries.one-send-per-run']), 300_000);

  it('AWebhookClientThatRetriesOnItsOwnSendsADeliveryTwiceInOneRun', () => expectFound('webhook-client-retries', ['retries.one-send-per-run']), 300_000);
});
