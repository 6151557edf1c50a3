import { clockMs, iso } from '../platform/clock.ts';
import { describeRefusals } from '../platform/dynamo.ts';
import type { TransactCancelled } from '../platform/dynamo.ts';
import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import { CallCode, isRetryableCode } from './codes.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { dialKind, watchdogKind } from './kinds.ts';
import type { RunWatchdogArgs } from './kinds.ts';
import { BatchStatus, callIdFor, callWithSlot, jobIds } from './model.ts';
import type { SlotRow } from './model.ts';
import type { BatchRow, ContactDataRow, ListPage } from './model.ts';
import { placeCall } from './placer.ts';
import { nextWindowOpening } from './window.ts';

/** A run stops starting dials after this much real time, so it ends well inside its job timeout. */
export const DIAL_RUN_BUDGET_MS = 20_000;

/** How long the dialer waits when another transaction held the tenant or the batch. */
export const CONTENTION_SNOOZE_MS = 1_000;

/**
 * The least real time between two looks for a free slot. A look costs real requests whatever the clock's
 * speed: under a scaled clock (TIME_SCALE) a 3 s wait would otherwise become a tight loop.
 */
export const MIN_SLOT_POLL_REAL_MS = 250;

/** What a cancelled dial means, from its refused items by name (tenant, batch; the watchdog's job). */
export type DialVerdict = 'contention' | 'batch_changed' | 'no_slot' | 'unexplained';

/** Reads a cancelled dial's reasons. Pure. */
export function judgeDialCancel(cancelled: TransactCancelled): DialVerdict {
  if (cancelled.contention) return 'contention';
  const { tenant, batch } = cancelled.refused;
  // A batch that changed (deleted, cursor moved, its watchdog closed) makes the rest moot.
  if (batch?.code === 'ConditionalCheckFailed') return 'batch_changed';
  if (tenant?.code === 'ConditionalCheckFailed') return tenant.item ? 'no_slot' : 'unexplained';
  return 'unexplained';
}

const isDialling = (batch: BatchRow | undefined, round: number): batch is BatchRow =>
  batch !== undefined && batch.round === round && (batch.status === BatchStatus.Pending || batch.status === BatchStatus.InProgress) && !batch.dialComplete;

const configOf = (batch: BatchRow): BatchConfig => ({
  batchId: batch.batchId,
  tenantId: batch.tenantId,
  minConversationDurationSeconds: batch.minConversationDurationSeconds,
});

/** The cursor's position `by` contacts on in a round's list (a group never crosses a page). */
const advance = (batch: BatchRow, pageLength: number, by = 1) =>
  batch.dialPos + by < pageLength ? { page: batch.dialPage, pos: batch.dialPos + by } : { page: batch.dialPage + 1, pos: 0 };

/**
 * calls.dial: dials one round of a batch, in list order (docs/calls.md, "The dialer").
 *
 * Each dial is ONE transaction over a group of up to `dialGroup` consecutive contacts of a list page — the
 * tenant's slot shard gives a slot per call (a conditional counter), the batch counts the calls and moves
 * its cursor past them; no contact is written (a position behind the cursor is a call in progress, and
 * its call id names the round and position: model.ts `callIdFor`). The run's first dial also enqueues the
 * run's watchdog, which covers the list positions the run may dial, and names it open on the batch; a
 * later dial of the run requires it still open (a watchdog closes itself when it runs, so a run that
 * outlasts its watchdog's due time dials on under a new one instead of under one that has looked already)
 * — and only then is the placer asked, once a call, in list order. Every call of a watchdog holds a slot of
 * the same shard (its args name it, so it can release them), so a run whose shard is full while another
 * has room dials on under a new watchdog too. A placer failure completes the call with INTERNAL_ERROR
 * through the same path as a result. Outside the batch's calling window the job snoozes until it opens;
 * with no free slot it snoozes briefly; neither spends an attempt. A run dials at most `dialsPerRun`
 * contacts (and stops starting dials after {@link DIAL_RUN_BUDGET_MS}), then snoozes to continue at once:
 * the cursor on the batch says where.
 */
export function dialHandler(deps: CallsDeps): JobHandler<{ batchId: string; round: number }> {
  return handle(dialKind, async (args, ctx) => {
    const { config } = deps;
    if (!config.placerUrl || !config.callbackUrl) throw new Error('calls.dial needs CALL_PLACER_URL and CALL_WEBHOOK_URL');
    const batch = await deps.store.getBatch(args.batchId);
    if (!isDialling(batch, args.round)) return;
    // Each group's calls are placed in list order before the next group is dialled, so the placer sees the list's order.
    const started = performance.now();
    await dialRun(deps, batch, ctx, async (contactNumber, callId, dialled, dialledAt, data) => {
      // A call of the group whose time is up before it was placed (a run that outlasted its watchdog's due
      // time: a stalled machine, a scaled clock) is its watchdog's to end with TIMEOUT, if it has not
      // already: placing it now would only make a call whose result is ignored.
      if (ctx.now() - dialledAt >= config.callTimeoutSeconds * 1000) {
        deps.logger.warn('a dialled call timed out before it was placed; its watchdog ends it', { batchId: dialled.batchId, contactNumber });
        return;
      }
      await place(deps, dialled, { contactNumber, callId, dialledAt, data }, { url: config.placerUrl!, callbackUrl: config.callbackUrl! }, ctx, performance.now() - started > config.placeBudgetMs);
    });
  });
}

async function dialRun(
  deps: CallsDeps,
  start: BatchRow,
  ctx: JobContext,
  onDialled: (contactNumber: string, callId: string, batch: BatchRow, dialledAt: number, data: ContactDataRow | undefined) => Promise<void>,
): Promise<void> {
  const { store, jobs, config } = deps;
  const started = performance.now();
  const pages = new Map<number, ListPage>();
  let batch = start;
  // The run's watchdog, created with its first dial: it covers the list positions this run may dial.
  let watchdog: RunWatchdogArgs | undefined;
  // Where the tenant has free slots, as this run last saw it: read once, kept up to date by its own dials
  // and by the shard a refused dial returns. The dial's condition, not this view, enforces the limit.
  let slots: SlotRow[] | undefined;
  for (let dials = 0; ; ) {
    if (batch.dialComplete || batch.dialPage >= batch.listPages) return;
    const now = ctx.now();
    const opening = batch.callingWindow ? nextWindowOpening(batch.callingWindow, now) : null;
    if (opening !== null) throw snooze({ until: opening }, 'outside the calling window');
    if (dials >= config.dialsPerRun || performance.now() - started > DIAL_RUN_BUDGET_MS) throw snooze({ delayMs: 0 }, `dialled ${dials} this run; continuing`);
    if (watchdog && !covers(watchdog, batch.dialPage, batch.dialPos)) throw snooze({ delayMs: 0 }, `dialled ${dials} this run, as far as its watchdog covers; continuing`);

    const page = pages.get(batch.dialPage) ?? (await store.getListPage(batch.batchId, batch.round, batch.dialPage));
    if (!page || page.numbers[batch.dialPos] === undefined) throw new Error(`round ${batch.round} of batch ${batch.batchId} has no list entry at page ${batch.dialPage}, position ${batch.dialPos}`);
    pages.set(batch.dialPage, page);

    slots ??= await store.getSlots(batch.tenantId);
    if (slots.length === 0) throw new Error(`tenant ${batch.tenantId} has no slot shards: PUT /v1/tenants/${batch.tenantId} again to split its limit`);
    // The run's watchdog's shard is full but another has room: dial on there, under a watchdog of its own.
    if (watchdog && room(slots, watchdog.shard) === 0 && freestSlot(slots)) watchdog = undefined;
    // A new watchdog takes the freest shard; among shards with as much room, a drawn one, so that runs which
    // find the shards alike (an idle tenant) do not all take shard 0 and its partition's writes.
    const slot = watchdog ? slots.find((s) => s.shard === watchdog!.shard) : freestSlot(slots, deps.rng.int(0, slots.length - 1));
    if (!slot || slot.limit - slot.active <= 0) throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the tenant is at its concurrency limit');
    const block: RunWatchdogArgs = watchdog ?? {
      batchId: batch.batchId,
      round: batch.round,
      seq: (batch.watchdogs ?? 0) + 1,
      page: batch.dialPage,
      pos: batch.dialPos,
      count: Math.min(config.dialsPerRun, page.numbers.length - batch.dialPos),
      shard: slot.shard,
      ...(batch.lastDialAt ? { prevDialAt: batch.lastDialAt } : {}),
    };
    // The group: the next contacts of this page, as many as the group size, the run's budget, its
    // watchdog's cover and the slot shard's free slots allow.
    const size = Math.max(1, Math.min(config.dialGroup, config.dialsPerRun - dials, block.pos + block.count - batch.dialPos, page.numbers.length - batch.dialPos, slot.limit - slot.active));
    const group = page.numbers.slice(batch.dialPos, batch.dialPos + size).map((contactNumber, i) => ({
      contactNumber,
      callId: callWithSlot(callIdFor(batch.batchId, contactNumber, { round: batch.round, page: batch.dialPage, pos: batch.dialPos + i }), slot.shard),
    }));
    // The group's data (externalId, variables) for the placer, read before the dial commits: a read that
    // fails fails the run with nothing dialled, never a call dialled and not placed.
    const data = batch.hasContactData ? await store.getContactData(batch.batchId, group.map((c) => c.contactNumber)) : undefined;
    const next = advance(batch, page.numbers.length, group.length);
    const watchdogId = jobIds.watchdog(block.batchId, block.round, block.seq);
    // Due once the run's last call may have timed out: a run starts no dial after DIAL_RUN_BUDGET_MS.
    const created = watchdog ? undefined : jobs.prepare(watchdogKind, block, { id: watchdogId, at: now + config.callTimeoutSeconds * 1000 + DIAL_RUN_BUDGET_MS });
    const result = await store.transact([
      ...store.dialItems({
        batch,
        count: group.length,
        page: batch.dialPage,
        pos: batch.dialPos,
        next,
        slot: slot.shard,
        slotLimit: slot.limit,
        watchdogJobId: watchdogId,
        ...(created ? { opensWatchdog: block.seq } : {}),
        now,
      }),
      ...(created ? [created.item] : []),
    ]);
    if (result.committed) {
      slot.active += group.length;
      batch = {
        ...batch,
        status: BatchStatus.InProgress,
        dialPage: next.page,
        dialPos: next.pos,
        dialComplete: next.page >= batch.listPages,
        nCalling: batch.nCalling + group.length,
        lastDialAt: iso(now),
        openWatchdog: watchdogId,
        watchdogs: block.seq,
      };
      if (created) {
        watchdog = block;
        await jobs.afterCommit([created]);
      }
      // Placed in list order, each once, after the commit (a crash in between leaves them to the watchdog).
      for (const dialled of group) await onDialled(dialled.contactNumber, dialled.callId, batch, now, data?.get(dialled.contactNumber));
      dials += group.length;
      continue;
    }
    const verdict = judgeDialCancel(result);
    switch (verdict) {
      case 'contention':
        throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
      case 'no_slot': {
        // That shard is full as stored: another shard may still have room.
        const stored = result.refused.tenant?.item as SlotRow | undefined;
        if (stored) slots = slots.map((s) => (s.shard === stored.shard ? stored : s));
        if (freestSlot(slots)) continue;
        throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the tenant is at its concurrency limit');
      }
      case 'batch_changed': {
        const stored = result.refused.batch?.item as BatchRow | undefined;
        if (watchdog && watchdogClosed(stored, batch, watchdogId)) {
          // The run's watchdog ran (its due time came while this run went on) and closed itself: it may
          // have looked already, so no further call may name it. Dial on under a watchdog of its own.
          watchdog = undefined;
          batch = stored!;
          continue;
        }
        const current = await store.getBatch(batch.batchId);
        if (!isDialling(current, batch.round)) return; // deleted, or the round moved on: nothing left to dial
        throw new Error(`the dial cursor of batch ${batch.batchId} moved under this run`);
      }
      case 'unexplained':
        throw new Error(`dial of ${group.map((c) => c.contactNumber).join(', ')} in batch ${batch.batchId} cancelled: ${describeRefusals(result)}`);
      default:
        return verdict satisfies never;
    }
  }
}

/** Whether a refused dial found the batch as the run left it but for its watchdog, which closed itself. */
const watchdogClosed = (stored: BatchRow | undefined, batch: BatchRow, watchdogId: string): boolean =>
  isDialling(stored, batch.round) && stored.dialPage === batch.dialPage && stored.dialPos === batch.dialPos && stored.openWatchdog !== watchdogId;

/** The slot shard with the most free slots as last seen, if any has one; ties go to the first from index `from` on (wrapping). */
const freestSlot = (slots: readonly SlotRow[], from = 0): SlotRow | undefined =>
  [...slots.slice(from), ...slots.slice(0, from)].reduce<SlotRow | undefined>((best, s) => (s.limit - s.active > 0 && (!best || s.limit - s.active > best.limit - best.active) ? s : best), undefined);

/** Free slots of one shard as last seen. */
const room = (slots: readonly SlotRow[], shard: number): number => {
  const slot = slots.find((s) => s.shard === shard);
  return slot ? Math.max(0, slot.limit - slot.active) : 0;
};

/** Whether a run's watchdog covers a list position (its page, from its position, `count` of them). */
const covers = (block: RunWatchdogArgs, page: number, pos: number): boolean => page === block.page && pos >= block.pos && pos < block.pos + block.count;

/**
 * Asks the placer for the call, once. A refusal completes the call with INTERNAL_ERROR through the
 * completion path; if even that cannot be written now, the call's watchdog ends it later (TIMEOUT).
 */
async function place(
  deps: CallsDeps,
  batch: BatchRow,
  call: { contactNumber: string; callId: string; dialledAt: number; data: ContactDataRow | undefined },
  placer: { url: string; callbackUrl: string },
  ctx: JobContext,
  outOfTime: boolean,
): Promise<void> {
  const { contactNumber, callId, data } = call;
  const { logger } = deps;
  if (outOfTime) {
    logger.warn('no time left in the dial run to place a call; completing it with INTERNAL_ERROR', { batchId: batch.batchId, contactNumber });
  } else {
    const placed = await placeCall(
      placer.url,
      {
        batchId: batch.batchId,
        contactNumber,
        round: batch.round,
        callId,
        callbackUrl: placer.callbackUrl,
        placedAt: iso(call.dialledAt),
        ...(data?.externalId !== undefined ? { externalId: data.externalId } : {}),
        ...(data?.variables !== undefined ? { variables: data.variables } : {}),
      },
      { timeoutMs: deps.config.placerTimeoutMs, signal: ctx.signal },
    );
    if (placed.accepted) return;
    logger.warn('the placer refused a call; completing it with INTERNAL_ERROR', { batchId: batch.batchId, contactNumber, reason: placed.reason });
  }
  try {
    const outcome = await completeCall(deps, configOf(batch), {
      batchId: batch.batchId,
      contactNumber,
      callId,
      classification: { code: CallCode.internalError, retryable: isRetryableCode(CallCode.internalError) },
      source: 'placer',
    });
    if (outcome.outcome === 'unavailable') logger.warn('INTERNAL_ERROR not recorded now; the watchdog will end the call', { batchId: batch.batchId, contactNumber });
  } catch (error) {
    logger.warn('INTERNAL_ERROR not recorded; the watchdog will end the call', { batchId: batch.batchId, contactNumber, error: String(error) });
  }
}
