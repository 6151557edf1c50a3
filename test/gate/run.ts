// npm run gate: the retry-owner gate on this repository, printed as `file:line rule message`.
import { resolve } from 'node:path';
import { checkRetryOwnership, findUnusedExemptions, RULE_DESCRIPTIONS } from './retry-gate.ts';

const root = resolve(import.meta.dirname, '../..');
const started = performance.now();
const violations = checkRetryOwnership(root);
const unused = findUnusedExemptions(root);
const elapsed = Math.round(performance.now() - started);

for (const v of violations) console.log(`${v.file}:${v.line} ${v.rule} ${v.message}`);
for (const e of unused) console.log(`${e.file} exemption for ${e.rule} in ${e.functionName}() no longer applies: remove it`);
for (const rule of new Set(violations.map((v) => v.rule))) console.log(`  ${rule}: ${RULE_DESCRIPTIONS[rule]}`);
console.log(`retry gate: ${violations.length} violation(s), ${unused.length} unused exemption(s) in ${elapsed} ms`);
process.exitCode = violations.length + unused.length > 0 ? 1 : 0;
