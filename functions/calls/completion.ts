import { CallsEvent } from './ports.ts';
import type { BatchConfig } from './batch-config.ts';
import type { Classification } from './classify.ts';
import type { CallsDeps } from './deps.ts';
import { finaliseKind } from './kinds.ts';
import { BatchStatus, ContactStatus, jobIds } from './model.ts';
import type { BatchRow, CompletionSource, ContactRow } from './model.ts';
import { refusedCodes } from '../platform/dynamo.ts';
import type { TransactCancelled } from '../platform/dynamo.ts';
import type { CompletionWrite } from './store.ts';

/**
 * The one completion path: a call's result (the intake), its watchdog's TIMEOUT and a placer failure's
 * INTERNAL_ERROR all end a call through {@link completeCall}, in ONE transaction:
 *
 * ```
 *  item (name)     what it writes                                    condition, when
 *  contact         Calling in round r → Completed, normalised code  Calling, round r, this callId
 *  tenant          active − 1: the slot is released
 *  batch           nCalling − 1, nCompleted + 1, byCode[code] + 1   InProgress, round r, and "not the last
 *                                                                    call" / "the last call"
 *  event <id>      call.completed
 *  job <id>        its webhook.fanout job
 *  job <id>        calls.finalise:<batch>:<r>                        only in the last-call variant
 * ```
 *
 * Nothing cancels the call's watchdog: it covers its dial run's calls, and finds this one Completed when
 * it runs (calls/watchdog.ts), so a result costs no write to the jobs table beside its event's fanout.
 *
 * No read first: the batch's settings come from a per-container cache, and a refused condition returns
 * the stored item, which says what to do — ignore (not Calling, another call, batch deleted), or write
 * once more with what it revealed (the round of this same call; "this is the round's last call", which
 * adds the finaliser).
 *
 * The callId condition is what makes a result belong to its call: a contact is called again in later
 * rounds, so "Calling" alone would let a re-sent or late result of round r complete round r + 1's call.
 */

/** Why a result changed nothing. */
export type IgnoredReason = 'no_such_batch' | 'not_dialled' | 'not_calling' | 'another_call' | 'batch_deleted' | 'batch_not_in_progress';

export type CompletionOutcome =
  | { outcome: 'applied'; code: string; retryable: boolean; finaliserEnqueued: boolean; transactions: number }
  | { outcome: 'ignored'; reason: IgnoredReason }
  | { outcome: 'unavailable'; reason: 'contention' | 'unexplained' };

/** A call to complete, and how. */
export interface CompletionRequest {
  batchId: string;
  contactNumber: string;
  /** The round of the call, when the caller knows it (watchdog, placer); the intake uses the cached hint. */
  round?: number;
  /**
   * The call to complete: the one the dialer gave the placer. Undefined only for a watchdog enqueued
   * before calls had ids, which its round binds instead.
   */
  callId: string | undefined;
  classification: Classification;
  source: CompletionSource;
  report?: CompletionWrite['report'];
  /**
   * The caller read that this call is the round's last in progress (a watchdog, from the batch it read):
   * the first transaction is the last-call variant. A wrong hint is refused and replanned like any plan.
   */
  last?: boolean;
}

/** What one attempt writes: which round, and whether it is the round's last call. */
export interface CompletionPlan {
  round: number;
  last: boolean;
}

/** What a cancelled completion means. Pure: decided from each refused item's reason and its stored item alone. */
export type CancelVerdict =
  | { type: 'ignored'; reason: IgnoredReason }
  | { type: 'replan'; plan: CompletionPlan }
  | { type: 'contention' }
  | { type: 'unexplained' };

/**
 * Reads a cancelled completion by its items' names ({@link CallsStore.completionItems}: contact, tenant,
 * batch). `call` is the completion's call: its id, and whether its round is known (a job names it; the
 * intake only has a hint, so the same call found in another round is a replan).
 */
export function judgeCompletionCancel(cancelled: TransactCancelled, plan: CompletionPlan, call: { callId: string | undefined; roundKnown: boolean }): CancelVerdict {
  if (cancelled.contention) return { type: 'contention' };
  const { contact, batch } = cancelled.refused;
  if (contact?.code === 'ConditionalCheckFailed') {
    const row = contact.item as ContactRow | undefined;
    if (!row) return { type: 'ignored', reason: 'not_dialled' };
    if (row.status !== ContactStatus.Calling) return { type: 'ignored', reason: 'not_calling' };
    if (call.callId !== undefined && row.callId !== call.callId) return { type: 'ignored', reason: 'another_call' };
    if (row.round !== plan.round) return call.roundKnown ? { type: 'ignored', reason: 'another_call' } : { type: 'replan', plan: { ...plan, round: row.round } };
    return { type: 'unexplained' };
  }
  if (batch?.code === 'ConditionalCheckFailed') {
    const row = batch.item as BatchRow | undefined;
    if (!row) return { type: 'ignored', reason: 'no_such_batch' };
    if (row.status === BatchStatus.Deleted) return { type: 'ignored', reason: 'batch_deleted' };
    if (row.status !== BatchStatus.InProgress) return { type: 'ignored', reason: 'batch_not_in_progress' };
    const last = row.dialComplete && row.nCalling === 1;
    if (row.round === plan.round && last !== plan.last) return { type: 'replan', plan: { ...plan, last } };
  }
  return { type: 'unexplained' };
}

/** At most this many transactions per completion: the common case, the contact's real round, the last-call variant. */
const MAX_TRANSACTIONS = 3;

/**
 * Completes a call (see the module comment). Answers `unavailable` with nothing written when another
 * writer held an item (a DynamoDB TransactionConflict) and the contact is still Calling: the caller
 * tries again later — the AI handler on a 503, the job layer for a job.
 */
export async function completeCall(deps: CallsDeps, batch: BatchConfig, request: CompletionRequest): Promise<CompletionOutcome> {
  const { store, jobs, clock, logger } = deps;
  const now = clock.now();
  const { code, retryable } = request.classification;
  let plan: CompletionPlan = { round: request.round ?? batch.round, last: request.last === true };

  for (let transactions = 1; transactions <= MAX_TRANSACTIONS; transactions++) {
    const event = await deps.ports.events.prepare(
      {
        tenantId: batch.tenantId,
        type: CallsEvent.callCompleted,
        data: {
          batchId: batch.batchId,
          contactNumber: request.contactNumber,
          round: plan.round,
          code,
          retryable,
          source: request.source,
          ...(request.callId !== undefined ? { callId: request.callId } : {}),
          ...(request.report ? { durationSeconds: request.report.durationSeconds } : {}),
        },
      },
      now,
    );
    const finaliser = plan.last ? jobs.prepare(finaliseKind, { batchId: batch.batchId, round: plan.round }, { id: jobIds.finalise(batch.batchId, plan.round) }) : undefined;
    const items = [
      ...store.completionItems({
        batchId: batch.batchId,
        tenantId: batch.tenantId,
        contactNumber: request.contactNumber,
        round: plan.round,
        callId: request.callId,
        last: plan.last,
        code,
        retryable,
        source: request.source,
        ...(request.report ? { report: request.report } : {}),
        now,
      }),
      ...event.items,
      ...(finaliser ? [finaliser.item] : []),
    ];
    const result = await store.transact(items);
    if (result.committed) {
      deps.batches.noteRound(batch.batchId, plan.round);
      await event.afterCommit();
      await jobs.afterCommit(finaliser ? [finaliser] : []);
      return { outcome: 'applied', code, retryable, finaliserEnqueued: plan.last, transactions };
    }
    const verdict = judgeCompletionCancel(result, plan, { callId: request.callId, roundKnown: request.round !== undefined });
    switch (verdict.type) {
      case 'ignored':
        return { outcome: 'ignored', reason: verdict.reason };
      case 'replan':
        plan = verdict.plan;
        continue;
      case 'contention':
        return resolveContention(deps, batch.batchId, request.contactNumber, request);
      case 'unexplained':
        logger.error('completion cancelled for no reason the store explains; nothing was written', {
          batchId: batch.batchId,
          contactNumber: request.contactNumber,
          plan,
          refused: refusedCodes(result),
        });
        return { outcome: 'unavailable', reason: 'unexplained' };
      default:
        return verdict satisfies never;
    }
  }
  logger.error('completion re-planned more often than the plan can change', { batchId: batch.batchId, contactNumber: request.contactNumber, plan });
  return { outcome: 'unavailable', reason: 'unexplained' };
}

/**
 * DynamoDB cancelled the transaction because another one held an item: it says nothing about the
 * contact. One consistent read decides honestly: no longer Calling (a duplicate lost the race), or
 * Calling with another call → ignored; still Calling with this call → unavailable, nothing written.
 */
async function resolveContention(deps: CallsDeps, batchId: string, contactNumber: string, request: CompletionRequest): Promise<CompletionOutcome> {
  const contact = await deps.store.getContact(batchId, contactNumber);
  if (!contact) return { outcome: 'ignored', reason: 'not_dialled' };
  if (contact.status !== ContactStatus.Calling) return { outcome: 'ignored', reason: 'not_calling' };
  if (request.callId !== undefined && contact.callId !== request.callId) return { outcome: 'ignored', reason: 'another_call' };
  // A job knows its call's round: a contact Calling in another round is another call.
  if (request.round !== undefined && contact.round !== request.round) return { outcome: 'ignored', reason: 'another_call' };
  return { outcome: 'unavailable', reason: 'contention' };
}
