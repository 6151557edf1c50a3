// `npm test`: every file under test/ (vitest, two workers), with the type check and lint beside it at a
// lower priority. Each check is one single-threaded process (tsc, and eslint building its own typed
// program); the suite leaves about a fifth of two cores idle (its files wait on DynamoDB Local, child
// processes and a browser), and niced checks fill that instead of running before it (47 s on an idle
// 2-core machine, 2026-12-03). Vitest's output streams as it runs; each check's is printed whole when the
// suite ends. Any of the three failing fails `npm test`; extra arguments go to vitest.
import { spawn } from 'node:child_process';

interface Finished {
  script: string;
  code: number;
  output: string;
  seconds: number;
}

const run = (command: string, args: readonly string[], capture: boolean): Promise<Finished> =>
  new Promise((resolve) => {
    const started = performance.now();
    let output = '';
    const child = spawn(command, args, { stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code, signal) => resolve({ script: args.at(-1) ?? command, code: code ?? (signal ? 1 : 0), output, seconds: (performance.now() - started) / 1000 }));
  });

const checks = ['typecheck', 'lint'].map((script) => run('nice', ['-n', '10', 'npm', 'run', '--silent', script], true));
const suite = await run('npx', ['vitest', 'run', ...process.argv.slice(2)], false);
const results = await Promise.all(checks);

for (const { script, code, output, seconds } of results) {
  console.log(`${script}: ${code === 0 ? 'ok' : `failed (exit ${code})`} in ${seconds.toFixed(0)} s`);
  if (output.trim()) console.log(output.trimEnd());
}
process.exit(suite.code !== 0 || results.some((r) => r.code !== 0) ? 1 : 0);
