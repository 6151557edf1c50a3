import * as z from 'zod';
import { defaultPolicy, defineKind } from '../../jobs/index.ts';

/** Campaign control's job kinds, as data (their handlers: control/jobs.ts), apart so calls/kinds.ts lists them without the handlers' imports. */

/**
 * calls.start: a Scheduled batch's start at its `startAt` (one per schedule: the batch's n-th, `seq`). It
 * starts the batch only if the batch still has this `startAt`; a start that fires into a rescheduled,
 * deleted or already started batch does nothing, and into a paused one moves what resume returns it to.
 */
export const startKind = defineKind({
  kind: 'calls.start',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  args: z.object({ batchId: z.string().min(1), seq: z.number().int().min(1), startAt: z.string().min(1) }),
  description: 'Starts a Scheduled batch at its startAt: Pending, with its round-1 dialer, in one transaction',
});

/** calls.pause_expiry: the batch's `seq`-th pause, 30 days on: cancels the batch if that pause is still in force. */
export const pauseExpiryKind = defineKind({
  kind: 'calls.pause_expiry',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  args: z.object({ batchId: z.string().min(1), seq: z.number().int().min(1), pausedAt: z.string().min(1) }),
  description: 'Cancels a batch paused for 30 days (batch.cancelled), if the same pause is still in force',
});
