import { SourceMap } from 'node:module';
import type { SourceMapPayload } from 'node:module';

/**
 * Maps the positions of a stack trace from a deployed bundle back to the TypeScript sources, with the
 * bundle's source map (`index.mjs.map` beside `index.mjs` in the function's asset: `cdk.out/asset.<hash>/`,
 * or the zip `aws lambda get-function` links to). The functions run without `--enable-source-maps` (reading
 * the map cost a third of each cold start, docs/benchmarks.md), so their logs name `index.mjs:LINE:COLUMN`.
 *
 * Every `<bundle>:LINE:COLUMN` in `trace` (a plain stack, or a JSON log line with one inside) becomes
 * `SOURCE:LINE:COLUMN` of the code that was bundled there, the path relative to the project root; a
 * position the map has no source for is left as it was. Node prints both numbers 1-based, as the result does.
 *
 * @example
 * mapStackTrace('Error: boom\n    at e (file:///var/task/index.mjs:1:2345)', map)
 * // 'Error: boom\n    at e (functions/calls/intake-api.ts:41:11)'
 */
export function mapStackTrace(trace: string, map: SourceMapPayload, bundle = 'index.mjs'): string {
  const sourceMap = new SourceMap(map);
  const escaped = bundle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const position = new RegExp(`(?:file://)?[^\\s()"'\\\\]*${escaped}:(\\d+):(\\d+)`, 'g');
  return trace.replace(position, (whole, line: string, column: string) => {
    // The map's entry at or before the position (0-based); one on another line is no answer for this one.
    const entry = sourceMap.findEntry(Number(line) - 1, Number(column) - 1);
    if (!('originalSource' in entry) || entry.generatedLine !== Number(line) - 1) return whole;
    return `${projectPath(entry.originalSource)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}

/** A source's path as the map names it (relative to where the bundle was built), from the project root: `functions/…` or `node_modules/…`. */
function projectPath(source: string): string {
  const at = source.search(/(?:^|\/)(?:functions|node_modules|lib)\//);
  return at < 0 ? source : source.slice(source[at] === '/' ? at + 1 : at);
}
