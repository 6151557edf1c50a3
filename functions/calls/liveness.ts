import { conditionCheck, Expression } from '../platform/dynamo.ts';
import type { TransactItem } from '../platform/dynamo.ts';
import { batchKey, contactKey, parseCallId } from './model.ts';
import { is } from './store.ts';

/**
 * A call's liveness, for another context's transaction: ConditionChecks on the calls table meaning "the
 * intake would still apply this call's result" — the same conditions, item for item, that the call's
 * completion writes under (store.ts `completionItems`, completion.ts), so a tool call during the call and
 * its result can never disagree about whether the call is in progress:
 *
 * ```
 *  item (name)        condition (store.ts `is`)                       refused when
 *  live batch         inProgressRound(r): InProgress or Paused,       the batch is deleted, finished,
 *                     round r                                          cancelled, or in another round
 *                     dialled(page, pos): the call's list position     the position was never dialled
 *                     is behind the dial cursor
 *  live contact       notCompletedIn(r): no completion of round r     the call's result (or its
 *                                                                      watchdog's TIMEOUT) has applied
 * ```
 *
 * The call id names its round and list position, and its hash binds them to this batch and contact
 * (model.ts `parseCallId`): an id that does not parse is no call of this contact's, never live, and needs
 * no request to find out (undefined). Paused batches are included (their calls in flight still complete),
 * Deleted ones are not. The last-call condition of the completion is not here: it only chooses between
 * two ways of applying a result, never whether it applies.
 */
export function callLivenessChecks(tableName: string, call: { batchId: string; contactNumber: string; callId: string }): TransactItem[] | undefined {
  let at: ReturnType<typeof parseCallId>;
  try {
    at = parseCallId(call.batchId, call.contactNumber, call.callId);
    if (!at) return undefined;
    batchKey(call.batchId);
  } catch {
    // Not a batch id: no batch, so no live call.
    return undefined;
  }
  const batch = new Expression();
  batch.when(is.inProgressRound(batch, at.round)).when(is.dialled(batch, at.page, at.pos));
  const contact = new Expression();
  contact.when(is.notCompletedIn(contact, at.round));
  return [
    conditionCheck('live batch', tableName, batchKey(call.batchId), batch, { returnStored: true }),
    conditionCheck('live contact', tableName, contactKey(call.batchId, call.contactNumber), contact),
  ];
}

