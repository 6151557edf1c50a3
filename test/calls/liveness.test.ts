import { afterEach, describe, expect, it } from 'vitest';
import { callLivenessChecks } from '../../functions/calls/liveness.ts';
import { callIdFor } from '../../functions/calls/model.ts';
import { transact } from '../../functions/platform/dynamo.ts';
import { callsFixture, numbers } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/**
 * A call's liveness against the real pipeline: a batch dialled by the real dialer, results through the
 * real intake. "Live" must be exactly "the intake would still apply this call's result".
 */
describe('call liveness (calls/liveness.ts)', () => {
  async function callingBatch() {
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(3);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 3 });
    await fx.quiesce();
    const call = (i: number) => ({ batchId, contactNumber: contacts[i]!, callId: callIdFor(batchId, contacts[i]!, { round: 1, page: 0, pos: i }) });
    const live = async (i: number) => {
      const checks = callLivenessChecks(fx.tableNames.calls, call(i));
      if (!checks) return 'no call';
      const outcome = await transact(fx.clients.dynamo, checks);
      return outcome.committed ? 'live' : Object.keys(outcome.refused).sort().join(', ');
    };
    const result = (i: number) => ({ ...call(i), code: 'COMPLETED', emptyTranscription: false, durationSeconds: 60 });
    return { fx, batchId, contacts, call, live, result };
  }

  it('ADialledCallIsLiveUntilItsResultApplies_ThenNever', async () => {
    const { fx, live, result } = await callingBatch();
    expect(await live(0)).toBe('live');
    expect(await live(1)).toBe('live');
    expect((await fx.webhook(result(0))).body.outcome).toBe('applied');
    expect(await live(0)).toBe('live contact');
    expect(await live(1)).toBe('live');
    // The intake agrees: the same result again is ignored.
    expect((await fx.webhook(result(0))).body.outcome).toBe('ignored');
  });

  it('APausedBatchsCallsAreLive_ADeletedBatchsAreNot', async () => {
    const { fx, batchId, live } = await callingBatch();
    expect((await fx.api('POST', `/v1/batches/${batchId}/pause`)).status).toBe(200);
    expect(await live(0)).toBe('live');
    expect((await fx.api('DELETE', `/v1/batches/${batchId}`)).status).toBeLessThan(300);
    expect(await live(0)).toBe('live batch');
  });

  it('ACallIdOfAnotherContactOrAnUndialledPositionIsNotLive', async () => {
    const { fx, batchId, contacts, call } = await callingBatch();
    // Another contact's call id: not this contact's call at all (no request needed).
    expect(callLivenessChecks(fx.tableNames.calls, { ...call(0), callId: call(1).callId })).toBeUndefined();
    expect(callLivenessChecks(fx.tableNames.calls, { ...call(0), batchId: 'not-a-batch' })).toBeUndefined();
    // A position the dialer has not reached (round 2 is not the batch's round): refused by the batch row.
    const later = callLivenessChecks(fx.tableNames.calls, { batchId, contactNumber: contacts[0]!, callId: callIdFor(batchId, contacts[0]!, { round: 2, page: 0, pos: 0 }) })!;
    const outcome = await transact(fx.clients.dynamo, later);
    expect(outcome.committed ? [] : Object.keys(outcome.refused)).toEqual(['live batch']);
  });
});
