// npm run simulate -- --seeds N [--seed S] [--only 1,3] [--parallel K] [--no-shrink] [--replays R] [--json FILE]
// Runs N seeds from S (default 1) and ends with `simulate: N seeds, F faults injected, V invariant violations`.
// npm run simulate -- --bugs [--bug NAME] [--parallel K]: every planted bug on every plan known to catch it,
// with the bug and without (sim/prove-bugs.ts); `npm test` runs each bug's first plan only.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { startDynamoDbLocal } from '../functions/platform/local/dynamodb-local.ts';
import { bugNamed, bugs } from './bugs.ts';
import { proveBugs } from './prove-bugs.ts';
import { describeCampaign, describeFault, drawPlan, faultKinds } from './plan.ts';
import { runSeed } from './runner.ts';
import type { SeedResult } from './runner.ts';
import { replayAndShrink } from './shrink.ts';

/** Set in a worker process (--workers) to the runner's DynamoDB Local endpoint. */
const WORKER_ENV = 'REDIAL_SIM_WORKER_DYNAMODB';

const integer = (name: string, min: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}`);
  return n;
};

const program = new Command('simulate')
  .description('Seeded fault-injection runs of the whole pipeline, checked against its invariants (docs/simulation.md)')
  .option('--seeds <n>', 'how many seeds to run', integer('--seeds', 1), 20)
  .option('--seed <s>', 'the first seed', integer('--seed', 0), 1)
  .option('--only <ids>', 'run only these faults of the plan (a shrunk plan), e.g. 1,3')
  .option('--parallel <k>', 'seeds run at once in each process', integer('--parallel', 1), 2)
  .option('--workers <w>', 'processes the seeds are run in (each with --parallel seeds at once)', integer('--workers', 1), 1)
  .option('--recycle <n>', 'seeds a process runs before a fresh one takes over (0: all in this process)', integer('--recycle', 0), 50)
  .option('--replays <r>', 'times a failing seed is run again, to say how often it replays', integer('--replays', 0), 3)
  .option('--every-pass', 'run every rescuer pass, also those that would find nothing to do')
  .option('--no-shrink', 'do not look for a smaller failing plan')
  .option('--json <file>', 'write every result to this file')
  .option('--bug <name>', `run with a bug put back (${bugs.map((b) => b.name).join(', ')})`)
  .option('--bugs', 'prove the planted bugs: each on every plan that caught it, with and without it (with --bug, that one)')
  .option('--verbose', 'print each seed, not only the failing ones')
  .parse();

const options = program.opts<{ seeds: number; seed: number; only?: string; parallel: number; workers: number; recycle: number; replays: number; shrink: boolean; everyPass?: boolean; json?: string; bug?: string; bugs?: boolean; verbose?: boolean }>();
const bug = options.bug === undefined ? undefined : bugNamed(options.bug);
if (options.bug !== undefined && !bug) program.error(`no bug named ${options.bug}; known: ${bugs.map((b) => b.name).join(', ')}`);
const only = options.only === undefined ? undefined : options.only === 'none' ? [] : options.only.split(',').map((id) => Number(id.trim()));
if (only?.some((id) => !Number.isInteger(id))) program.error('--only takes fault ids: --only 1,3');

process.env['LOG_LEVEL'] ??= 'SILENT';

/** Runs one seed, and what to print for it: its line with `--verbose`, its report when it fails (replayed and shrunk). */
async function runAndReport(seed: number, dynamoEndpoint: string): Promise<{ result: SeedResult; output: string | undefined }> {
  const result = await runSeed(seed, { dynamoEndpoint, ...(options.everyPass ? { everyPass: true } : {}), ...(only ? { only } : {}), ...(bug ? { alterations: bug.alterations } : {}) }).catch(
    (error: unknown): SeedResult => ({
      seed,
      plan: drawPlan(seed),
      injections: [],
      unfired: [],
      violations: [{ invariant: 'host.runs', message: `the run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}` }],
      settled: false,
      simulatedMs: 0,
      wallMs: 0,
      steps: 0,
      stats: {},
    }),
  );
  const line = `seed ${seed}: ${result.injections.length} faults injected, ${result.violations.length} violations, ${Math.round(result.simulatedMs / 60_000)} min simulated in ${(result.wallMs / 1000).toFixed(1)} s${result.settled ? '' : ' (horizon reached)'}`;
  if (result.violations.length === 0) {
    if (!options.verbose) return { result, output: undefined };
    const phases = result.phases ? ` [${result.steps} steps, ${result.requests ?? 0} requests; ${Object.entries(result.phases).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')} s]` : '';
    return { result, output: line + phases };
  }
  const report = [
    `FAIL ${line}`,
    `  campaign: ${describeCampaign(result.plan.campaign)}`,
    `  plan:`,
    ...result.plan.faults.map((f) => `    ${describeFault(f)}${result.injections.some((i) => i.fault.id === f.id) ? '' : ' (never fired)'}`),
    `  injected:`,
    ...result.injections.map((i) => `    #${i.fault.id} at +${Math.round((i.at - Date.parse('2026-01-05T09:00:00.000Z')) / 1000)} s: ${i.detail}`),
    `  violations:`,
    ...result.violations.slice(0, 20).map((v) => `    ${v.invariant}: ${v.message}`),
    ...(result.violations.length > 20 ? [`    … and ${result.violations.length - 20} more`] : []),
    `  replay: npm run simulate -- --seeds 1 --seed ${seed}${only ? ` --only ${only.join(',') || 'none'}` : ''}${bug ? ` --bug ${bug.name}` : ''}`,
  ];
  if (options.replays > 0 || options.shrink) {
    const analysis = await replayAndShrink(result, { dynamoEndpoint, ...(options.everyPass ? { everyPass: true } : {}), replays: options.replays, shrink: options.shrink, ...(bug ? { alterations: bug.alterations, bugName: bug.name } : {}) });
    report.push(...analysis.lines);
  }
  return { result, output: report.join('\n') };
}

/** What a worker process and the runner say to each other. */
type ToWorker = { seed: number } | { done: true };
type FromWorker = { seed: number; result: SeedResult; output: string | undefined };

const workerEndpoint = process.env[WORKER_ENV];
if (options.bugs) {
  const started = performance.now();
  const dynamo = await startDynamoDbLocal();
  try {
    const { ok } = await proveBugs(dynamo.endpoint, { ...(options.bug === undefined ? {} : { bug: options.bug }), parallel: options.parallel, print: (line) => console.log(line) });
    console.log(`${Math.round((performance.now() - started) / 1000)} s on ${cpus().length} cores, ${options.parallel} plans at once, load average ${loadavg()[0]!.toFixed(1)}`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await dynamo.stop();
  }
} else if (workerEndpoint !== undefined) {
  // A worker process (--workers): runs the seeds the runner sends it, over the runner's DynamoDB Local.
  process.on('message', (message: ToWorker) => {
    if ('done' in message) return void process.disconnect();
    void runAndReport(message.seed, workerEndpoint).then(({ result, output }) => process.send!({ seed: message.seed, result, output } satisfies FromWorker));
  });
} else {
  const started = performance.now();
  const load = [loadavg()[0]!];
  const dynamo = await startDynamoDbLocal();
  const results: SeedResult[] = [];
  const seeds = Array.from({ length: options.seeds }, (_, i) => options.seed + i);
  const collect = ({ result, output }: { result: SeedResult; output: string | undefined }) => {
    results.push(result);
    load.push(loadavg()[0]!);
    if (results.length % 50 === 0 && results.length < seeds.length) {
      console.log(`… ${results.length} of ${seeds.length} seeds, ${results.reduce((n, r) => n + r.violations.length, 0)} violations so far (${Math.round((performance.now() - started) / 1000)} s)`);
    }
    if (output !== undefined) console.log(output);
  };
  try {
    let next = 0;
    if (options.recycle === 0 && options.workers <= 1) {
      const lane = async () => {
        while (next < seeds.length) collect(await runAndReport(seeds[next++]!, dynamo.endpoint));
      };
      await Promise.all(Array.from({ length: Math.min(options.parallel, seeds.length) }, lane));
    } else {
      // Worker processes, each with `--parallel` seeds at once, all over this DynamoDB Local; each runs at
      // most `--recycle` seeds and then makes way for a fresh one. A process that has run a hundred seeds
      // or more runs each one slower (its CPU, not DynamoDB Local's, is what grows: docs/simulation.md),
      // so a long run is a chain of short-lived processes.
      const runChild = (budget: number) => {
        const child = fork(fileURLToPath(import.meta.url), process.argv.slice(2), { env: { ...process.env, [WORKER_ENV]: dynamo.endpoint }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        let out = 0;
        let sent = 0;
        const feed = () => {
          while (out < options.parallel && next < seeds.length && sent < budget) {
            out++;
            sent++;
            child.send({ seed: seeds[next++]! } satisfies ToWorker);
          }
          if (out === 0) child.send({ done: true } satisfies ToWorker);
        };
        return new Promise<void>((resolve, reject) => {
          child.on('message', (message: FromWorker) => {
            out--;
            collect(message);
            feed();
          });
          child.once('exit', (code) => (out === 0 ? resolve() : reject(new Error(`a worker process exited with ${code} with ${out} seeds unfinished`))));
          child.once('error', reject);
          feed();
        });
      };
      const budget = options.recycle === 0 ? Number.POSITIVE_INFINITY : options.recycle;
      await Promise.all(
        Array.from({ length: Math.min(options.workers, Math.ceil(seeds.length / options.parallel)) }, async () => {
          while (next < seeds.length) await runChild(budget);
        }),
      );
    }
  } finally {
    await dynamo.stop();
  }

  const faults = results.reduce((n, r) => n + r.injections.length, 0);
  const violations = results.reduce((n, r) => n + r.violations.length, 0);
  const kinds = new Set(results.flatMap((r) => r.injections.map((i) => i.fault.kind)));
  const seconds = (performance.now() - started) / 1000;
  const byKind = faultKinds.map((k) => `${k} ${results.reduce((n, r) => n + r.injections.filter((i) => i.fault.kind === k).length, 0)}`);
  const totals = new Map<string, number>();
  for (const r of results) for (const [k, v] of Object.entries(r.stats)) totals.set(k, (totals.get(k) ?? 0) + v);
  console.log(`exercised: ${[...totals].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`fault kinds exercised: ${kinds.size} of ${faultKinds.length} (${byKind.join(', ')})`);
  console.log(
    `${Math.floor(Math.round(seconds) / 60)} min ${Math.round(seconds) % 60} s on ${cpus().length} cores (${options.workers} × ${options.parallel} seeds at once, ${results.reduce((n, r) => n + (r.requests ?? 0), 0)} AWS requests), load average ${(load.reduce((a, b) => a + b, 0) / load.length).toFixed(1)} (min ${Math.min(...load).toFixed(1)}, max ${Math.max(...load).toFixed(1)}); ${results.filter((r) => !r.settled).length} seeds reached the horizon`,
  );
  results.sort((a, b) => a.seed - b.seed);
  if (options.json) writeFileSync(options.json, JSON.stringify({ seeds: options.seeds, first: options.seed, faults, violations, seconds, results }, null, 2));
  console.log(`simulate: ${results.length} seeds, ${faults} faults injected, ${violations} invariant violations`);
  process.exitCode = violations > 0 ? 1 : 0;
}
