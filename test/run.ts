// `npm test`: every file under test/ (vitest, two workers), with the type check and lint beside it at a
// lower priority, in one process over one TypeScript program (test/checks.ts: typed lint rules reuse the
// program and types tsc's check built, 148 core-s where `tsc --noEmit` and `eslint .` apart took 197).
// The suite leaves part of two cores idle (its files wait on DynamoDB Local, child processes and a
// browser), and the niced check fills that instead of running before it. Vitest's output streams as it
// runs; the check's is printed whole when the suite ends. Either failing fails `npm test`; extra
// arguments go to vitest.
import { spawn } from 'node:child_process';

interface Finished {
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
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output, seconds: (performance.now() - started) / 1000 }));
  });

const check = run('nice', ['-n', '10', process.execPath, 'test/checks.ts'], true);
const suite = await run('npx', ['vitest', 'run', ...process.argv.slice(2)], false);
const checked = await check;

if (checked.output.trim()) console.log(checked.output.trimEnd());
console.log(`type check and lint: ${checked.code === 0 ? 'ok' : `failed (exit ${checked.code})`} in ${checked.seconds.toFixed(0)} s`);
process.exit(suite.code !== 0 || checked.code !== 0 ? 1 : 0);
