import { seededRng } from '../../functions/platform/rng.ts';
import type { ImportPlan } from '../plan.ts';

/**
 * The CSV file of an import plan (issue 26), and what importing it must come to, both built here from the
 * plan alone: the simulator knows which rows it wrote valid, invalid or repeated, so the contacts the batch
 * must end with are known without asking redial's parser.
 *
 * - Valid rows: distinct numbers `+1<area>555<2000 + i>` (valid NANP numbers), most in E.164, some as
 *   `+1 <area>-555-<xxxx>`; an `external_id` (`ext-<i>`) when the plan has the column; variables whose
 *   cells are sometimes empty (the variable is absent) and sometimes need quoting (the delimiter, a quote,
 *   a line break) or look like numbers with leading zeros ("00123" stays a string).
 * - Invalid rows (refused with `skipInvalid`): numbers no country could have (`12`, `+1 555`, `call me`), or
 *   with externalIds a fresh number under an earlier row's id (a repeated externalId is refused).
 * - Duplicates (dropped with `dedupe`): an earlier valid row's number as `+1 (<area>) 555-<xxxx>`, after it.
 */

/** A contact as the batch must keep it. */
export interface ExpectedContact {
  number: string;
  externalId?: string;
  variables?: Record<string, string>;
}

export interface ImportFile {
  csv: string;
  /** The valid rows' contacts, in file order: the batch's contacts, positions 0… */
  expected: ExpectedContact[];
  /** Data rows in the file (the header not counted). */
  rows: number;
}

const quote = (cell: string, delimiter: string): string => (cell.includes(delimiter) || cell.includes('"') || cell.includes('\n') || cell.includes('\r') ? `"${cell.replaceAll('"', '""')}"` : cell);

/** The file of `plan`, and the contacts importing it must leave. */
export function importFile(plan: ImportPlan): ImportFile {
  const rng = seededRng(plan.fileSeed);
  const area = rng.int(201, 989);
  const { delimiter } = plan;
  const header = ['Number', ...(plan.externalIds ? ['External_ID'] : []), ...plan.variables];
  const expected: ExpectedContact[] = [];
  const lines: string[][] = [];
  for (let i = 0; i < plan.valid; i++) {
    const suffix = String(2000 + i);
    const number = `+1${area}555${suffix}`;
    const contact: ExpectedContact = { number, ...(plan.externalIds ? { externalId: `ext-${i}` } : {}) };
    const cells = [rng.float() < 0.8 ? number : `+1 ${area}-555-${suffix}`, ...(plan.externalIds ? [`ext-${i}`] : [])];
    const variables: Record<string, string> = {};
    for (const name of plan.variables) {
      const roll = rng.float();
      const value = roll < 0.15 ? '' : roll < 0.25 ? `Smith${delimiter} "J" ${i}` : roll < 0.3 ? `line one\nline two ${i}` : roll < 0.4 ? `00${i}` : `${name}-${i}`;
      cells.push(value);
      if (value !== '') variables[name] = value;
    }
    if (Object.keys(variables).length > 0) contact.variables = variables;
    expected.push(contact);
    lines.push(cells);
  }
  const width = header.length;
  const pad = (cells: string[]) => [...cells, ...Array.from({ length: width - cells.length }, () => '')];
  // Duplicates, and rows repeating an externalId, after their original; other invalid rows anywhere (the
  // first and the last row among them).
  const originals = [...lines];
  const after = (original: number) => rng.int(lines.indexOf(originals[original]!) + 1, lines.length);
  for (let d = 0; d < plan.duplicates; d++) {
    const original = rng.int(0, plan.valid - 1);
    lines.splice(after(original), 0, pad([`+1 (${area}) 555-${String(2000 + original)}`, ...(plan.externalIds ? [`dup-${d}`] : [])]));
  }
  for (let k = 0; k < plan.invalid; k++) {
    if (plan.externalIds && rng.float() < 0.3) {
      const original = rng.int(0, plan.valid - 1);
      lines.splice(after(original), 0, pad([`+1${area}556${String(2000 + k)}`, `ext-${original}`]));
      continue;
    }
    const cells = pad([pickOf(rng.float(), ['12', '+1 555', 'call me']), ...(plan.externalIds ? [`bad-${k}`] : [])]);
    lines.splice(k === 0 ? 0 : k === 1 ? lines.length : rng.int(0, lines.length), 0, cells);
  }
  const csv = [header, ...lines].map((cells) => cells.map((c) => quote(c, delimiter)).join(delimiter)).join('\r\n') + '\r\n';
  return { csv, expected, rows: lines.length };
}

const pickOf = <T>(roll: number, items: readonly T[]): T => items[Math.floor(roll * items.length)]!;
