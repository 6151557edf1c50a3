import { clockMs } from '../platform/clock.ts';
import { describeRefusals } from '../platform/dynamo.ts';
import type { TransactCancelled } from '../platform/dynamo.ts';
import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import { CallCode, isRetryableCode } from './codes.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { dialKind, finaliseKind, watchdogKind } from './kinds.ts';
import { BatchStatus, callIdFor, jobIds } from './model.ts';
import type { BatchRow, ListPage } from './model.ts';
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

/** What a cancelled dial means, from its refused items by name (contact, tenant, batch; the watchdog's job). */
export type DialVerdict = 'contention' | 'batch_changed' | 'no_slot' | 'contact_not_dialable' | 'unexplained';

/** Reads a cancelled dial's reasons. Pure. */
export function judgeDialCancel(cancelled: TransactCancelled): DialVerdict {
  if (cancelled.contention) return 'contention';
  const { contact, tenant, batch } = cancelled.refused;
  // A batch that changed (deleted, cursor moved) makes the rest moot.
  if (batch?.code === 'ConditionalCheckFailed') return 'batch_changed';
  if (tenant?.code === 'ConditionalCheckFailed') return tenant.item ? 'no_slot' : 'unexplained';
  if (contact?.code === 'ConditionalCheckFailed') return 'contact_not_dialable';
  return 'unexplained';
}

const isDialling = (batch: BatchRow | undefined, round: number): batch is BatchRow =>
  batch !== undefined && batch.round === round && (batch.status === BatchStatus.Pending || batch.status === BatchStatus.InProgress) && !batch.dialComplete;

const configOf = (batch: BatchRow): BatchConfig => ({
  batchId: batch.batchId,
  tenantId: batch.tenantId,
  minConversationDurationSeconds: batch.minConversationDurationSeconds,
  round: batch.round,
});

/** The cursor's next position in a round's list. */
const advance = (batch: BatchRow, pageLength: number) =>
  batch.dialPos + 1 < pageLength ? { page: batch.dialPage, pos: batch.dialPos + 1 } : { page: batch.dialPage + 1, pos: 0 };

/**
 * calls.dial: dials one round of a batch, in list order (docs/calls.md, "The dialer").
 *
 * Each dial is ONE transaction — the contact becomes Calling, the tenant's slot is taken (a conditional
 * counter), the batch counts the call and moves its cursor, the watchdog job is enqueued — and only
 * then is the placer asked, once. A placer failure completes the contact with INTERNAL_ERROR through the
 * same path as a result. Outside the batch's calling window the job snoozes until it opens; with no free
 * slot it snoozes briefly; neither spends an attempt. A run dials at most `dialsPerRun` contacts (and
 * stops starting dials after {@link DIAL_RUN_BUDGET_MS}), then snoozes to continue at once: the cursor
 * on the batch says where.
 */
export function dialHandler(deps: CallsDeps): JobHandler<{ batchId: string; round: number }> {
  return handle(dialKind, async (args, ctx) => {
    const { config } = deps;
    if (!config.placerUrl || !config.callbackUrl) throw new Error('calls.dial needs CALL_PLACER_URL and CALL_WEBHOOK_URL');
    const batch = await deps.store.getBatch(args.batchId);
    if (!isDialling(batch, args.round)) return;
    // Each call is placed before the next contact is dialled, so the placer sees the list's order.
    await dialRun(deps, batch, ctx, (contactNumber, callId, dialled) => place(deps, dialled, contactNumber, callId, { url: config.placerUrl!, callbackUrl: config.callbackUrl! }, ctx));
  });
}

async function dialRun(deps: CallsDeps, start: BatchRow, ctx: JobContext, onDialled: (contactNumber: string, callId: string, batch: BatchRow) => Promise<void>): Promise<void> {
  const { store, jobs, config } = deps;
  const started = performance.now();
  const pages = new Map<number, ListPage>();
  let batch = start;
  for (let dials = 0; ; ) {
    if (batch.dialComplete || batch.dialPage >= batch.listPages) return;
    const now = ctx.now();
    const opening = batch.callingWindow ? nextWindowOpening(batch.callingWindow, now) : null;
    if (opening !== null) throw snooze({ until: opening }, 'outside the calling window');
    if (dials >= config.dialsPerRun || performance.now() - started > DIAL_RUN_BUDGET_MS) throw snooze({ delayMs: 0 }, `dialled ${dials} this run; continuing`);

    const page = pages.get(batch.dialPage) ?? (await store.getListPage(batch.batchId, batch.round, batch.dialPage));
    const contactNumber = page?.numbers[batch.dialPos];
    if (!page || !contactNumber) throw new Error(`round ${batch.round} of batch ${batch.batchId} has no list entry at page ${batch.dialPage}, position ${batch.dialPos}`);
    pages.set(batch.dialPage, page);
    const next = advance(batch, page.numbers.length);

    const callId = callIdFor(batch.batchId, contactNumber, batch.round);
    const watchdog = jobs.prepare(
      watchdogKind,
      { batchId: batch.batchId, contactNumber, round: batch.round, callId },
      { id: jobIds.watchdog(batch.batchId, contactNumber, batch.round), at: now + config.callTimeoutSeconds * 1000 },
    );
    const result = await store.transact([
      ...store.dialItems({ batch, contactNumber, page: batch.dialPage, pos: batch.dialPos, next, callId, watchdogJobId: watchdog.id, now }),
      watchdog.item,
    ]);
    if (result.committed) {
      batch = { ...batch, status: BatchStatus.InProgress, dialPage: next.page, dialPos: next.pos, dialComplete: next.page >= batch.listPages, nCalling: batch.nCalling + 1 };
      await jobs.afterCommit([watchdog]);
      await onDialled(contactNumber, callId, batch);
      dials++;
      continue;
    }
    const verdict = judgeDialCancel(result);
    switch (verdict) {
      case 'contention':
        throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
      case 'no_slot':
        throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the tenant is at its concurrency limit');
      case 'batch_changed': {
        const current = await store.getBatch(batch.batchId);
        if (!isDialling(current, batch.round)) return; // deleted, or the round moved on: nothing left to dial
        throw new Error(`the dial cursor of batch ${batch.batchId} moved under this run`);
      }
      case 'contact_not_dialable': {
        const skipped = await skip(deps, batch, contactNumber, next, now);
        if (!skipped) return;
        batch = skipped;
        continue;
      }
      case 'unexplained':
        throw new Error(`dial of ${contactNumber} in batch ${batch.batchId} cancelled: ${describeRefusals(result)}`);
      default:
        return verdict satisfies never;
    }
  }
}

/**
 * Moves the cursor past a listed contact that cannot be dialled (it should not happen: a list holds only
 * contacts that are Queued, or promoted for its round). When the list ends there with no call in
 * progress, no result will ever enqueue the finaliser, so this write does.
 */
async function skip(deps: CallsDeps, batch: BatchRow, contactNumber: string, next: { page: number; pos: number }, now: number): Promise<BatchRow | undefined> {
  const { store, jobs, logger } = deps;
  logger.error('a listed contact cannot be dialled; skipping it', { batchId: batch.batchId, round: batch.round, contactNumber });
  const end = next.page >= batch.listPages;
  const skipped: BatchRow = { ...batch, dialPage: next.page, dialPos: next.pos, dialComplete: end };
  const first = await store.transact([store.skipItem(batch, batch.dialPage, batch.dialPos, next, now, end ? 'calls_in_progress' : undefined)]);
  if (first.committed) return skipped;
  const stored = first.refused.batch?.item as BatchRow | undefined;
  if (end && stored && stored.nCalling === 0 && isDialling(stored, batch.round) && stored.dialPage === batch.dialPage && stored.dialPos === batch.dialPos) {
    const finaliser = jobs.prepare(finaliseKind, { batchId: batch.batchId, round: batch.round }, { id: jobIds.finalise(batch.batchId, batch.round) });
    const second = await store.transact([store.skipItem(batch, batch.dialPage, batch.dialPos, next, now, 'round_done'), finaliser.item]);
    if (second.committed) {
      await jobs.afterCommit([finaliser]);
      return skipped;
    }
  }
  if (!isDialling(stored, batch.round)) return undefined;
  throw new Error(`could not skip ${contactNumber} in batch ${batch.batchId}: the batch changed`);
}

/**
 * Asks the placer for the call, once. A refusal completes the contact with INTERNAL_ERROR through the
 * completion path; if even that cannot be written now, the call's watchdog ends it later (TIMEOUT).
 */
async function place(deps: CallsDeps, batch: BatchRow, contactNumber: string, callId: string, placer: { url: string; callbackUrl: string }, ctx: JobContext): Promise<void> {
  const { logger } = deps;
  const placed = await placeCall(
    placer.url,
    { batchId: batch.batchId, contactNumber, round: batch.round, callId, callbackUrl: placer.callbackUrl },
    { timeoutMs: deps.config.placerTimeoutMs, signal: ctx.signal },
  );
  if (placed.accepted) return;
  logger.warn('the placer refused a call; completing it with INTERNAL_ERROR', { batchId: batch.batchId, contactNumber, reason: placed.reason });
  try {
    const outcome = await completeCall(deps, configOf(batch), {
      batchId: batch.batchId,
      contactNumber,
      round: batch.round,
      callId,
      classification: { code: CallCode.internalError, retryable: isRetryableCode(CallCode.internalError) },
      source: 'placer',
    });
    if (outcome.outcome === 'unavailable') logger.warn('INTERNAL_ERROR not recorded now; the watchdog will end the call', { batchId: batch.batchId, contactNumber });
  } catch (error) {
    logger.warn('INTERNAL_ERROR not recorded; the watchdog will end the call', { batchId: batch.batchId, contactNumber, error: String(error) });
  }
}
