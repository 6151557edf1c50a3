import { stringify } from 'csv-stringify/sync';
import type { VariableValue, Variables } from './fields.ts';

/**
 * A batch's results out, one row per contact, as CSV or JSON Lines — pure: columns and rows in, text out.
 * The caller pages (a page's text is one response), passing `header: true` on the first page only.
 *
 * | CSV column | JSON Lines field | what |
 * |---|---|---|
 * | `number` | `number` | E.164 |
 * | `external_id` | `externalId` | the customer's key |
 * | one per variable, in import order | `variables` (an object) | the contact's variables |
 * | `status`, `code`, `attempts` | same | final status, final normalised code, calls made |
 * | `recording_url`, `transcript_url`, `summary`, `ended_reason` | camelCase | the last call's artefacts |
 */

/** One contact's results, as the export reads them. */
export interface ExportRow {
  number: string;
  externalId?: string | undefined;
  variables?: Variables | undefined;
  status: string;
  code: string | null;
  attempts: number;
  recordingUrl?: string | undefined;
  transcriptUrl?: string | undefined;
  summary?: string | undefined;
  endedReason?: string | undefined;
}

type Field = Exclude<keyof ExportRow, 'variables'>;

/** An export column: a field of the row, or one variable. `header` is its CSV header. */
export type ExportColumn = { header: string; field: Field } | { header: string; variable: string };

const leading: ExportColumn[] = [
  { header: 'number', field: 'number' },
  { header: 'external_id', field: 'externalId' },
];
const trailing: ExportColumn[] = [
  { header: 'status', field: 'status' },
  { header: 'code', field: 'code' },
  { header: 'attempts', field: 'attempts' },
  { header: 'recording_url', field: 'recordingUrl' },
  { header: 'transcript_url', field: 'transcriptUrl' },
  { header: 'summary', field: 'summary' },
  { header: 'ended_reason', field: 'endedReason' },
];

/**
 * A batch's export columns: `number`, `external_id`, its variables in the order the import recorded (a CSV's
 * column order, or a JSON batch's order of first use), then the results. Variable names never clash with
 * the fixed columns: import refuses those names (`RESERVED_COLUMNS` in contact.ts).
 */
export function exportColumns(variableNames: readonly string[]): ExportColumn[] {
  return [...leading, ...variableNames.map((name) => ({ header: name, variable: name })), ...trailing];
}

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A cell made safe from CSV injection (OWASP): one that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return gets a leading `'`, so a spreadsheet shows it as text instead of running it — unless it is a plain
 * number (`-12.5`, `+3`, `1e5`), which a spreadsheet reads as the number it is. (csv-stringify's own
 * `escape_formulas` would prefix those too.)
 *
 * @example
 * neutraliseFormula('=HYPERLINK("http://evil")'); // → '\'=HYPERLINK("http://evil")'
 * neutraliseFormula('-12.5');                      // → '-12.5'
 */
export function neutraliseFormula(cell: string): string {
  return FORMULA_START.test(cell) && !PLAIN_NUMBER.test(cell) ? `'${cell}` : cell;
}

const cellText = (value: VariableValue | null | undefined): string => (value === null || value === undefined ? '' : String(value));

/**
 * Rows as CSV (RFC 4180: `,`, CRLF, quotes where needed), the header line first when `header` is set. Every
 * cell but the number's goes through {@link neutraliseFormula}; the number is E.164, which starts with `+`
 * and is no formula. An absent value is an empty cell.
 *
 * @example
 * exportCsv(exportColumns(['first_name']), rows, { header: pageIndex === 0 });
 */
export function exportCsv(columns: readonly ExportColumn[], rows: readonly ExportRow[], options: { header: boolean }): string {
  const records: string[][] = options.header ? [columns.map((c) => neutraliseFormula(c.header))] : [];
  for (const row of rows) {
    records.push(
      columns.map((column) => {
        if ('variable' in column) return neutraliseFormula(cellText(row.variables?.[column.variable]));
        const text = cellText(row[column.field]);
        return column.field === 'number' ? text : neutraliseFormula(text);
      }),
    );
  }
  if (records.length === 0) return '';
  return stringify(records, { record_delimiter: 'windows', quote_record_delimiter: true });
}

/**
 * Rows as JSON Lines: one object a line, `\n` after each. Every field is present (`null` when absent);
 * `variables` holds the row's variables among `columns`' (inserted in their order, though JSON objects
 * list integer-like names first). No formula guard: JSON is not read by spreadsheets.
 */
export function exportJsonLines(columns: readonly ExportColumn[], rows: readonly ExportRow[]): string {
  const variableNames = columns.flatMap((c) => ('variable' in c ? [c.variable] : []));
  let text = '';
  for (const row of rows) {
    const variables: Variables = {};
    for (const name of variableNames) {
      const value = row.variables?.[name];
      if (value !== undefined) variables[name] = value;
    }
    text += `${JSON.stringify({
      number: row.number,
      externalId: row.externalId ?? null,
      variables,
      status: row.status,
      code: row.code,
      attempts: row.attempts,
      recordingUrl: row.recordingUrl ?? null,
      transcriptUrl: row.transcriptUrl ?? null,
      summary: row.summary ?? null,
      endedReason: row.endedReason ?? null,
    })}\n`;
  }
  return text;
}
