import { describe, expect, it } from 'vitest';
import { runSeed } from '../../sim/runner.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';

/**
 * A small fixed set of seeds of the fault simulation (the full run is `npm run simulate -- --seeds 500`,
 * docs/simulation.md): each runs its campaign under its fault plan to rest, and every invariant holds.
 */
const SEEDS = [1, 2, 3, 4];

describe('the fault simulation, on a fixed set of seeds', () => {
  it.each(SEEDS)('Seed%sRunsToRestUnderItsFaultsWithEveryInvariantHolding', async (seed) => {
    const result = await runSeed(seed, { dynamoEndpoint: dynamoEndpoint() });
    expect(result.violations).toEqual([]);
    expect(result.settled).toBe(true);
    expect(result.injections.length).toBeGreaterThan(0);
  }, 60_000);
});
