import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { csvImportQuery, detectDelimiter, readContactsCsv } from '../../../functions/calls/contacts/csv-import.ts';
import type { ByteSource, CsvColumns, CsvImportOptions, CsvImportReport, ImportedContact } from '../../../functions/calls/contacts/csv-import.ts';
import { CsvImportError } from '../../../functions/calls/contacts/errors.ts';
import { variablesBytes } from '../../../functions/calls/contacts/fields.ts';

interface Imported {
  columns: CsvColumns | undefined;
  pages: ImportedContact[][];
  contacts: ImportedContact[];
  report: CsvImportReport;
}

/** Runs an import to its end, collecting what it gave out. */
async function importCsv(source: ByteSource, options: CsvImportOptions = {}): Promise<Imported> {
  let columns: CsvColumns | undefined;
  const pages: ImportedContact[][] = [];
  let report: CsvImportReport | undefined;
  for await (const event of readContactsCsv(source, options)) {
    if (event.type === 'columns') columns = event.columns;
    else if (event.type === 'page') pages.push(event.contacts);
    else report = event.report;
  }
  return { columns, pages, contacts: pages.flat(), report: report! };
}

/** The import's refusal, or a failed expectation when it does not throw one. */
async function refusal(source: ByteSource, options: CsvImportOptions = {}): Promise<CsvImportError> {
  try {
    await importCsv(source, options);
  } catch (error) {
    if (error instanceof CsvImportError) return error;
    throw error;
  }
  throw new Error('expected a CsvImportError');
}

/** The bytes of `text` as one chunk per byte: every multi-byte character is split across chunks. */
function* byteByByte(text: string): Generator<Uint8Array> {
  for (const byte of Buffer.from(text, 'utf8')) yield Uint8Array.of(byte);
}

const lines = (...rows: string[]) => rows.join('\n') + '\n';

describe('CSV import: the file', () => {
  it('ReadsTheHeaderWithoutRegardToCaseAndKeepsTheVariablesInColumnOrder', async () => {
    const { columns, contacts, report } = await importCsv(lines('Number,first_name,External_ID,2024,TimeZone,amount', '+44 20 7946 0000,Ada,crm-1,yes,Europe/London,00123'));
    expect(columns).toEqual({ delimiter: ',', header: ['Number', 'first_name', 'External_ID', '2024', 'TimeZone', 'amount'], variables: ['first_name', '2024', 'amount'] });
    expect(contacts).toEqual([
      { row: 2, number: '+442079460000', numberValid: true, region: 'GB', externalId: 'crm-1', timezone: 'Europe/London', variables: { first_name: 'Ada', 2024: 'yes', amount: '00123' } },
    ]);
    expect(report).toMatchObject({ ok: true, rows: 1, accepted: 1, refusedRows: 0, issues: [] });
  });

  it('CellsAreStringsAsWrittenAndAnEmptyCellIsAnAbsentVariable', async () => {
    const { contacts } = await importCsv(lines('number,code_a,flag,amount,note', '+442079460000,00123,true,1e3, spaced '));
    expect(contacts[0]!.variables).toEqual({ code_a: '00123', flag: 'true', amount: '1e3', note: ' spaced ' });
    const { contacts: sparse } = await importCsv(lines('number,a,b', '+442079460000,,x', '+442079460001,,'));
    expect(sparse.map((c) => c.variables)).toEqual([{ b: 'x' }, undefined]);
  });

  it('StripsTheUtf8ByteOrderMark', async () => {
    const { columns, contacts } = await importCsv(Buffer.from('\uFEFFnumber,name\n+442079460000,Zoë\n', 'utf8'));
    expect(columns!.header).toEqual(['number', 'name']);
    expect(contacts[0]!.variables).toEqual({ name: 'Zoë' });
  });

  it('DetectsASemicolonFromTheHeaderLineAndKeepsCommasInValues', async () => {
    const { columns, contacts } = await importCsv(lines('number;amount;city', '020 7946 0000;12,50;Leeds, West Yorkshire'), { defaultCountry: 'GB' });
    expect(columns!.delimiter).toBe(';');
    expect(contacts[0]!.variables).toEqual({ amount: '12,50', city: 'Leeds, West Yorkshire' });
    // Only the header line counts: rows full of commas do not outvote it.
    const { columns: decimals } = await importCsv(lines('number;amount;rate', '+442079460000;1,234,567;2,5', '+442079460001;3,141,592;4,5', '+442079460002;5,000,000;6,5'));
    expect(decimals!.delimiter).toBe(';');
    // A comma header keeps semicolons in values.
    const { contacts: commas } = await importCsv(lines('number,note', '+442079460000,a;b;c'));
    expect(commas[0]!.variables).toEqual({ note: 'a;b;c' });
  });

  it('DetectsTheDelimiterOutsideQuotesOnly', () => {
    expect(detectDelimiter('"a;b;c",number')).toBe(',');
    expect(detectDelimiter('number;"a,b,c";x')).toBe(';');
    expect(detectDelimiter('number')).toBe(',');
  });

  it('ReadsQuotedFieldsWithDelimitersDoubledQuotesAndNewlines', async () => {
    const csv = 'number,note,other\r\n+442079460000,"one, two","say ""hi"""\r\n+442079460001,"line 1\nline 2\r\nline 3",x\r\n+442079460002,"",y\r\n';
    const { contacts } = await importCsv(csv);
    expect(contacts.map((c) => [c.row, c.variables])).toEqual([
      [2, { note: 'one, two', other: 'say "hi"' }],
      [3, { note: 'line 1\nline 2\r\nline 3', other: 'x' }],
      // A row spanning lines is one row: the next one is row 4.
      [4, { other: 'y' }],
    ]);
  });

  it('ReadsCrlfLfAndAFileWithoutAFinalLineEnd', async () => {
    for (const csv of ['number\r\n+442079460000\r\n+442079460001\r\n', 'number\n+442079460000\n+442079460001', 'number\r\n+442079460000\r\n+442079460001']) {
      const { contacts } = await importCsv(csv);
      expect(contacts.map((c) => c.number), JSON.stringify(csv)).toEqual(['+442079460000', '+442079460001']);
    }
  });

  it('TakesAQuoteInsideAnUnquotedCellAsItIs', async () => {
    const { contacts } = await importCsv(lines('number,size', '+442079460000,5" screen'));
    expect(contacts[0]!.variables).toEqual({ size: '5" screen' });
  });

  it('KeepsFormulaCellsAsTextOnImport', async () => {
    const { contacts } = await importCsv(lines('number,a,b', '+442079460000,=1+1,@SUM(A1)'));
    expect(contacts[0]!.variables).toEqual({ a: '=1+1', b: '@SUM(A1)' });
  });

  it('DecodesCharactersSplitAcrossChunks', async () => {
    const { columns, contacts } = await importCsv(byteByByte('\uFEFFnumber;name\n+442079460000;Zoë 😀 日本\n'));
    expect(columns!.delimiter).toBe(';');
    expect(contacts[0]!.variables).toEqual({ name: 'Zoë 😀 日本' });
  });

  it('ReadsANodeReadableAndAWebStream', async () => {
    const csv = lines('number,name', '+442079460000,a', '+442079460001,b');
    const node = await importCsv(Readable.from([Buffer.from(csv.slice(0, 10)), Buffer.from(csv.slice(10))]));
    const web = await importCsv(Readable.toWeb(Readable.from([Buffer.from(csv)])) as AsyncIterable<Uint8Array>);
    expect(node.contacts.map((c) => c.number)).toEqual(['+442079460000', '+442079460001']);
    expect(web.contacts).toEqual(node.contacts);
  });

  it('SkipsBlankRowsButCountsThemInRowNumbers', async () => {
    const { contacts, report } = await importCsv(lines('number;name', '+442079460000;a', '', ';', ' ; ', '+442079460001;b'));
    expect(contacts.map((c) => c.row)).toEqual([2, 6]);
    expect(report).toMatchObject({ rows: 5, accepted: 2, blankRows: 3, ok: true });
  });

  it('AHeaderAloneImportsNothing', async () => {
    const { columns, contacts, report } = await importCsv('number,name\n');
    expect(columns!.variables).toEqual(['name']);
    expect(contacts).toEqual([]);
    expect(report).toMatchObject({ ok: true, rows: 0, accepted: 0 });
  });
});

describe('CSV import: settings as query parameters', () => {
  it('TakesTheSettingsAsQueryParametersWithBooleansSpelledTrueOrFalse', () => {
    expect(csvImportQuery.parse({ defaultCountry: 'GB', strictNumbers: 'false', skipInvalid: 'true', dedupe: 'true' })).toEqual({ defaultCountry: 'GB', strictNumbers: false, skipInvalid: true, dedupe: true });
    expect(csvImportQuery.parse({})).toEqual({});
    const bad = csvImportQuery.safeParse({ skipInvalid: 'yes', defaultCountry: 'UK', dedup: 'true' });
    expect(bad.error!.issues.map((i) => (i.code === 'unrecognized_keys' ? i.keys.join() : i.path.join('.'))).sort()).toEqual(['dedup', 'defaultCountry', 'skipInvalid']);
  });
});

describe('CSV import: refusals of the whole file', () => {
  it('RefusesBytesThatAreNotUtf8', async () => {
    const latin1 = Buffer.concat([Buffer.from('number,name\n+442079460000,Zo'), Buffer.from([0xeb]), Buffer.from('\n')]);
    expect((await refusal(latin1)).refusal).toBe('not_utf8');
    // A sequence cut off at the end of the file.
    expect((await refusal(Buffer.concat([Buffer.from('number\n+442079460000,'), Buffer.from([0xc3])]))).refusal).toBe('not_utf8');
  });

  it('RefusesAnEmptyFileAndAHeaderWithNoLineEndIn64KiB', async () => {
    expect((await refusal('')).refusal).toBe('no_header');
    expect((await refusal('\uFEFF')).refusal).toBe('no_header');
    expect((await refusal(`number,${'x'.repeat(70_000)}`)).refusal).toBe('no_header');
  });

  it('RefusesADuplicateHeaderComparedWithoutRegardToCase', async () => {
    const error = await refusal(lines('number,Name,NAME', '+442079460000,a,b'));
    expect(error.refusal).toBe('header');
    expect(error.issues).toEqual([{ row: 1, column: 'NAME', message: 'the same column name as column 2 (names are compared without regard to case)' }]);
    expect((await refusal(lines('Number,number'))).issues[0]).toMatchObject({ row: 1, column: 'number' });
  });

  it('RefusesAHeaderWithoutNumberWithAnUnnamedColumnOrAReservedName', async () => {
    expect((await refusal(lines('phone,name'))).issues).toEqual([{ row: 1, message: 'no number column (the header is: phone, name)' }]);
    const error = await refusal(lines('number,,status'));
    expect(error.issues.map((i) => [i.column, i.message.slice(0, 20)])).toEqual([
      [undefined, 'column 2 has no name'],
      ['status', '"status" is reserved'],
    ]);
  });

  it('TakesFiftyVariableColumnsAndRefusesFiftyOne', async () => {
    const header = (n: number) => ['number', ...Array.from({ length: n }, (_, i) => `v${i}`)].join(',');
    expect((await importCsv(lines(header(50)))).columns!.variables).toHaveLength(50);
    expect((await refusal(lines(header(51)))).issues).toEqual([{ row: 1, message: 'at most 50 variable columns (51 given)' }]);
  });

  it('RefusesAQuoteNeverClosedNamingTheRowItOpensIn', async () => {
    const error = await refusal(lines('number,note', '+442079460000,a', '+442079460001,"never closed', '+442079460002,c'));
    expect(error.refusal).toBe('malformed');
    expect(error.issues).toEqual([{ row: 3, message: 'a quote opened in this row is never closed' }]);
  });

  it('RefusesARowPast64KiBInsteadOfBufferingTheRestOfTheFile', async () => {
    const error = await refusal(lines('number,note', `+442079460000,"${'x'.repeat(70_000)}"`));
    expect(error.refusal).toBe('malformed');
    expect(error.issues[0]!.row).toBe(2);
  });

  it('RefusesMoreRowsThanTheImportTakes', async () => {
    const error = await refusal(lines('number', '+442079460000', '+442079460001', '+442079460002'), { maxRows: 2 });
    expect(error.refusal).toBe('too_many_rows');
    expect(error.issues).toEqual([{ row: 4, message: 'at most 2 contacts in one import' }]);
  });
});

describe('CSV import: invalid rows', () => {
  // Row 2 (the first) and row 6 (the last) are bad.
  const badFirstAndLast = lines('number,external_id,timezone,name', '+44 20 7946,a,,x', '+442079460001,b,,y', '+442079460002,c,Europe/London,z', '+442079460003,d,,w', '+442079460004,e,Mars/Olympus,v');

  it('ByDefaultABadRowRefusesTheUploadAndEveryBadRowIsListed', async () => {
    const { contacts, report } = await importCsv(badFirstAndLast);
    expect(report.ok).toBe(false);
    expect(report.issues).toEqual([
      { row: 2, column: 'number', message: 'too short for +44' },
      { row: 6, column: 'timezone', message: 'not an IANA time zone (e.g. Europe/Berlin)' },
    ]);
    expect(report).toMatchObject({ rows: 5, accepted: 3, refusedRows: 2, issuesOmitted: 0 });
    expect(contacts).toEqual([]);
  });

  it('WithSkipInvalidTheValidRowsAreImportedAndTheBadOnesReported', async () => {
    const { contacts, report } = await importCsv(badFirstAndLast, { skipInvalid: true });
    expect(report.ok).toBe(true);
    expect(contacts.map((c) => c.externalId)).toEqual(['b', 'c', 'd']);
    expect(report.issues.map((i) => i.row)).toEqual([2, 6]);
    expect(report.refusedRows).toBe(2);
  });

  it('NoPageIsGivenOutOnceARowIsBad', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => `+4420794600${String(i).padStart(2, '0')}`);
    rows[12] = 'not a number';
    const { pages, report } = await importCsv(lines('number', ...rows), { pageSize: 5 });
    // Rows 2–11 made two pages before the bad row 14; nothing after it.
    expect(pages.map((p) => p.map((c) => c.row))).toEqual([
      [2, 3, 4, 5, 6],
      [7, 8, 9, 10, 11],
    ]);
    expect(report).toMatchObject({ ok: false, accepted: 29, refusedRows: 1 });
  });

  it('ListsAHundredIssuesByDefaultAndAThousandWithSkipInvalidAndCountsThemAll', async () => {
    const rows = Array.from({ length: 1_200 }, (_, i) => `+44 20 ${i}`);
    const refused = await importCsv(lines('number', ...rows));
    expect(refused.report).toMatchObject({ ok: false, refusedRows: 1_200, issuesOmitted: 1_100 });
    expect(refused.report.issues).toHaveLength(100);
    expect(refused.report.issues[99]!.row).toBe(101);
    const skipped = await importCsv(lines('number', ...rows), { skipInvalid: true });
    expect(skipped.report).toMatchObject({ ok: true, refusedRows: 1_200, issuesOmitted: 200, accepted: 0 });
    expect(skipped.report.issues).toHaveLength(1_000);
  });

  it('ARowOfTheWrongWidthIsRefused', async () => {
    const { report } = await importCsv(lines('number,a,b', '+442079460000,x', '+442079460001,x,y,z', '+442079460002,x,y'), { skipInvalid: true });
    expect(report.issues).toEqual([
      { row: 2, message: '2 cells; the header has 3' },
      { row: 3, message: '4 cells; the header has 3' },
    ]);
    expect(report.accepted).toBe(1);
  });

  it('EveryProblemOfARowIsListedWithItsColumnAsTheHeaderWritesIt', async () => {
    const { report } = await importCsv(lines('Number,External_Id,TZ_Name,TimeZone', `x,${'i'.repeat(129)},,+03:00`));
    expect(report.issues).toEqual([
      { row: 2, column: 'Number', message: 'not a phone number' },
      { row: 2, column: 'External_Id', message: 'an externalId is 1–128 characters' },
      { row: 2, column: 'TimeZone', message: 'not an IANA time zone (e.g. Europe/Berlin)' },
    ]);
    expect(report.refusedRows).toBe(1);
  });

  it('VariablesOver4KiBSerialisedAreRefusedAtTheColumnThatCrossesTheLimit', async () => {
    // {"a":"x…","b":"y…"} is 15 bytes around the two values: 2,000 + 2,081 + 15 = 4,096.
    const ok = await importCsv(lines('number,a,b', `+442079460000,${'x'.repeat(2000)},${'y'.repeat(2081)}`));
    expect(ok.report.ok).toBe(true);
    expect(variablesBytes(ok.contacts[0]!.variables!)).toBe(4096);
    const over = await importCsv(lines('number,a,b,c', `+442079460000,${'x'.repeat(2000)},${'y'.repeat(2082)},z`));
    expect(over.report.issues).toEqual([{ row: 2, column: 'b', message: "the row's variables pass 4096 bytes serialised (JSON, UTF-8) at this column" }]);
  });

  it('StrictNumbersRefusesAPossibleButInvalidNumberOtherwiseItIsFlagged', async () => {
    const csv = lines('number', '+442079460000', '+447700900123');
    const lenient = await importCsv(csv);
    expect(lenient.contacts.map((c) => [c.number, c.numberValid])).toEqual([
      ['+442079460000', true],
      ['+447700900123', false],
    ]);
    const strict = await importCsv(csv, { strictNumbers: true });
    expect(strict.report.issues).toEqual([{ row: 3, column: 'number', message: 'a possible number but not a valid one (no assigned range); strictNumbers refuses it' }]);
  });
});

describe('CSV import: duplicates', () => {
  const csv = lines('number,external_id', '+44 20 7946 0000,a', '+1 415 555 0123,b', '020 7946 0000,c', '+44 (0)20 7946 0000,');

  it('ANumberSeenBeforeAfterNormalisationIsRefused', async () => {
    const { report } = await importCsv(csv, { defaultCountry: 'GB' });
    expect(report.issues).toEqual([
      { row: 4, column: 'number', message: 'duplicate of row 2 (+442079460000)' },
      { row: 5, column: 'number', message: 'duplicate of row 2 (+442079460000)' },
    ]);
  });

  it('WithDedupeTheLaterRowIsDroppedAndCounted', async () => {
    const { contacts, report } = await importCsv(csv, { defaultCountry: 'GB', dedupe: true });
    expect(contacts.map((c) => c.externalId)).toEqual(['a', 'b']);
    expect(report).toMatchObject({ ok: true, accepted: 2, duplicatesDropped: 2, refusedRows: 0 });
  });

  it('ADuplicateExternalIdIsRefusedEvenWithDedupe', async () => {
    const { report } = await importCsv(lines('number,external_id', '+442079460000,a', '+442079460001,a'), { dedupe: true });
    expect(report.issues).toEqual([{ row: 3, column: 'external_id', message: 'duplicate of row 2' }]);
  });

  it('ARefusedRowDoesNotMakeALaterOneADuplicate', async () => {
    const { contacts } = await importCsv(lines('number,timezone', '+442079460000,Mars/Olympus', '+442079460000,Europe/London'), { skipInvalid: true });
    expect(contacts.map((c) => c.row)).toEqual([3]);
  });
});

describe('CSV import: streaming', () => {
  it('A100kRowFileIsReadInPagesWhileTheSourceStaysFewChunksAhead', async () => {
    const rows = 100_000;
    const perChunk = 200;
    let produced = 0;
    let readAhead = 0;
    let consumed = 0;
    async function* source() {
      yield 'number,name\n';
      for (let start = 0; start < rows; start += perChunk) {
        let chunk = '';
        // French numbers: a calling code of one country reads fastest (a UK one costs three times as much).
        for (let i = start; i < start + perChunk; i++) chunk += `+331${40_000_000 + i},name ${i}\n`;
        produced += perChunk;
        readAhead = Math.max(readAhead, produced - consumed);
        yield chunk;
      }
    }
    const numbers = new Set<string>();
    let pages = 0;
    let report: CsvImportReport | undefined;
    for await (const event of readContactsCsv(source())) {
      if (event.type === 'page') {
        pages++;
        consumed += event.contacts.length;
        for (const c of event.contacts) numbers.add(c.number);
      } else if (event.type === 'end') report = event.report;
    }
    expect(pages).toBe(200);
    expect(numbers.size).toBe(rows);
    expect(report).toMatchObject({ ok: true, rows, accepted: rows });
    // The stream buffers hold a few chunks; nothing like the whole file is read ahead of the pages.
    expect(readAhead).toBeLessThan(10_000);
  });

  it('StoppingEarlyClosesTheSource', async () => {
    let closed = false;
    async function* source() {
      try {
        yield 'number\n';
        for (let i = 0; i < 100_000; i++) yield `+4420${70_000_000 + i}\n`;
      } finally {
        closed = true;
      }
    }
    for await (const event of readContactsCsv(source(), { pageSize: 10 })) if (event.type === 'page') break;
    // The pipeline's teardown reaches the source on a later turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(true);
  });

  it('ASourceThatFailsFailsTheImport', async () => {
    async function* source() {
      yield 'number\n+442079460000\n';
      throw new Error('connection reset');
    }
    await expect(importCsv(source())).rejects.toThrow('connection reset');
  });
});
