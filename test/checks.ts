// `npm test`'s first step: the type check and lint at once. Each is one single-threaded process (tsc, and
// eslint building its own typed program), so on two cores they take the longer one's time, not the sum.
// Both always run to the end, their output is printed whole and in order, and either failing fails the step.
import { spawn } from 'node:child_process';

const checks = ['typecheck', 'lint'] as const;

const results = await Promise.all(
  checks.map(
    (script) =>
      new Promise<{ script: string; code: number; output: string; seconds: number }>((resolve) => {
        const started = performance.now();
        let output = '';
        const child = spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.on('close', (code, signal) => resolve({ script, code: code ?? (signal ? 1 : 0), output, seconds: (performance.now() - started) / 1000 }));
      }),
  ),
);

for (const { script, code, output, seconds } of results) {
  console.log(`${script}: ${code === 0 ? 'ok' : `failed (exit ${code})`} in ${seconds.toFixed(0)} s`);
  if (output.trim()) console.log(output.trimEnd());
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
