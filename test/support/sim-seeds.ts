/**
 * The fault simulation's seeds `npm test` runs clean (test/sim/seeds.test.ts: every invariant holds, each
 * request allowed by its role). A planted bug caught on one of these needs no clean run of its own
 * (test/sim/bugs.test.ts): the same seed's clean run is here.
 */
export const CLEAN_SEEDS: readonly number[] = [1, 2, 3, 4];
