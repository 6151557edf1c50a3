import { randomUUID } from 'node:crypto';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, ScanCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { BookingStore } from '../../functions/calendar/booking-store.ts';
import type { AppointmentRow, CallPointerRow, HoldCellRow } from '../../functions/calendar/booking-store.ts';
import type { AppointmentsSettings, StoredCalendar } from '../../functions/calendar/schemas.ts';
import type { BookingDeps, CallRef } from '../../functions/calendar/booking-deps.ts';
import { CalendarSimulator } from '../../functions/calendar/local/simulator.ts';
import { GoogleCalendarProvider } from '../../functions/calendar/google.ts';
import { calendarKey, calendarTable } from '../../functions/calendar/model.ts';
import { settleHandler } from '../../functions/calendar/settle-job.ts';
import { toolRoutes } from '../../functions/calendar/tools-api.ts';
import { callLivenessChecks } from '../../functions/calls/liveness.ts';
import { batchIds, batchKey, callIdFor, slotKey } from '../../functions/calls/model.ts';
import type { BatchRow } from '../../functions/calls/model.ts';
import { recipientZones } from '../../functions/calls/compliance/recipient.ts';
import { callWebhookVerifier, signCallWebhook } from '../../functions/calls/signature.ts';
import { SignatureError } from '../../functions/calls/errors.ts';
import { CallsStore } from '../../functions/calls/store.ts';
import type { JobContext } from '../../functions/jobs/index.ts';
import { supplierInvokePolicy } from '../../functions/calendar/kinds.ts';
import type { JobRow } from '../../functions/jobs/row.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { ensureTables } from '../../functions/platform/local/dynamodb-local.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import { webhookLeaseTerms } from '../../functions/webhooks/lease.ts';
import { Publisher } from '../../functions/webhooks/publish.ts';
import { WebhookStore } from '../../functions/webhooks/store.ts';
import { endpointIds, endpointKey } from '../../functions/webhooks/endpoint.ts';
import type { KeptEventRow } from '../../functions/webhooks/kept-events.ts';
import { TEST_SECRET } from '../support/calls.ts';
import { dynamoEndpoint } from '../support/dynamo.ts';
import { jobsFixture } from '../support/jobs.ts';
import { calendarEvents } from '../../functions/app/contexts/calendar.ts';

/** Monday 2 March 2026, 08:00 in New York (13:00 UTC): the calendar opens at 09:00 there. */
export const MONDAY_8AM_NY = Date.parse('2026-03-02T13:00:00Z');
/** The first slot of that Monday: 09:00 New York. */
export const FIRST_SLOT = Date.parse('2026-03-02T14:00:00Z');

export const TENANT = 'acme';
export const CALENDAR_ID = 'sales';
export const PROVIDER_CALENDAR = 'sales@group.calendar.google.com';
const CREDENTIALS = { clientId: 'client-1', clientSecret: 'secret-1', refreshToken: 'refresh-1' };

export interface BookingFixtureOptions {
  /** The batch's booking settings. @default 30 min, 10 min buffer, 14 days */
  appointments?: Partial<AppointmentsSettings>;
  /** Contacts in the batch, every one dialled in round 1 (live). @default 4 */
  contacts?: number;
  /** The route's budget, wall ms. @default ROUTE_BUDGET_MS (production's 2.5 s: a cold first request on a loaded machine needs it) */
  routeBudgetMs?: number;
  /** The batch's calling window zone (contacts' zones by the campaign-control rule); none by default. */
  windowZone?: string;
}

/**
 * The booking side on DynamoDB Local: the job layer (a recording transport: nothing runs by itself), the
 * calendar table, a batch in its round 1 with every contact dialled (written as the dialer leaves it), the
 * calendar's settings item, the calendar simulator behind the real Google provider, a real webhooks
 * publisher (the tenant has one disabled endpoint, so each event is kept where a test can read it), and
 * the tool routes on a real HTTP server, signed as the intake is.
 */
export async function bookingFixture(options: BookingFixtureOptions = {}) {
  const fx = await jobsFixture();
  const { clients, tableNames, clock, logger } = fx;
  clock.set(MONDAY_8AM_NY);
  const calendarTableName = `${tableNames.calls.replace(/-calls$/, '')}-calendar`;
  await ensureTables(dynamoEndpoint(), [{ definition: calendarTable, tableName: calendarTableName }]);
  const db = clients.dynamo;
  const store = new BookingStore(db, calendarTableName);
  const calls = new CallsStore(db, tableNames.calls);
  const simulator = await CalendarSimulator.start({ clock: systemClock });
  const provider = new GoogleCalendarProvider({ clock: systemClock, calendarBaseUrl: simulator.calendarBaseUrl, tokenUrl: simulator.tokenUrl });

  // The batch, round 1, every contact dialled; its tenant's slot shard.
  const hex = randomUUID().replaceAll('-', '');
  const batchId = batchIds.make(TENANT, hex);
  const count = options.contacts ?? 4;
  const contacts = Array.from({ length: count }, (_, i) => `+1415555${String(1000 + i)}`);
  const appointments: AppointmentsSettings = { calendarId: CALENDAR_ID, durationMinutes: 30, bufferMinutes: 10, maxDaysAhead: 14, ...options.appointments };
  const batch: BatchRow & { appointments: AppointmentsSettings } = {
    ...batchKey(batchId),
    batchId,
    tenantId: TENANT,
    status: 'InProgress',
    round: 1,
    maxAttempts: 2,
    ...(options.windowZone ? { callingWindow: { timezone: options.windowZone, perContact: true } as BatchRow['callingWindow'] } : {}),
    retry: { baseSeconds: 30, capSeconds: 3600 },
    minConversationDurationSeconds: 10,
    contactCount: count,
    createdAt: new Date(clock.now()).toISOString(),
    updatedAt: new Date(clock.now()).toISOString(),
    listPages: 1,
    roundSize: count,
    dialPage: 0,
    dialPos: count,
    dialComplete: true,
    nQueued: 0,
    nCalling: count,
    nCompleted: 0,
    nRetryEligible: 0,
    byCode: {},
    finPage: 0,
    finPos: 0,
    nextPages: 0,
    nextSize: 0,
    appointments,
  };
  await db.send(new PutCommand({ TableName: tableNames.calls, Item: batch }));
  await db.send(new PutCommand({ TableName: tableNames.calls, Item: { ...slotKey(TENANT, 0), tenantId: TENANT, shard: 0, active: count, limit: count } }));

  // The calendar's settings, as the settings store keeps them (its credentials sealed: here a marker).
  const settings: StoredCalendar = {
    calendarId: CALENDAR_ID,
    provider: 'google',
    providerCalendarId: PROVIDER_CALENDAR,
    timezone: 'America/New_York',
    bookableHours: { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']], wed: [['09:00', '17:00']], thu: [['09:00', '17:00']], fri: [['09:00', '17:00']] },
    sealedCredentials: 'sealed',
    updatedAt: new Date(clock.now()).toISOString(),
  };
  await db.send(new PutCommand({ TableName: calendarTableName, Item: { ...calendarKey(TENANT, CALENDAR_ID), ...settings } }));

  // The tenant's one endpoint, disabled: publishing keeps each event (kept-events.ts) and delivers nothing.
  const webhookStore = new WebhookStore(db, tableNames.webhooks);
  const endpointId = endpointIds.make(TENANT, randomUUID().replaceAll('-', ''));
  await webhookStore.createEndpoint({ ...endpointKey(endpointId), endpointId, tenantId: TENANT, url: 'https://example.com/hook', createdAt: new Date(clock.now()).toISOString(), disabled: true });
  const publisher = new Publisher({ store: webhookStore, jobs: fx.jobs.client, clock, logger, lease: webhookLeaseTerms(undefined, clock) });

  const verify = callWebhookVerifier(TEST_SECRET);
  const deps: BookingDeps = {
    store,
    provider,
    loadCalendar: async (tenantId, calendarId) => {
      const item = (await db.send(new GetCommand({ TableName: calendarTableName, Key: calendarKey(tenantId, calendarId), ConsistentRead: true }))).Item as StoredCalendar | undefined;
      if (!item) return undefined;
      return { settings: item, access: item.sealedCredentials ? { providerCalendarId: item.providerCalendarId, timeZone: item.timezone, credentials: CREDENTIALS } : undefined };
    },
    batchBooking: async (id, contactNumber) => {
      // The batch's `appointments` field, as the batch's store will keep it (cal-a1's part): read off the row here.
      const row: (BatchRow & { appointments?: AppointmentsSettings }) | undefined = await calls.getBatch(id);
      if (!row || row.status === 'Deleted') return undefined;
      const parsed = batchIds.parse(id)!;
      const window = row.callingWindow;
      const contactZone = window ? recipientZones({ number: contactNumber }, { timezone: window.timezone, perContact: window.perContact === true }, clock.now()).zones[0] : undefined;
      return { tenantId: parsed.tenantId, batchHex: parsed.hex, appointments: row.appointments, contactZone };
    },
    liveness: { checks: (call) => callLivenessChecks(tableNames.calls, call) },
    verifySignature: (headers, rawBody, nowMs) => {
      try {
        verify(headers, rawBody, nowMs);
        return { ok: true };
      } catch (error) {
        if (error instanceof SignatureError) return { ok: false, reason: 'refused', message: error.message };
        throw error;
      }
    },
    jobs: fx.jobs.client,
    events: calendarEvents(() => publisher),
    clock,
    wallClock: systemClock,
    rng: fx.rng,
    logger,
    ...(options.routeBudgetMs !== undefined ? { routeBudgetMs: options.routeBudgetMs } : {}),
  };
  const server = await startHttpServer({ port: 0, handler: createApiHandler(toolRoutes(() => deps), logger) });
  const settleJob = settleHandler({ ...deps, requestMs: 2_000 });

  /** The call of contact i (round 1, list position i). */
  const call = (i: number): CallRef => ({ batchId, contactNumber: contacts[i]!, callId: callIdFor(batchId, contacts[i]!, { round: 1, page: 0, pos: i }) });

  /** A tool request, signed as the AI call handler signs (a fresh message id, the wall clock's time). */
  async function tool(path: string, body: unknown, sign: { secret?: string } = {}): Promise<{ status: number; body: any; headers: Headers }> {
    const raw = JSON.stringify(body);
    const headers = signCallWebhook(sign.secret ?? TEST_SECRET, `msg_${randomUUID()}`, Math.floor(Date.now() / 1000), raw);
    const response = await fetch(`${server.url}${path}`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }
  const availability = (i: number, extra: Record<string, unknown> = {}) => tool('/v1/calls/availability', { ...call(i), ...extra });
  const bookAt = (i: number, start: number, extra: Record<string, unknown> = {}) => tool('/v1/calls/appointments', { ...call(i), start: new Date(start).toISOString(), ...extra });
  const cancelOf = (i: number, appointmentId: string) => tool('/v1/calls/appointments/cancel', { ...call(i), appointmentId });

  /** Every item of the calendar table, by kind. */
  async function calendarItems() {
    const items = ((await db.send(new ScanCommand({ TableName: calendarTableName, ConsistentRead: true }))).Items ?? []) as Record<string, unknown>[];
    const sk = (item: Record<string, unknown>) => item['sk'] as string;
    return {
      cells: items.filter((i) => sk(i).startsWith('cell#')) as unknown as HoldCellRow[],
      appointments: items.filter((i) => sk(i).startsWith('APPT#')) as unknown as AppointmentRow[],
      pointers: items.filter((i) => sk(i).startsWith('CALL#')) as unknown as CallPointerRow[],
      all: items,
    };
  }

  /** The settle jobs written so far. */
  async function settleJobs(): Promise<JobRow[]> {
    const items = ((await db.send(new ScanCommand({ TableName: tableNames.jobs, ConsistentRead: true }))).Items ?? []) as JobRow[];
    return items.filter((j) => j.kind === 'supplier.invoke' && typeof j.id === 'string' && j.args !== undefined);
  }

  /** The events kept for the tenant (each publication the booking committed). */
  async function events(): Promise<KeptEventRow['event'][]> {
    const items = ((await db.send(new ScanCommand({ TableName: tableNames.webhooks, ConsistentRead: true }))).Items ?? []) as Record<string, unknown>[];
    return items.filter((i) => (i['pk'] as string).includes('#EVENTS#')).map((i) => (i as unknown as KeptEventRow).event);
  }

  /** Runs a settle job's handler once, as the job layer would at `now` (the job's due time by default); its outcome as thrown. */
  async function runSettle(job: JobRow, at?: number): Promise<{ outcome: 'completed' } | { outcome: 'thrown'; error: Error }> {
    clock.set(Math.max(clock.now(), at ?? Date.parse(job.scheduledAt)));
    const ctx: JobContext = {
      id: job.id,
      kind: job.kind,
      attempt: 1,
      maxAttempts: supplierInvokePolicy.maxAttempts,
      policy: supplierInvokePolicy,
      isLastAttempt: false,
      createdAt: job.createdAt,
      signal: new AbortController().signal,
      logger,
      now: () => clock.now(),
      runNext: () => Promise.resolve('declined'),
    };
    try {
      await settleJob.run(job.args as never, ctx);
      return { outcome: 'completed' };
    } catch (error) {
      return { outcome: 'thrown', error: error as Error };
    }
  }

  /**
   * Intercepts TransactWriteItems at the client: `fault(n)` for the n-th one from now (1-based) gives an
   * error to answer with instead of sending it, or undefined to send it.
   */
  function interceptTransactions(fault: (n: number) => Error | undefined): void {
    let n = 0;
    (db as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof TransactWriteCommand) {
        const error = fault(++n);
        if (error) return Promise.reject(error);
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
  }
  const send = db.send.bind(db);
  /** The next TransactWriteItems answers as DynamoDB does when another transaction holds one of its items (DynamoDB Local never does). */
  const conflictNextTransaction = () =>
    interceptTransactions((n) =>
      n === 1 ? new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: [{ Code: 'TransactionConflict' }] }) : undefined,
    );
  /** The process dies after the hold commits: every later TransactWriteItems fails before it is sent. */
  const crashAfterHold = () => interceptTransactions((n) => (n >= 2 ? new Error('the process died') : undefined));
  /** Transactions are sent as they come again. */
  const restore = () => ((db as { send: unknown }).send = send);

  async function stop(): Promise<void> {
    await server.close();
    await simulator.close();
  }

  return { ...fx, db, deps, store, calls, simulator, provider, batchId, contacts, appointments, settings, calendarTableName, call, tool, availability, bookAt, cancelOf, calendarItems, settleJobs, events, runSettle, conflictNextTransaction, crashAfterHold, restore, stop };
}

export type BookingFixture = Awaited<ReturnType<typeof bookingFixture>>;
