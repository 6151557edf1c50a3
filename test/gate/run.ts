// npm run gate: the retry-owner gate and the structure gate on this repository, printed as `file:line rule message`.
import { resolve } from 'node:path';
import { domainNames } from './domain-names.ts';
import { checkRetryOwnership, findUnusedExemptions, RULE_DESCRIPTIONS } from './retry-gate.ts';
import { entryReach } from '../../functions/app/entry-reach.ts';
import { checkEntryReach, checkJobLayerNames, checkLayers, checkScopeMints, STRUCTURE_RULE_DESCRIPTIONS } from './structure-gate.ts';

const root = resolve(import.meta.dirname, '../..');
const started = performance.now();
const violations = checkRetryOwnership(root);
const unused = findUnusedExemptions(root);
const elapsed = Math.round(performance.now() - started);

for (const v of violations) console.log(`${v.file}:${v.line} ${v.rule} ${v.message}`);
for (const e of unused) console.log(`${e.file} exemption for ${e.rule} in ${e.functionName}() no longer applies: remove it`);
for (const rule of new Set(violations.map((v) => v.rule))) console.log(`  ${rule}: ${RULE_DESCRIPTIONS[rule]}`);
console.log(`retry gate: ${violations.length} violation(s), ${unused.length} unused exemption(s) in ${elapsed} ms`);

const structure = [...checkLayers(root), ...checkJobLayerNames(root, domainNames()), ...checkScopeMints(root), ...checkEntryReach(root, entryReach)];
for (const v of structure) console.log(`${v.file}:${v.line} ${v.rule} ${v.message}`);
for (const rule of new Set(structure.map((v) => v.rule))) console.log(`  ${rule}: ${STRUCTURE_RULE_DESCRIPTIONS[rule]}`);
console.log(`structure gate: ${structure.length} violation(s)`);
process.exitCode = violations.length + unused.length + structure.length > 0 ? 1 : 0;
