#!/usr/bin/env node
// npm run openapi: writes docs/openapi.json from the routes' zod schemas (a test checks it is current).
// Listing the routes builds no context and starts nothing: the system's host is never asked for.
import { writeFileSync } from 'node:fs';
import { apiDocument, System } from '../functions/app/system.ts';

const unhosted = new System(() => {
  throw new Error('listing routes needs no host');
});
writeFileSync('docs/openapi.json', `${JSON.stringify(apiDocument(unhosted.routes()), null, 2)}\n`);
console.log('wrote docs/openapi.json');
