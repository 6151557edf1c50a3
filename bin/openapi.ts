#!/usr/bin/env node
// npm run openapi: writes docs/openapi.json from the routes' zod schemas (a test checks it is current).
import { writeFileSync } from 'node:fs';
import { startLocalRuntime } from '../functions/ops/local.ts';
import { apiDocument, apiRoutes } from '../functions/ops/system.ts';

process.env['LOG_LEVEL'] ??= 'ERROR';
const runtime = await startLocalRuntime({ port: 0, dataDir: undefined, timeScale: 1 });
try {
  writeFileSync('docs/openapi.json', `${JSON.stringify(apiDocument(apiRoutes(runtime.deps)), null, 2)}\n`);
  console.log('wrote docs/openapi.json');
} finally {
  await runtime.stop();
}
