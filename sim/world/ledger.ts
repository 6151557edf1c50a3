import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { completionsIn } from './writes.ts';
import { batchIdOfPartition } from '../../functions/calls/model.ts';

/**
 * The calls in progress, as the world sees them: a call is out from the moment the placer accepted it
 * until redial recorded its result (the completion's transaction applied, seen at the DynamoDB client),
 * or its batch was deleted (which hands the tenant its slots back). Events are numbered in the order
 * they happened, so the most calls a tenant had out at once can be counted afterwards.
 */
export class CallLedger {
  private seq = 0;
  private readonly calls = new Map<string, { batchId: string; from: number; to?: number }>();
  private readonly deleted = new Map<string, number>();

  /** The placer accepted a call (it goes ahead, even when the answer came too late for the dialer). */
  accepted(callId: string, batchId: string): void {
    if (!this.calls.has(callId)) this.calls.set(callId, { batchId, from: ++this.seq });
  }

  /** A TransactWriteItems was applied: a completion ends its call, a batch deletion all of the batch's. */
  applied(input: Record<string, unknown>): void {
    const items = (input['TransactItems'] as Record<string, { Item?: Record<string, AttributeValue>; Key?: Record<string, AttributeValue>; ExpressionAttributeValues?: Record<string, AttributeValue> }>[] | undefined) ?? [];
    for (const completion of completionsIn(input, 0)) {
      const call = completion.callId ? this.calls.get(completion.callId) : undefined;
      if (call && call.to === undefined) call.to = ++this.seq;
    }
    for (const item of items) {
      const update = item['Update'];
      if (update?.Key?.['sk']?.S === 'BATCH' && Object.values(update.ExpressionAttributeValues ?? {}).some((v) => v.S === 'Deleted')) {
        const batchId = batchIdOfPartition(update.Key['pk']?.S ?? '');
        if (batchId && !this.deleted.has(batchId)) this.deleted.set(batchId, ++this.seq);
      }
    }
  }

  /** The most calls out at once, per tenant (`tenantOf` maps a batch to its tenant). */
  peaks(tenantOf: (batchId: string) => string | undefined): Map<string, number> {
    const events: { at: number; tenant: string; delta: number }[] = [];
    for (const call of this.calls.values()) {
      const tenant = tenantOf(call.batchId);
      if (!tenant) continue;
      const ends = [call.to, this.deleted.get(call.batchId)].filter((n): n is number => n !== undefined);
      const to = ends.length ? Math.min(...ends) : Number.POSITIVE_INFINITY;
      if (to <= call.from) continue;
      events.push({ at: call.from, tenant, delta: 1 }, { at: to, tenant, delta: -1 });
    }
    events.sort((a, b) => a.at - b.at);
    const live = new Map<string, number>();
    const peak = new Map<string, number>();
    for (const e of events) {
      const n = (live.get(e.tenant) ?? 0) + e.delta;
      live.set(e.tenant, n);
      peak.set(e.tenant, Math.max(peak.get(e.tenant) ?? 0, n));
    }
    return peak;
  }
}
