import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { mapStackTrace } from '../../functions/cli/stack-trace.ts';
import { root } from '../infra/synth.ts';

/** A two-file program bundled as the functions are (ESM, minified, a source map without the sources' text), whose handler throws from a known line. */
function buildThrower(): { bundle: string; map: Parameters<typeof mapStackTrace>[1] } {
  const dir = join(root, '.bench', 'stack-trace-test');
  mkdirSync(join(dir, 'functions', 'demo'), { recursive: true });
  writeFileSync(join(dir, 'functions', 'demo', 'check.ts'), ['// padding', '', 'export function checkAmount(amount: number): number {', '  if (amount < 0) throw new RangeError(`negative amount ${amount}`);', '  return amount;', '}', ''].join('\n'));
  writeFileSync(join(dir, 'functions', 'demo', 'entry.ts'), ["import { checkAmount } from './check.ts';", '', 'export const handler = (n: number) => checkAmount(n) * 2;', ''].join('\n'));
  const bundle = join(dir, 'out', 'index.mjs');
  esbuild.buildSync({ absWorkingDir: dir, entryPoints: [join(dir, 'functions', 'demo', 'entry.ts')], bundle: true, platform: 'node', format: 'esm', minify: true, sourcemap: true, sourcesContent: false, outfile: bundle, logLevel: 'error' });
  return { bundle, map: JSON.parse(readFileSync(`${bundle}.map`, 'utf8')) as Parameters<typeof mapStackTrace>[1] };
}

/** The stack the bundle's handler throws, printed by Node without --enable-source-maps (as the functions run). */
function thrownStack(bundle: string): string {
  const script = `const { handler } = await import(${JSON.stringify(`file://${bundle}`)}); try { handler(-1); } catch (e) { console.log(e.stack); }`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });
  return run.stdout;
}

describe('mapping a deployed function’s stack trace to the sources', () => {
  it('names the TypeScript file and line each bundle position came from', () => {
    const { bundle, map } = buildThrower();
    const stack = thrownStack(bundle);
    expect(stack).toContain('RangeError: negative amount -1');
    // Unmapped, the trace names only the bundle.
    expect(stack).toMatch(/index\.mjs:1:\d+/);
    expect(stack).not.toContain('check.ts');
    const mapped = mapStackTrace(stack, map);
    const frames = mapped.split('\n').filter((l) => l.includes('functions/demo/'));
    expect(frames[0]).toMatch(/functions\/demo\/check\.ts:4:\d+/);
    expect(frames[1]).toMatch(/functions\/demo\/entry\.ts:3:\d+/);
    expect(mapped).not.toMatch(/index\.mjs:\d+:\d+/);
  });

  it('maps positions inside a JSON log line and leaves what the map does not cover as it was', () => {
    const { bundle, map } = buildThrower();
    const stack = thrownStack(bundle);
    const logLine = JSON.stringify({ level: 'ERROR', message: 'failed', error: { stack } });
    const mapped = mapStackTrace(logLine, map);
    expect(mapped).toMatch(/functions\/demo\/check\.ts:4:\d+/);
    expect(() => JSON.parse(mapped) as unknown).not.toThrow();
    // A line past the end of the bundle has no source: left alone.
    expect(mapStackTrace('at x (file:///var/task/index.mjs:999:1)', map)).toBe('at x (file:///var/task/index.mjs:999:1)');
    // Another file's positions are not the bundle's.
    expect(mapStackTrace('at y (node:internal/modules/esm/module_job:1:1)', map)).toBe('at y (node:internal/modules/esm/module_job:1:1)');
  });
});
