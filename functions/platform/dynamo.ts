import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, BatchWriteCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { TableDefinition } from './tables.ts';

// ─── Expressions ────────────────────────────────────────────────────────────────────────────────────

/** An attribute, or a path into a map: `['byCode', code]` is `#byCode.#<code>` (each part its own placeholder). */
export type AttributePath = string | readonly string[];

/**
 * An operand that is not a value: another attribute ({@link Expression.attr}) or its size
 * ({@link Expression.size}). Anything else given where an operand goes is a value placeholder.
 */
export class Operand {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

type Comparator = '=' | '<>' | '<' | '<=' | '>' | '>=';

/**
 * A builder for DynamoDB update and condition expressions: every attribute name and value becomes a
 * placeholder, every clause (SET, ADD, REMOVE) is assembled by the builder, so a conditional write reads
 * as a list of named fragments and nothing is spliced into a finished expression.
 *
 * Placeholders: a name is `#` and the attribute (characters outside `[A-Za-z0-9_]` become `_`, and a
 * suffix keeps two attributes that read alike apart); values are `:v0`, `:v1`, … in the order they are
 * asked for.
 *
 * @example
 * const e = new Expression();
 * e.when(e.eq('state', 'available'))
 *   .set('state', 'running')
 *   .increment('attempt', 1)
 *   .increment(['byCode', code], 1, 0); // SET #byCode.#NO_PICKUP = if_not_exists(#byCode.#NO_PICKUP, :v3) + :v4
 * await db.send(new UpdateCommand({ TableName, Key, ...e.build() }));
 */
export class Expression {
  private readonly placeholders = new Map<string, string>();
  private readonly names: Record<string, string> = {};
  private readonly values: Record<string, unknown> = {};
  private readonly sets: string[] = [];
  private readonly adds: string[] = [];
  private readonly removes: string[] = [];
  private readonly conditions: string[] = [];
  private counter = 0;

  // ─── placeholders and operands ───

  /** The placeholder for an attribute, or the dotted placeholders of a map path. */
  name(path: AttributePath): string {
    const parts = typeof path === 'string' ? [path] : path;
    if (parts.length === 0) throw new RangeError('an attribute path needs at least one name');
    return parts.map((part) => this.placeholder(part)).join('.');
  }

  /** The placeholder for a value. */
  value(value: unknown): string {
    const key = `:v${this.counter++}`;
    this.values[key] = value;
    return key;
  }

  /** Another attribute as an operand: `e.lt('active', e.attr('concurrencyLimit'))`, `e.set('email', e.attr('pendingEmail'))`. */
  attr(path: AttributePath): Operand {
    return new Operand(this.name(path));
  }

  /** The size of an attribute (a string's length, a set's or list's count) as an operand. */
  size(path: AttributePath): Operand {
    return new Operand(`size(${this.name(path)})`);
  }

  // ─── update clauses ───

  /** SET path = value (or another attribute, {@link attr}). */
  set(path: AttributePath, value: unknown): this {
    this.sets.push(`${this.name(path)} = ${this.operand(value)}`);
    return this;
  }

  /** SET path = if_not_exists(path, value): keeps a value already there. */
  setIfNotExists(path: AttributePath, value: unknown): this {
    const name = this.name(path);
    this.sets.push(`${name} = if_not_exists(${name}, ${this.value(value)})`);
    return this;
  }

  /**
   * SET path = path + by (a negative `by` decrements). The attribute must exist, unless `initial` is
   * given: then a missing one counts from it (`if_not_exists(path, initial) + by`), which is how a map
   * entry such as `byCode.<code>` is created by its first increment.
   */
  increment(path: AttributePath, by: number, initial?: number): this {
    const name = this.name(path);
    const current = initial === undefined ? name : `if_not_exists(${name}, ${this.value(initial)})`;
    this.sets.push(`${name} = ${current} + ${this.value(by)}`);
    return this;
  }

  /** SET path = list_append(path, [item]) (the list must exist). */
  append(path: AttributePath, item: unknown): this {
    const name = this.name(path);
    this.sets.push(`${name} = list_append(${name}, ${this.value([item])})`);
    return this;
  }

  /** ADD path value: adds to a number, or puts members into a set (a missing attribute starts empty). */
  add(path: AttributePath, value: number | ReadonlySet<unknown>): this {
    this.adds.push(`${this.name(path)} ${this.value(value)}`);
    return this;
  }

  /** REMOVE path, … */
  remove(...paths: AttributePath[]): this {
    for (const path of paths) this.removes.push(this.name(path));
    return this;
  }

  /**
   * A ProjectionExpression of these attributes: their placeholders join this expression's names, so call
   * it before {@link build}, {@link forQuery} or {@link forScan}.
   */
  projection(attributes: readonly string[]): string {
    return attributes.map((attribute) => this.name(attribute)).join(', ');
  }

  // ─── conditions ───

  /** Adds a condition fragment; fragments are joined with AND, each in parentheses (once: DynamoDB refuses `((x))`). */
  when(fragment: string): this {
    this.conditions.push(parenthesised(fragment) ? fragment : `(${fragment})`);
    return this;
  }

  /** `path = value` (value: a value, or an {@link Operand}). */
  eq(path: AttributePath | Operand, value: unknown): string {
    return this.compare(path, '=', value);
  }

  /** `path <> value`. */
  ne(path: AttributePath | Operand, value: unknown): string {
    return this.compare(path, '<>', value);
  }

  /** `path < value`. */
  lt(path: AttributePath | Operand, value: unknown): string {
    return this.compare(path, '<', value);
  }

  /** `path <= value`. */
  le(path: AttributePath | Operand, value: unknown): string {
    return this.compare(path, '<=', value);
  }

  /** `path > value`. */
  gt(path: AttributePath | Operand, value: unknown): string {
    return this.compare(path, '>', value);
  }

  /** `attribute_exists(path)`. */
  exists(path: AttributePath): string {
    return `attribute_exists(${this.name(path)})`;
  }

  /** `attribute_not_exists(path)`. */
  notExists(path: AttributePath): string {
    return `attribute_not_exists(${this.name(path)})`;
  }

  /** `contains(path, value)`: a string's substring, or a set's or list's member. */
  contains(path: AttributePath, value: unknown): string {
    return `contains(${this.name(path)}, ${this.value(value)})`;
  }

  /** `begins_with(path, prefix)`. */
  beginsWith(path: AttributePath, prefix: string): string {
    return `begins_with(${this.name(path)}, ${this.value(prefix)})`;
  }

  /** `path BETWEEN low AND high`. */
  between(path: AttributePath, low: unknown, high: unknown): string {
    return `${this.name(path)} BETWEEN ${this.value(low)} AND ${this.value(high)}`;
  }

  /** `path IN (values...)`. */
  inList(path: AttributePath, values: readonly unknown[]): string {
    return `${this.name(path)} IN (${values.map((v) => this.value(v)).join(', ')})`;
  }

  /** Fragments joined with AND (a fragment whose own top level is an OR is put in parentheses). */
  and(...fragments: string[]): string {
    if (fragments.length === 1) return fragments[0]!;
    return fragments.map((f) => (topLevel(f).has('OR') ? `(${f})` : f)).join(' AND ');
  }

  /** Fragments joined with OR (a fragment whose own top level is an AND is put in parentheses). */
  or(...fragments: string[]): string {
    if (fragments.length === 1) return fragments[0]!;
    return fragments.map((f) => (topLevel(f).has('AND') ? `(${f})` : f)).join(' OR ');
  }

  /** `NOT (fragment)`. */
  not(fragment: string): string {
    return `NOT (${fragment})`;
  }

  // ─── result ───

  /** The expression fields of an UpdateItem, Put, Delete or ConditionCheck request. */
  build(): {
    UpdateExpression?: string;
    ConditionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    const update = [
      this.sets.length ? `SET ${this.sets.join(', ')}` : '',
      this.adds.length ? `ADD ${this.adds.join(', ')}` : '',
      this.removes.length ? `REMOVE ${this.removes.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return {
      ...(update ? { UpdateExpression: update } : {}),
      ...(this.conditions.length ? { ConditionExpression: this.conditions.join(' AND ') } : {}),
      ...(Object.keys(this.names).length ? { ExpressionAttributeNames: { ...this.names } } : {}),
      ...(Object.keys(this.values).length ? { ExpressionAttributeValues: { ...this.values } } : {}),
    };
  }

  /**
   * The expression fields of a Query: `key` is the key condition (a fragment on the partition key, and
   * the sort key's if any), `filter` what is kept of the items read. Update clauses and `when` conditions
   * do not belong in a Query.
   */
  forQuery(key: string, filter?: string): {
    KeyConditionExpression: string;
    FilterExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    return { KeyConditionExpression: key, ...this.forScan(filter) };
  }

  /** The expression fields of a Scan (or the filter part of a Query): what is kept of the items read. */
  forScan(filter?: string): {
    FilterExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    if (this.sets.length || this.adds.length || this.removes.length || this.conditions.length) throw new RangeError('a Query or Scan takes no update clauses and no write conditions');
    const { ExpressionAttributeNames, ExpressionAttributeValues } = this.build();
    return {
      ...(filter !== undefined ? { FilterExpression: filter } : {}),
      ...(ExpressionAttributeNames ? { ExpressionAttributeNames } : {}),
      ...(ExpressionAttributeValues ? { ExpressionAttributeValues } : {}),
    };
  }

  private compare(left: AttributePath | Operand, comparator: Comparator, right: unknown): string {
    return `${left instanceof Operand ? left.text : this.name(left)} ${comparator} ${this.operand(right)}`;
  }

  private operand(value: unknown): string {
    return value instanceof Operand ? value.text : this.value(value);
  }

  private placeholder(attribute: string): string {
    const known = this.placeholders.get(attribute);
    if (known !== undefined) return known;
    if (attribute.length === 0) throw new RangeError('an attribute name cannot be empty');
    const base = `#${attribute.replace(/[^A-Za-z0-9_]/g, '_')}`;
    let key = base;
    for (let n = 1; key in this.names; n++) key = `${base}_${n}`;
    this.placeholders.set(attribute, key);
    this.names[key] = attribute;
    return key;
  }
}

/** Whether one pair of parentheses holds the whole fragment: `(a OR b)`, not `(a) AND (b)`. */
function parenthesised(fragment: string): boolean {
  if (!fragment.startsWith('(') || !fragment.endsWith(')')) return false;
  let depth = 0;
  for (let i = 0; i < fragment.length; i++) {
    if (fragment[i] === '(') depth++;
    else if (fragment[i] === ')') depth--;
    if (depth === 0 && i < fragment.length - 1) return false;
  }
  return true;
}

/** The logical operators at a fragment's top level (outside parentheses): what decides where precedence needs parentheses. */
function topLevel(fragment: string): Set<'AND' | 'OR'> {
  const found = new Set<'AND' | 'OR'>();
  let depth = 0;
  for (const token of fragment.split(/(\(|\)|\s+)/)) {
    if (token === '(') depth++;
    else if (token === ')') depth--;
    else if (depth === 0 && (token === 'AND' || token === 'OR')) found.add(token);
  }
  return found;
}

// ─── Items ──────────────────────────────────────────────────────────────────────────────────────────

/** One item of a TransactWriteItems request, in the document client's form. */
export type WriteItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * One item of a transaction, with a name: the outcome of a cancelled transaction reports each refused
 * item under its name ({@link transact}), so nobody reads a reason by its position. Names are unique
 * within a transaction (`contact`, `tenant`, `batch`, `job <id>`, …).
 */
export type TransactItem = WriteItem & { readonly name: string };

/** Options of the item builders. */
export interface ItemOptions {
  /**
   * Whether a refused condition returns the item as stored (`ReturnValuesOnConditionCheckFailure:
   * ALL_OLD`), for a caller that decides from it without a read.
   * @default false
   */
  returnStored?: boolean;
}

/** A conditional UpdateItem for a transaction, from an {@link Expression} with at least one update clause. */
export function updateItem(name: string, tableName: string, key: Record<string, unknown>, e: Expression, options: ItemOptions = {}): TransactItem {
  const { UpdateExpression, ...rest } = e.build();
  if (UpdateExpression === undefined) throw new RangeError(`update ${name} changes nothing`);
  return { name, Update: { TableName: tableName, Key: key, UpdateExpression, ...rest, ...returnStored(rest.ConditionExpression, options) } };
}

/** A Put for a transaction, optionally conditional (an {@link Expression} with conditions only). */
export function putItem(name: string, tableName: string, item: object, e?: Expression, options: ItemOptions = {}): TransactItem {
  const built = conditionOnly(name, e);
  return { name, Put: { TableName: tableName, Item: item as Record<string, unknown>, ...built, ...returnStored(built.ConditionExpression, options) } };
}

/** A ConditionCheck for a transaction: the transaction commits only if `e`'s conditions hold on the item at `key`. */
export function conditionCheck(name: string, tableName: string, key: Record<string, unknown>, e: Expression, options: ItemOptions = {}): TransactItem {
  const { ConditionExpression, ...rest } = conditionOnly(name, e);
  if (ConditionExpression === undefined) throw new RangeError(`condition check ${name} has no condition`);
  return { name, ConditionCheck: { TableName: tableName, Key: key, ConditionExpression, ...rest, ...returnStored(ConditionExpression, options) } };
}

/** Gives an item from elsewhere (a caller's raw request) a name. */
export function named(name: string, item: WriteItem): TransactItem {
  return { ...item, name };
}

function conditionOnly(name: string, e: Expression | undefined): ReturnType<Expression['build']> {
  if (!e) return {};
  const built = e.build();
  if (built.UpdateExpression !== undefined) throw new RangeError(`${name}: a Put or ConditionCheck takes conditions only`);
  return built;
}

function returnStored(condition: string | undefined, options: ItemOptions): { ReturnValuesOnConditionCheckFailure?: 'ALL_OLD' } {
  return condition !== undefined && options.returnStored ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {};
}

// ─── Transactions ───────────────────────────────────────────────────────────────────────────────────

/** Why one item of a cancelled transaction failed, with the item as stored when it asked for it (ALL_OLD). */
export interface Refusal {
  /** `ConditionalCheckFailed`, `TransactionConflict`, `ThrottlingError`, `ValidationError`, … */
  readonly code: string;
  readonly item: Record<string, unknown> | undefined;
}

/** A transaction DynamoDB cancelled: what each refused item said, by name. */
export interface TransactCancelled {
  readonly committed: false;
  /**
   * Another writer or the capacity said no ({@link isContention}), not the state: a condition that
   * failed beside a conflict says nothing. Try again later; nothing was written.
   */
  readonly contention: boolean;
  /**
   * The items whose reason is not `None`, by name (an item the request carried without a name, added on
   * its way, is `item <index>`).
   */
  readonly refused: Readonly<Record<string, Refusal>>;
  /** DynamoDB's TransactionCanceledException, for a caller that has no answer but to fail. */
  readonly error: Error;
}

/** What one {@link transact} did. */
export type TransactOutcome = { readonly committed: true } | TransactCancelled;

/**
 * Runs one TransactWriteItems of named items, sent once. A cancellation is an outcome, not an error:
 * `{ committed: false, contention, refused: { <name>: { code, item } } }`; every other failure throws.
 *
 * @example
 * const outcome = await transact(db, [...store.dialItems(dial), watchdog.item]);
 * if (!outcome.committed && outcome.refused.tenant?.code === 'ConditionalCheckFailed') … // no free slot
 */
export async function transact(db: DynamoDBDocumentClient, items: readonly TransactItem[]): Promise<TransactOutcome> {
  const names = items.map((item) => item.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new RangeError(`two items of one transaction are named ${twice}`);
  try {
    await db.send(new TransactWriteCommand({ TransactItems: items.map(({ name: _name, ...item }) => item) }));
    return { committed: true };
  } catch (error) {
    const reasons = cancellationReasons(error);
    if (!reasons) throw error;
    return cancelledOutcome(names, reasons, error as Error);
  }
}

/**
 * The outcome of a cancelled transaction, from its items' names and DynamoDB's reasons in item order
 * (what {@link transact} returns; exported for the pure code that reads outcomes, and its tests).
 */
export function cancelledOutcome(names: readonly string[], reasons: readonly Refusal[], error: Error): TransactCancelled {
  const refused: Record<string, Refusal> = {};
  reasons.forEach((reason, i) => {
    if (reason.code !== 'None') refused[names[i] ?? `item ${i}`] = reason;
  });
  return { committed: false, contention: reasons.some((r) => CONTENTION_REASONS.has(r.code)), refused, error };
}

/** The refused items' codes by name, for a log line: `{ tenant: 'ConditionalCheckFailed' }`. */
export function refusedCodes(cancelled: TransactCancelled): Record<string, string> {
  return Object.fromEntries(Object.entries(cancelled.refused).map(([name, refusal]) => [name, refusal.code]));
}

/** The refused items' codes by name, for an error message: `tenant ConditionalCheckFailed, batch TransactionConflict`. */
export function describeRefusals(cancelled: TransactCancelled): string {
  return Object.entries(cancelled.refused)
    .map(([name, refusal]) => `${name} ${refusal.code}`)
    .join(', ');
}

/** The one parse of a TransactionCanceledException: each item's reason and stored item, in item order. */
function cancellationReasons(error: unknown): Refusal[] | undefined {
  if (!(error instanceof Error) || error.name !== 'TransactionCanceledException') return undefined;
  const raw = (error as { CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] }).CancellationReasons ?? [];
  return raw.map((r) => ({ code: r.Code ?? 'None', item: r.Item ? unmarshall(r.Item) : undefined }));
}

// ─── Contention, refusals, incomplete reads ─────────────────────────────────────────────────────────

/** Errors that mean "another writer, or the capacity, said no": nothing was written; later may work. */
const CONTENTION_ERRORS: ReadonlySet<string> = new Set([
  'TransactionConflictException',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
]);
/** The same, as the reason of one item of a cancelled transaction. */
const CONTENTION_REASONS: ReadonlySet<string> = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded']);

/**
 * Whether an error is contention: a conflicting transaction, throttling, or a capacity or request
 * limit — directly, or as the reason of an item of a cancelled transaction. The one list of these codes:
 * the HTTP adapter's 503 (`isTransientAwsError` in aws.ts) and every store's outcome use it.
 */
export function isContention(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (CONTENTION_ERRORS.has(error.name)) return true;
  return cancellationReasons(error)?.some((r) => CONTENTION_REASONS.has(r.code)) ?? false;
}

/** Whether an error is DynamoDB's failed condition; returns the stored item it carried (ALL_OLD), if any. */
export function conditionFailure<T>(error: unknown): { failed: false } | { failed: true; item: T | undefined } {
  if (error instanceof ConditionalCheckFailedException) {
    const raw = (error as { Item?: Record<string, AttributeValue> }).Item;
    return { failed: true, item: raw ? (unmarshall(raw) as T) : undefined };
  }
  return { failed: false };
}

/**
 * DynamoDB left keys of a batch read unprocessed (throttling). The read fails rather than half-answers,
 * and is not re-requested here: a request answers 503, a job fails its run and the job layer decides.
 */
export class IncompleteReadError extends Error {
  override readonly name = 'IncompleteReadError';
  readonly unprocessed: number;
  constructor(unprocessed: number, options?: ErrorOptions) {
    super(`${unprocessed} keys left unprocessed by BatchGetItem`, options);
    this.unprocessed = unprocessed;
  }
}

/** The longest BatchGetItem DynamoDB takes. */
export const MAX_BATCH_GET_KEYS = 100;

/**
 * One consistent BatchGetItem of up to {@link MAX_BATCH_GET_KEYS} keys of one table: the items found, in
 * no particular order. A key DynamoDB leaves unprocessed fails the read ({@link IncompleteReadError}).
 */
export async function batchGet(
  db: DynamoDBDocumentClient,
  tableName: string,
  keys: readonly Record<string, unknown>[],
  options: { consistent?: boolean; attributes?: readonly string[] } = {},
): Promise<Record<string, unknown>[]> {
  if (keys.length === 0) return [];
  if (keys.length > MAX_BATCH_GET_KEYS) throw new RangeError(`BatchGetItem takes at most ${MAX_BATCH_GET_KEYS} keys`);
  const projected = options.attributes ? projection(options.attributes) : {};
  const result = await db.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: [...keys], ConsistentRead: options.consistent ?? true, ...projected } } }));
  const unprocessed = result.UnprocessedKeys?.[tableName]?.Keys?.length ?? 0;
  if (unprocessed > 0) throw new IncompleteReadError(unprocessed);
  return result.Responses?.[tableName] ?? [];
}

/** The most put requests one BatchWriteItem takes. */
export const MAX_BATCH_WRITE_ITEMS = 25;

/**
 * One BatchWriteItem of up to {@link MAX_BATCH_WRITE_ITEMS} puts into one table, sent once: the items
 * DynamoDB left unprocessed are returned, never re-sent here (only the job layer retries: an import job
 * ends its page and resumes from its cursor; an API request answers 503). Puts are idempotent when the
 * items' keys and contents are derived from the input, so writing them again is harmless.
 */
export async function batchWrite(db: DynamoDBDocumentClient, tableName: string, items: readonly Record<string, unknown>[]): Promise<{ unprocessed: Record<string, unknown>[] }> {
  if (items.length === 0) return { unprocessed: [] };
  if (items.length > MAX_BATCH_WRITE_ITEMS) throw new RangeError(`BatchWriteItem takes at most ${MAX_BATCH_WRITE_ITEMS} items`);
  const result = await db.send(new BatchWriteCommand({ RequestItems: { [tableName]: items.map((Item) => ({ PutRequest: { Item: { ...Item } } })) } }));
  const left = result.UnprocessedItems?.[tableName] ?? [];
  return { unprocessed: left.flatMap((request) => (request.PutRequest?.Item ? [request.PutRequest.Item] : [])) };
}

/** The ProjectionExpression (and its names) of a Get or BatchGet that reads only these attributes. */
export function projection(attributes: readonly string[]): { ProjectionExpression: string; ExpressionAttributeNames: Record<string, string> } {
  const e = new Expression();
  const ProjectionExpression = e.projection(attributes);
  return { ProjectionExpression, ExpressionAttributeNames: e.build().ExpressionAttributeNames ?? {} };
}

// ─── Listings ───────────────────────────────────────────────────────────────────────────────────────

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
