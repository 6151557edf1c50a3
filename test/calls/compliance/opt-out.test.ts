import { afterEach, describe, expect, it } from 'vitest';
import { optOutEventId } from '../../../functions/calls/compliance/suppression-store.ts';
import { callIdFor } from '../../../functions/calls/model.ts';
import { operatorScope } from '../../../functions/platform/tenancy.ts';
import { callsFixture, numbers } from '../../support/calls.ts';
import type { CallsFixture } from '../../support/calls.ts';

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

/** A batch whose contacts are all Calling: dialled, with results that will not come while the clock stands still. */
async function callingBatch(count: number) {
  const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
  fixtures.push(fx);
  const contacts = numbers(count);
  const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: count });
  await fx.quiesce();
  expect((await fx.api('GET', `/v1/batches/${batchId}`)).body.counts.byStatus.Calling).toBe(count);
  return { fx, batchId, contacts };
}

const positionOf = (contactNumber: string) => Math.max(0, Number(contactNumber.slice(-4)) - 1000);

/** A result for the contact's round-1 call, as the placer's caller sends it. */
const result = (batchId: string, contactNumber: string, overrides: Record<string, unknown> = {}) => ({
  batchId,
  contactNumber,
  callId: callIdFor(batchId, contactNumber, { round: 1, page: 0, pos: positionOf(contactNumber) }),
  code: 'COMPLETED',
  emptyTranscription: false,
  durationSeconds: 40,
  ...overrides,
});

/** The opt-out's traces: the tenant's entry, its audit records and markers, and the contact.opted_out events. */
async function optOutsOf(fx: CallsFixture, number: string) {
  const scope = operatorScope('acme');
  const items = await fx.callsItems();
  return {
    entry: await fx.store.suppressions().get(scope, number),
    audit: await fx.store.suppressions().audit(scope, number),
    markers: items.filter((i) => String(i['sk']).startsWith(`OPTOUT#${number}#`)),
    events: (await fx.allEvents()).filter((e) => e.type === 'contact.opted_out' && e.data['number'] === number),
  };
}

describe('opt-out: the intake’s optOut: true', () => {
  it('AnAppliedResultSuppressesTheNumberInItsTransactionAndAnnouncesItOnce_AReplayChangesNothing', async () => {
    const { fx, batchId, contacts } = await callingBatch(3);
    const number = contacts[1]!;
    const body = result(batchId, number, { optOut: true });
    expect(await fx.webhook(body)).toMatchObject({ status: 200, body: { outcome: 'applied' } });
    const after = await optOutsOf(fx, number);
    expect(after.entry).toMatchObject({ number, source: 'opt_out', callId: body.callId, batchId });
    expect(after.audit.map((a) => [a.action, a.source, a.callId])).toEqual([['added', 'opt_out', body.callId]]);
    expect(after.markers).toHaveLength(1);
    expect(after.events.map((e) => [e.id, e.data['callId'], e.data['batchId']])).toEqual([[optOutEventId('acme', number, body.callId), body.callId, batchId]]);
    // The completion committed with it.
    expect(await fx.store.getContact(batchId, number)).toMatchObject({ status: 'Completed', round: 1 });

    // The same result again (the caller replays): ignored, and the opt-out is not written or announced again.
    const before = await fx.callsItems();
    fx.clock.advance(5_000);
    expect(await fx.webhook(body)).toMatchObject({ status: 200, body: { outcome: 'ignored' } });
    expect(await fx.callsItems()).toEqual(before);
    expect((await optOutsOf(fx, number)).events).toHaveLength(1);
    // Other contacts' numbers are not touched.
    expect((await optOutsOf(fx, contacts[0]!)).entry).toBeUndefined();
  });

  it('AnIgnoredDuplicateStillSuppresses_OnceForManyReplays', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    const number = contacts[0]!;
    // The first result applies without an opt-out; the replay carries it (the handler learnt it late).
    expect((await fx.webhook(result(batchId, number))).body.outcome).toBe('applied');
    expect((await optOutsOf(fx, number)).entry).toBeUndefined();
    for (let i = 0; i < 3; i++) {
      fx.clock.advance(1_000);
      expect(await fx.webhook(result(batchId, number, { optOut: true }))).toMatchObject({ status: 200, body: { outcome: 'ignored' } });
    }
    const after = await optOutsOf(fx, number);
    expect(after.entry).toMatchObject({ source: 'opt_out', batchId });
    expect(after.audit).toHaveLength(1);
    expect(after.markers).toHaveLength(1);
    expect(after.events).toHaveLength(1);
  });

  it('ALateResultOfADeletedBatchStillSuppresses', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    expect((await fx.api('DELETE', `/v1/batches/${batchId}`)).status).toBe(200);
    const number = contacts[1]!;
    expect(await fx.webhook(result(batchId, number, { optOut: true }))).toMatchObject({ status: 200, body: { outcome: 'ignored' } });
    const after = await optOutsOf(fx, number);
    expect(after.entry).toMatchObject({ source: 'opt_out' });
    expect(after.events).toHaveLength(1);
    // The contact itself is untouched: the batch is gone.
    expect(await fx.store.getContact(batchId, number)).toBeUndefined();
  });

  it('ANumberAlreadyOnTheListKeepsItsEntryAndTheOptOutIsStillRecordedAndAnnouncedOnce', async () => {
    const { fx, batchId, contacts } = await callingBatch(2);
    const number = contacts[0]!;
    const key = await fx.keyOf('acme');
    expect((await fx.send('PUT', `/v1/suppressions/${encodeURIComponent(number)}`, { reason: 'by email' }, { authorization: `Bearer ${key}` })).status).toBe(200);
    const createdAt = (await optOutsOf(fx, number)).entry!.createdAt;
    fx.clock.advance(1_000);
    expect((await fx.webhook(result(batchId, number, { optOut: true }))).body.outcome).toBe('applied');
    const after = await optOutsOf(fx, number);
    expect(after.entry).toMatchObject({ source: 'api', createdAt });
    expect(after.audit.map((a) => a.source)).toEqual(['api', 'opt_out']);
    expect(after.events).toHaveLength(1);
  });

  it('WithoutOptOutNothingIsSuppressed', async () => {
    const { fx, batchId, contacts } = await callingBatch(1);
    expect((await fx.webhook(result(batchId, contacts[0]!, { optOut: false }))).body.outcome).toBe('applied');
    expect(await optOutsOf(fx, contacts[0]!)).toMatchObject({ entry: undefined, audit: [], markers: [], events: [] });
  });

  it('TwoReplaysAtOnceRecordTheOptOutOnce', async () => {
    const { fx, batchId, contacts } = await callingBatch(1);
    const number = contacts[0]!;
    expect((await fx.webhook(result(batchId, number))).body.outcome).toBe('applied');
    const answers = await Promise.all([0, 1, 2].map(() => fx.webhook(result(batchId, number, { optOut: true }))));
    // Each is ignored (200) or, having met another's transaction, a 503 the caller retries.
    for (const a of answers) expect([200, 503]).toContain(a.status);
    for (const a of answers) if (a.status === 503) expect((await fx.webhook(result(batchId, number, { optOut: true }))).status).toBe(200);
    const after = await optOutsOf(fx, number);
    expect(after.markers).toHaveLength(1);
    expect(after.audit).toHaveLength(1);
    expect(after.events).toHaveLength(1);
  });
});
