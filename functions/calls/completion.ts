import { CallsEvent } from './ports.ts';
import { artefactsForEvent } from './artefacts.ts';
import type { TransactItem } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import type { Classification } from './classify.ts';
import type { CallsDeps } from './deps.ts';
import { finaliseKind } from './kinds.ts';
import { BatchStatus, isDialled, jobIds, parseCallId } from './model.ts';
import type { BatchRow, CallPosition, CompletionSource, ContactRow } from './model.ts';
import { refusedCodes } from '../platform/dynamo.ts';
import type { TransactCancelled } from '../platform/dynamo.ts';
import type { CompletionWrite } from './store.ts';
import { prepareOptOut } from './compliance/opt-out.ts';
import type { OptOut } from './compliance/opt-out.ts';

/**
 * The one completion path: a call's result (the intake), its watchdog's TIMEOUT and a placer failure's
 * INTERNAL_ERROR all end a call through {@link completeCall}, in ONE transaction:
 *
 * ```
 *  item (name)     what it writes                                    condition, when
 *  contact         its completion of round r: Completed, the code,  no completion in round r yet (no item,
 *                  round r, attempts r, the callId                   or one of an earlier round)
 *  tenant          the slot shard the callId names: active − 1
 *  batch           nCalling − 1, nCompleted + 1, byCode[code] + 1   InProgress, round r, the call's list
 *                                                                    position behind the dial cursor, and
 *                                                                    "not the last call" / "the last call"
 *  event <id>      call.completed
 *  job <id>        its webhook.fanout job
 *  job <id>        calls.finalise:<batch>:<r>                        only in the last-call variant
 * ```
 *
 * The call's id says which round and which list position (page, pos) it was dialled at
 * (`call_<hash>.r<round>.p<page>.<pos>`, model.ts `callIdFor`), and its hash binds both to this batch and
 * contact: an id that does not parse, or whose hash does not match, is ignored before anything is written.
 * The dial wrote no contact item, so the conditions are what makes a result belong to its call:
 *
 * - a re-sent or late result of the same call finds the contact completed in round r (contact);
 * - a result of an earlier round finds the batch in a later round (batch);
 * - a position the dialler has not reached, or a deleted or finished batch, is refused by the batch row.
 *
 * Nothing cancels the call's watchdog: it covers its dial run's positions, and finds this one completed
 * when it runs (calls/watchdog.ts), so a result costs no write to the jobs table beside its event's fanout.
 *
 * No read first: the batch's settings come from a per-container cache, and a refused condition returns
 * the stored item, which says what to do — ignore (a duplicate, an earlier round's call, a batch deleted),
 * or write once more with what it revealed ("this is the round's last call", which adds the finaliser).
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
  /** The call to complete: the one the dialer gave the placer. Its round and list position are in it. */
  callId: string;
  classification: Classification;
  source: CompletionSource;
  report?: CompletionWrite['report'];
  /** The call's artefacts, as the result carried them (the intake only): stored on the attempt, the latest on the contact. */
  artefacts?: CompletionWrite['artefacts'];
  /** The contact's externalId, as the placer echoed it: `call.completed` carries it. */
  externalId?: string;
  /** When the call's dial committed, as the placer echoed it. */
  placedAt?: string;
  /**
   * The caller read that this call is the round's last in progress (a watchdog, from the batch it read):
   * the first transaction is the last-call variant. A wrong hint is refused and replanned like any plan.
   */
  last?: boolean;
  /**
   * The person asked not to be called again (the intake's `optOut: true`): the number joins the tenant's
   * suppression list in this completion's transaction, or alone when the result is ignored
   * (compliance/opt-out.ts).
   */
  optOut?: boolean;
}

/** What one attempt writes: the call's round and list position, and whether it is the round's last call. */
export interface CompletionPlan extends CallPosition {
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
 * batch). A contact refused has a completion of the call's round already (a duplicate) or of a later one;
 * a batch refused is gone, deleted, finished, in another round, short of the call's position, or says the
 * plan's last-call guess was wrong (the one case worth another transaction).
 */
export function judgeCompletionCancel(cancelled: TransactCancelled, plan: CompletionPlan): CancelVerdict {
  if (cancelled.contention) return { type: 'contention' };
  const { contact, batch } = cancelled.refused;
  if (contact?.code === 'ConditionalCheckFailed') {
    const row = contact.item as ContactRow | undefined;
    if (row && row.round === plan.round) return { type: 'ignored', reason: 'not_calling' };
    if (row && row.round > plan.round) return { type: 'ignored', reason: 'another_call' };
    return { type: 'unexplained' };
  }
  if (batch?.code === 'ConditionalCheckFailed') {
    const row = batch.item as BatchRow | undefined;
    if (!row) return { type: 'ignored', reason: 'no_such_batch' };
    if (row.status === BatchStatus.Deleted) return { type: 'ignored', reason: 'batch_deleted' };
    // A paused batch's calls in flight still complete (store.ts `inProgressRound`).
    if (row.status !== BatchStatus.InProgress && row.status !== BatchStatus.Paused) return { type: 'ignored', reason: 'batch_not_in_progress' };
    if (row.round !== plan.round) return { type: 'ignored', reason: 'another_call' };
    if (!isDialled(row, plan.page, plan.pos)) return { type: 'ignored', reason: 'not_dialled' };
    const last = row.dialComplete && row.nCalling === 1;
    if (last !== plan.last) return { type: 'replan', plan: { ...plan, last } };
  }
  return { type: 'unexplained' };
}

/** At most this many transactions per completion: the plan, and its last-call guess corrected (a completion committing in between may turn it once more). */
const MAX_TRANSACTIONS = 3;

/**
 * Completes a call (see the module comment). Answers `unavailable` with nothing written when another
 * writer held an item (a DynamoDB TransactionConflict) and the contact is still Calling: the caller
 * tries again later — the AI handler on a 503, the job layer for a job.
 */
export async function completeCall(deps: CallsDeps, batch: BatchConfig, request: CompletionRequest): Promise<CompletionOutcome> {
  const now = deps.clock.now();
  const { code, retryable } = request.classification;
  // The call's round and position, from its id; one not made for this contact of this batch is no call of ours.
  const at = parseCallId(batch.batchId, request.contactNumber, request.callId);
  if (!at) return { outcome: 'ignored', reason: 'another_call' };
  const plan: CompletionPlan = { round: at.round, page: at.page, pos: at.pos, last: request.last === true };

  // The event is the call's whatever the plan (a replan only learns whether this is the round's last call):
  // published once, for every transaction this completion tries, and abandoned unless one commits.
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
        ...(request.externalId !== undefined ? { externalId: request.externalId } : {}),
        // The links and at most 1 KB of summary, never `data`: the event waits in every subscribed endpoint's list.
        ...(request.artefacts ? artefactsForEvent(request.artefacts) : {}),
      },
    },
    now,
  );
  const optOut = request.optOut
    ? await prepareOptOut(deps, { tenantId: batch.tenantId, batchId: batch.batchId, number: request.contactNumber, callId: request.callId, externalId: request.externalId }, now)
    : undefined;
  const outcome = await attempts(deps, batch, request, plan, event, now, optOut);
  if (outcome.outcome !== 'applied') await event.abandon();
  if (optOut && outcome.outcome === 'ignored') {
    // The result changes nothing, but what the person said stands: the opt-out is recorded on its own.
    const recorded = await optOut.alone();
    if (recorded === 'contention' || recorded === 'unexplained') return { outcome: 'unavailable', reason: recorded };
  } else if (optOut && outcome.outcome === 'unavailable') await optOut.abandon();
  return outcome;
}

/** The transactions of one completion (see {@link completeCall}): the common case, then what a refusal revealed. */
async function attempts(
  deps: CallsDeps,
  batch: BatchConfig,
  request: CompletionRequest,
  first: CompletionPlan,
  event: { items: readonly TransactItem[]; afterCommit(): Promise<void> },
  now: number,
  optOut?: OptOut,
): Promise<CompletionOutcome> {
  const { store, jobs, logger } = deps;
  const { code, retryable } = request.classification;
  let plan = first;
  // Whether the opt-out's items ride in the completion's transaction (dropped once its marker says it was recorded before).
  let withOptOut = optOut !== undefined;
  for (let transactions = 1; transactions <= MAX_TRANSACTIONS + 1; transactions++) {
    const finaliser = plan.last ? jobs.prepare(finaliseKind, { batchId: batch.batchId, round: plan.round }, { id: jobIds.finalise(batch.batchId, plan.round) }) : undefined;
    const items = [
      ...store.completionItems({
        batchId: batch.batchId,
        tenantId: batch.tenantId,
        contactNumber: request.contactNumber,
        round: plan.round,
        page: plan.page,
        pos: plan.pos,
        callId: request.callId,
        last: plan.last,
        code,
        retryable,
        source: request.source,
        ...(request.report ? { report: request.report } : {}),
        ...(request.artefacts ? { artefacts: request.artefacts } : {}),
        ...(request.placedAt !== undefined ? { placedAt: request.placedAt } : {}),
        now,
      }),
      ...event.items,
      ...(finaliser ? [finaliser.item] : []),
      ...(withOptOut && optOut ? optOut.items : []),
    ];
    const result = await store.transact(items);
    if (result.committed) {
      await event.afterCommit();
      if (withOptOut) await optOut?.afterCommit();
      else await optOut?.abandon();
      await jobs.afterCommit(finaliser ? [finaliser] : []);
      return { outcome: 'applied', code, retryable, finaliserEnqueued: plan.last, transactions };
    }
    if (withOptOut && result.refused['opt-out']?.code === 'ConditionalCheckFailed' && !result.refused['contact'] && !result.refused['batch']) {
      // This call's opt-out was recorded before (its result came first ignored, then applies): complete without it.
      withOptOut = false;
      continue;
    }
    const verdict = judgeCompletionCancel(result, plan);
    switch (verdict.type) {
      case 'ignored':
        return { outcome: 'ignored', reason: verdict.reason };
      case 'replan':
        plan = verdict.plan;
        continue;
      case 'contention':
        return resolveContention(deps, batch.batchId, request.contactNumber, plan.round);
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
 * contact. One consistent read decides honestly: completed in the call's round or later (a duplicate lost
 * the race, or the call is an earlier round's) → ignored; not yet → unavailable, nothing written.
 */
async function resolveContention(deps: CallsDeps, batchId: string, contactNumber: string, round: number): Promise<CompletionOutcome> {
  const contact = await deps.store.getContact(batchId, contactNumber);
  if (contact && contact.round === round) return { outcome: 'ignored', reason: 'not_calling' };
  if (contact && contact.round > round) return { outcome: 'ignored', reason: 'another_call' };
  return { outcome: 'unavailable', reason: 'contention' };
}
