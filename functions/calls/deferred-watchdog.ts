import { handle, snooze } from '../jobs/index.ts';
import type { JobHandler } from '../jobs/index.ts';
import type { CallsDeps } from './deps.ts';
import { deferredWatchdogKind } from './kinds.ts';
import type { DeferredWatchdogArgs } from './kinds.ts';
import { BatchStatus, callIdFor, callWithSlot } from './model.ts';
import { timeOutAll } from './watchdog.ts';

/**
 * calls.deferred_watchdog: one per group dialled from the deferred list, due once its calls may have timed
 * out. Its args name every call (list position, number, slot shard, when dialled): those whose contact has
 * no completion in the round yet are ended with TIMEOUT through the same completion path as a result,
 * whose conditions still decide. Nothing cancels it: a result leaves it to find its call completed.
 */
export function deferredWatchdogHandler(deps: CallsDeps): JobHandler<DeferredWatchdogArgs> {
  return handle(deferredWatchdogKind, async (args, ctx) => {
    const config = await deps.batches.get(args.batchId);
    if (!config) return;
    const stored = await deps.store.getBatch(args.batchId);
    // A round moved on has every call completed; a deleted batch ignores its calls' ends. A paused one's calls still end.
    if (!stored || (stored.status !== BatchStatus.InProgress && stored.status !== BatchStatus.Paused) || stored.round !== args.round) return;
    const contacts = await deps.store.getContacts(args.batchId, args.calls.map((c) => c.number));
    const out = args.calls.filter((c) => {
      const contact = contacts.get(c.number);
      return !(contact && contact.round >= args.round);
    });
    if (out.length === 0) return;
    const due = Date.parse(args.dialledAt) + deps.config.callTimeoutSeconds * 1000;
    if (due > ctx.now()) throw snooze({ until: due }, 'calls of this group not yet timed out');
    await timeOutAll(
      deps,
      config,
      stored,
      out.map((call) => ({ contactNumber: call.number, callId: callWithSlot(callIdFor(args.batchId, call.number, { round: args.round, page: call.page, pos: call.pos }), args.shard) })),
      ctx,
    );
  });
}
