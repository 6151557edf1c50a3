import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../functions/app/system.ts';
import type { TransactOutcome } from '../functions/platform/dynamo.ts';
import { CallsStore } from '../functions/calls/store.ts';
import type { CompletionWrite, DialWrite } from '../functions/calls/store.ts';
import type { BatchRow } from '../functions/calls/model.ts';
import type { WebhookHttp } from '../functions/webhooks/deps.ts';
import type { EndpointRow } from '../functions/webhooks/endpoint.ts';
import { leaseTerms } from '../functions/webhooks/lease.ts';
import { WebhookStore } from '../functions/webhooks/store.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../functions/jobs/discards.ts';
import type { TransactItem } from '../functions/jobs/store.ts';
import type { MailTransport } from '../functions/mail/transport.ts';
import type { MetricsSink } from '../functions/platform/metrics.ts';
import type { Alterations } from './host.ts';
import { RESCUE_AFTER_MS } from './host.ts';
import { checkKey } from '../functions/jobs/row.ts';
import { calendarBugs } from './bugs-calendar.ts';

/**
 * Plausible bugs, put back through the host's seams (test/sim/bugs.test.ts shows the simulator finds
 * each): every one is another implementation of one of redial's parts, passed in as the real one is,
 * never a branch in functions/ on "am I under test". `npm run simulate -- --bug <name>` runs with one.
 */
export interface Bug {
  name: string;
  /** What the bug is, as a reviewer would describe the broken code. */
  description: string;
  alterations: Alterations;
}

/**
 * A calls store that writes a call's attempt item on its own before the completion's transaction, instead
 * of in it: a result the transaction then refuses (a late result after the watchdog's TIMEOUT, a result of
 * a deleted batch) leaves an attempt that says what was never applied, or overwrites the one that was.
 */
class AttemptOutsideTransaction extends CallsStore {
  private readonly client: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    super(db, tableName);
    this.client = db;
  }

  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    const attempt = items.find((item) => item.name === 'attempt' && item.Put !== undefined);
    if (attempt) await this.client.send(new PutCommand(attempt.Put!));
    return super.transact(items.filter((item) => item !== attempt));
  }
}

/**
 * A calls store whose outbox is not transactional: it commits the domain change without the jobs it
 * implies (the rows for the jobs table), then writes them one by one. A crash or a lost response between
 * the commit and the writes loses the job for good (a watchdog, a finaliser, an event's fanout).
 */
class OutboxOutsideTransaction extends CallsStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly jobsTable: string;

  constructor(db: DynamoDBDocumentClient, tableNames: TableNames) {
    super(db, tableNames.calls);
    this.client = db;
    this.jobsTable = tableNames.jobs;
  }

  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    const isJob = (item: TransactItem) => item.Put?.TableName === this.jobsTable;
    const outcome = await super.transact(items.filter((item) => !isJob(item)));
    if (!outcome.committed) return outcome;
    for (const job of items.filter(isJob)) {
      try {
        await this.client.send(new PutCommand(job.Put!));
      } catch (error) {
        if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException')) throw error;
      }
    }
    return outcome;
  }
}

/**
 * A calls store whose completion, for a result from the intake, forgets the round its call id names and
 * completes the contact in the batch's round as the store last read it (the bug issue 10 fixed, in the
 * form the call-id binding takes now): a late result of round r lands on round r + 1's call.
 */
class IntakeIgnoresCallBinding extends CallsStore {
  private readonly seen = new Map<string, number>();

  override async getBatch(batchId: string): Promise<BatchRow | undefined> {
    const batch = await super.getBatch(batchId);
    if (batch) this.seen.set(batchId, batch.round);
    return batch;
  }

  override completionItems(c: CompletionWrite): TransactItem[] {
    const round = this.seen.get(c.batchId);
    return super.completionItems(c.source === 'webhook' && round !== undefined && round > c.round ? { ...c, round } : c);
  }
}

/** The item's condition alone, as a ConditionCheck (only the placeholders the condition uses). */
function conditionOnly(item: TransactItem): TransactItem {
  const update = item.Update!;
  const condition = update.ConditionExpression!;
  const used = (placeholder: string) => new RegExp(`${placeholder}(?![A-Za-z0-9_])`).test(condition);
  const names = Object.fromEntries(Object.entries(update.ExpressionAttributeNames ?? {}).filter(([k]) => used(k)));
  const values = Object.fromEntries(Object.entries(update.ExpressionAttributeValues ?? {}).filter(([k]) => used(k)));
  return {
    name: item.name,
    ConditionCheck: {
      TableName: update.TableName!,
      Key: update.Key!,
      ConditionExpression: condition,
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}

/**
 * A calls store that checks the tenant has a free slot when it dials, but does not hold it until the
 * call's result: the slot is as good as released at the dial, before the call's outcome is written.
 */
class SlotReleasedAtDial extends CallsStore {
  override dialItems(d: DialWrite): TransactItem[] {
    return super.dialItems(d).map((item) => (item.name === 'tenant' ? conditionOnly(item) : item));
  }

  override completionItems(c: CompletionWrite): TransactItem[] {
    return super.completionItems(c).map((item) => (item.name === 'tenant' ? conditionOnly(item) : item));
  }

  override deleteBatchItems(batch: BatchRow, now: number): TransactItem[] {
    return super.deleteBatchItems(batch, now).filter((item) => item.name !== 'tenant' && !item.name.startsWith('slot '));
  }
}

/**
 * A webhooks store whose lease take on someone else's behalf (the sweep's restart of a stalled list, a
 * holder's last look) treats an expired lease as still held: it takes only a lease nobody holds. A lease
 * taken by a publisher that died before its commit, or by a holder that crashed, then strands the list.
 */
class ExpiredLeaseNeverTaken extends WebhookStore {
  override async acquireFor(endpointId: string, jobId: string, now: number, busyUntil: number): Promise<EndpointRow | undefined> {
    const row = await this.getEndpoint(endpointId);
    if (row?.holder !== undefined) return undefined;
    return super.acquireFor(endpointId, jobId, now, busyUntil);
  }
}

/**
 * A calls store that has not learnt about pauses in the dialer's path: its jobs' read of a batch shows a
 * paused one in the status it was paused from, and the dial's condition admits a paused batch (`status IN
 * (Pending, InProgress, Paused)`). The dialer then dials on through a pause.
 */
class DialIgnoresPause extends CallsStore {
  override async getBatch(batchId: string): Promise<BatchRow | undefined> {
    const batch = await super.getBatch(batchId);
    return batch?.status === 'Paused' && batch.pausedFrom !== undefined ? { ...batch, status: batch.pausedFrom } : batch;
  }

  override dialItems(d: DialWrite): TransactItem[] {
    return super.dialItems(d).map((item) => {
      if (item.name !== 'batch' || !item.Update) return item;
      const update = item.Update;
      const names = update.ExpressionAttributeNames ?? {};
      const status = Object.keys(names).find((k) => names[k] === 'status');
      if (!status) return item;
      const condition = update.ConditionExpression!.replace(new RegExp(`${status} IN \\(([^)]*)\\)`), `${status} IN ($1, :simPaused)`);
      return { ...item, Update: { ...update, ConditionExpression: condition, ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':simPaused': 'Paused' } } };
    });
  }
}

/** A calls store that leaves the suppression check (`supp:<number>`, a ConditionCheck) out of every dial's transaction. */
class DialSkipsSuppressionCheck extends CallsStore {
  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return super.transact(items.filter((item) => !item.name.startsWith('supp:')));
  }
}

/**
 * A calls store whose cap slot claims are keyed by batch (`TENANT#<t>#CAP#<number>#<batch>`) while the dial
 * reads the tenant's slots (`TENANT#<t>#CAP#<number>`): the read always finds the number free, and each batch
 * holds its own slots, so the cap never counts a number's calls across the tenant's batches.
 */
class CapKeyedByBatch extends CallsStore {
  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return super.transact(
      items.map((item) => {
        if (!item.name.startsWith('cap:') || !item.Put) return item;
        const row = item.Put.Item as { pk: string; batchId: string };
        return { ...item, Put: { ...item.Put, Item: { ...item.Put.Item, pk: `${row.pk}#${row.batchId}` } } };
      }),
    );
  }
}

/**
 * A calls store whose jobs' read of a batch drops `perContact` from its calling window: the dialer
 * evaluates the window in the batch's zone for every contact (a nationwide list calls Chicago at New York's
 * hours).
 */
class WindowIgnoresContactZone extends CallsStore {
  override async getBatch(batchId: string): Promise<BatchRow | undefined> {
    const batch = await super.getBatch(batchId);
    return batch?.callingWindow ? { ...batch, callingWindow: { ...batch.callingWindow, perContact: false } } : batch;
  }
}

/**
 * A calls store that writes a scheduled batch's start job due at once instead of at its `startAt` (its
 * time dropped): the rescuer takes it for a lost wake-up at its next pass, and the batch starts early.
 */
class StartIgnoresStartAt extends CallsStore {
  private readonly jobsTable: string;

  constructor(db: DynamoDBDocumentClient, tableNames: TableNames) {
    super(db, tableNames.calls);
    this.jobsTable = tableNames.jobs;
  }

  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return super.transact(
      items.map((item) => {
        const row = item.Put?.Item as { kind?: string; id?: string; createdAt?: string; wakeSchedule?: unknown } | undefined;
        if (item.Put?.TableName !== this.jobsTable || row?.kind !== 'calls.start' || !row.id || !row.createdAt) return item;
        const created = Date.parse(row.createdAt);
        const { wakeSchedule: _schedule, ...rest } = row;
        return { ...item, Put: { ...item.Put, Item: { ...rest, state: 'available', scheduledAt: new Date(created - RESCUE_AFTER_MS).toISOString(), checkAt: checkKey(created + 1_000, row.id) } } };
      }),
    );
  }
}

// ─── Imports (issue 26) ─────────────────────────────────────────────────────────────────────────────

/**
 * A calls store whose import page write is two writes: the import job's transaction commits the batch row
 * moved on (its cursor past page p, its counts up) with whatever job it enqueues, and only then puts list
 * page p on its own. A crash between the two, or the transaction's answer lost (the job fails and runs
 * again from the cursor it moved), leaves the cursor past a page that was never written: its contacts are
 * lost.
 */
class ImportCursorBeforePage extends CallsStore {
  private readonly client: DynamoDBDocumentClient;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    super(db, tableName);
    this.client = db;
  }

  override async transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    const page = items.find((item) => item.name.startsWith('list page ') && item.Put !== undefined);
    const moves = items.some((item) => item.name === 'batch' && Object.values(item.Update?.ExpressionAttributeNames ?? {}).includes('importPage'));
    if (!page || !moves) return super.transact(items);
    const outcome = await super.transact(items.filter((item) => item !== page));
    if (outcome.committed) await this.client.send(new PutCommand(page.Put!));
    return outcome;
  }
}

/** A webhook client that sends a request again on its own after a 5xx, a timeout or a dropped connection. */
const retryingHttp = (inner: WebhookHttp): WebhookHttp => ({
  vet: (hostname) => inner.vet(hostname),
  async send(request) {
    try {
      const response = await inner.send(request);
      return response.status >= 500 ? await inner.send(request) : response;
    } catch {
      return inner.send(request);
    }
  },
});

/**
 * A webhook client that sends only the first signature of `webhook-signature` (the new secret's): a
 * rotation then drops the old secret at once instead of 24 h later, and a receiver that still holds only the
 * old one (as the owner's may, for a day) refuses every delivery.
 */
const firstSignatureOnly = (inner: WebhookHttp): WebhookHttp => ({
  vet: (hostname) => inner.vet(hostname),
  send(request) {
    const signature = request.headers?.['webhook-signature'];
    if (signature === undefined) return inner.send(request);
    return inner.send({ ...request, headers: { ...request.headers, 'webhook-signature': signature.split(' ')[0]! } });
  },
});

/** A metrics sink that loses the job layer's discard counts (the rescuer built without the host's sink). */
const withoutDiscards = (metrics: MetricsSink): MetricsSink => ({
  count(name, dimensions, value) {
    if (name === DISCARD_METRIC || name === DISCARD_ALERT_METRIC) return;
    metrics.count(name, dimensions, value);
  },
});

/** A mail transport that sends again on its own when a send fails. */
const retryingMail = (inner: MailTransport): MailTransport => ({
  name: inner.name,
  async send(mail, signal) {
    try {
      return await inner.send(mail, signal);
    } catch {
      return inner.send(mail, signal);
    }
  },
});

export const bugs: readonly Bug[] = [
  {
    name: 'intake-ignores-call-binding',
    description: "the intake completes the contact in the batch's current round, not the round the result's own call names",
    alterations: { callsStore: (db, tables) => new IntakeIgnoresCallBinding(db, tables.calls) },
  },
  {
    name: 'tenant-slot-released-at-dial',
    description: "the tenant's concurrency slot is checked when a call is dialled but released before the call's outcome is written",
    alterations: { callsStore: (db, tables) => new SlotReleasedAtDial(db, tables.calls) },
  },
  {
    name: 'webhook-client-retries',
    description: 'the webhook HTTP client sends a delivery again on its own after a 5xx or a failed connection',
    alterations: { webhookHttp: retryingHttp },
  },
  {
    name: 'attempt-outside-transaction',
    description: "a call's attempt item is written before its completion's transaction, not in it",
    alterations: { callsStore: (db, tables) => new AttemptOutsideTransaction(db, tables.calls) },
  },
  {
    name: 'outbox-outside-transaction',
    description: 'the jobs a calls change implies are written after the change commits, not in its transaction',
    alterations: { callsStore: (db, tables) => new OutboxOutsideTransaction(db, tables) },
  },
  {
    name: 'rescuer-uncounted-discards',
    description: 'the rescuer, a function of its own, is built without the metrics sink: its discards (a lost last attempt) are never counted',
    alterations: { rescuerMetrics: withoutDiscards },
  },
  {
    name: 'sweep-skips-expired-lease',
    description: "the sweep (and a holder's last look) takes an endpoint's lease only when nobody holds it, not when its holder let it expire",
    alterations: { webhookStore: (db, tables) => new ExpiredLeaseNeverTaken(db, tables.webhooks) },
  },
  {
    name: 'webhook-lease-unscaled',
    description: "the endpoint lease and the time a send needs left of it are measured in real ms on a fast clock (the drain's clock and the lease's disagree)",
    alterations: { webhookOptions: ({ requestTimeoutMs }) => ({ lease: leaseTerms(requestTimeoutMs, 1) }) },
  },
  {
    name: 'rotation-drops-old-signature',
    description: "after a secret rotation, deliveries carry only the new secret's signature: the old secret stops verifying at once, not 24 h later",
    alterations: { webhookHttp: firstSignatureOnly },
  },
  {
    name: 'dial-ignores-pause',
    description: "the dialer's read shows a paused batch as it was before the pause, and the dial's condition admits a paused batch: dials go on through a pause",
    alterations: { callsStore: (db, tables) => new DialIgnoresPause(db, tables.calls) },
  },
  {
    name: 'dial-skips-suppression-check',
    description: "the dial's transaction leaves out the suppression list's ConditionCheck: a suppressed number is dialled",
    alterations: { callsStore: (db, tables) => new DialSkipsSuppressionCheck(db, tables.calls) },
  },
  {
    name: 'cap-keyed-by-batch',
    description: "the cap's slot claims are keyed by batch while the dial reads the tenant's slots: a number's calls are never counted across the tenant's batches",
    alterations: { callsStore: (db, tables) => new CapKeyedByBatch(db, tables.calls) },
  },
  {
    name: 'window-ignores-contact-zone',
    description: "the dialer's read of a batch drops callingWindow.perContact: every contact is called at the batch zone's hours",
    alterations: { callsStore: (db, tables) => new WindowIgnoresContactZone(db, tables.calls) },
  },
  {
    name: 'start-job-ignores-start-at',
    description: "a scheduled batch's start job is written due at once, not at its startAt: the batch starts (and dials) early",
    alterations: { callsStore: (db, tables) => new StartIgnoresStartAt(db, tables) },
  },
  {
    name: 'import-cursor-before-page',
    description: "the import job moves the batch's cursor past a page in its transaction and writes the page after it, on its own: a crash or a lost answer between them loses the page's contacts",
    alterations: { callsStore: (db, tables) => new ImportCursorBeforePage(db, tables.calls) },
  },
  {
    name: 'mail-transport-retries',
    description: 'the mail transport sends a message again on its own when a send fails',
    alterations: { mailTransport: retryingMail },
  },
  // Issue 29's booking: one per calendar invariant (sim/bugs-calendar.ts).
  ...calendarBugs,
];

export const bugNamed = (name: string): Bug | undefined => bugs.find((b) => b.name === name);
