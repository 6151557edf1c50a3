import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

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

/** Opaque pagination cursor from a LastEvaluatedKey, and back. */
export const encodeCursor = (key: Record<string, unknown> | undefined): string | undefined =>
  key ? Buffer.from(JSON.stringify(key)).toString('base64url') : undefined;

export function decodeCursor(cursor: string | undefined): Record<string, unknown> | undefined {
  if (!cursor) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
