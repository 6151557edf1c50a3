import { z } from 'zod';
import { defaultPolicy, defineKind } from '../jobs/index.ts';
import { e164 } from './schemas.ts';

/**
 * The calls job kinds, as data (their handlers are bound in dialer.ts, watchdog.ts and finaliser.ts).
 * Each runs on the `calls` queue under the job layer's default policy: DefaultBackoff, 10 attempts,
 * discarded + alert. None discards of its own accord: a call that cannot go on completes its contact.
 */

/** calls.dial: dials one round of a batch, a bounded number per run, inside its window and its tenant's limit. */
export const dialKind = defineKind({
  kind: 'calls.dial',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: z.object({ batchId: z.string().min(1), round: z.number().int().min(1) }),
  description: 'Dials a round of a batch: Calling + watchdog in one transaction, then the placer once',
});

/** calls.watchdog: ends a call whose result never came (Completed with TIMEOUT). */
export const watchdogKind = defineKind({
  kind: 'calls.watchdog',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  // callId: the call it watches; a job enqueued before calls had ids has none and is bound by its round alone.
  args: z.object({ batchId: z.string().min(1), contactNumber: e164, round: z.number().int().min(1), callId: z.string().min(1).max(200).optional() }),
  description: 'Ends a call still Calling after the call timeout, with TIMEOUT',
});

/** calls.finalise: one per batch and round; promotes retryable contacts and re-arms, or finalises. */
export const finaliseKind = defineKind({
  kind: 'calls.finalise',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: z.object({ batchId: z.string().min(1), round: z.number().int().min(1) }),
  description: 'Ends a round: promotes retryable contacts and schedules the next round, or finalises the batch',
});

export const callsKinds = [dialKind, watchdogKind, finaliseKind] as const;
