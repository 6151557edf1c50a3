import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Deployment } from './deployment.ts';
import { impliedRequests } from './implied.ts';
import { NOT_RECORDED } from './justified.ts';
import { grantKey, grantsOf, matchesPattern } from './usage.ts';
import type { Grant } from './usage.ts';

/**
 * The table of docs/operations.md ("What each function may do"): per function, every grant of its role,
 * and why it is there: `recorded` (a request of a recorded run needed it: test/infra/iam.test.ts holds
 * every such grant to a run that used it), `implied` (AWS uses the role for the function, with the reason),
 * or `not recorded` (the code path that needs it, which no recorded run reaches: test/infra/iam/justified.ts).
 * It is read off the synthesized stack, so `node test/infra/iam/table.ts` rewrites the section after a
 * grant changes.
 */

const START = '<!-- iam-table:start (test/infra/iam/table.ts writes this section) -->';
const END = '<!-- iam-table:end -->';
export const OPERATIONS_MD = join(import.meta.dirname, '..', '..', '..', 'docs', 'operations.md');

/** Why a grant is there, as the table says it. */
export function statusOf(grant: Grant, deployment: Deployment): { kind: 'recorded' | 'implied' | 'not recorded'; why: string } {
  const justified = NOT_RECORDED[grantKey(grant)];
  if (justified) return { kind: 'not recorded', why: justified };
  const implied = impliedRequests(deployment).find((r) => r.function === grant.function && r.action === grant.action && matchesPattern(grant.resource, r.resource.arn));
  if (implied) return { kind: 'implied', why: implied.from.replace(/^implied: /, '') };
  return { kind: 'recorded', why: '' };
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** Code-point order: the same on every machine, whatever its locale. */
const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The section's text, from the stack's grants. */
export function renderTable(deployment: Deployment): string {
  const lines: string[] = [START, ''];
  for (const fn of Object.keys(deployment.functions)) {
    const rows = new Map<string, { actions: string[]; label: string; conditions: string; status: string }>();
    for (const grant of grantsOf(deployment, [fn])) {
      const status = statusOf(grant, deployment);
      const text = status.kind === 'recorded' ? 'recorded' : `${status.kind}: ${status.why}`;
      const key = `${grant.label}\u0000${grant.conditions}\u0000${text}`;
      const row = rows.get(key) ?? { actions: [], label: grant.label, conditions: grant.conditions, status: text };
      row.actions.push(grant.action);
      rows.set(key, row);
    }
    lines.push(`**${fn}**`, '', '| actions | on | conditions | why |', '|---|---|---|---|');
    const sorted = [...rows.values()].sort((a, b) => order(a.label, b.label) || order(a.actions[0]!, b.actions[0]!) || order(a.status, b.status));
    for (const row of sorted) lines.push(`| ${row.actions.map((a) => `\`${a}\``).join(', ')} | ${cell(row.label)} | ${cell(row.conditions || '—')} | ${cell(row.status)} |`);
    lines.push('');
  }
  lines.push(END);
  return lines.join('\n');
}

/** The section as docs/operations.md has it now (empty if it has none). */
export function documentedTable(): string {
  const text = readFileSync(OPERATIONS_MD, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  return start === -1 || end === -1 ? '' : text.slice(start, end + END.length);
}

// `node test/infra/iam/table.ts`: rewrites the section in place.
if (import.meta.filename === process.argv[1]) {
  const { deploy } = await import('./deployment.ts');
  const text = readFileSync(OPERATIONS_MD, 'utf8');
  const current = documentedTable();
  if (!current) throw new Error(`docs/operations.md has no ${START} … ${END} section to rewrite`);
  writeFileSync(OPERATIONS_MD, text.replace(current, renderTable(deploy())));
}
