import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { readContactsCsv } from '../../../functions/calls/contacts/csv-import.ts';
import type { ImportedContact } from '../../../functions/calls/contacts/csv-import.ts';
import { exportColumns, exportCsv, exportJsonLines, neutraliseFormula } from '../../../functions/calls/contacts/export.ts';
import type { ExportRow } from '../../../functions/calls/contacts/export.ts';

const row = (overrides: Partial<ExportRow> = {}): ExportRow => ({ number: '+442079460000', status: 'Completed', code: 'COMPLETED', attempts: 1, ...overrides });

describe('export: CSV and JSON Lines, one row per contact', () => {
  it('TheColumnsAreNumberExternalIdTheVariablesInImportOrderThenTheResults', () => {
    expect(exportColumns(['first_name', '2024', 'amount']).map((c) => c.header)).toEqual([
      'number', 'external_id', 'first_name', '2024', 'amount', 'status', 'code', 'attempts', 'recording_url', 'transcript_url', 'summary', 'ended_reason',
    ]);
  });

  it('WritesTheHeaderOnTheFirstPageOnlyWithCrlfAndQuotesWhereNeeded', () => {
    const columns = exportColumns(['name']);
    const first = exportCsv(columns, [row({ externalId: 'a', variables: { name: 'Smith, Ada "Countess"' }, summary: 'line 1\nline 2' })], { header: true });
    expect(first).toBe(
      'number,external_id,name,status,code,attempts,recording_url,transcript_url,summary,ended_reason\r\n' +
        '+442079460000,a,"Smith, Ada ""Countess""",Completed,COMPLETED,1,,,"line 1\nline 2",\r\n',
    );
    const next = exportCsv(columns, [row({ number: '+442079460001', code: null, status: 'Queued', attempts: 0 })], { header: false });
    expect(next).toBe('+442079460001,,,Queued,,0,,,,\r\n');
    expect(exportCsv(columns, [], { header: false })).toBe('');
  });

  it('PrefixesFormulaCellsButNotTheNumberNorPlainNumbers', () => {
    for (const cell of ['=1+1', '+1+1', '-1+1', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://x")']) expect(neutraliseFormula(cell), JSON.stringify(cell)).toBe(`'${cell}`);
    for (const cell of ['-12.5', '+3', '1e5', '-.5', '0', 'plain', '', ' =x', "'quoted"]) expect(neutraliseFormula(cell), JSON.stringify(cell)).toBe(cell);
    const csv = exportCsv(exportColumns(['a', 'b', 'c']), [row({ externalId: '=cmd|calc', variables: { a: '=1+1', b: -3, c: '-3' }, summary: '@risk', endedReason: '+x' })], { header: false });
    expect(parse(csv)).toEqual([["+442079460000", "'=cmd|calc", "'=1+1", '-3', '-3', 'Completed', 'COMPLETED', '1', '', '', "'@risk", "'+x"]]);
  });

  it('WritesBooleansNumbersAndAbsentValuesAsText', () => {
    const csv = exportCsv(exportColumns(['vip', 'balance', 'missing']), [row({ variables: { vip: true, balance: 12.5 } })], { header: false });
    expect(parse(csv)[0]!.slice(2, 5)).toEqual(['true', '12.5', '']);
  });

  it('WritesJsonLinesWithEveryFieldAndTheVariablesAmongTheColumns', () => {
    const columns = exportColumns(['name']);
    const text = exportJsonLines(columns, [
      row({ externalId: 'a', variables: { name: '=Ada', dropped: 'x' }, recordingUrl: 'https://r.example/1', summary: 'ok', endedReason: 'customer-ended-call' }),
      row({ number: '+442079460001', status: 'Queued', code: null, attempts: 0 }),
    ]);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trimEnd().split('\n').map((l) => JSON.parse(l))).toEqual([
      { number: '+442079460000', externalId: 'a', variables: { name: '=Ada' }, status: 'Completed', code: 'COMPLETED', attempts: 1, recordingUrl: 'https://r.example/1', transcriptUrl: null, summary: 'ok', endedReason: 'customer-ended-call' },
      { number: '+442079460001', externalId: null, variables: {}, status: 'Queued', code: null, attempts: 0, recordingUrl: null, transcriptUrl: null, summary: null, endedReason: null },
    ]);
  });

  it('AnExportPagedAndReImportedGivesBackTheImportedContacts', async () => {
    const csv = 'number;external_id;first name;code_a;note\r\n+442079460000;a;Ada;00123;"multi\nline, with ; and ""quotes"""\r\n+14155550123;b;=1+1;;-5\r\n+33140000000;c;Zoë 😀;7;\r\n';
    const imported: ImportedContact[] = [];
    let variables: string[] = [];
    for await (const event of readContactsCsv(csv, { pageSize: 2 })) {
      if (event.type === 'columns') variables = event.columns.variables;
      if (event.type === 'page') imported.push(...event.contacts);
    }
    const columns = exportColumns(variables);
    const rows = imported.map((c): ExportRow => ({ number: c.number, externalId: c.externalId, variables: c.variables, status: 'Completed', code: 'COMPLETED', attempts: 2 }));
    // Two pages: the header on the first only.
    const exported = exportCsv(columns, rows.slice(0, 2), { header: true }) + exportCsv(columns, rows.slice(2), { header: false });
    const back = parse<Record<string, string>>(exported, { columns: true });
    expect(back.map((r) => [r['number'], r['external_id'], r['first name'], r['code_a'], r['note']])).toEqual([
      ['+442079460000', 'a', 'Ada', '00123', 'multi\nline, with ; and "quotes"'],
      // The formula is neutralised; "-5" is a plain number and stays as it is.
      ['+14155550123', 'b', "'=1+1", '', '-5'],
      ['+33140000000', 'c', 'Zoë 😀', '7', ''],
    ]);
  });
});
