import { afterEach, describe, expect, it } from 'vitest';
import { isRetryableCode } from '../../functions/calls/codes.ts';
import { jobIds } from '../../functions/calls/model.ts';
import type { SimulatedOutcome } from '../../functions/calls/local/simulator.ts';
import { callsFixture, scriptByNumber } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

// Round 1 gives every contact a different outcome; round 2 (the retried ones only) mixes again.
const plan: Record<string, [SimulatedOutcome, SimulatedOutcome?]> = {
  '+14155550100': ['noPickup', 'completed'],
  '+14155550101': ['sipFailure', 'noPickup'],
  '+14155550102': ['shortCall', 'genuineFail'],
  '+14155550103': ['genuineFail'],
  '+14155550104': ['completed'],
  '+14155550105': ['userRejection'],
  '+14155550106': ['temporaryUnavailable', 'temporaryUnavailable'],
  '+14155550107': ['invalidNumber'],
  '+14155550108': ['lostWebhook', 'completed'],
  '+14155550109': ['duplicateWebhook'],
  '+14155550110': ['placerRefuses', 'userRejection'],
};
const contacts = Object.keys(plan);
const round1Codes: Record<string, string> = {
  '+14155550100': 'NO_PICKUP',
  '+14155550101': 'FAILED_SIP_EXCEPTION',
  '+14155550102': 'FAILED_NO_CONVERSATION',
  '+14155550103': 'FAILED',
  '+14155550104': 'COMPLETED',
  '+14155550105': 'COMPLETED_USER_REJECTION',
  '+14155550106': 'TEMPORARY_UNAVAILABLE',
  '+14155550107': 'INVALID_NUMBER',
  '+14155550108': 'TIMEOUT',
  '+14155550109': 'COMPLETED',
  '+14155550110': 'INTERNAL_ERROR',
};
const retried = contacts.filter((n) => isRetryableCode(round1Codes[n]!));
const tally = (codes: readonly string[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1;
  return counts;
};

describe('rounds: the finaliser promotes exactly the retryable codes, the budget ends the batch', () => {
  it('RoundOneMixesEveryOutcomeRoundTwoDialsOnlyTheRetryableAndTheBudgetFinalisesTheBatch', async () => {
    const fx = await callsFixture({ script: scriptByNumber(Object.fromEntries(Object.entries(plan).map(([n, p]) => [n, p.filter(Boolean) as SimulatedOutcome[]]))) });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: 4, ownerEmail: 'owner@example.com', retry: { baseSeconds: 60, capSeconds: 3600 } });

    // Watch the batch between rounds: the moment round 2 is armed, before it dials.
    let betweenRounds: { batch: any; contacts: any[]; rounds: any } | undefined;
    await fx.settle(undefined, async () => {
      if (betweenRounds || (await fx.store.getBatch(batchId))?.round !== 2 || fx.simulator.calls.some((c) => c.round === 2)) return;
      betweenRounds = {
        batch: (await fx.api('GET', `/v1/batches/${batchId}`)).body,
        contacts: (await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts,
        rounds: (await fx.api('GET', `/v1/batches/${batchId}/rounds`)).body,
      };
    });

    // Round 1: every outcome classified, and exactly the retryable codes promoted.
    expect(betweenRounds).toBeDefined();
    expect(betweenRounds!.batch).toMatchObject({ status: 'InProgress', round: 2 });
    for (const contact of betweenRounds!.contacts) {
      const code = round1Codes[contact.contactNumber]!;
      expect(contact, contact.contactNumber).toMatchObject({
        contactNumber: contact.contactNumber,
        status: isRetryableCode(code) ? 'RetryEligible' : 'Completed',
        code,
        attempts: 1,
      });
    }
    expect(betweenRounds!.batch.counts.byStatus).toEqual({ Queued: 0, Calling: 0, Completed: contacts.length - retried.length, RetryEligible: retried.length, Suppressed: 0 });
    expect(betweenRounds!.batch.counts.byCode).toEqual({ FAILED: 1, COMPLETED: 2, COMPLETED_USER_REJECTION: 1, INVALID_NUMBER: 1 });
    // Round 1's outcomes keep every code, the retryable ones that left byCode for round 2 included.
    const round1 = { round: 1, size: contacts.length, byCode: tally(Object.values(round1Codes)), pending: 0, closed: true, recorded: true };
    expect(betweenRounds!.rounds).toEqual({ batchId, rounds: [round1, { round: 2, size: retried.length, byCode: {}, pending: retried.length, closed: false, recorded: true }] });

    // The sources: the watchdog ended the lost call, the dialer the refused one, the duplicate applied once.
    expect((await fx.store.getContact(batchId, '+14155550108'))?.round).toBe(2);
    const duplicate = fx.simulator.calls.find((c) => c.contactNumber === '+14155550109')!;
    expect(duplicate.responses.map((r) => JSON.parse(r.body).outcome)).toEqual(['applied', 'ignored']);
    const lost = fx.simulator.calls.find((c) => c.contactNumber === '+14155550108' && c.round === 1)!;
    expect(lost.responses).toEqual([]);

    // Round 2 dialled exactly the promoted contacts, in upload order, after the round delay.
    const round2 = fx.simulator.calls.filter((c) => c.round === 2);
    expect(round2.map((c) => c.contactNumber)).toEqual(retried);
    // Enqueued by round 1's finaliser, due min(cap, base·2^1 + 1..1000 ms) later; it dials at once then.
    const dial2 = await fx.jobs.store.mustGet(jobIds.dial(batchId, 2));
    expect(dial2.createdAt).toBe((await fx.jobs.store.mustGet(jobIds.finalise(batchId, 1))).attemptedAt);
    const dialAt = Date.parse(((await fx.allEvents()).find((e) => e.type === 'batch.round_scheduled')!.data['dialAt'] as string));
    expect(dialAt - Date.parse(dial2.createdAt)).toBeGreaterThanOrEqual(60_000 * 2 + 1);
    expect(dialAt - Date.parse(dial2.createdAt)).toBeLessThanOrEqual(60_000 * 2 + 1000);
    const firstRound2 = Math.min(...round2.map((c) => c.acceptedAt));
    expect(firstRound2).toBeGreaterThanOrEqual(dialAt);
    expect(firstRound2).toBeLessThan(dialAt + 1000); // SQS delays are whole seconds

    // The budget (2 rounds) ends it: Finalised, though some contacts are still retryable.
    const final = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
    expect(final).toMatchObject({ status: 'Finalised', round: 2, maxAttempts: 2 });
    expect(final.counts.byStatus).toEqual({ Queued: 0, Calling: 0, Completed: contacts.length, RetryEligible: 0, Suppressed: 0 });
    const finalContacts = (await fx.api('GET', `/v1/batches/${batchId}/contacts`)).body.contacts;
    const expectedFinal: Record<string, string> = {
      ...round1Codes,
      '+14155550100': 'COMPLETED',
      '+14155550101': 'NO_PICKUP',
      '+14155550102': 'FAILED',
      '+14155550106': 'TEMPORARY_UNAVAILABLE',
      '+14155550108': 'COMPLETED',
      '+14155550110': 'COMPLETED_USER_REJECTION',
    };
    expect(finalContacts).toMatchObject(contacts.map((n) => ({ contactNumber: n, status: 'Completed', code: expectedFinal[n], attempts: retried.includes(n) ? 2 : 1 })));
    expect(final.counts.byCode).toEqual({ COMPLETED: 4, FAILED: 2, COMPLETED_USER_REJECTION: 2, INVALID_NUMBER: 1, NO_PICKUP: 1, TEMPORARY_UNAVAILABLE: 1 });
    expect((await fx.api('GET', `/v1/batches/${batchId}/rounds`)).body).toEqual({
      batchId,
      rounds: [round1, { round: 2, size: retried.length, byCode: tally(retried.map((n) => expectedFinal[n]!)), pending: 0, closed: true, recorded: true }],
    });
    expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);

    // Events: one call.completed per applied call, one round scheduled, one finalised (published with no
    // job or entry: the tenant has no endpoint).
    const events = await fx.allEvents();
    const byType = (type: string) => events.filter((e) => e.type === type);
    expect(byType('call.completed')).toHaveLength(contacts.length + retried.length);
    expect(byType('batch.round_scheduled').map((e) => e.data)).toEqual([{ batchId, round: 2, contacts: retried.length, dialAt: new Date(dialAt).toISOString() }]);
    expect(byType('batch.finalised')).toHaveLength(1);
    const finalised = byType('batch.finalised')[0]!;
    expect(finalised.data).toMatchObject({ batchId, rounds: 2, contacts: contacts.length, byCode: final.counts.byCode });
    const jobs = await fx.allJobs();
    expect(jobs.filter((j) => j.kind.startsWith('webhook.'))).toEqual([]);

    // The owner's mail, in the finaliser's transaction, about that event.
    const notify = jobs.filter((j) => j.kind === 'owner.notify');
    expect(notify).toHaveLength(1);
    expect(notify[0]!.args).toEqual({ tenantId: 'acme', eventId: finalised.id, template: 'batch.finalised', data: finalised.data });

    // Every calls job finished; nothing discarded, nothing left running.
    const callsJobs = jobs.filter((j) => j.queue === 'calls');
    expect(callsJobs.filter((j) => !['completed', 'cancelled'].includes(j.state)).map((j) => `${j.id} ${j.state}`)).toEqual([]);
    expect(callsJobs.filter((j) => j.kind === 'calls.finalise').map((j) => j.id).sort()).toEqual([jobIds.finalise(batchId, 1), jobIds.finalise(batchId, 2)]);
    // One watchdog per dial run (runs stop where the tenant's limit makes them wait), none cancelled;
    // the one whose run placed the lost call ended it (its TIMEOUT in round 1, above).
    const watchdogs = callsJobs.filter((j) => j.kind === 'calls.watchdog');
    expect(watchdogs.length).toBeLessThanOrEqual(fx.simulator.calls.length);
    expect(watchdogs.filter((j) => j.state !== 'completed' || j.cancelRequestedAt !== undefined)).toEqual([]);

  });

  it('ABatchWithNothingRetryableFinalisesAfterOneRoundWithoutAnOwnerMailWhenThereIsNoOwner', async () => {
    const fx = await callsFixture({ script: () => 'completed' });
    fixtures.push(fx);
    const batchId = await fx.createBatch({ numbers: ['+442071234567', '+442071234568'], maxAttempts: 3 });
    await fx.settle();
    expect((await fx.api('GET', `/v1/batches/${batchId}`)).body).toMatchObject({ status: 'Finalised', round: 1, counts: { byCode: { COMPLETED: 2 } } });
    const events = await fx.allEvents();
    expect(events.map((e) => e.type).sort()).toEqual(['batch.finalised', 'call.completed', 'call.completed']);
    expect((await fx.allJobs()).filter((j) => j.kind === 'owner.notify')).toEqual([]);
    expect(fx.simulator.calls).toHaveLength(2);
  });
});
