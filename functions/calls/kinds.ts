import * as z from 'zod';
import { defaultPolicy, defineKind } from '../jobs/index.ts';
import { importKind } from './imports/kind.ts';
import { pauseExpiryKind, startKind } from './control/kinds.ts';
import { suppressionImportKind } from './compliance/suppression-import-kind.ts';

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
 * A dial run's watchdog, the round's `seq`-th: its run dials list positions of one page from `pos`, at most
 * `count` of them, every call with a slot of shard `shard`. Which of them the run did dial is the batch's
 * to say when the watchdog runs (watchdog.ts): up to where the cursor stood when it closed itself, or up to
 * where the next watchdog (`seq + 1`) opened. `prevDialAt` is the round's latest dial before this one
 * opened (its predecessor's last), which that predecessor counts its call timeout from when this one
 * replaced it.
 */
export const runWatchdogArgs = z.object({
  batchId: z.string().min(1),
  round: z.number().int().min(1),
  seq: z.number().int().min(1),
  page: z.number().int().min(0),
  pos: z.number().int().min(0),
  count: z.number().int().min(1).max(500),
  shard: z.number().int().min(0).max(7),
  prevDialAt: z.string().optional(),
});
export type RunWatchdogArgs = z.infer<typeof runWatchdogArgs>;

/** calls.watchdog: ends the calls of a dial run whose results never came (Completed with TIMEOUT). */
export const watchdogKind = defineKind({
  kind: 'calls.watchdog',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  args: runWatchdogArgs,
  description: 'Ends the calls of a dial run still Calling after the call timeout, with TIMEOUT',
});

/**
 * A watchdog of one group dialled from the deferred list (compliance/dial-items.ts): its calls are not
 * consecutive list positions, so no run's watchdog covers them; it names each, with the slot shard they
 * hold and when they were dialled.
 */
export const deferredWatchdogArgs = z.object({
  batchId: z.string().min(1),
  round: z.number().int().min(1),
  shard: z.number().int().min(0).max(7),
  dialledAt: z.string(),
  calls: z.array(z.object({ page: z.number().int().min(0), pos: z.number().int().min(0), number: z.string().min(1) })).min(1).max(50),
});
export type DeferredWatchdogArgs = z.infer<typeof deferredWatchdogArgs>;

/** calls.deferred_watchdog: ends the calls of a deferred group whose results never came (TIMEOUT). */
export const deferredWatchdogKind = defineKind({
  kind: 'calls.deferred_watchdog',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 20,
  args: deferredWatchdogArgs,
  description: 'Ends the calls of a group dialled from the deferred list still Calling after the call timeout, with TIMEOUT',
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

export const callsKinds = [dialKind, watchdogKind, deferredWatchdogKind, finaliseKind, importKind, startKind, pauseExpiryKind, suppressionImportKind] as const;
