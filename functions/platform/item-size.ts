import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { IndexDefinition, TableDefinition } from './tables.ts';

/**
 * DynamoDB item sizes, as DynamoDB bills them: the UTF-8 length of every attribute name plus the size of
 * its value. Strings are their UTF-8 bytes, numbers one byte per two significant digits plus one, binary
 * its raw bytes, booleans and nulls one byte; a list or map costs 3 bytes plus one byte per element on top
 * of its elements (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
 * Pure: the request recorder (recorder.ts) sizes what it sees with these, and the capacity model turns
 * sizes into units.
 */
export type Item = Record<string, AttributeValue>;

const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * The size of a number as DynamoDB stores it: base-100 digits aligned on the decimal point, from the first
 * to the last that is not zero, plus one byte, plus one more when negative; zero takes one byte. (The
 * documentation's "1 byte per two significant digits, plus 1" is this, approximately; the exact rule here
 * is the one DynamoDB Local applies, checked byte by byte in test/platform/recorder.test.ts.)
 */
export function numberSize(text: string): number {
  const trimmed = text.trim();
  const negative = trimmed.startsWith('-');
  const [mantissa = '', exponent = '0'] = trimmed.replace(/^[+-]/, '').toLowerCase().split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  let digits = whole + fraction;
  // Digits before the decimal point.
  let point = whole.length + Number(exponent);
  const leading = /^0*/.exec(digits)![0].length;
  digits = digits.slice(leading).replace(/0+$/, '');
  point -= leading;
  if (!digits) return 1;
  const aligned = (((point % 2) + 2) % 2 === 1 ? '0' : '') + digits;
  return Math.ceil(aligned.length / 2) + 1 + (negative ? 1 : 0);
}

const binarySize = (value: Uint8Array | string): number => (typeof value === 'string' ? Buffer.from(value, 'base64').length : value.length);

/** The size of one value (without its attribute name). */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return binarySize(value.B);
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((n, s) => n + numberSize(s), 0);
  if (value.BS !== undefined) return value.BS.reduce((n, b) => n + binarySize(b), 0);
  if (value.L !== undefined) return 3 + value.L.reduce((n, v) => n + valueSize(v) + 1, 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((n, [k, v]) => n + utf8(k) + valueSize(v) + 1, 0);
  return 0;
}

/** The size of an item: every attribute's name and value. */
export function itemSize(item: Item | undefined): number {
  if (!item) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8(name) + valueSize(value);
  return size;
}

/** The attributes that key an index: its partition key, and its sort key when it has one. */
const indexKeyAttributes = (index: IndexDefinition): string[] => [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])];

/** The table's own key attributes. */
export const tableKeyAttributes = (table: TableDefinition): string[] => [table.partitionKey, ...(table.sortKey ? [table.sortKey] : [])];

/** Whether an item appears in an index: a global secondary index holds only items that have all its key attributes. */
export const inIndex = (item: Item | undefined, index: IndexDefinition): item is Item => !!item && indexKeyAttributes(index).every((a) => item[a] !== undefined);

/** The item as the index holds it: every attribute (ALL), or the table's and the index's keys (KEYS_ONLY). */
export function projection(item: Item, table: TableDefinition, index: IndexDefinition): Item {
  if ((index.projection ?? 'ALL') === 'ALL') return item;
  const kept: Item = {};
  for (const name of new Set([...tableKeyAttributes(table), ...indexKeyAttributes(index)])) {
    const value = item[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}

/** A key or attribute value as text, for naming partitions (`S` and `N` as they are; others as JSON). */
export function keyText(value: AttributeValue | undefined): string {
  if (!value) return '';
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return value.N;
  return JSON.stringify(value);
}

/** A stable text form of an item, to tell whether two images differ. */
function canonical(value: unknown): string {
  if (value instanceof Uint8Array) return `b:${Buffer.from(value).toString('base64')}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What one write did to one index: which partitions it left and entered, and how big the entries were. */
export interface IndexChange {
  index: string;
  /** The index partition the item was in before (absent: it was not in the index). */
  oldKey?: string;
  /** The index partition the item is in after (absent: it is not in the index). */
  newKey?: string;
  /** Sizes of the projected entry before and after (0 when not in the index). */
  oldBytes: number;
  newBytes: number;
  /** The index key (partition or sort) changed: DynamoDB deletes the old entry and puts the new one. */
  keyChanged: boolean;
  /** The projected entry changed at all (a key or a projected attribute). */
  changed: boolean;
}

/**
 * What a write from `before` to `after` did to each index of the table (DynamoDB's rules for global
 * secondary indexes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes).
 * Indexes the item is in neither before nor after are left out.
 */
export function indexChanges(table: TableDefinition, before: Item | undefined, after: Item | undefined): IndexChange[] {
  const changes: IndexChange[] = [];
  for (const index of table.indexes) {
    const was = inIndex(before, index) ? projection(before, table, index) : undefined;
    const is = inIndex(after, index) ? projection(after, table, index) : undefined;
    if (!was && !is) continue;
    const keys = indexKeyAttributes(index);
    const keyChanged = !!was && !!is && keys.some((k) => canonical(was[k]) !== canonical(is[k]));
    changes.push({
      index: index.name,
      ...(was ? { oldKey: keyText(was[index.partitionKey]) } : {}),
      ...(is ? { newKey: keyText(is[index.partitionKey]) } : {}),
      oldBytes: itemSize(was),
      newBytes: itemSize(is),
      keyChanged,
      changed: !was || !is || canonical(was) !== canonical(is),
    });
  }
  return changes;
}
