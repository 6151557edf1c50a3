import { handle, snooze } from '../../jobs/index.ts';
import type { JobHandler } from '../../jobs/index.ts';
import { CONTENTION_SNOOZE_MS } from '../backoff.ts';
import type { CallsDeps } from '../deps.ts';
import { BatchStatus } from '../model.ts';
import { decidePauseExpiry } from './batch-control.ts';
import { pauseExpiryKind, startKind } from './kinds.ts';
import { cancelPausedBatch, controlStateOf, startBatch } from './service.ts';

/** How long the pause expiry waits for a paused batch's last calls to end (their watchdogs end them) before it looks again. */
export const EXPIRY_CALLS_SNOOZE_MS = 15 * 60_000;

/**
 * calls.start at a batch's `startAt` (control/service.ts `startBatch`). A refused write with the batch as
 * it was read means another writer held it (contention: snooze); a batch that moved on (paused, rescheduled,
 * deleted) is read again, and the start does what that batch calls for (usually nothing).
 */
export function startHandler(deps: CallsDeps): JobHandler<{ batchId: string; seq: number; startAt: string }> {
  return handle(startKind, async (args, ctx) => {
    const batch = await deps.store.getBatch(args.batchId);
    if (!batch) return;
    const result = await startBatch(deps, batch, args, ctx.now());
    if (result === 'nothing' || result.written) return;
    if (result.reason === 'contention') throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the batch');
    // A condition: the batch changed between the read and the write (a pause, a reschedule, a delete): decide again from it.
    const current = await deps.store.getBatch(args.batchId);
    if (!current) return;
    const again = await startBatch(deps, current, args, ctx.now());
    if (again !== 'nothing' && !again.written) throw new Error(`the start of batch ${args.batchId} was refused twice: ${again.reason}`);
  });
}

/**
 * calls.pause_expiry, 30 days after a pause: cancels the batch if that pause is still in force
 * (decidePauseExpiry); resumed, paused again, finalised or deleted since → nothing.
 */
export function pauseExpiryHandler(deps: CallsDeps): JobHandler<{ batchId: string; seq: number; pausedAt: string }> {
  return handle(pauseExpiryKind, async (args, ctx) => {
    const batch = await deps.store.getBatch(args.batchId);
    if (!batch || batch.pauses !== args.seq) return;
    const now = ctx.now();
    const decision = decidePauseExpiry(controlStateOf(batch), Date.parse(args.pausedAt), now);
    if (decision.change === 'none') return;
    if (batch.nCalling > 0) throw snooze({ delayMs: EXPIRY_CALLS_SNOOZE_MS }, `${batch.nCalling} calls of the paused batch are still in progress`);
    const result = await cancelPausedBatch(deps, batch, args.pausedAt, now);
    if (result.written) return;
    if (result.reason === 'contention') throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the batch');
    const current = await deps.store.getBatch(args.batchId);
    // Resumed, finalised or deleted between the read and the write: the pause is over.
    if (!current || current.status !== BatchStatus.Paused || current.pausedAt !== args.pausedAt) return;
    throw new Error(`the cancel of batch ${args.batchId} was refused: it is still in the same pause`);
  });
}
