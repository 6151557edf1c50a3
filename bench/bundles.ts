// npm run bench -- bundles: every deployed function's bundle, built as NodejsFunction builds it, against the
// same function's bundle at BASE (the commit before per-function bundles, every entry importing the one
// composition root), both in this run: bytes (every file of the asset but the source map), the median
// `import()` of the bundle alone in a fresh Node 22 process over 5 processes each (alternating, with the
// function's environment from the template and NODE_OPTIONS as deployed), and what is largest in it
// (esbuild's metafile). docs/benchmarks.md records a run.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildBundle, coldImport, deployedFunctions, LAMBDA_BASE_ENV, startStandIns } from '../test/support/lambda-bundles.ts';
import { fmt } from './support.ts';

/**
 * The last commit whose entries all import functions/app/system.ts (main before per-function bundles). Its
 * vetted HTTP client imports undici, which is a devDependency for this build alone: nothing deployed imports it.
 */
export const BUNDLES_BASE = '2ff62a5';
const ROUNDS = 5;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const kib = (bytes: number) => `${fmt(bytes / 1024)} KiB`;

export async function benchBundles(root: string, base = BUNDLES_BASE): Promise<{ lines: string[] }> {
  const work = join(root, '.bench', 'bundles');
  rmSync(work, { recursive: true, force: true });
  // The base commit's functions/ beside this checkout's node_modules: built with the same esbuild and packages.
  const baseRoot = join(work, 'base-src');
  mkdirSync(baseRoot, { recursive: true });
  execFileSync('sh', ['-c', `git -C "${root}" archive ${base} functions | tar -x -C "${baseRoot}"`]);
  writeFileSync(join(baseRoot, 'package.json'), JSON.stringify({ type: 'module' }));
  if (!existsSync(join(baseRoot, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(baseRoot, 'node_modules'), 'dir');

  const functions = deployedFunctions();
  const standIns = await startStandIns();
  const lines: string[] = [`base ${base} vs this checkout; median of ${ROUNDS} fresh processes each, import() alone, NODE_OPTIONS as deployed`];
  const ratios: number[] = [];
  try {
    for (const fn of functions) {
      // The base as it was deployed: before the bundling aliases (its checkout has no module to alias to).
      const before = await buildBundle(baseRoot, fn.entry, join(work, 'before', fn.name), {});
      const after = await buildBundle(root, fn.entry, join(work, 'after', fn.name));
      const env = { ...LAMBDA_BASE_ENV, ...fn.env, ...standIns.env };
      const times: { before: number[]; after: number[] } = { before: [], after: [] };
      for (let i = 0; i < ROUNDS; i++) {
        for (const [which, bundle] of [['before', before], ['after', after]] as const) {
          const run = await coldImport(bundle.file, env);
          if (!run.ok || !run.hasHandler) throw new Error(`${fn.name} (${which}) did not load: ${run.stderr}`);
          times[which].push(run.importMs);
        }
      }
      const ratio = median(times.after) / median(times.before);
      ratios.push(ratio);
      lines.push(
        `${fn.name.padEnd(16)} ${kib(before.bytes).padStart(10)} → ${kib(after.bytes).padStart(10)}   import ${fmt(median(times.before)).padStart(4)} → ${fmt(median(times.after)).padStart(4)} ms (${fmt(ratio * 100)} %)   largest: ${after.largest
          .slice(0, 4)
          .map((p) => `${p.name} ${kib(p.bytes)}`)
          .join(', ')}`,
      );
    }
  } finally {
    await standIns.close();
  }
  lines.push(`median ratio of cold import, after / before: ${fmt(median(ratios) * 100)} % (worst ${fmt(Math.max(...ratios) * 100)} %)`);
  return { lines };
}
