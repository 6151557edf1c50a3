import { GetCommand, paginateQuery } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { iso } from '../platform/clock.ts';
import { Expression, putItem, transact, updateItem } from '../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../platform/dynamo.ts';
import { cellSortKey, holdCellKey, holdCells, holdPartition } from './holds.ts';
import { APPOINTMENT_PREFIX, appointmentKey, appointmentsPartition, callPointerKey } from './model.ts';

/**
 * The booking's records (model.ts has their keys): a calendar's hold cells, a batch's appointments, and each
 * call's pointer to its appointment. Every state change is a named conditional item for one
 * TransactWriteItems; the service (booking.ts) puts them together with the settle job, the liveness checks
 * and the events.
 *
 * ```
 *  appointment   Pending ──Booked commit (route, before its deadline)──► Booked ──cancel──► Cancelling ──► Cancelled
 *                   │                                                       └──────cancel, calendar confirmed──────┘
 *                   ├──Failed commit (route: the insert failed or its outcome is unknown) ──► Failed
 *                   └──abandon (settle job, after the deadline + grace) ─────────────────────► Failed
 * ```
 *
 * Only a Booked appointment is kept in the calendar; the settle job deletes every other insert. Times
 * stored as numbers are the store's clock (job time); cells' `expiresAt` is in epoch seconds (the table's
 * TTL), and a cell is free when it is absent or `expiresAt < now` — in the condition, never left to TTL.
 */

/** An appointment's state. */
export const AppointmentState = {
  /** Held, the insert sent or about to be: the route may still commit Booked (until its deadline). */
  Pending: 'Pending',
  /** The route committed it: kept in the calendar. */
  Booked: 'Booked',
  /** Not kept: the insert failed, its outcome is unknown, or the route never committed. Its insert is deleted. */
  Failed: 'Failed',
  /** Cancelled by the agent; the calendar has not confirmed the delete yet (a settle job does it). */
  Cancelling: 'Cancelling',
  Cancelled: 'Cancelled',
} as const;
export type AppointmentState = (typeof AppointmentState)[keyof typeof AppointmentState];

/** States in which a call may hold a new appointment (its previous one is not, or no longer, kept). */
const REPLACEABLE: readonly AppointmentState[] = [AppointmentState.Failed, AppointmentState.Cancelling, AppointmentState.Cancelled];

/** An appointment as stored. */
export interface AppointmentRow {
  pk: string;
  sk: string;
  appointmentId: string;
  tenantId: string;
  batchId: string;
  contactNumber: string;
  callId: string;
  calendarId: string;
  /** UTC ISO-8601. */
  start: string;
  end: string;
  bufferMinutes: number;
  state: AppointmentState;
  /** The event id of its one insert (event-ids.ts). */
  eventId: string;
  /** The call's insert counter this insert took (the event id is computed from it). */
  insert: number;
  /** The route's deadline, epoch ms of the store's clock: Booked commits only before it. */
  deadline: number;
  notes?: string;
  createdAt: string;
  updatedAt: string;
  bookedAt?: string;
  cancelledAt?: string;
}

/** An appointment's fields: what the store's writes read (they build the keys themselves). */
export type AppointmentFields = Omit<AppointmentRow, 'pk' | 'sk'>;

/** A call's pointer to its latest appointment: one appointment per call, and the call's insert counter. */
export interface CallPointerRow {
  pk: string;
  sk: string;
  callId: string;
  appointmentId: string;
  start: string;
  end: string;
  /** Its appointment's state, kept in step with it in every transaction that changes it. */
  state: AppointmentState;
  /** Inserts made for this call so far: the next one's counter is `inserts + 1`, so no event id is sent twice. */
  inserts: number;
  updatedAt: string;
}

/** A hold cell as stored. */
export interface HoldCellRow {
  pk: string;
  sk: string;
  calendarId: string;
  appointmentId: string;
  callId: string;
  /** `pending` while the route inserts (expires at the deadline + grace), `booked` once kept (expires at the padded end). */
  state: 'pending' | 'booked';
  /** Epoch seconds: the cell is free once `expiresAt < now`. */
  expiresAt: number;
}

/** A new hold: its appointment, its cells' expiry, and the call's insert counter as read. */
export interface HoldWrite {
  appointment: Omit<AppointmentRow, 'pk' | 'sk' | 'state' | 'createdAt' | 'updatedAt'>;
  batchHex: string;
  /** The call's `inserts` as read (0: no pointer yet): the condition that no other request took the counter meanwhile. */
  insertsRead: number;
  /** When the pending cells expire, epoch ms (the deadline plus the settle grace). */
  cellsExpireAt: number;
  now: number;
}

const seconds = (ms: number): number => Math.floor(ms / 1000);
/** A cell expires at the first second at or after `ms`. */
const expirySeconds = (ms: number): number => Math.ceil(ms / 1000);

/** Condition fragments, named. */
const is = {
  absent: (e: Expression) => e.notExists('pk'),
  /** A cell is free: absent, or held by a hold that expired (`expiresAt < now`, in the condition: TTL deletes late). */
  freeCell: (e: Expression, nowMs: number) => e.or(e.notExists('pk'), e.lt('expiresAt', seconds(nowMs))),
  /** A cell this appointment holds. */
  cellOf: (e: Expression, appointmentId: string) => e.eq('appointmentId', appointmentId),
  /** The call may hold a new appointment: no pointer, or its appointment is not kept, and nobody took the counter since it was read. */
  callFree: (e: Expression, insertsRead: number) =>
    insertsRead === 0 ? e.notExists('pk') : e.and(e.inList('state', [...REPLACEABLE]), e.eq('inserts', insertsRead)),
  inState: (e: Expression, state: AppointmentState) => e.eq('state', state),
  /** The route's deadline has not passed. */
  beforeDeadline: (e: Expression, nowMs: number) => e.gt('deadline', nowMs),
  pointsAt: (e: Expression, appointmentId: string) => e.eq('appointmentId', appointmentId),
};

/** The partition and number of an appointment id: `appt_<batch hex>_<16 hex>`. */
const APPOINTMENT_ID = /^appt_([0-9a-f]{32})_([0-9a-f]{16})$/;

/** An appointment id names its batch (as a batch id names its tenant), so the settle job and cancel find it without a read. */
export const appointmentIds = {
  make: (batchHex: string, random: string): string => `appt_${batchHex}_${random}`,
  /** The batch hex an appointment id names, or undefined for a string that is not one. */
  batchHexOf: (appointmentId: string): string | undefined => APPOINTMENT_ID.exec(appointmentId)?.[1],
};

/** The calendar context's booking store, over the `calendar` table. */
export class BookingStore {
  readonly db: DynamoDBDocumentClient;
  readonly tableName: string;

  constructor(db: DynamoDBDocumentClient, tableName: string) {
    this.db = db;
    this.tableName = tableName;
  }

  /** Runs one TransactWriteItems of named items (platform/dynamo.ts `transact`): a cancellation is an outcome. */
  transact(items: readonly TransactItem[]): Promise<TransactOutcome> {
    return transact(this.db, items);
  }

  // ─── reads ──────────────────────────────────────────────────────────────────────────────────────

  /** A call's pointer (consistent). */
  async getPointer(tenantId: string, batchHex: string, callId: string): Promise<CallPointerRow | undefined> {
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: callPointerKey(tenantId, batchHex, callId), ConsistentRead: true }));
    return result.Item as CallPointerRow | undefined;
  }

  /** An appointment by id (consistent); undefined for an id that is not one, or names nothing of this tenant. */
  async getAppointment(tenantId: string, appointmentId: string): Promise<AppointmentRow | undefined> {
    const batchHex = appointmentIds.batchHexOf(appointmentId);
    if (batchHex === undefined) return undefined;
    const result = await this.db.send(new GetCommand({ TableName: this.tableName, Key: appointmentKey(tenantId, batchHex, appointmentId), ConsistentRead: true }));
    return result.Item as AppointmentRow | undefined;
  }

  /**
   * The cells live holds take in [from, to) of a calendar (expired ones left out), as cell starts: one
   * Query of the calendar's hold partition, its own tenant's key range.
   */
  async heldCells(tenantId: string, calendarId: string, from: number, to: number, nowMs: number): Promise<Set<number>> {
    const held = new Set<number>();
    const first = Math.floor(from / 300_000) * 300_000;
    const last = Math.ceil(to / 300_000) * 300_000;
    if (!(first < last)) return held;
    const pages = paginateQuery(
      { client: this.db },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': holdPartition(tenantId, calendarId), ':from': cellSortKey(first), ':to': cellSortKey(last - 300_000), ':now': seconds(nowMs) },
        FilterExpression: 'expiresAt >= :now',
        ProjectionExpression: 'sk',
        ConsistentRead: true,
      },
    );
    for await (const page of pages) for (const item of page.Items ?? []) held.add(Date.parse(`${(item['sk'] as string).slice('cell#'.length, -1)}:00Z`));
    return held;
  }

  /** A batch's appointments, every state, oldest id first (the contacts listing and the export join them). */
  async appointmentsOfBatch(tenantId: string, batchHex: string): Promise<AppointmentRow[]> {
    const rows: AppointmentRow[] = [];
    const pages = paginateQuery(
      { client: this.db },
      {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': appointmentsPartition(tenantId, batchHex), ':prefix': APPOINTMENT_PREFIX },
      },
    );
    for await (const page of pages) rows.push(...((page.Items ?? []) as AppointmentRow[]));
    return rows;
  }

  // ─── writes, as items ─────────────────────────────────────────────────────────────────────────────

  /**
   * A hold, items [cell <sk>…, appointment, call]: every cell of [start − buffer, end + buffer) free (absent
   * or expired) and now this appointment's until `cellsExpireAt`; the appointment Pending with its event id
   * and insert counter; the call's pointer at it, only if the call has no kept appointment and its counter
   * is as read. The caller adds the settle job and the liveness checks.
   */
  holdItems(hold: HoldWrite): TransactItem[] {
    const { appointment, now } = hold;
    const start = Date.parse(appointment.start);
    const end = Date.parse(appointment.end);
    const key = appointmentKey(appointment.tenantId, hold.batchHex, appointment.appointmentId);
    const cells = holdCells(start, end, appointment.bufferMinutes * 60_000).map((cell) => {
      const row: HoldCellRow = {
        ...holdCellKey(appointment.tenantId, appointment.calendarId, cell),
        calendarId: appointment.calendarId,
        appointmentId: appointment.appointmentId,
        callId: appointment.callId,
        state: 'pending',
        expiresAt: expirySeconds(hold.cellsExpireAt),
      };
      const e = new Expression();
      return putItem(`cell ${row.sk}`, this.tableName, row, e.when(is.freeCell(e, now)));
    });
    const row: AppointmentRow = { ...key, ...appointment, state: AppointmentState.Pending, createdAt: iso(now), updatedAt: iso(now) };
    const absent = new Expression();
    const pointer: CallPointerRow = {
      ...callPointerKey(appointment.tenantId, hold.batchHex, appointment.callId),
      callId: appointment.callId,
      appointmentId: appointment.appointmentId,
      start: appointment.start,
      end: appointment.end,
      state: AppointmentState.Pending,
      inserts: appointment.insert,
      updatedAt: iso(now),
    };
    const callFree = new Expression();
    return [
      ...cells,
      putItem('appointment', this.tableName, row, absent.when(is.absent(absent))),
      putItem('call', this.tableName, pointer, callFree.when(is.callFree(callFree, hold.insertsRead)), { returnStored: true }),
    ];
  }

  /**
   * The route's Booked commit, items [cell <sk>…, appointment, call]: only while the appointment is
   * Pending with this event, before the route's deadline, and with every cell still this appointment's;
   * the cells are kept until the appointment's padded end.
   */
  bookedItems(row: AppointmentFields, batchHex: string, now: number): TransactItem[] {
    const bufferMs = row.bufferMinutes * 60_000;
    const cells = this.cellItems(row, (cell, e) => e.when(is.cellOf(e, row.appointmentId)).set('state', 'booked').set('expiresAt', expirySeconds(Date.parse(row.end) + bufferMs)), 'update');
    const a = new Expression();
    a.when(is.inState(a, AppointmentState.Pending)).when(a.eq('eventId', row.eventId)).when(is.beforeDeadline(a, now)).set('state', AppointmentState.Booked).set('bookedAt', iso(now)).set('updatedAt', iso(now));
    return [...cells, updateItem('appointment', this.tableName, appointmentKey(row.tenantId, batchHex, row.appointmentId), a), this.pointerItem(row, batchHex, AppointmentState.Booked, now)];
  }

  /**
   * The route's Failed commit, items [cell <sk>…, appointment, call]: the insert failed or its outcome is
   * unknown, so the appointment is not kept and its cells are let go at once (a retry may hold them again).
   * Only while Pending and before the deadline: until then no other hold can have taken its cells.
   */
  failedItems(row: AppointmentFields, batchHex: string, now: number): TransactItem[] {
    const a = new Expression();
    a.when(is.inState(a, AppointmentState.Pending)).when(is.beforeDeadline(a, now)).set('state', AppointmentState.Failed).set('updatedAt', iso(now));
    return [...this.releaseCells(row), updateItem('appointment', this.tableName, appointmentKey(row.tenantId, batchHex, row.appointmentId), a), this.pointerItem(row, batchHex, AppointmentState.Failed, now)];
  }

  /**
   * The settle job's abandon, items [appointment, call]: a Pending appointment whose route never committed
   * is Failed. Its cells are left alone: they expired at the deadline + grace, and another hold may have them.
   */
  abandonItems(row: AppointmentFields, batchHex: string, now: number): TransactItem[] {
    const a = new Expression();
    a.when(is.inState(a, AppointmentState.Pending)).set('state', AppointmentState.Failed).set('updatedAt', iso(now));
    return [updateItem('appointment', this.tableName, appointmentKey(row.tenantId, batchHex, row.appointmentId), a), this.pointerItem(row, batchHex, AppointmentState.Failed, now)];
  }

  /** A cancel, items [appointment, call]: Booked → Cancelling. The cells stay held until the calendar confirms the delete. */
  cancellingItems(row: AppointmentFields, batchHex: string, now: number): TransactItem[] {
    const a = new Expression();
    a.when(is.inState(a, AppointmentState.Booked)).set('state', AppointmentState.Cancelling).set('cancelledAt', iso(now)).set('updatedAt', iso(now));
    return [updateItem('appointment', this.tableName, appointmentKey(row.tenantId, batchHex, row.appointmentId), a, { returnStored: true }), this.pointerItem(row, batchHex, AppointmentState.Cancelling, now)];
  }

  /** The calendar confirmed the delete, items [cell <sk>…, appointment, call]: Cancelling → Cancelled, its cells let go. */
  cancelledItems(row: AppointmentFields, batchHex: string, now: number): TransactItem[] {
    const a = new Expression();
    a.when(is.inState(a, AppointmentState.Cancelling)).set('state', AppointmentState.Cancelled).set('updatedAt', iso(now));
    return [...this.releaseCells(row), updateItem('appointment', this.tableName, appointmentKey(row.tenantId, batchHex, row.appointmentId), a), this.pointerItem(row, batchHex, AppointmentState.Cancelled, now)];
  }

  /** The call's pointer follows its appointment's state (only if it still points at it: a later hold leaves it alone). */
  private pointerItem(row: AppointmentFields, batchHex: string, state: AppointmentState, now: number): TransactItem {
    const e = new Expression();
    e.when(is.pointsAt(e, row.appointmentId)).set('state', state).set('updatedAt', iso(now));
    return updateItem('call', this.tableName, callPointerKey(row.tenantId, batchHex, row.callId), e);
  }

  /** Deletes the appointment's cells, each only if still its own. */
  private releaseCells(row: AppointmentFields): TransactItem[] {
    return this.cellItems(row, (_cell, e) => e.when(is.cellOf(e, row.appointmentId)), 'delete');
  }

  private cellItems(row: AppointmentFields, build: (cell: number, e: Expression) => void, as: 'update' | 'delete'): TransactItem[] {
    return holdCells(Date.parse(row.start), Date.parse(row.end), row.bufferMinutes * 60_000).map((cell) => {
      const key = holdCellKey(row.tenantId, row.calendarId, cell);
      const e = new Expression();
      build(cell, e);
      if (as === 'update') return updateItem(`cell ${key.sk}`, this.tableName, key, e);
      return { name: `cell ${key.sk}`, Delete: { TableName: this.tableName, Key: key, ...e.build() } };
    });
  }

}
