import { bugNamed } from './bugs.ts';
import { bugProofs } from './bug-proofs.ts';
import type { BugProof, ProofPlan } from './bug-proofs.ts';
import { runPlan } from './runner.ts';
import type { SeedResult } from './runner.ts';

/** One plan of one bug, run with the bug and without it. */
export interface PlanProof {
  bug: string;
  plan: string;
  /** The invariants of the bug's `caughtBy` the run with the bug broke (none: missed). */
  caughtWith: string[];
  /** Every violation of the run without the bug (none: the plan is clean). */
  cleanViolations: string[];
  seconds: { buggy: number; clean: number };
}

const seconds = (r: SeedResult) => +(r.wallMs / 1000).toFixed(1);

async function provePlan(proof: BugProof, plan: ProofPlan, dynamoEndpoint: string): Promise<PlanProof> {
  const bug = bugNamed(proof.bug);
  if (!bug) throw new Error(`no bug ${proof.bug}`);
  const buggy = await runPlan(plan.plan(), { dynamoEndpoint, alterations: bug.alterations });
  const clean = await runPlan(plan.plan(), { dynamoEndpoint });
  return {
    bug: proof.bug,
    plan: plan.label,
    caughtWith: [...new Set(buggy.violations.map((v) => v.invariant).filter((i) => proof.caughtBy.includes(i)))],
    cleanViolations: clean.violations.map((v) => `${v.invariant}: ${v.message}`),
    seconds: { buggy: seconds(buggy), clean: seconds(clean) },
  };
}

/**
 * `npm run simulate -- --bugs`: every plan of every planted bug (sim/bug-proofs.ts; one bug with `--bug`),
 * each run with the bug and without it, `parallel` plans at once. `npm test` runs only each bug's first plan
 * (and no clean run for a seed test/sim/seeds.test.ts runs clean); this is the whole table. It fails when a
 * bug went unnoticed on every plan, or a plan broke an invariant without the bug.
 */
export async function proveBugs(dynamoEndpoint: string, options: { bug?: string; parallel: number; print: (line: string) => void }): Promise<{ ok: boolean; proofs: PlanProof[] }> {
  const proofs = bugProofs.filter((p) => options.bug === undefined || p.bug === options.bug);
  const work = proofs.flatMap((proof) => proof.plans.map((plan) => ({ proof, plan })));
  const done: PlanProof[] = [];
  let next = 0;
  const lane = async () => {
    while (next < work.length) {
      const { proof, plan } = work[next++]!;
      const result = await provePlan(proof, plan, dynamoEndpoint);
      done.push(result);
      const caught = result.caughtWith.length > 0 ? `caught (${result.caughtWith.join(', ')})` : 'MISSED';
      const clean = result.cleanViolations.length === 0 ? 'clean without it' : `NOT CLEAN without it: ${result.cleanViolations.slice(0, 3).join('; ')}`;
      options.print(`${result.bug}, ${result.plan}: ${caught} in ${result.seconds.buggy} s; ${clean} in ${result.seconds.clean} s`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.parallel, work.length) }, lane));
  const uncaught = proofs.filter((p) => !done.some((d) => d.bug === p.bug && d.caughtWith.length > 0)).map((p) => p.bug);
  const suiteMissed = proofs.filter((p) => !done.some((d) => d.bug === p.bug && d.plan === p.plans[0]!.label && d.caughtWith.length > 0)).map((p) => p.bug);
  const unclean = done.filter((d) => d.cleanViolations.length > 0);
  options.print(
    `bugs: ${proofs.length} bugs on ${work.length} plans; ${done.filter((d) => d.caughtWith.length > 0).length} plans caught theirs; ` +
      `${uncaught.length === 0 ? 'every bug caught' : `never caught: ${uncaught.join(', ')}`}; ` +
      `${suiteMissed.length === 0 ? "each bug's first plan (npm test's) caught it" : `first plan missed: ${suiteMissed.join(', ')}`}; ` +
      `${unclean.length} plans not clean without the bug`,
  );
  return { ok: uncaught.length === 0 && unclean.length === 0, proofs: done };
}
