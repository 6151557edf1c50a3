import { randomInt } from 'node:crypto';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { mersenne } from 'pure-rand/generator/mersenne';

/**
 * Randomness, injected: jitter and the batch-round nudge draw from an {@link Rng}, so tests pass a
 * seeded one and get the same schedule every run.
 */
export interface Rng {
  /** A uniform float in [0, 1). */
  float(): number;
  /** A uniform integer in [min, max], both included. */
  int(min: number, max: number): number;
}

/**
 * A deterministic generator (Mersenne Twister from pure-rand: neighbouring seeds give unrelated
 * streams from the first draw) for tests and benchmarks.
 */
export function seededRng(seed: number): Rng {
  const generator = mersenne(seed);
  return {
    float: () => uniformFloat64(generator),
    int: (min, max) => uniformInt(generator, min, max),
  };
}

/** A generator seeded from the operating system, for production. */
export function systemRng(): Rng {
  return seededRng(randomInt(0, 2 ** 31));
}
