import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import { CallCode, isRetryableCode } from './codes.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { CONTENTION_SNOOZE_MS } from './dialer.ts';
import { watchdogKind } from './kinds.ts';
import type { CallWatchdogArgs, RunWatchdogArgs } from './kinds.ts';
import { BatchStatus, baseCallId, callIdFor, ContactStatus, jobIds } from './model.ts';
import type { BatchRow, ContactRow } from './model.ts';

/**
 * calls.watchdog: one per dial run, due once the run's last call may have timed out. It reads the list
 * positions it covers and their contacts, and ends with TIMEOUT each call that is still Calling, names
 * this watchdog (so it was placed by this run: a later run's call at a position this one also covers
 * names its own) and was dialled at least the call timeout ago, through the same completion path as a
 * result — which still requires the contact to be Calling in this round **with this call's callId**, so a
 * call that ended meanwhile, or a later round's call, is never touched. A call of the run not yet due
 * (under a scaled clock a run may outlast the slack) makes it snooze until that call is due.
 *
 * Before it reads, it closes itself to its run (the batch names the watchdog a run may still dial under;
 * a run's later dials require it): a run that outlasts the due time (a stalled machine, a scaled clock)
 * dials on under a new watchdog instead of under one that has looked already and may have finished.
 *
 * Nothing cancels a watchdog: a result leaves it to find its calls Completed. (Watchdogs of one call,
 * enqueued before one covered a run, still run: {@link callWatchdog}.)
 */
export function watchdogHandler(deps: CallsDeps): JobHandler<RunWatchdogArgs | CallWatchdogArgs> {
  return handle(watchdogKind, async (args, ctx) => {
    if ('contactNumber' in args) return callWatchdog(deps, args, ctx);
    const batch = await deps.batches.get(args.batchId);
    if (!batch) return;
    const id = jobIds.watchdog(args.batchId, args.round, args.page, args.pos);
    // First close this watchdog to its run, if the run may still dial under it: only then are the contacts
    // read below every call that will ever name it (a run that outlasts this due time dials on under a new one).
    const closed = await closeToItsRun(deps, args, id);
    if (closed.state === 'contention') throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the batch');
    // Calls in progress in the round as read before the contacts: once fully dialled, it only goes down.
    // While it says the call being ended is the round's last, its completion is planned as the last call at
    // once (a refusal replans as ever), sparing the cancelled transaction of "not the last call" first.
    const stored = closed.batch;
    let callingAtMost = stored && stored.status === BatchStatus.InProgress && stored.round === args.round && stored.dialComplete ? stored.nCalling : undefined;
    const page = await deps.store.getListPage(args.batchId, args.round, args.page);
    const numbers = page?.numbers.slice(args.pos, args.pos + args.count) ?? [];
    const contacts = numbers.length > 0 ? await deps.store.getContacts(args.batchId, numbers) : new Map<string, ContactRow>();
    const timeoutMs = deps.config.callTimeoutSeconds * 1000;
    const now = ctx.now();
    let wakeAt: number | undefined;
    let contended = false;
    for (const contactNumber of numbers) {
      const contact = contacts.get(contactNumber);
      // The call this run placed (its id names the slot shard it holds, which its completion releases).
      const callId = contact?.callId;
      if (!contact || !callId || contact.status !== ContactStatus.Calling || contact.round !== args.round || baseCallId(callId) !== callIdFor(args.batchId, contactNumber, args.round) || contact.watchdogJobId !== id) continue;
      const due = Date.parse(contact.dialledAt ?? '') + timeoutMs;
      if (due > now) {
        wakeAt = Math.max(wakeAt ?? 0, due);
        continue;
      }
      const outcome = await timeOut(deps, batch, { contactNumber, round: args.round, callId, last: callingAtMost === 1 }, ctx);
      if (outcome === 'contention') contended = true;
      if (outcome === 'done' && callingAtMost !== undefined) callingAtMost--;
    }
    if (contended) throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
    if (wakeAt !== undefined) throw snooze({ until: wakeAt }, 'calls of this run not yet timed out');
  });
}

/**
 * Makes sure no dial names watchdog `id` from now on: if the batch still names it open (its run's later
 * dials require that) and its dial cursor can still reach a position it covers (a dial is conditional on
 * the cursor, which only moves on), one conditional write removes it. `contention` when another
 * transaction held the batch (the caller snoozes and looks again).
 */
async function closeToItsRun(deps: CallsDeps, args: RunWatchdogArgs, id: string): Promise<{ state: 'closed' | 'contention'; batch: BatchRow | undefined }> {
  const stored = await deps.store.getBatch(args.batchId);
  if (stored?.openWatchdog !== id || !cursorMayReach(stored, args)) return { state: 'closed', batch: stored };
  const result = await deps.store.transact([deps.store.closeWatchdogItem(args.batchId, id)]);
  if (result.committed) return { state: 'closed', batch: stored };
  if (result.contention) return { state: 'contention', batch: undefined };
  // Refused: the batch names another watchdog now (a later run opened its own), or is gone. Either way closed.
  return { state: 'closed', batch: undefined };
}

/** Whether the batch may still dial, in the watchdog's round, a list position the watchdog covers. */
const cursorMayReach = (batch: BatchRow, block: RunWatchdogArgs): boolean =>
  (batch.status === BatchStatus.Pending || batch.status === BatchStatus.InProgress) &&
  batch.round === block.round &&
  !batch.dialComplete &&
  batch.dialPage === block.page &&
  batch.dialPos < block.pos + block.count;

/** Ends one call with TIMEOUT; `contention` when another transaction held an item (the caller snoozes and looks again). */
async function timeOut(
  deps: CallsDeps,
  batch: BatchConfig,
  call: { contactNumber: string; round: number; callId: string | undefined; last?: boolean },
  ctx: JobContext,
): Promise<'done' | 'contention'> {
  const outcome = await completeCall(deps, batch, {
    batchId: batch.batchId,
    contactNumber: call.contactNumber,
    round: call.round,
    callId: call.callId,
    ...(call.last ? { last: true } : {}),
    classification: { code: CallCode.timeout, retryable: isRetryableCode(CallCode.timeout) },
    source: 'watchdog',
  });
  switch (outcome.outcome) {
    case 'applied':
      ctx.logger.info('call timed out', { batchId: batch.batchId, contactNumber: call.contactNumber, round: call.round });
      return 'done';
    case 'ignored':
      return 'done';
    case 'unavailable':
      if (outcome.reason === 'contention') return 'contention';
      throw new Error(`TIMEOUT for ${call.contactNumber} in batch ${batch.batchId} could not be recorded`);
    default:
      return outcome satisfies never;
  }
}

/**
 * A watchdog of one call (enqueued before one covered a dial run): a contact still Calling with the call
 * it watches (its callId, of its round) is completed with TIMEOUT; anything else is a no-op.
 */
async function callWatchdog(deps: CallsDeps, args: CallWatchdogArgs, ctx: JobContext): Promise<void> {
  const batch = await deps.batches.get(args.batchId);
  if (!batch) return;
  if ((await timeOut(deps, batch, { contactNumber: args.contactNumber, round: args.round, callId: args.callId }, ctx)) === 'contention') {
    throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
  }
}
