import { iso } from '../../platform/clock.ts';
import type { TransactItem } from '../../platform/dynamo.ts';
import type { CallsDeps } from '../deps.ts';
import { batchIds, parseCallId } from '../model.ts';
import { CallsEvent } from '../ports.ts';
import { optOutEventId, optOutMarkerItem, suppressionPutItems } from './suppression-store.ts';
import { SuppressionSource } from './suppression.ts';

/**
 * An opt-out said on a call (the intake's `optOut: true`): the number joins the tenant's suppression list
 * and `contact.opted_out` goes out, exactly once per number and call however often the result is sent.
 *
 * ```
 *  items (names)   entry, audit      the suppression entry (source opt_out, the call's callId/batchId) and its audit record
 *                  opt-out           a marker per number + call, only if absent (suppression-store.ts optOutMarkerKey)
 *                  event items       contact.opted_out, its id derived from tenant, number and call
 * ```
 *
 * The items join the completion's transaction (completion.ts): a result applied once records the opt-out
 * once. A result the completion ignores (a duplicate, a late result of an earlier round, a deleted or
 * finished batch) still records it: the same items in a transaction of their own ({@link OptOut.alone}).
 * The marker makes a replay of either find the opt-out recorded: its transaction is refused and nothing
 * is written or announced again; the deterministic event id makes the deliveries' job ids the same too.
 */
export interface OptOut {
  items: readonly TransactItem[];
  /** After the completion's transaction committed with the items. */
  afterCommit(): Promise<void>;
  /** The items were not committed and will not be: give back what publishing took. */
  abandon(): Promise<void>;
  /**
   * Records the opt-out alone (the completion was ignored): `recorded` (written now), `already` (the
   * marker says a transaction recorded it before: nothing written), or `contention` (nothing written;
   * the caller answers 503 and the result is sent again), `unexplained` (refused for another reason:
   * nothing written, logged; also a 503).
   */
  alone(): Promise<'recorded' | 'already' | 'contention' | 'unexplained'>;
}

/** The opt-out of `number` on call `callId` of a tenant's batch, prepared (its event published into the items, not yet committed). */
export async function prepareOptOut(
  deps: Pick<CallsDeps, 'store' | 'ports' | 'jobs' | 'logger'>,
  input: { tenantId: string; batchId: string; number: string; callId: string; externalId?: string | undefined },
  now: number,
): Promise<OptOut> {
  const { store, ports, logger } = deps;
  const event = await ports.events.prepare(
    {
      tenantId: input.tenantId,
      type: CallsEvent.contactOptedOut,
      id: optOutEventId(input.tenantId, input.number, input.callId),
      data: { number: input.number, batchId: input.batchId, callId: input.callId, optedOutAt: iso(now), ...(input.externalId !== undefined ? { externalId: input.externalId } : {}) },
    },
    now,
  );
  const items = [
    ...suppressionPutItems(store.tableName, { tenantId: input.tenantId, number: input.number, source: SuppressionSource.optOut, callId: input.callId, batchId: input.batchId, reason: 'opted out on a call', now }),
    optOutMarkerItem(store.tableName, { tenantId: input.tenantId, number: input.number, callId: input.callId, batchId: input.batchId, now }),
    ...event.items,
  ];
  return {
    items,
    afterCommit: () => event.afterCommit(),
    abandon: () => event.abandon(),
    alone: async () => {
      const result = await store.transact(items);
      if (result.committed) {
        await event.afterCommit();
        return 'recorded';
      }
      await event.abandon();
      if (result.contention) return 'contention';
      if (result.refused['opt-out']?.code === 'ConditionalCheckFailed') return 'already';
      logger.error('opt-out transaction refused for a reason other than its marker; nothing was written', { number: input.number, callId: input.callId, refused: Object.keys(result.refused) });
      return 'unexplained';
    },
  };
}

/**
 * The opt-out of a result whose batch the intake does not know (deleted, or gone): recorded alone, for the
 * tenant its batch id names, when the call id is one redial made for this batch and number (the hash in
 * it binds both); any other result records nothing (`ignored`).
 */
export async function recordOptOutWithoutBatch(
  deps: Pick<CallsDeps, 'store' | 'ports' | 'jobs' | 'logger' | 'clock'>,
  input: { batchId: string; number: string; callId: string; externalId?: string | undefined },
): Promise<'recorded' | 'already' | 'contention' | 'unexplained' | 'ignored'> {
  const id = batchIds.parse(input.batchId);
  if (!id || !parseCallId(input.batchId, input.number, input.callId)) return 'ignored';
  const optOut = await prepareOptOut(deps, { tenantId: id.tenantId, ...input }, deps.clock.now());
  return optOut.alone();
}
