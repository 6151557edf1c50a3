#!/usr/bin/env node
// npm run map-stack-trace -- <index.mjs.map> [bundle file name] < trace.txt: a deployed function's stack
// trace with its positions mapped to the TypeScript sources. It assembles; functions/cli/stack-trace.ts maps.
import { readFileSync } from 'node:fs';
import { mapStackTrace } from '../functions/cli/stack-trace.ts';

const [mapFile, bundle] = process.argv.slice(2);
if (!mapFile) {
  process.stderr.write('usage: npm run map-stack-trace -- <path to the asset’s index.mjs.map> [bundle file name] < trace\n');
  process.exit(2);
}
process.stdout.write(mapStackTrace(readFileSync(0, 'utf8'), JSON.parse(readFileSync(mapFile, 'utf8')) as Parameters<typeof mapStackTrace>[1], bundle));
