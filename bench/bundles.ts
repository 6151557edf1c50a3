// npm run bench -- bundles: every deployed function's bundle, built as NodejsFunction builds it, against the
// same function's bundle at BASE (the commit before per-function bundles, every entry importing the one
// composition root), both in this run: bytes (every file of the asset but the source map), the median
// `import()` of the bundle alone in a fresh Node 22 process over 5 processes each (alternating, with the
// function's environment from the template), and what is largest in it (esbuild's metafile). The base is
// timed twice: as it was deployed (its source map with the sources' text, NODE_OPTIONS=--enable-source-maps)
// and like for like (the same bundle under today's NODE_OPTIONS, none), so the ratio of the bundle alone
// is there beside the deployed one. Each function's line carries the load average while it ran.
// docs/benchmarks.md records a run.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { buildBundle, coldImport, deployedFunctions, LAMBDA_BASE_ENV, startStandIns } from '../test/support/lambda-bundles.ts';
import { fmt } from './support.ts';

/**
 * The last commit whose entries all import functions/app/system.ts (main before per-function bundles). Its
 * vetted HTTP client imports undici, which is a devDependency for this build alone: nothing deployed imports it.
 */
export const BUNDLES_BASE = '2ff62a5';
const ROUNDS = 5;
/** NODE_OPTIONS of every function at BASE (lib/constructs/function.ts then): Node read each bundle's source map at load. */
const BASE_NODE_OPTIONS = '--enable-source-maps';

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
  const lines: string[] = [
    `base ${base} vs this checkout; median of ${ROUNDS} fresh processes each, import() alone; before as deployed (NODE_OPTIONS=${BASE_NODE_OPTIONS}) and like for like (before under today's NODE_OPTIONS)`,
    `load average at start: ${loadavg().map((l) => fmt(l, 1)).join(' ')}`,
  ];
  const ratios: number[] = [];
  const bareRatios: number[] = [];
  try {
    for (const fn of functions) {
      // The base as it was deployed: a source map with the sources' text, no aliases (its checkout has no module to alias to).
      const before = await buildBundle(baseRoot, fn.entry, join(work, 'before', fn.name), { aliases: {}, sourcesContent: true });
      const after = await buildBundle(root, fn.entry, join(work, 'after', fn.name));
      const env = { ...LAMBDA_BASE_ENV, ...fn.env, ...standIns.env };
      const runs = [
        ['before', before, { ...env, NODE_OPTIONS: BASE_NODE_OPTIONS }],
        ['beforeBare', before, env],
        ['after', after, env],
      ] as const;
      const times: Record<(typeof runs)[number][0], number[]> = { before: [], beforeBare: [], after: [] };
      const loads: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        for (const [which, bundle, runEnv] of runs) {
          const run = await coldImport(bundle.file, runEnv);
          if (!run.ok || !run.hasHandler) throw new Error(`${fn.name} (${which}) did not load: ${run.stderr}`);
          times[which].push(run.importMs);
          loads.push(loadavg()[0]!);
        }
      }
      const ratio = median(times.after) / median(times.before);
      const bareRatio = median(times.after) / median(times.beforeBare);
      ratios.push(ratio);
      bareRatios.push(bareRatio);
      lines.push(
        `${fn.name.padEnd(16)} ${String(after.bytes).padStart(9)} B (${kib(before.bytes)} → ${kib(after.bytes)})   import ${fmt(median(times.before))} → ${fmt(median(times.after))} ms (${fmt(ratio * 100)} %; like for like ${fmt(median(times.beforeBare))} → ${fmt(median(times.after))}, ${fmt(bareRatio * 100)} %)   load ${fmt(Math.min(...loads), 1)}–${fmt(Math.max(...loads), 1)}   largest: ${after.largest
          .slice(0, 4)
          .map((p) => `${p.name} ${kib(p.bytes)}`)
          .join(', ')}`,
      );
    }
  } finally {
    await standIns.close();
  }
  lines.push(`median ratio of cold import, after / before as deployed: ${fmt(median(ratios) * 100)} % (worst ${fmt(Math.max(...ratios) * 100)} %)`);
  lines.push(`median ratio like for like (before under today's NODE_OPTIONS): ${fmt(median(bareRatios) * 100)} % (worst ${fmt(Math.max(...bareRatios) * 100)} %)`);
  lines.push(`load average at end: ${loadavg().map((l) => fmt(l, 1)).join(' ')}`);
  return { lines };
}
