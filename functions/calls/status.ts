import { NeverDialledCode } from './compliance/dial-items.ts';
import { retriedIn } from './control/batch-control.ts';

const SUPPRESSED = NeverDialledCode.suppressed;
import { BatchStatus, ContactStatus, isDialled, parseCallId } from './model.ts';
import type { BatchRow, ContactRow } from './model.ts';

/** A contact as `GET /v1/batches/{id}/contacts` shows it. */
export interface ContactState {
  status: ContactStatus;
  /** The normalised code of its latest completed call (none while a call is out). */
  code: string | null;
  /** Rounds it has been dialled in, the call in progress included. */
  attempts: number;
}

/**
 * A contact's status, derived: only its completions are stored (one item, written once per round by the
 * call's completion), so Calling and RetryEligible are read off the batch (docs/calls.md, "States"):
 *
 * ```
 *  item completed in the batch's round r ........................................ Completed
 *    (… and the round's finaliser has passed it, with a retryable code and rounds left: RetryEligible)
 *  batch Finalised ................................................ Completed (or Queued: no item)
 *  its position in round r's list is behind the dial cursor (dialled in r) ............. Calling
 *  item of round r − 1 with a retryable code (promoted: in round r's list, not dialled yet) . RetryEligible
 *  item of an earlier round .................................................... Completed
 *  no item ........................................................................ Queued
 * ```
 *
 * `dialledThisRound` is whether the batch's dial cursor has passed the contact's position in round r's
 * list (the caller knows that position: round 1's is the upload order, a later round's from its list
 * pages). The counters on the batch row move at the same points (the dial, the completion, each finaliser
 * step), so the derived statuses add up to them. Pure.
 */
export function contactState(batch: BatchRow, item: ContactRow | undefined, dialledThisRound: boolean): ContactState {
  const code = item?.code ?? null;
  const attempts = item?.attempts ?? 0;
  // A suppressed contact is never dialled again in the batch (its code is not retryable).
  if (item?.code === SUPPRESSED) return { status: ContactStatus.Suppressed, code, attempts };
  if (item && item.round >= batch.round) {
    return { status: promotedByFinaliser(batch, item) ? ContactStatus.RetryEligible : ContactStatus.Completed, code, attempts };
  }
  if (batch.status === BatchStatus.Finalised) return { status: item ? ContactStatus.Completed : ContactStatus.Queued, code, attempts };
  if (dialledThisRound) return { status: ContactStatus.Calling, code: null, attempts: batch.round };
  if (item) {
    const promoted = item.round === batch.round - 1 && item.code !== undefined && retriedIn(batch.retryOn, item.code);
    return { status: promoted ? ContactStatus.RetryEligible : ContactStatus.Completed, code, attempts };
  }
  return { status: ContactStatus.Queued, code, attempts };
}

/**
 * A contact completed in the round the finaliser is closing, whose step has passed it: with a retryable
 * code and rounds left, it is in the next round's list (and counted RetryEligible) before the batch moves
 * to that round. Its position in the round's list is in its call id.
 */
function promotedByFinaliser(batch: BatchRow, item: ContactRow): boolean {
  if (!inRound(batch) || batch.round >= batch.maxAttempts || !batch.dialComplete || batch.nCalling !== 0) return false;
  if (item.code === undefined || !retriedIn(batch.retryOn, item.code) || item.callId === undefined) return false;
  const at = parseCallId(batch.batchId, item.contactNumber, item.callId);
  return at !== undefined && at.round === batch.round && isDialled({ dialPage: batch.finPage, dialPos: batch.finPos }, at.page, at.pos);
}

/** Whether a contact at list position (page, pos) of the batch's current round has been dialled in it: the dial cursor has passed it. */
export const dialledInRound = (batch: BatchRow, page: number, pos: number): boolean =>
  (inRound(batch) || batch.status === BatchStatus.Deleted) && isDialled(batch, page, pos);

/** In progress in its round, or paused in it (a pause keeps the round's calls and cursors). */
const inRound = (batch: BatchRow): boolean => batch.status === BatchStatus.InProgress || batch.status === BatchStatus.Paused;
