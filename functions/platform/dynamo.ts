import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TableDefinition } from './tables.ts';

/**
 * A small builder for DynamoDB update and condition expressions, so every conditional write reads as a
 * list of named fragments instead of a hand-assembled string with placeholder bookkeeping.
 *
 * @example
 * const u = new Expression();
 * u.set('state', 'running').add('attempt', 1).when(`${u.name('state')} = ${u.value('available')}`);
 */
export class Expression {
  private readonly names: Record<string, string> = {};
  private readonly values: Record<string, unknown> = {};
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly conditions: string[] = [];
  private counter = 0;

  /** The placeholder for an attribute name. */
  name(attribute: string): string {
    const key = `#${attribute.replace(/[^A-Za-z0-9_]/g, '_')}`;
    this.names[key] = attribute;
    return key;
  }

  /** The placeholder for a value. */
  value(value: unknown): string {
    const key = `:v${this.counter++}`;
    this.values[key] = value;
    return key;
  }

  set(attribute: string, value: unknown): this {
    this.sets.push(`${this.name(attribute)} = ${this.value(value)}`);
    return this;
  }

  /** SET attribute = if_not_exists(attribute, value): keeps a value already there. */
  setIfNotExists(attribute: string, value: unknown): this {
    const name = this.name(attribute);
    this.sets.push(`${name} = if_not_exists(${name}, ${this.value(value)})`);
    return this;
  }

  /** SET attribute = attribute + n. */
  add(attribute: string, n: number): this {
    const name = this.name(attribute);
    this.sets.push(`${name} = ${name} + ${this.value(n)}`);
    return this;
  }

  /** SET attribute = list_append(attribute, [item]) (the list must exist). */
  append(attribute: string, item: unknown): this {
    const name = this.name(attribute);
    this.sets.push(`${name} = list_append(${name}, ${this.value([item])})`);
    return this;
  }

  remove(...attributes: string[]): this {
    for (const attribute of attributes) this.removes.push(this.name(attribute));
    return this;
  }

  /** Adds a condition fragment; fragments are joined with AND. */
  when(fragment: string): this {
    this.conditions.push(`(${fragment})`);
    return this;
  }

  /** `attribute IN (values...)`. */
  inList(attribute: string, values: readonly unknown[]): string {
    return `${this.name(attribute)} IN (${values.map((v) => this.value(v)).join(', ')})`;
  }

  /** The expression fields of an UpdateItem, Put or ConditionCheck request. */
  build(): {
    UpdateExpression?: string;
    ConditionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    const update = [
      this.sets.length ? `SET ${this.sets.join(', ')}` : '',
      this.removes.length ? `REMOVE ${this.removes.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return {
      ...(update ? { UpdateExpression: update } : {}),
      ...(this.conditions.length ? { ConditionExpression: this.conditions.join(' AND ') } : {}),
      ...(Object.keys(this.names).length ? { ExpressionAttributeNames: this.names } : {}),
      ...(Object.keys(this.values).length ? { ExpressionAttributeValues: this.values } : {}),
    };
  }
}

/** Whether an error is DynamoDB's failed condition; returns the stored item it carried (ALL_OLD), if any. */
export function conditionFailure<T>(error: unknown): { failed: false } | { failed: true; item: T | undefined } {
  if (error instanceof ConditionalCheckFailedException) {
    const raw = (error as { Item?: Record<string, AttributeValue> }).Item;
    return { failed: true, item: raw ? (unmarshall(raw) as T) : undefined };
  }
  return { failed: false };
}

/** Whether an error is a cancelled transaction, with the cancellation reason of each item. */
export function transactionCancelled(error: unknown): { cancelled: false } | { cancelled: true; reasons: (string | undefined)[] } {
  if (error instanceof Error && error.name === 'TransactionCanceledException') {
    const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
    return { cancelled: true, reasons: reasons.map((r) => r.Code) };
  }
  return { cancelled: false };
}

/** A cursor that is not one this listing gave out: malformed, tampered with, or another listing's. */
export class InvalidCursorError extends Error {
  override readonly name = 'InvalidCursorError';
  constructor() {
    super('not a cursor from this listing');
  }
}

/** The longest key value DynamoDB takes (a partition key: 2048 bytes; a sort key: 1024). */
const MAX_KEY_VALUE = 2048;

/**
 * The pagination cursor of one listing: a Query's LastEvaluatedKey reduced to the key attributes of the
 * table and index it reads (all strings here), in their declared order, base64url — and bound to the
 * partition the Query reads. Decoding accepts only that shape with that partition, so a forged, truncated
 * or foreign cursor is an {@link InvalidCursorError} (a 400), never a key DynamoDB refuses (a 500). A
 * cursor that passes can only name a start position inside the same partition: it reads nothing the
 * listing would not.
 *
 * @example
 * const cursor = keyCursor(['id', 'state', 'stateOrder'], { state: 'available' });
 * const startKey = cursor.decode(query.cursor); // throws InvalidCursorError
 * return { jobs, cursor: cursor.encode(result.LastEvaluatedKey) };
 */
export function keyCursor(attributes: readonly string[], partition: Readonly<Record<string, string>>) {
  return {
    encode(key: Record<string, unknown> | undefined): string | undefined {
      return key ? Buffer.from(JSON.stringify(attributes.map((a) => key[a]))).toString('base64url') : undefined;
    },
    decode(cursor: string | undefined): Record<string, string> | undefined {
      if (cursor === undefined) return undefined;
      let values: unknown;
      try {
        values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      } catch {
        throw new InvalidCursorError();
      }
      if (!Array.isArray(values) || values.length !== attributes.length) throw new InvalidCursorError();
      if (!values.every((v) => typeof v === 'string' && v.length > 0 && v.length <= MAX_KEY_VALUE)) throw new InvalidCursorError();
      const key = Object.fromEntries(attributes.map((a, i) => [a, values[i] as string]));
      if (!Object.entries(partition).every(([name, value]) => key[name] === value)) throw new InvalidCursorError();
      return key;
    },
  };
}

/** The key attributes of a Query on a table, or on one of its indexes (the table's keys come with an index's). */
export function queryKeyAttributes(table: TableDefinition, indexName?: string): string[] {
  const attributes = [table.partitionKey, ...(table.sortKey ? [table.sortKey] : [])];
  if (indexName === undefined) return attributes;
  const index = table.indexes.find((i) => i.name === indexName);
  if (!index) throw new RangeError(`table ${table.name} has no index ${indexName}`);
  for (const a of [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])]) if (!attributes.includes(a)) attributes.push(a);
  return attributes;
}

/**
 * How many levels of maps and lists one attribute may hold: DynamoDB nests 32 levels, the innermost value
 * included (measured on DynamoDB Local: an attribute of 31 maps one in another around a string is stored,
 * 32 are refused).
 */
export const MAX_CONTAINER_LEVELS = 31;
/** The longest map key redial stores from outside input (DynamoDB allows more; nothing needs it). */
export const MAX_MAP_KEY_LENGTH = 255;

/**
 * What keeps a JSON value from being stored as one attribute of a DynamoDB item, as `{ path, message }`
 * (the path relative to the value): an empty or over-long map key, maps and lists nested past
 * {@link MAX_CONTAINER_LEVELS} (the value itself is the first), and numbers the document client refuses
 * (beyond ±(2^53 − 1)) or DynamoDB cannot hold (a magnitude under 1e-130). Empty when it can be stored.
 */
export function unstorableParts(value: unknown, path: (string | number)[] = [], level = 1): { path: (string | number)[]; message: string }[] {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) return [{ path, message: 'a number must be within ±(2^53 − 1)' }];
    if (value !== 0 && Math.abs(value) < 1e-130) return [{ path, message: 'a number this close to zero cannot be stored (under 1e-130)' }];
    return [];
  }
  if (value === null || typeof value !== 'object') return [];
  if (level > MAX_CONTAINER_LEVELS) return [{ path, message: `maps and lists nested more than ${MAX_CONTAINER_LEVELS} levels deep` }];
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const issues: { path: (string | number)[]; message: string }[] = [];
  for (const [key, child] of entries) {
    if (typeof key === 'string' && (key.length === 0 || key.length > MAX_MAP_KEY_LENGTH)) issues.push({ path, message: `map keys must be 1–${MAX_MAP_KEY_LENGTH} characters` });
    else issues.push(...unstorableParts(child, [...path, key], level + 1));
  }
  return issues;
}
