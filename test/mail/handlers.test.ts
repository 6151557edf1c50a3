import { afterEach, describe, expect, it } from 'vitest';
import { finalSummary } from '../../functions/calls/finaliser.ts';
import type { BatchRow } from '../../functions/calls/model.ts';
import { iso } from '../../functions/platform/clock.ts';
import { approvalMailKind, emailConfirmationKind, ownerNotifyKind } from '../../functions/mail/kinds.ts';
import { changeOwnerEmail, prepareOwnerEmailChange } from '../../functions/mail/owner.ts';
import { hashToken } from '../../functions/mail/tokens.ts';
import { mailFixture } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
});

async function confirmedFixture() {
  fx = await mailFixture();
  await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
  return fx;
}

describe('owner.notify', () => {
  it('DiscardsDataThatDoesNotFitItsTemplateAsInvalidArgs', async () => {
    const f = await confirmedFixture();
    const { id } = await f.jobs.client.enqueue(ownerNotifyKind, { tenantId: 'acme', eventId: 'evt_bad', template: 'batch.finalised', data: { batchId: 'b1', byCode: { COMPLETED: -1 } } });
    await f.settle();
    const job = await f.jobs.store.mustGet(id);
    expect(job.discardReason).toBe('invalid_args');
    expect(job.attempts[0]!.error).toMatch(/byCode\.COMPLETED/);
    expect(f.sink.messages()).toEqual([]);
  });

  it('DiscardsAnEventIdThatCannotBeAMessageId', async () => {
    const f = await confirmedFixture();
    const { id } = await f.jobs.client.enqueue(ownerNotifyKind, { tenantId: 'acme', eventId: 'evt>\r\nBcc: x@evil.test', template: 'batch.finalised', data: { batchId: 'b1', byCode: {} } });
    await f.settle();
    expect((await f.jobs.store.mustGet(id)).discardReason).toBe('invalid_args');
    expect(f.sink.messages()).toEqual([]);
  });

  it('SendsTheSummaryToTheConfirmedOwnerAndMarksNotifiedAtAfterTheSend', async () => {
    const f = await confirmedFixture();
    f.clock.advance(1234);
    // The calls finaliser's own summary of a finalised batch: the contract, not a copy of it.
    const batch = { batchId: 'b_ok', round: 2, maxAttempts: 3, contactCount: 8, nQueued: 0, nCalling: 0, nCompleted: 8, nRetryEligible: 0, byCode: { COMPLETED: 7, INVALID_NUMBER: 1 } };
    const data = finalSummary(batch as unknown as BatchRow);
    await f.jobs.client.enqueue(ownerNotifyKind, { tenantId: 'acme', eventId: 'evt_ok', template: 'batch.finalised', data });
    await f.settle();
    const [mail] = f.sink.messages();
    expect(mail!.subject).toBe('Batch b_ok finalised: 8 contacts');
    expect(mail!.text).toContain('Batch b_ok of tenant acme is finalised after 2 rounds of 3.');
    expect(mail!.from).toBe('redial <no-reply@test.redial>');
    expect(mail!.text).toMatch(/COMPLETED +7/);
    expect(await f.store.getNotice('acme', 'evt_ok')).toMatchObject({ status: 'sent', notifiedAt: new Date(f.clock.now()).toISOString(), recipient: 'owner@acme.test' });
  });
});

describe('owner.email_confirmation', () => {
  it('SendsNothingForAChangeThatWasSupersededBeforeItRan', async () => {
    fx = await mailFixture();
    const f = fx;
    // Both changes commit before either job runs.
    const first = await prepareOwnerEmailChange(f.deps, 'acme', 'first@acme.test', f.clock.now());
    await f.commitOnly(first.items);
    const second = await prepareOwnerEmailChange(f.deps, 'acme', 'second@acme.test', f.clock.now());
    await f.commitOnly(second.items);
    await f.jobs.client.afterCommit([...first.jobs, ...second.jobs]);
    await f.settle();
    expect(f.sink.messages().map((m) => m.envelope.to[0])).toEqual(['second@acme.test']);
    expect((await f.jobs.store.mustGet(first.jobs[0]!.id)).state).toBe('completed');
    expect((await f.jobs.store.mustGet(second.jobs[0]!.id)).state).toBe('completed');
    expect(f.metrics.total('MailSkipped', { kind: 'owner.email_confirmation', reason: 'superseded' })).toBe(1);
  });

  it('RefusesAJobWhoseTokenIsNotThePendingOne', async () => {
    fx = await mailFixture();
    const f = fx;
    const change = await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    const token = 'B'.repeat(43);
    expect(hashToken(token)).not.toBe((await f.store.getContact('acme'))!.pendingTokenHash);
    // A forged job (same confirmation, another token) must not mail a link that would not work.
    const forged = await f.jobs.client.enqueue(emailConfirmationKind, { tenantId: 'acme', confirmationId: change.confirmationId!, token }, { id: 'forged' });
    await f.settle();
    expect((await f.jobs.store.mustGet(forged.id)).discardReason).toBe('invalid_args');
    expect(f.sink.messages()).toHaveLength(1);
  });
});

describe('access_request.approval_mail', () => {
  it('SendsNothingForARequestResolvedBeforeItRan', async () => {
    const f = await confirmedFixture();
    const token = 'D'.repeat(43);
    const requestId = `areq_${'1'.repeat(32)}`;
    const now = f.clock.now();
    await f.commitOnly(
      f.store.accessRequestItems(
        { tenantId: 'acme', requestId, email: 'pat@partner.test', status: 'pending', createdAt: iso(now), tokenHash: hashToken(token), tokenExpiresAt: iso(now + 3600_000) },
        now,
      ),
    );
    // Resolved (by a link of an earlier mail, say) before this job's run.
    await f.store.resolveAccessRequest('acme', requestId, hashToken(token), 'denied', now);
    const { id } = await f.jobs.client.enqueue(approvalMailKind, { tenantId: 'acme', requestId, token });
    await f.settle();
    expect((await f.jobs.store.mustGet(id)).state).toBe('completed');
    expect(f.sink.messages()).toEqual([]);
    expect(f.metrics.total('MailSkipped', { kind: 'access_request.approval_mail', reason: 'resolved' })).toBe(1);
  });

  it('DiscardsAJobForARequestThatDoesNotExist', async () => {
    const f = await confirmedFixture();
    const { id } = await f.jobs.client.enqueue(approvalMailKind, { tenantId: 'acme', requestId: `areq_${'0'.repeat(32)}`, token: 'C'.repeat(43) });
    await f.settle();
    expect((await f.jobs.store.mustGet(id)).discardReason).toBe('not_found');
  });
});
