import { afterEach, describe, expect, it } from 'vitest';
import { callIdFor } from '../../functions/calls/model.ts';
import { callsFixture, numbers, scriptByNumber } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';

/**
 * Contacts that carry their data (issue 26 §1, §3): a JSON batch's externalIds, variables and zones reach
 * the placer, come back on every call's attempt with its artefacts, show in the listing (filtered by
 * status, code and externalId) and in `call.completed` — the URLs and at most 1 KB of summary, never `data`.
 */

const fixtures: CallsFixture[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
});

const paths = (body: any): string[] => (body.issues ?? []).map((i: { path: string }) => i.path);

describe('contacts with data: in through the batch, out through the placer, the listing and the events', () => {
  it('RefusesBadContactsWithTheirPathsAndWritesNothing_NationalNumbersComeInWithADefaultCountry', async () => {
    const fx = await callsFixture({ workers: false });
    fixtures.push(fx);
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 3 });
    const before = await fx.callsItems();
    const bad = await fx.api('POST', '/v1/batches', {
      maxAttempts: 1,
      contacts: [
        { number: '+1 202 555 01' }, // too short: not possible
        { number: '+12025550101', externalId: 'crm-1' },
        { number: '+12025550102', externalId: 'crm-1' }, // the id is taken
        { number: '+12025550103', variables: { status: 'x' } }, // a reserved column name
        { number: '+12025550104', timezone: '+03:00' }, // an offset, not a zone
      ],
    });
    expect(bad.status).toBe(400);
    // The fields' own rules first; the batch's (numbers, uniqueness) once every contact is well formed.
    expect(paths(bad.body)).toEqual(['body.contacts.3.variables.status', 'body.contacts.4.timezone']);
    const wellFormed = await fx.api('POST', '/v1/batches', {
      maxAttempts: 1,
      contacts: [{ number: '+1 202 555 01' }, { number: '+12025550101', externalId: 'crm-1' }, { number: '+12025550102', externalId: 'crm-1' }],
    });
    expect(paths(wellFormed.body)).toEqual(['body.contacts.0.number', 'body.contacts.2.externalId']);
    // strictNumbers refuses a possible number in no assigned range (Ofcom's drama range).
    const strict = await fx.api('POST', '/v1/batches', { maxAttempts: 1, strictNumbers: true, contacts: [{ number: '+447700900123' }] });
    expect(paths(strict.body)).toEqual(['body.contacts.0.number']);
    expect(await fx.callsItems()).toEqual(before);

    const ok = await fx.api('POST', '/v1/batches', {
      maxAttempts: 1,
      defaultCountry: 'GB',
      dedupe: true,
      contacts: [
        { number: '020 7946 0000', externalId: 'crm-a', variables: { first_name: 'Ada', plan: 3, vip: true }, timezone: 'Europe/London' },
        { number: '+44 20 7946 0000' }, // the same number once normalised: dropped, counted
        { number: '07700 900123', externalId: 'crm-b' }, // possible, not valid: accepted, flagged
        { number: '+12025550101' },
      ],
    });
    expect(ok.status).toBe(201);
    const batch = (await fx.api('GET', `/v1/batches/${ok.body.batchId}`)).body;
    expect(batch).toMatchObject({ contactCount: 3, variableNames: ['first_name', 'plan', 'vip'], invalidNumbers: 1, duplicatesDropped: 1 });
    const listed = (await fx.api('GET', `/v1/batches/${ok.body.batchId}/contacts`)).body.contacts;
    expect(listed).toEqual([
      { contactNumber: '+442079460000', status: 'Queued', code: null, attempts: 0, callingZones: null, deferred: null, externalId: 'crm-a', variables: { first_name: 'Ada', plan: 3, vip: true }, timezone: 'Europe/London', numberValid: true, region: 'GB', lastCall: null },
      // Read as a national number of GB (defaultCountry), so its region is GB although it is in no assigned range.
      { contactNumber: '+447700900123', status: 'Queued', code: null, attempts: 0, callingZones: null, deferred: null, externalId: 'crm-b', timezone: null, numberValid: false, region: 'GB', lastCall: null },
      { contactNumber: '+12025550101', status: 'Queued', code: null, attempts: 0, callingZones: null, deferred: null, externalId: null, timezone: null, numberValid: true, region: 'US', lastCall: null },
    ]);
    // The data items are apart from the list pages: a page holds numbers only.
    const items = await fx.callsItems();
    expect(items.filter((i) => String(i['sk']).startsWith('DATA#')).map((i) => i['contactNumber'])).toEqual(expect.arrayContaining(['+442079460000', '+447700900123']));
    expect(items.filter((i) => String(i['sk']).startsWith('DATA#'))).toHaveLength(2);
    for (const page of items.filter((i) => String(i['sk']).startsWith('LIST#'))) expect(Object.keys(page).sort()).toEqual(['expiresAt', 'numbers', 'page', 'pk', 'round', 'sk']);
  });

  it('ThePlacerGetsExternalIdAndVariables_EveryCallKeepsItsAttemptWithArtefacts_TheEventCarriesLinksNotData', async () => {
    const contacts = numbers(3);
    // Contact 0: answered in round 1. Contact 1: no pickup, then answered in round 2. Contact 2: no data at all.
    const fx = await callsFixture({ script: scriptByNumber({ [contacts[0]!]: ['completed'], [contacts[1]!]: ['noPickup', 'completed'], [contacts[2]!]: ['noPickup', 'noPickup'] }), resultDelayMs: () => 60_000 });
    fixtures.push(fx);
    await fx.api('PUT', '/v1/tenants/acme', { concurrencyLimit: 10 });
    const created = await fx.api('POST', '/v1/batches', {
      maxAttempts: 2,
      retry: { baseSeconds: 60, capSeconds: 60 },
      contacts: [
        { number: contacts[0], externalId: 'crm-0', variables: { first_name: 'Ada' } },
        { number: contacts[1], externalId: 'crm-1', variables: { first_name: 'Grace', balance: 12.5 } },
        { number: contacts[2] },
      ],
    });
    expect(created.status).toBe(201);
    const id = created.body.batchId as string;
    await fx.settle();

    // The placer was asked with the contact's data and the dial's time; contact 2 carries none.
    const asked = fx.simulator.calls.filter((c) => c.batchId === id);
    expect(asked.map((c) => [c.contactNumber, c.round, c.externalId, c.variables])).toEqual([
      [contacts[0], 1, 'crm-0', { first_name: 'Ada' }],
      [contacts[1], 1, 'crm-1', { first_name: 'Grace', balance: 12.5 }],
      [contacts[2], 1, undefined, undefined],
      [contacts[1], 2, 'crm-1', { first_name: 'Grace', balance: 12.5 }],
      [contacts[2], 2, undefined, undefined],
    ]);
    for (const call of asked) expect(call.placedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // Every call has its attempt, first round first; the simulator's answered calls carry artefacts.
    const attempts = (await fx.api('GET', `/v1/batches/${id}/contacts/${encodeURIComponent(contacts[1]!)}/attempts`)).body;
    expect(attempts.attempts.map((a: any) => [a.round, a.code, a.reportedCode, a.source, a.recordingUrl !== null, a.summary])).toEqual([
      [1, 'NO_PICKUP', 'NO_PICKUP', 'webhook', false, null],
      [2, 'COMPLETED', 'COMPLETED', 'webhook', true, 'Simulated call of 95 s with Grace.'],
    ]);
    expect(attempts.attempts[1]).toMatchObject({
      callId: callIdFor(id, contacts[1]!, { round: 2, page: 0, pos: 0 }),
      durationSeconds: 95,
      placedAt: asked[3]!.placedAt,
      recordingUrl: expect.stringMatching(/^https:\/\//),
      endedReason: 'simulated',
    });
    // The listing shows the latest call's artefacts; filters narrow it.
    const listed = (await fx.api('GET', `/v1/batches/${id}/contacts`)).body.contacts;
    expect(listed[1]).toMatchObject({ externalId: 'crm-1', status: 'Completed', code: 'COMPLETED', attempts: 2, lastCall: { round: 2, summary: 'Simulated call of 95 s with Grace.' } });
    expect(listed[2]).toMatchObject({ externalId: null, code: 'NO_PICKUP', lastCall: { round: 2 } });
    expect(listed[2].lastCall.recordingUrl).toBeUndefined();
    const byCode = (await fx.api('GET', `/v1/batches/${id}/contacts?code=NO_PICKUP`)).body.contacts;
    expect(byCode.map((c: any) => c.contactNumber)).toEqual([contacts[2]]);
    const byId = (await fx.api('GET', `/v1/batches/${id}/contacts?externalId=crm-1`)).body.contacts;
    expect(byId.map((c: any) => c.contactNumber)).toEqual([contacts[1]]);
    expect((await fx.api('GET', `/v1/batches/${id}/contacts?externalId=nobody`)).body.contacts).toEqual([]);
    expect((await fx.api('GET', `/v1/batches/${id}/contacts?externalId=crm-1&code=NO_PICKUP`)).body.contacts).toEqual([]);

    // call.completed carries the externalId and the links; never the handler's data.
    const completed = (await fx.allEvents()).filter((e) => e.type === 'call.completed' && (e.data as any).batchId === id);
    const answered = completed.find((e) => (e.data as any).contactNumber === contacts[1] && (e.data as any).round === 2)!;
    expect(answered.data).toMatchObject({ externalId: 'crm-1', code: 'COMPLETED', recordingUrl: expect.stringMatching(/^https:/), summary: 'Simulated call of 95 s with Grace.' });
    expect(answered.data).not.toHaveProperty('data');
    expect(completed.filter((e) => (e.data as any).contactNumber === contacts[2]).every((e) => !('externalId' in (e.data as any)))).toBe(true);
  });

  it('KeepsTheHandlersDataOnTheAttemptOnly_CutsTheEventsSummaryTo1KB_AndFiltersAPageByStatus', async () => {
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    fixtures.push(fx);
    const contacts = numbers(4);
    const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 1, concurrencyLimit: 4 });
    await fx.quiesce();
    const summary = 'é'.repeat(2000); // 4,000 bytes: stored whole, 1 KB in the event
    const sent = await fx.webhook({
      batchId,
      contactNumber: contacts[1],
      callId: callIdFor(batchId, contacts[1]!, { round: 1, page: 0, pos: 1 }),
      code: 'COMPLETED',
      emptyTranscription: false,
      durationSeconds: 80,
      summary,
      data: { intent: 'book', score: 0.9, nested: { slots: [1, 2] } },
      transcriptUrl: 'https://example.com/t/1?sig=a%2Fb',
    });
    expect(sent.body).toMatchObject({ outcome: 'applied', code: 'COMPLETED' });
    const attempts = (await fx.api('GET', `/v1/batches/${batchId}/contacts/${encodeURIComponent(contacts[1]!)}/attempts`)).body.attempts;
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ summary, data: { intent: 'book', score: 0.9, nested: { slots: [1, 2] } }, transcriptUrl: 'https://example.com/t/1?sig=a%2Fb', placedAt: null, recordingUrl: null });
    const event = (await fx.allEvents()).find((e) => e.type === 'call.completed')!;
    expect((event.data as any).summary).toBe('é'.repeat(512));
    expect(event.data).toMatchObject({ summaryTruncated: true, transcriptUrl: 'https://example.com/t/1?sig=a%2Fb' });
    expect(event.data).not.toHaveProperty('data');

    // A bad artefact is a 400 naming it, and writes nothing.
    const before = await fx.callsItems();
    const bad = await fx.webhook({ batchId, contactNumber: contacts[2], callId: callIdFor(batchId, contacts[2]!, { round: 1, page: 0, pos: 2 }), code: 'COMPLETED', emptyTranscription: false, durationSeconds: 5, recordingUrl: 'http://example.com/r.mp3' });
    expect(bad.status).toBe(400);
    expect(paths(bad.body)).toEqual(['body.recordingUrl']);
    expect(await fx.callsItems()).toEqual(before);

    // Filtered by status, a short page keeps its cursor: two of the first three are Calling.
    const page = (await fx.api('GET', `/v1/batches/${batchId}/contacts?status=Calling&limit=3`)).body;
    expect(page.contacts.map((c: any) => c.contactNumber)).toEqual([contacts[0], contacts[2]]);
    expect(page.cursor).toBeDefined();
    const rest = (await fx.api('GET', `/v1/batches/${batchId}/contacts?status=Calling&limit=3&cursor=${page.cursor}`)).body;
    expect(rest.contacts.map((c: any) => c.contactNumber)).toEqual([contacts[3]]);
    expect(rest.cursor).toBeUndefined();
  });
});
