import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { BatchGetItemCommand, GetItemCommand, QueryCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { indexChanges, itemSize, keyText, tableKeyAttributes } from './item-size.ts';
import type { IndexChange, Item } from './item-size.ts';
import type { TableDefinition } from './tables.ts';

/**
 * The request recorder: what every AWS request redial sends costs, measured where the request leaves the
 * code. It is installed as SDK middleware by createAwsClients (aws.ts) only when a recorder is passed, so
 * production clients carry none of it; the local transports (local/queues.ts) and a host's Lambda
 * stand-ins report to it too. The capacity benchmark (bench/capacity) turns its records into units,
 * partitions and dollars.
 *
 * For DynamoDB it records, per item written, the table, its partition key, its size before and after, and
 * what the write did to each index (entries left and entered, projected sizes, whether an index key
 * changed); per read, the partition read and the bytes DynamoDB reads to answer it. To know an item's image
 * before and after a write it keeps a copy of every item it saw written (the shadow) and reads the item
 * back after each write that does not carry it whole. Writes to the same item are serialised while
 * recording, so images follow each other exactly (DynamoDB Local serialises transactions anyway). The
 * time spent on its own reads and waits is kept apart, per scope, so measured durations can leave it out.
 */

/** What one write did to one item. */
export interface ItemWrite {
  /** The table's logical name (`jobs`, `calls`, …), or the physical name of a table it was not told about. */
  table: string;
  /** The item's partition key value. */
  pk: string;
  /** The item's sort key value, for a table with one. */
  sk?: string;
  action: 'put' | 'update' | 'delete' | 'check';
  /** The item's size before and after the request, bytes (0: absent). Equal when the write did not apply. */
  oldBytes: number;
  newBytes: number;
  /** A Put's item, bytes: what a refused Put is charged on when it is larger than the stored item. */
  putBytes: number;
  /** What the write did to each index of the table (empty when the write did not apply). */
  indexes: IndexChange[];
}

/** What one read read. */
export interface ItemRead {
  table: string;
  /** The index queried, for a query of a secondary index. */
  index?: string;
  /** The partition read (a Scan reads many: empty). */
  pk: string;
  /** The item's sort key, for an item read of a table with one. */
  sk?: string;
  /** Bytes DynamoDB reads to answer: the item, or every item a Query or Scan evaluated (filters and projections do not shrink it). */
  bytes: number;
  /** Items read (0: a missing item, or an empty query). */
  items: number;
  consistent: boolean;
  /** One item (GetItem, BatchGetItem) or a range (Query, Scan): reads are rounded per item or per request. */
  shape: 'item' | 'range';
}

export interface DynamoRecord {
  service: 'DynamoDB';
  operation: string;
  source: string;
  at: number;
  /** ok; refused by a condition (single-item write); a cancelled transaction; any other error. */
  outcome: 'ok' | 'conditionFailed' | 'cancelled' | 'error';
  transaction: boolean;
  writes: ItemWrite[];
  reads: ItemRead[];
  /** How long the request itself took, ms (its round trip to the store, without the recorder's own reads and waits). */
  ms?: number;
}

/** A message sent to a queue (by the code, or by Scheduler when a schedule fires). */
export interface SqsRecord {
  service: 'SQS';
  operation: 'SendMessage';
  source: string;
  at: number;
  queue: string;
  bytes: number;
  delaySeconds: number;
  /** Sent by EventBridge Scheduler for a schedule that fired, not by redial's code. */
  bySchedule?: boolean;
}

/** A one-time schedule created (or found existing under its name). */
export interface ScheduleRecord {
  service: 'Scheduler';
  operation: 'CreateSchedule';
  source: string;
  at: number;
  queue: string;
  bytes: number;
  /** From creation to firing, clock ms. */
  delayMs: number;
  /** False when a schedule of that name existed already (a ConflictException on AWS). */
  created: boolean;
}

/** A schedule that fired: one Scheduler invocation (its message is an {@link SqsRecord} with `bySchedule`). */
export interface ScheduleFiredRecord {
  service: 'Scheduler';
  operation: 'Invoke';
  source: string;
  at: number;
  queue: string;
}

/** A Lambda invocation, as its host ran it: a queue worker's batch or an API request. */
export interface InvocationRecord {
  service: 'Lambda';
  operation: 'Invoke';
  source: string;
  at: number;
  /** The function: `worker:<queue>`, `api`, `rescuer`. */
  function: string;
  /** Messages in the batch (queue workers; 1 for an API request). */
  records: number;
  /** Real ms, without the recorder's own time. */
  durationMs: number;
  /** Request and response bytes (API requests). */
  bytes: number;
}

/** One message of a worker's batch, run (its job's kind, and how long the record took). */
export interface RunRecord {
  service: 'Lambda';
  operation: 'Record';
  source: string;
  at: number;
  function: string;
  kind: string;
  durationMs: number;
}

/** Any other request (SES, Secrets Manager, SQS and Scheduler operations without detail). */
export interface OtherRecord {
  service: string;
  operation: string;
  source: string;
  at: number;
  bytes?: number;
  /** What the request was about, where the bill needs it (a CloudWatch metric's name and dimensions). */
  detail?: string;
}

export type Recorded = DynamoRecord | SqsRecord | ScheduleRecord | ScheduleFiredRecord | InvocationRecord | RunRecord | OtherRecord;

/** A record as a host reports it: the recorder fills in the source (the current scope) and the time. */
export type RecordInput = Recorded extends infer R ? (R extends Recorded ? Omit<R, 'source' | 'at'> & { source?: string; at?: number } : never) : never;

/** A scope: who is running (the source requests are attributed to) and the recorder's own time inside it. */
interface Scope {
  source: string;
  parent: Scope | undefined;
  busy: number;
  busySince: number;
  ownMs: number;
}

interface WriteTarget {
  tableName: string;
  key: Item;
  action: ItemWrite['action'];
  item?: Item;
}

interface MiddlewareClient {
  middlewareStack: {
    add(
      mw: (next: (args: { input: unknown }) => Promise<{ output: unknown }>, ctx: { commandName?: string }) => (args: { input: unknown }) => Promise<{ output: unknown }>,
      opts: { step: 'initialize' | 'build'; name: string },
    ): void;
  };
}

/** Per-key locks taken in one global order, so two requests never wait on each other in a cycle. */
class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async acquire(keys: readonly string[]): Promise<() => void> {
    const releases: (() => void)[] = [];
    for (const key of [...new Set(keys)].sort()) {
      const previous = this.tails.get(key) ?? Promise.resolve();
      let release: () => void = () => undefined;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const tail = previous.then(() => mine);
      this.tails.set(key, tail);
      await previous;
      releases.push(() => {
        release();
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    }
    return () => releases.forEach((r) => r());
  }
}

const isConditionFailure = (error: unknown) => error instanceof Error && error.name === 'ConditionalCheckFailedException';
const isCancelled = (error: unknown) => error instanceof Error && error.name === 'TransactionCanceledException';

export interface RecorderOptions {
  /** The tables it may see, by physical name: their keys and indexes. */
  tables: Readonly<Record<string, TableDefinition>>;
  /**
   * The recorder has seen every write since these tables were created (fresh tables): an item missing from
   * its shadow does not exist, and needs no read to find out. Otherwise it reads each item once first.
   * @default false
   */
  complete?: boolean;
}

export class RequestRecorder {
  readonly records: Recorded[] = [];
  private readonly tables: Map<string, TableDefinition>;
  private readonly complete: boolean;
  private readonly scopes = new AsyncLocalStorage<Scope>();
  private readonly shadow = new Map<string, Item | null>();
  private readonly locks = new KeyLocks();
  private side: DynamoDBClient | undefined;

  constructor(options: RecorderOptions) {
    this.tables = new Map(Object.entries(options.tables));
    this.complete = options.complete ?? false;
  }

  /** Forgets what was recorded so far (the shadow of stored items stays: it describes the tables). */
  clear(): void {
    this.records.length = 0;
    this.cpu.clear();
  }

  private readonly cpu = new Map<string, number>();

  /**
   * Times every synchronous stretch of JavaScript (each callback, promise reaction and timer: async_hooks'
   * `before` to `after`) and adds it to the source of the scope it ran in, until the returned function is
   * called: the CPU a source used in this process, where its wall time also holds its waits. Nested
   * stretches are the inner one's alone. On a loaded machine a stretch also holds the time the OS ran
   * something else, so the sum is an upper bound: compare it with the process's CPU time.
   */
  trackCpu(): () => void {
    const stack: { source: string; since: number }[] = [];
    const add = (source: string, ms: number) => this.cpu.set(source, (this.cpu.get(source) ?? 0) + ms);
    const hook = createHook({
      before: () => {
        const now = performance.now();
        const outer = stack[stack.length - 1];
        if (outer) add(outer.source, now - outer.since);
        stack.push({ source: this.scopes.getStore()?.source ?? 'unscoped', since: now });
      },
      after: () => {
        const now = performance.now();
        const inner = stack.pop();
        if (inner) add(inner.source, now - inner.since);
        const outer = stack[stack.length - 1];
        if (outer) outer.since = now;
      },
    });
    hook.enable();
    return () => hook.disable();
  }

  /** CPU ms per source since tracking began (or the last {@link clear}), as {@link trackCpu} timed it. */
  cpuBySource(): Record<string, number> {
    return Object.fromEntries(this.cpu);
  }

  /** Records a fact the host observed (an invocation, a message, a mail). */
  record(entry: RecordInput): void {
    this.records.push({ ...entry, source: entry.source ?? this.source(), at: entry.at ?? Date.now() });
  }

  /** The source requests made now are attributed to. */
  source(): string {
    return this.scopes.getStore()?.source ?? 'unscoped';
  }

  /**
   * Runs `fn` as `source` (a child of the current scope unless `root`), and says how long it took without
   * the recorder's own reads and waits inside it.
   */
  async measure<T>(source: string, fn: () => Promise<T>, options: { root?: boolean } = {}): Promise<{ value: T; durationMs: number; wallMs: number }> {
    const scope: Scope = { source, parent: options.root ? undefined : this.scopes.getStore(), busy: 0, busySince: 0, ownMs: 0 };
    const started = performance.now();
    const value = await this.scopes.run(scope, fn);
    const wallMs = performance.now() - started;
    return { value, durationMs: Math.max(0, wallMs - scope.ownMs), wallMs };
  }

  /** Installs the recorder on redial's DynamoDB client; `side` is a client of its own for the reads it makes. */
  instrumentDynamo(client: DynamoDBClient, side: DynamoDBClient): void {
    this.side = side;
    (client as unknown as MiddlewareClient).middlewareStack.add(
      // The build step: after lib-dynamodb has marshalled the input, so items are sized as DynamoDB sees them.
      (next, ctx) => async (args) => this.dynamo(operationOf(ctx.commandName), args.input as Record<string, unknown>, () => next(args)),
      { step: 'build', name: 'redialRequestRecorder' },
    );
  }

  /** Installs the recorder on another AWS client: service and operation per request, with queue and size for SQS sends. */
  instrument(client: unknown, service: string): void {
    (client as MiddlewareClient).middlewareStack.add(
      (next, ctx) => async (args) => {
        const operation = operationOf(ctx.commandName);
        const input = args.input as Record<string, unknown>;
        if (service === 'SQS' && operation === 'SendMessage') {
          this.record({
            service: 'SQS',
            operation: 'SendMessage',
            queue: typeof input['QueueUrl'] === 'string' ? (input['QueueUrl'].split('/').pop() ?? '') : '',
            bytes: typeof input['MessageBody'] === 'string' ? Buffer.byteLength(input['MessageBody']) : 0,
            delaySeconds: Number(input['DelaySeconds'] ?? 0),
          });
        } else {
          this.record({ service, operation });
        }
        return next(args);
      },
      { step: 'initialize', name: 'redialRequestRecorder' },
    );
  }

  // ─── DynamoDB ──────────────────────────────────────────────────────────────────────────────────

  private async dynamo(operation: string, input: Record<string, unknown>, send: () => Promise<{ output: unknown }>): Promise<{ output: unknown }> {
    const targets = this.writeTargets(operation, input);
    if (targets) return this.write(operation, targets, send);
    const started = Date.now();
    const source = this.source();
    const sentAt = performance.now();
    const result = await send();
    const ms = performance.now() - sentAt;
    const reads = await this.own(() => this.readsOf(operation, input));
    this.records.push({ service: 'DynamoDB', operation, source, at: started, outcome: 'ok', transaction: operation === 'TransactGetItems', writes: [], reads, ms });
    return result;
  }

  private writeTargets(operation: string, input: Record<string, unknown>): WriteTarget[] | undefined {
    const tableName = input['TableName'] as string;
    switch (operation) {
      case 'PutItem':
        return [{ tableName, key: this.keyOf(tableName, input['Item'] as Item), action: 'put', item: input['Item'] as Item }];
      case 'UpdateItem':
        return [{ tableName, key: input['Key'] as Item, action: 'update' }];
      case 'DeleteItem':
        return [{ tableName, key: input['Key'] as Item, action: 'delete' }];
      case 'TransactWriteItems':
        return (input['TransactItems'] as Record<string, Record<string, unknown>>[]).map((t) => {
          if (t['Put']) return { tableName: t['Put']['TableName'] as string, key: this.keyOf(t['Put']['TableName'] as string, t['Put']['Item'] as Item), action: 'put', item: t['Put']['Item'] as Item };
          if (t['Update']) return { tableName: t['Update']['TableName'] as string, key: t['Update']['Key'] as Item, action: 'update' };
          if (t['Delete']) return { tableName: t['Delete']['TableName'] as string, key: t['Delete']['Key'] as Item, action: 'delete' };
          const check = t['ConditionCheck']!;
          return { tableName: check['TableName'] as string, key: check['Key'] as Item, action: 'check' };
        });
      case 'BatchWriteItem':
        return Object.entries(input['RequestItems'] as Record<string, Record<string, { Item?: Item; Key?: Item }>[]>).flatMap(([table, requests]) =>
          requests.map((r): WriteTarget => (r['PutRequest'] ? { tableName: table, key: this.keyOf(table, r['PutRequest'].Item!), action: 'put', item: r['PutRequest'].Item! } : { tableName: table, key: r['DeleteRequest']!.Key!, action: 'delete' })),
        );
      default:
        return undefined;
    }
  }

  private async write(operation: string, targets: WriteTarget[], send: () => Promise<{ output: unknown }>): Promise<{ output: unknown }> {
    const source = this.source();
    const at = Date.now();
    const release = await this.own(() => this.locks.acquire(targets.map((t) => this.shadowKey(t.tableName, t.key))));
    try {
      const before = await this.own(() => Promise.all(targets.map((t) => this.image(t.tableName, t.key))));
      // The request's own promise is what the caller gets, its error included; the recorder only looks.
      const sentAt = performance.now();
      const sent = send();
      let result: { output: unknown } | undefined;
      let failure: unknown;
      await sent.then(
        (output) => (result = output),
        (error: unknown) => (failure = error ?? new Error('rejected without a reason')),
      );
      const ms = performance.now() - sentAt;
      const outcome: DynamoRecord['outcome'] = failure === undefined ? 'ok' : isConditionFailure(failure) ? 'conditionFailed' : isCancelled(failure) ? 'cancelled' : 'error';
      const unprocessed = operation === 'BatchWriteItem' && result ? this.unprocessed(result.output) : new Set<string>();
      const applied = targets.map((t) => outcome === 'ok' && !unprocessed.has(this.shadowKey(t.tableName, t.key)));
      const after = await this.own(() => this.imagesAfter(targets, before, applied));
      const writes = targets.map((t, i): ItemWrite => {
        const definition = this.tables.get(t.tableName);
        if (applied[i] && t.action !== 'check') this.shadow.set(this.shadowKey(t.tableName, t.key), after[i] ?? null);
        return {
          table: definition?.name ?? t.tableName,
          pk: keyText(t.key[definition?.partitionKey ?? Object.keys(t.key)[0] ?? ''] ?? Object.values(t.key)[0]),
          ...(definition?.sortKey !== undefined && t.key[definition.sortKey] !== undefined ? { sk: keyText(t.key[definition.sortKey]) } : {}),
          action: t.action,
          oldBytes: itemSize(before[i]),
          newBytes: itemSize(after[i]),
          putBytes: itemSize(t.item),
          indexes: applied[i] && definition ? indexChanges(definition, before[i], after[i]) : [],
        };
      });
      this.records.push({ service: 'DynamoDB', operation, source, at, outcome, transaction: operation === 'TransactWriteItems', writes, reads: [], ms });
      return await sent;
    } finally {
      release();
    }
  }

  /** Each item after the request: the Put's item, nothing after a Delete, as read back after an Update, as before when it did not apply. */
  private async imagesAfter(targets: WriteTarget[], before: (Item | undefined)[], applied: boolean[]): Promise<(Item | undefined)[]> {
    const after = targets.map((t, i) => (!applied[i] || t.action === 'check' ? before[i] : t.action === 'put' ? t.item : undefined));
    const updated = targets.flatMap((t, i) => (applied[i] && t.action === 'update' ? [i] : []));
    const read = await this.readItems(updated.map((i) => targets[i]!));
    updated.forEach((i, n) => (after[i] = read[n]));
    return after;
  }

  /**
   * The stored item, from the shadow, or read when the recorder has not seen every write. Only a writer,
   * holding the item's lock, keeps what it read: a reader's copy could land after a newer write's.
   */
  private async image(tableName: string, key: Item, keep = true): Promise<Item | undefined> {
    const known = this.shadow.get(this.shadowKey(tableName, key));
    if (known !== undefined) return known ?? undefined;
    if (this.complete) return undefined;
    const [item] = await this.readItems([{ tableName, key }]);
    if (keep) this.shadow.set(this.shadowKey(tableName, key), item ?? null);
    return item;
  }

  /** Consistent reads of items by key, on the recorder's own client (not recorded). */
  private async readItems(keys: { tableName: string; key: Item }[]): Promise<(Item | undefined)[]> {
    if (keys.length === 0) return [];
    const side = this.sideClient();
    if (keys.length === 1) {
      const result = await side.send(new GetItemCommand({ TableName: keys[0]!.tableName, Key: keys[0]!.key, ConsistentRead: true }));
      return [result.Item];
    }
    const found = new Map<string, Item>();
    for (let i = 0; i < keys.length; i += 100) {
      const request: Record<string, { Keys: Item[]; ConsistentRead: boolean }> = {};
      for (const { tableName, key } of keys.slice(i, i + 100)) (request[tableName] ??= { Keys: [], ConsistentRead: true }).Keys.push(key);
      const result = await side.send(new BatchGetItemCommand({ RequestItems: request }));
      // Sent once, like every request: keys left unread make this recording incomplete, and it says so.
      if (Object.keys(result.UnprocessedKeys ?? {}).length > 0) throw new Error('the request recorder could not read items back (UnprocessedKeys); the recording is incomplete');
      for (const [tableName, items] of Object.entries(result.Responses ?? {})) {
        for (const item of items) found.set(this.shadowKey(tableName, this.keyOf(tableName, item)), item);
      }
    }
    return keys.map(({ tableName, key }) => found.get(this.shadowKey(tableName, key)));
  }

  private unprocessed(output: unknown): Set<string> {
    const left = new Set<string>();
    const items = (output as { UnprocessedItems?: Record<string, { PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }[]> }).UnprocessedItems ?? {};
    for (const [tableName, requests] of Object.entries(items)) {
      for (const r of requests) {
        // The document client hands back native values; only a marshalled key can be matched, and locally nothing is left unprocessed.
        const key = r.PutRequest ? this.keyOf(tableName, r.PutRequest.Item) : r.DeleteRequest?.Key;
        if (key) left.add(this.shadowKey(tableName, key));
      }
    }
    return left;
  }

  // ─── reads ─────────────────────────────────────────────────────────────────────────────────────

  private async readsOf(operation: string, input: Record<string, unknown>): Promise<ItemRead[]> {
    switch (operation) {
      case 'GetItem':
        return [await this.itemRead(input['TableName'] as string, input['Key'] as Item, input['ConsistentRead'] === true)];
      case 'BatchGetItem':
        return Promise.all(
          Object.entries(input['RequestItems'] as Record<string, { Keys: Item[]; ConsistentRead?: boolean }>).flatMap(([tableName, request]) =>
            request.Keys.map((key) => this.itemRead(tableName, key, request.ConsistentRead === true)),
          ),
        );
      case 'TransactGetItems':
        return Promise.all(
          (input['TransactItems'] as { Get: { TableName: string; Key: Item } }[]).map((t) => this.itemRead(t.Get.TableName, t.Get.Key, true)),
        );
      case 'Query':
      case 'Scan':
        return [await this.rangeRead(operation, input)];
      default:
        return [];
    }
  }

  private async itemRead(tableName: string, key: Item, consistent: boolean): Promise<ItemRead> {
    const definition = this.tables.get(tableName);
    const item = await this.image(tableName, key, false);
    return {
      table: definition?.name ?? tableName,
      pk: keyText(key[definition?.partitionKey ?? ''] ?? Object.values(key)[0]),
      ...(definition?.sortKey !== undefined && key[definition.sortKey] !== undefined ? { sk: keyText(key[definition.sortKey]) } : {}),
      bytes: itemSize(item),
      items: item ? 1 : 0,
      consistent,
      shape: 'item',
    };
  }

  /**
   * What a Query or Scan read: the same request again on the recorder's own client, without filter,
   * projection or COUNT, so every item DynamoDB evaluated comes back whole (a filter, a projection and
   * Select COUNT do not lower what a read costs).
   */
  private async rangeRead(operation: 'Query' | 'Scan', input: Record<string, unknown>): Promise<ItemRead> {
    const tableName = input['TableName'] as string;
    const indexName = input['IndexName'] as string | undefined;
    const definition = this.tables.get(tableName);
    const index = definition?.indexes.find((i) => i.name === indexName);
    const keyCondition = input['KeyConditionExpression'] as string | undefined;
    const used = (placeholder: string) => !!keyCondition && new RegExp(`${placeholder}(?![A-Za-z0-9_])`).test(keyCondition);
    const pick = (values: unknown) =>
      Object.fromEntries(Object.entries((values ?? {}) as Record<string, unknown>).filter(([placeholder]) => used(placeholder)));
    const names = pick(input['ExpressionAttributeNames']) as Record<string, string>;
    const values = pick(input['ExpressionAttributeValues']) as Item;
    const common = {
      TableName: tableName,
      ...(indexName ? { IndexName: indexName } : {}),
      ...(input['Limit'] !== undefined ? { Limit: input['Limit'] as number } : {}),
      ...(input['ExclusiveStartKey'] ? { ExclusiveStartKey: input['ExclusiveStartKey'] as Item } : {}),
      ...(input['ConsistentRead'] !== undefined ? { ConsistentRead: input['ConsistentRead'] as boolean } : {}),
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
      Select: indexName ? ('ALL_PROJECTED_ATTRIBUTES' as const) : ('ALL_ATTRIBUTES' as const),
    };
    const side = this.sideClient();
    const result =
      operation === 'Query'
        ? await side.send(
            new QueryCommand({
              ...common,
              KeyConditionExpression: keyCondition,
              ...(input['ScanIndexForward'] !== undefined ? { ScanIndexForward: input['ScanIndexForward'] as boolean } : {}),
            }),
          )
        : await side.send(
            new ScanCommand({
              ...common,
              ...(input['Segment'] !== undefined ? { Segment: input['Segment'] as number, TotalSegments: input['TotalSegments'] as number } : {}),
            }),
          );
    const items = result.Items ?? [];
    const partitionKey = index?.partitionKey ?? definition?.partitionKey;
    return {
      table: definition?.name ?? tableName,
      ...(indexName ? { index: indexName } : {}),
      pk: operation === 'Query' ? partitionValue(keyCondition ?? '', input, partitionKey) : '',
      bytes: items.reduce((n, item) => n + itemSize(item), 0),
      items: items.length,
      consistent: input['ConsistentRead'] === true,
      shape: 'range',
    };
  }

  // ─── plumbing ──────────────────────────────────────────────────────────────────────────────────

  private sideClient(): DynamoDBClient {
    if (!this.side) throw new Error('the request recorder has no DynamoDB client of its own (instrumentDynamo was not called)');
    return this.side;
  }

  private keyOf(tableName: string, item: Item): Item {
    const definition = this.tables.get(tableName);
    if (!definition) return item;
    return Object.fromEntries(tableKeyAttributes(definition).map((a) => [a, item[a]!]));
  }

  private shadowKey(tableName: string, key: Item): string {
    const definition = this.tables.get(tableName);
    const names = definition ? tableKeyAttributes(definition) : Object.keys(key).sort();
    return [tableName, ...names.map((n) => keyText(key[n]))].join('\u0000');
  }

  /** Runs the recorder's own work (reads, waits), counting its time against every scope it runs in. */
  private async own<T>(fn: () => Promise<T>): Promise<T> {
    const chain: Scope[] = [];
    for (let s = this.scopes.getStore(); s; s = s.parent) chain.push(s);
    const now = performance.now();
    for (const s of chain) if (s.busy++ === 0) s.busySince = now;
    try {
      return await fn();
    } finally {
      const end = performance.now();
      for (const s of chain) if (--s.busy === 0) s.ownMs += end - s.busySince;
    }
  }
}

const operationOf = (commandName: string | undefined) => (commandName ?? 'Unknown').replace(/Command$/, '');

/** The partition a Query's key condition names (`#pk = :pk AND …`), as text. */
function partitionValue(keyCondition: string, input: Record<string, unknown>, partitionKey: string | undefined): string {
  const names = (input['ExpressionAttributeNames'] ?? {}) as Record<string, string>;
  const values = (input['ExpressionAttributeValues'] ?? {}) as Record<string, AttributeValue>;
  for (const clause of keyCondition.split(/\s+AND\s+/i)) {
    const match = /^\(*\s*([#A-Za-z0-9_.]+)\s*=\s*(:[A-Za-z0-9_]+)\s*\)*$/.exec(clause.trim());
    if (!match) continue;
    const attribute = match[1]!.startsWith('#') ? names[match[1]!] : match[1];
    if (!partitionKey || attribute === partitionKey) return keyText(values[match[2]!]);
  }
  return '';
}

// ─── requests as sent, per deployed function (the IAM check) ──────────────────────────────────────

/**
 * One AWS request as redial's code sent it, and the deployed function that sent it. test/infra/iam turns
 * each into the IAM requests AWS would authorize (a transaction into its items' actions, a Query of an index
 * into a request on the index's ARN) and evaluates them against that function's role in the synthesized
 * template.
 */
export interface SentRequest {
  /**
   * The deployed function, as lib/redial-stack.ts names it (`intake`, `publicLinks`, `api`, `rescuer`,
   * `<queue>Worker`); `unattributed` for a request sent while no function was running.
   */
  function: string;
  /** `DynamoDB`, `SQS`, `Scheduler`, `SES`, `SecretsManager` or `KMS`. */
  service: string;
  /** The API operation: `TransactWriteItems`, `SendMessage`, `CreateSchedule`, … */
  operation: string;
  /**
   * The command's input as the SDK sends it (DynamoDB values marshalled). A local stand-in that has no AWS
   * address for a resource names it by what it is, `<kind>:<name>` (`queue:deliveries`,
   * `scheduleGroup:jobs`, `role:scheduler`, `key:webhookSecrets`), where the AWS client would put an ARN or URL.
   */
  params: Record<string, unknown>;
}

/**
 * What a {@link SentRequestLog} holds, as it is written to a file: the requests, and what the names they
 * carry stand for. `names` maps a value a request carries (a table name, a queue URL, an ARN, a mail
 * domain) to the resource it names: a CloudFormation logical id of the synthesized stack, or
 * `<kind>:<name>` (`table:jobs`, `queue:deliveries`, `secret:callWebhook`, `key:webhookSecrets`,
 * `identity:mail`, `scheduleGroup:jobs`, `role:scheduler`).
 */
export interface SentRequests {
  names: Record<string, string>;
  requests: SentRequest[];
}

/** The shape of the job layer's dispatch transport (functions/jobs/dispatch.ts), which platform does not import. */
interface WakeUpTransport {
  sendMessage(queue: string, body: string, delaySeconds: number): Promise<void>;
  createSchedule(name: string, at: number, queue: string, body: string): Promise<void>;
  deleteSchedule(name: string): Promise<void>;
}

/** The shape of a mail transport (functions/mail/transport.ts): what it sends, from whom. */
interface SendingTransport<N extends string, M extends { from: string; to: string }, R> {
  readonly name: N;
  send(mail: M, signal: AbortSignal): Promise<R>;
}

/** The shape of the endpoint-secrets key (secret-key.ts), without importing it. */
interface ContextKey {
  encrypt(plaintext: string, context: Readonly<Record<string, string>>): Promise<string>;
  decrypt(ciphertext: string, context: Readonly<Record<string, string>>): Promise<string>;
}

/**
 * Every AWS request the code sends, as sent, with the deployed function that sent it (`functionNow`: the
 * host knows which worker, route or rescuer pass is running). It is a request interceptor for
 * createAwsClients (aws.ts), installed only when passed; the local stand-ins for SQS, Scheduler, SES and
 * KMS report through {@link SentRequestLog.dispatch}, {@link SentRequestLog.mail} and
 * {@link SentRequestLog.key}, each with the input the AWS client would have sent. It only looks: every
 * request goes on unchanged, refused or not.
 */
export class SentRequestLog {
  readonly requests: SentRequest[] = [];
  /** What the names in the requests stand for (see {@link SentRequests.names}). */
  readonly names: Record<string, string>;
  private readonly functionNow: () => string | undefined;

  constructor(functionNow: () => string | undefined, names: Record<string, string> = {}) {
    this.functionNow = functionNow;
    this.names = { ...names };
  }

  /** Records `operation` of `service`, as the current function's. */
  add(service: string, operation: string, params: Record<string, unknown>): void {
    this.requests.push({ function: this.functionNow() ?? 'unattributed', service, operation, params });
  }

  /** Installs the log on an AWS client (aws.ts `RequestInterceptor`); DynamoDB requests are seen marshalled. */
  instrument(client: unknown, service: string): void {
    (client as MiddlewareClient).middlewareStack.add(
      (next, ctx) => async (args) => {
        this.add(service, operationOf(ctx.commandName), args.input as Record<string, unknown>);
        return next(args);
      },
      { step: 'build', name: 'redialSentRequestLog' },
    );
  }

  /** The dispatch transport, with each send, schedule and deletion logged as the SQS or Scheduler request it is on AWS (jobs/dispatch.ts `AwsDispatchTransport`). */
  dispatch<T extends WakeUpTransport>(transport: T): WakeUpTransport {
    return {
      sendMessage: (queue, body, delaySeconds) => {
        this.add('SQS', 'SendMessage', { QueueUrl: `queue:${queue}`, MessageBody: body, DelaySeconds: delaySeconds });
        return transport.sendMessage(queue, body, delaySeconds);
      },
      createSchedule: (name, at, queue, body) => {
        this.add('Scheduler', 'CreateSchedule', { Name: name, GroupName: 'scheduleGroup:jobs', Target: { Arn: `queue:${queue}`, RoleArn: 'role:scheduler', Input: body } });
        return transport.createSchedule(name, at, queue, body);
      },
      deleteSchedule: (name) => {
        this.add('Scheduler', 'DeleteSchedule', { Name: name, GroupName: 'scheduleGroup:jobs' });
        return transport.deleteSchedule(name);
      },
    };
  }

  /** A mail transport, with each message logged as the SES v2 SendEmail it is on AWS (mail/transport.ts `SesMailTransport`). */
  mail<N extends string, M extends { from: string; to: string }, R>(transport: SendingTransport<N, M, R>, configurationSet?: string): SendingTransport<N, M, R> {
    return {
      name: transport.name,
      send: (mail, signal) => {
        this.add('SES', 'SendEmail', { FromEmailAddress: mail.from, Destination: { ToAddresses: [mail.to] }, ...(configurationSet ? { ConfigurationSetName: configurationSet } : {}) });
        return transport.send(mail, signal);
      },
    };
  }

  /** The endpoint-secrets key, with each use logged as the KMS request it is on AWS (secret-key.ts `KmsSecretKey`). */
  key<K extends ContextKey>(key: K): ContextKey {
    return {
      encrypt: (plaintext, context) => {
        this.add('KMS', 'Encrypt', { KeyId: 'key:webhookSecrets', EncryptionContext: { ...context } });
        return key.encrypt(plaintext, context);
      },
      decrypt: (ciphertext, context) => {
        this.add('KMS', 'Decrypt', { KeyId: 'key:webhookSecrets', EncryptionContext: { ...context } });
        return key.decrypt(ciphertext, context);
      },
    };
  }

  /** The requests and their names, to write to a file (JSON). */
  toJSON(): SentRequests {
    return { names: this.names, requests: this.requests };
  }
}
