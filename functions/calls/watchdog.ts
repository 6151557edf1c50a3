import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import { CallCode } from './codes.ts';
import { retriedIn } from './control/batch-control.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { CONTENTION_SNOOZE_MS } from './backoff.ts';
import { runWatchdogArgs, watchdogKind } from './kinds.ts';
import type { RunWatchdogArgs } from './kinds.ts';
import { BatchStatus, callIdFor, callWithSlot, jobIds } from './model.ts';
import type { BatchRow, ContactRow } from './model.ts';

/**
 * calls.watchdog: one per dial run, due once the run's last call may have timed out. No contact item
 * says a call is out (the dial writes none), so it finds its run's calls from the batch: the list
 * positions its run dialled (below), those of them with no completion in the round yet (their contacts'
 * items, read), each ended with TIMEOUT through the same completion path as a result — whose conditions
 * (no completion in the round yet, the position dialled, the round in progress) still decide.
 *
 * **Which positions its run dialled.** A run's dials are consecutive list positions from the watchdog's
 * `pos`, within its block (`count` of one page), and each requires the batch to name the watchdog open
 * (`openWatchdog`); the run's first dial opened it and counted it (`watchdogs`, so this is the round's
 * `seq`-th). It stops being open in one of two ways, and the run has dialled nothing under it since:
 *
 * ```
 *  the batch names it open when it runs ──► it closes itself (condition: still open, cursor as read):
 *                                           its run dialled up to the cursor as read
 *  it is no longer open ──► watchdog seq + 1 exists: it opened at the cursor right after this run's last
 *                           dial (a later run, or this run on another shard, or after it was closed),
 *                           so this run dialled up to where that one starts
 *                         ─► none: it closed itself on an earlier run and nothing was dialled since:
 *                           up to the cursor
 * ```
 *
 * (always capped at the block's end). **How old its calls are.** Its run's last dial is the batch's
 * `lastDialAt` while nothing was dialled after it (the first and last cases), or the time the next
 * watchdog's opening read there (`prevDialAt` in its args); every call of the run is at least that old.
 * While a position still has no completion and that dial is under the call timeout old (a run that
 * outlasted the due time: a scaled clock, a stalled machine) it snoozes until it is. Every call of a
 * run holds a slot of one shard (its args'), which the TIMEOUT releases.
 *
 * Nothing cancels a watchdog: a result leaves it to find its call completed.
 */
export function watchdogHandler(deps: CallsDeps): JobHandler<RunWatchdogArgs> {
  return handle(watchdogKind, async (args, ctx) => {
    const config = await deps.batches.get(args.batchId);
    if (!config) return;
    const stored = await deps.store.getBatch(args.batchId);
    // A round moved on has every call completed; a deleted batch ignores its calls' ends.
    // A paused batch's calls in flight still end (a pause stops dials only).
    if (!stored || (stored.status !== BatchStatus.InProgress && stored.status !== BatchStatus.Paused) || stored.round !== args.round) return;
    const run = await dialledByItsRun(deps, stored, args);
    if (run.state === 'contention') throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the batch');
    if (run.state === 'moved') throw snooze({ delayMs: 0 }, 'the batch changed while the watchdog closed itself; looking again');
    if (run.end <= args.pos) return;

    const page = await deps.store.getListPage(args.batchId, args.round, args.page);
    const numbers = page?.numbers.slice(args.pos, run.end) ?? [];
    const contacts = numbers.length > 0 ? await deps.store.getContacts(args.batchId, numbers) : new Map<string, ContactRow>();
    // Positions the run deferred rather than dialled have marks: their calls, once placed from the deferred
    // list, are their own group watchdog's (deferred-watchdog.ts).
    const marks = (stored.deferrals ?? 0) > 0 && numbers.length > 0 ? await deps.store.positionMarks(args.batchId, args.round, args.page, args.pos, run.end - 1) : undefined;
    const out = numbers.flatMap((contactNumber, i) => {
      const contact = contacts.get(contactNumber);
      if (marks?.has(args.pos + i)) return [];
      return contact && contact.round >= args.round ? [] : [{ contactNumber, pos: args.pos + i }];
    });
    if (out.length === 0) return;
    // (A batch dialled before dial times were kept has none: the watchdog's own due time is the bound.)
    const due = run.lastDialAt === undefined ? ctx.now() : Date.parse(run.lastDialAt) + deps.config.callTimeoutSeconds * 1000;
    if (due > ctx.now()) throw snooze({ until: due }, 'calls of this run not yet timed out');

    await timeOutAll(
      deps,
      config,
      stored,
      out.map((call) => ({ contactNumber: call.contactNumber, callId: callWithSlot(callIdFor(args.batchId, call.contactNumber, { round: args.round, page: args.page, pos: call.pos }), args.shard) })),
      ctx,
    );
  });
}

/** The positions a watchdog's run dialled: from its `pos` up to `end` (exclusive) on its page, and when its last dial was. */
type RunExtent = { state: 'known'; end: number; lastDialAt: string | undefined } | { state: 'contention' } | { state: 'moved' };

/**
 * Where a watchdog's run stopped dialling (see the handler's comment), closing the watchdog first when the
 * batch still names it open and its cursor can still reach a position it covers: after that commits no
 * dial names it, so the cursor as read is final.
 */
async function dialledByItsRun(deps: CallsDeps, batch: BatchRow, args: RunWatchdogArgs): Promise<RunExtent> {
  const id = jobIds.watchdog(args.batchId, args.round, args.seq);
  const blockEnd = args.pos + args.count;
  const upToCursor = batch.dialPage > args.page ? blockEnd : Math.min(blockEnd, batch.dialPos);
  if (batch.openWatchdog === id) {
    if (cursorMayReach(batch, args)) {
      const result = await deps.store.transact([deps.store.closeWatchdogItem(batch, id)]);
      if (!result.committed) return result.contention ? { state: 'contention' } : { state: 'moved' };
    }
    return { state: 'known', end: upToCursor, lastDialAt: batch.lastDialAt };
  }
  const next = await deps.jobs.get(jobIds.watchdog(args.batchId, args.round, args.seq + 1));
  const successor = next ? runWatchdogArgs.safeParse(next.args) : undefined;
  if (successor?.success) {
    const end = successor.data.page > args.page ? blockEnd : Math.min(blockEnd, successor.data.pos);
    return { state: 'known', end, lastDialAt: successor.data.prevDialAt };
  }
  return { state: 'known', end: upToCursor, lastDialAt: batch.lastDialAt };
}

/** Whether the batch may still dial, in the watchdog's round, a list position the watchdog covers. */
const cursorMayReach = (batch: BatchRow, block: RunWatchdogArgs): boolean =>
  (batch.status === BatchStatus.Pending || batch.status === BatchStatus.InProgress) &&
  batch.round === block.round &&
  !batch.dialComplete &&
  batch.dialPage === block.page &&
  batch.dialPos < block.pos + block.count;

/**
 * Ends each call with TIMEOUT, in order. Calls in progress in the round as read before the contacts: once
 * fully dialled, it only goes down; while it says the call being ended is the round's last, its completion
 * is planned as the last call at once (a refusal replans as ever). Snoozes when another transaction held an item.
 */
export async function timeOutAll(deps: CallsDeps, config: BatchConfig, stored: BatchRow, calls: readonly { contactNumber: string; callId: string }[], ctx: JobContext): Promise<void> {
  let callingAtMost = stored.dialComplete ? stored.nCalling : undefined;
  let contended = false;
  for (const call of calls) {
    const outcome = await timeOut(deps, config, { ...call, last: callingAtMost === 1 }, ctx);
    if (outcome === 'contention') contended = true;
    if (outcome === 'done' && callingAtMost !== undefined) callingAtMost--;
  }
  if (contended) throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
}

/** Ends one call with TIMEOUT; `contention` when another transaction held an item (the caller snoozes and looks again). */
export async function timeOut(deps: CallsDeps, batch: BatchConfig, call: { contactNumber: string; callId: string; last?: boolean }, ctx: JobContext): Promise<'done' | 'contention'> {
  const outcome = await completeCall(deps, batch, {
    batchId: batch.batchId,
    contactNumber: call.contactNumber,
    callId: call.callId,
    ...(call.last ? { last: true } : {}),
    classification: { code: CallCode.timeout, retryable: retriedIn(batch.retryOn, CallCode.timeout) },
    source: 'watchdog',
  });
  switch (outcome.outcome) {
    case 'applied':
      ctx.logger.info('call timed out', { batchId: batch.batchId, contactNumber: call.contactNumber, callId: call.callId });
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
