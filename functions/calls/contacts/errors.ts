import { CallsError } from '../errors.ts';

/** Why a CSV import stopped before its end. */
export type CsvImportRefusal =
  /** The bytes are not UTF-8. */
  | 'not_utf8'
  /** No header line: an empty file, or no line end in the first 64 KiB. */
  | 'no_header'
  /** The header names no `number` column, names a column twice, has too many variable columns, or a name no variable may take. */
  | 'header'
  /** A row the CSV grammar cannot read: a quote never closed, or a row past the size limit. */
  | 'malformed'
  /** More data rows than the import takes. */
  | 'too_many_rows';

/** Where in a CSV file a problem is: row 1 is the header; `column` is the header's name for it, when one column is at fault. */
export interface CsvIssue {
  row: number;
  column?: string;
  message: string;
}

/** A problem with the file as a whole (no row can be named for bytes that are not UTF-8), or with one row. */
export type CsvFileIssue = Omit<CsvIssue, 'row'> & { row?: number };

/** A CSV import that cannot go on, whatever `skipInvalid` says: nothing of it is to be kept. The API answers 400 with `issues`. */
export class CsvImportError extends CallsError {
  override readonly name = 'CsvImportError';
  readonly refusal: CsvImportRefusal;
  readonly issues: CsvFileIssue[];
  constructor(refusal: CsvImportRefusal, issues: CsvFileIssue[], options?: { cause?: unknown }) {
    super(`CSV refused (${refusal}): ${issues.map((i) => `${i.row !== undefined ? `row ${i.row}` : 'file'}${i.column !== undefined ? ` ${i.column}` : ''}: ${i.message}`).join('; ')}`, options);
    this.refusal = refusal;
    this.issues = issues;
  }
}
