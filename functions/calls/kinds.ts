import { z } from 'zod';
import { defaultPolicy, defineKind } from '../jobs/index.ts';
import { e164 } from './schemas.ts';

/**
 * The calls job kinds, as data (their handlers are bound in dialer.ts, watchdog.ts and finaliser.ts).
 * calls.dial runs on the `dial` queue (it waits on the placer), the others on `calls`, under the job layer's default policy: DefaultBackoff, 10 attempts,
 * discarded + alert. None discards of its own accord: a call that cannot go on completes its contact.
 */

/** calls.dial: dials one round of a batch, a bounded number per run, inside its window and its tenant's limit. */
export const dialKind = defineKind({
  kind: 'calls.dial',
  queue: 'dial',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: z.object({ batchId: z.string().min(1), round: z.number().int().min(1) }),
  description: 'Dials a round of a batch: Calling + watchdog in one transaction, then the placer once',
});

/**
 * A dial run's watchdog: `count` positions of one page of the round's list from `pos`; it ends the calls
 * among them that the run placed (the contacts naming it) and that are still out after the call timeout.
 */
export const runWatchdogArgs = z.object({
  batchId: z.string().min(1),
  round: z.number().int().min(1),
  page: z.number().int().min(0),
  pos: z.number().int().min(0),
  count: z.number().int().min(1).max(500),
});
export type RunWatchdogArgs = z.infer<typeof runWatchdogArgs>;

/**
 * A watchdog of one call, as the dialer enqueued them before one watchdog covered a dial run: still run
 * (jobs enqueued then), never created. `callId`: the call it watches; one enqueued before calls had ids
 * has none and is bound by its round alone.
 */
export const callWatchdogArgs = z.object({ batchId: z.string().min(1), contactNumber: e164, round: z.number().int().min(1), callId: z.string().min(1).max(200).optional() });
export type CallWatchdogArgs = z.infer<typeof callWatchdogArgs>;

/** calls.watchdog: ends the calls of a dial run whose results never came (Completed with TIMEOUT). */
export const watchdogKind = defineKind({
  kind: 'calls.watchdog',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  args: z.union([runWatchdogArgs, callWatchdogArgs]),
  description: 'Ends the calls of a dial run still Calling after the call timeout, with TIMEOUT',
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
