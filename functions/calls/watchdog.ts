import { handle, snooze } from '../jobs/index.ts';
import type { JobHandler } from '../jobs/index.ts';
import { CallCode, isRetryableCode } from './codes.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { CONTENTION_SNOOZE_MS } from './dialer.ts';
import { watchdogKind } from './kinds.ts';

/**
 * calls.watchdog: due at dial time + the call timeout. A contact still Calling with the call it watches
 * (its callId, of its round) is completed with TIMEOUT through the same path as a result; anything else
 * means the result came — or the contact is on a later round's call, which is not this watchdog's — and
 * the watchdog completes as a no-op. (A result normally cancels it first.)
 */
export function watchdogHandler(deps: CallsDeps): JobHandler<{ batchId: string; contactNumber: string; round: number; callId?: string | undefined }> {
  return handle(watchdogKind, async (args, ctx) => {
    const batch = await deps.batches.get(args.batchId);
    if (!batch) return;
    const outcome = await completeCall(deps, batch, {
      batchId: args.batchId,
      contactNumber: args.contactNumber,
      round: args.round,
      callId: args.callId,
      classification: { code: CallCode.timeout, retryable: isRetryableCode(CallCode.timeout) },
      source: 'watchdog',
    });
    switch (outcome.outcome) {
      case 'applied':
        ctx.logger.info('call timed out', { batchId: args.batchId, contactNumber: args.contactNumber, round: args.round });
        return;
      case 'ignored':
        return;
      case 'unavailable':
        if (outcome.reason === 'contention') throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
        throw new Error(`TIMEOUT for ${args.contactNumber} in batch ${args.batchId} could not be recorded`);
      default:
        return outcome satisfies never;
    }
  });
}
