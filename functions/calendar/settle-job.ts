import { discard, handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import { refusedCodes } from '../platform/dynamo.ts';
import type { BookingDeps } from './booking-deps.ts';
import { appointmentIds, AppointmentState } from './booking-store.ts';
import type { AppointmentRow } from './booking-store.ts';
import { SupplierDiscardReason, supplierInvokeKind } from './kinds.ts';
import type { SettleArgs } from './kinds.ts';
import { settleFromHold, settleInCalendar } from './settle.ts';
import type { Keeping, SettleStep } from './settle.ts';

/**
 * `supplier.invoke` with op `calendar.settle`: one insert's event, kept if and only if the route committed
 * Booked with it, deleted otherwise (settle.ts has the decision; this runs it against the store and the
 * calendar). Written in the hold's transaction, due at the route's deadline plus the grace, and in a
 * cancel's transaction for the kept event it cancels.
 *
 * ```
 *  the appointment ── Booked with this event ───────────────► done
 *                  ── Pending, before deadline + grace ──────► snooze until then
 *                  ── Pending, later ────────────────────────► abandon (Pending → Failed), decide again
 *                  ── Failed / Cancelling / Cancelled / gone ─► read the event, delete it (settle.ts)
 *  done on a Cancelling appointment ─────────────────────────► Cancelled, its cells let go
 * ```
 */

/** What the settle job needs of the booking's deps. */
export type SettleDeps = Pick<BookingDeps, 'store' | 'provider' | 'loadCalendar' | 'wallClock' | 'logger'> & {
  /** Each calendar request's time, wall ms (the kind's 40 s timeout holds a token exchange and two of them). @default SETTLE_REQUEST_MS */
  requestMs?: number;
};

export const SETTLE_REQUEST_MS = 15_000;

/** The settle job's handler. */
export function settleHandler(deps: SettleDeps): JobHandler<SettleArgs> {
  return handle(supplierInvokeKind, async (args, ctx) => {
    const step = await settle(deps, args, ctx);
    switch (step.type) {
      case 'done':
        ctx.logger.info('calendar settle done', { appointmentId: args.appointmentId, eventId: args.eventId, why: step.why });
        return;
      case 'wait':
        throw snooze({ until: step.until }, step.why);
      case 'retry':
        throw new Error(step.error);
      case 'discard':
        throw discard(step.reason, step.error);
      case 'abandon':
      case 'read':
      case 'delete':
        throw new Error(`settle ended on an intermediate step: ${step.type}`);
      default:
        return step satisfies never;
    }
  });
}

/** One run: the store's side first (kept? abandon a pending hold), then the calendar's. */
async function settle(deps: SettleDeps, args: SettleArgs, ctx: JobContext): Promise<SettleStep> {
  const deadline = Date.parse(args.deadline);
  const batchHex = appointmentIds.batchHexOf(args.appointmentId);
  // Two looks at most: the second after abandoning a pending hold (or losing that write to the route's commit).
  for (let look = 0; look < 2; look++) {
    const row = batchHex === undefined ? undefined : await deps.store.getAppointment(args.tenantId, args.appointmentId);
    const step = settleFromHold(keepingOf(row, args.eventId), deadline, ctx.now());
    if (step.type !== 'abandon') return step.type === 'read' ? inCalendar(deps, args, row, ctx) : step;
    const abandoned = await deps.store.transact(deps.store.abandonItems(row!, batchHex!, ctx.now()));
    if (!abandoned.committed) deps.logger.info('abandon not committed; reading the appointment again', { appointmentId: args.appointmentId, refused: refusedCodes(abandoned) });
  }
  return { type: 'retry', error: 'the appointment kept changing while being settled' };
}

/** What the store says about this insert. */
function keepingOf(row: AppointmentRow | undefined, eventId: string): Keeping {
  if (!row || row.eventId !== eventId) return { state: 'not_kept' };
  switch (row.state) {
    case AppointmentState.Booked:
      return { state: 'kept' };
    case AppointmentState.Pending:
      return { state: 'pending' };
    case AppointmentState.Failed:
    case AppointmentState.Cancelling:
    case AppointmentState.Cancelled:
      return { state: 'not_kept' };
    default:
      return row.state satisfies never;
  }
}

/** The calendar's side: read the event, delete it if it is there; a Cancelling appointment becomes Cancelled once it is gone. */
async function inCalendar(deps: SettleDeps, args: SettleArgs, row: AppointmentRow | undefined, ctx: JobContext): Promise<SettleStep> {
  const calendar = await deps.loadCalendar(args.tenantId, args.calendarId);
  if (!calendar?.access) {
    return { type: 'discard', reason: SupplierDiscardReason.credentials_refused, error: `calendar ${args.calendarId} is gone or has no credentials: event ${args.eventId} may stay in it` };
  }
  const requestMs = deps.requestMs ?? SETTLE_REQUEST_MS;
  const step = await settleInCalendar({
    provider: deps.provider,
    calendar: calendar.access,
    eventId: args.eventId,
    routeDeadline: Date.parse(args.deadline),
    now: () => ctx.now(),
    requestDeadline: () => deps.wallClock.now() + requestMs,
  });
  if (step.type === 'done' && row?.state === AppointmentState.Cancelling && row.eventId === args.eventId) {
    const batchHex = appointmentIds.batchHexOf(args.appointmentId)!;
    const cancelled = await deps.store.transact(deps.store.cancelledItems(row, batchHex, ctx.now()));
    if (!cancelled.committed) deps.logger.info('Cancelled not committed (someone else wrote it)', { appointmentId: args.appointmentId, refused: refusedCodes(cancelled) });
  }
  return step;
}
