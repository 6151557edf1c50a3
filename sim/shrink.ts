import { runPlan } from './runner.ts';
import type { RunOptions, SeedResult } from './runner.ts';
import { describeFault, withFaults } from './plan.ts';

/**
 * What is done with a failing seed: it is run again a few times (DynamoDB Local's interleavings are
 * real, so a plan does not always fail the same way), and its plan is shrunk by taking faults out, one
 * at a time, keeping each removal after which the plan still breaks one of the same invariants.
 */

export interface Analysis {
  /** Runs of the same plan that broke one of the same invariants, of `replays`. */
  replayed: number;
  replays: number;
  /** The fault ids of the smallest plan found that still fails; undefined if not shrunk. */
  shrunk: number[] | undefined;
  lines: string[];
}

const brokenBy = (result: SeedResult, invariants: ReadonlySet<string>) => result.violations.some((v) => invariants.has(v.invariant));

export async function replayAndShrink(failing: SeedResult, options: RunOptions & { replays: number; shrink: boolean; bugName?: string }): Promise<Analysis> {
  const invariants = new Set(failing.violations.map((v) => v.invariant));
  let replayed = 0;
  for (let i = 0; i < options.replays; i++) {
    if (brokenBy(await runPlan(failing.plan, options), invariants)) replayed++;
  }
  const lines = options.replays > 0 ? [`  replays: ${replayed} of ${options.replays} runs of the same plan broke ${[...invariants].join(', ')} again`] : [];
  if (!options.shrink || failing.plan.faults.length === 0) return { replayed, replays: options.replays, shrunk: undefined, lines };

  // Faults that never fired go first; then each fired one, if the plan fails without it (two tries: a
  // plan that fails only sometimes should not keep a fault it does not need).
  const fired = new Set(failing.injections.map((i) => i.fault.id));
  let kept = failing.plan.faults.filter((f) => fired.has(f.id)).map((f) => f.id);
  for (const id of [...kept]) {
    const without = kept.filter((k) => k !== id);
    for (let attempt = 0; attempt < 2; attempt++) {
      if (brokenBy(await runPlan(withFaults(failing.plan, without), options), invariants)) {
        kept = without;
        break;
      }
    }
  }
  const plan = withFaults(failing.plan, kept);
  lines.push(
    `  shrunk to ${kept.length} of ${failing.plan.faults.length} faults:${kept.length === 0 ? ' none needed (the campaign alone fails)' : ''}`,
    ...plan.faults.map((f) => `    ${describeFault(f)}`),
    `  replay the shrunk plan: npm run simulate -- --seeds 1 --seed ${failing.seed} --only ${kept.join(',') || 'none'}${options.bugName ? ` --bug ${options.bugName}` : ''}`,
  );
  return { replayed, replays: options.replays, shrunk: kept, lines };
}
