import { describe, expect, it } from 'vitest';
import { runSeed } from '../../sim/runner.ts';
import { deniedRequests } from '../infra/iam/check.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { CLEAN_SEEDS } from '../support/sim-seeds.ts';

/**
 * A small fixed set of seeds of the fault simulation (the full run is `npm run simulate -- --seeds 500`,
 * docs/simulation.md): each runs its campaign under its fault plan to rest, and every invariant holds.
 * Every AWS request the run sent, faults and all, is allowed by the role of the function that sent it in
 * the synthesized stack (test/infra/iam.test.ts checks the roles further). They are also the clean runs of
 * the planted bugs caught on them (test/sim/bugs.test.ts).
 */
describe('the fault simulation, on a fixed set of seeds', () => {
  it.each(CLEAN_SEEDS)('Seed%sRunsToRestUnderItsFaultsWithEveryInvariantHolding_EachRequestAllowedByItsFunctionsRole', async (seed) => {
    const result = await runSeed(seed, { dynamoEndpoint: dynamoEndpoint(), logRequests: true });
    expect(result.violations).toEqual([]);
    expect(result.settled).toBe(true);
    expect(result.injections.length).toBeGreaterThan(0);
    expect(result.sentRequests!.requests.length).toBeGreaterThan(0);
    expect(await deniedRequests(result.sentRequests!)).toEqual([]);
  }, 60_000);
});
