import { afterEach, describe, expect, it } from 'vitest';
import { iso } from '../../functions/platform/clock.ts';
import { requestAccess } from '../../functions/mail/access.ts';
import { caps, windowOf } from '../../functions/mail/caps.ts';
import { mailFixture } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
});

const HOUR = 3600_000;

describe('the per-recipient cap (30 per hour)', () => {
  it('ThirtyOneMailsToOneRecipientInAnHourSendThirtyAndTheThirtyFirstAtTheStartOfTheNextWindowNoneLost', async () => {
    fx = await mailFixture();
    const start = Date.parse('2026-01-05T09:20:00.000Z');
    fx.clock.set(start);
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', start);
    // 31 people ask for access within the hour: 31 approval mails, all to the one owner.
    const requests = [];
    for (let i = 0; i < 31; i++) requests.push(await requestAccess(fx.deps, 'acme', `person${i}@example.org`, fx.clock.now()));

    await fx.idle();
    expect(fx.clock.now()).toBe(start);
    expect(fx.sink.messages()).toHaveLength(30);
    const waiting = (await fx.jobs.client.list({ state: 'snoozed' })).jobs;
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.scheduledAt).toBe('2026-01-05T10:00:00.000Z');
    expect(waiting[0]!.attempt).toBe(0);

    await fx.settle();
    const messages = fx.sink.messages();
    expect(messages).toHaveLength(31);
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(31);
    expect(messages.every((m) => m.envelope.to[0] === 'owner@acme.test')).toBe(true);

    const late = await fx.jobs.store.mustGet(waiting[0]!.id);
    expect(late.state).toBe('completed');
    expect(late.snoozes).toBe(1);
    expect(late.attempts).toEqual([expect.objectContaining({ attempt: 1, at: '2026-01-05T10:00:00.000Z', outcome: 'completed' })]);
    expect(late.lastSnooze?.reason).toMatch(/recipient cap spent \(30 per hour\); next window 2026-01-05T10:00:00.000Z/);

    for (const { requestId } of requests) expect((await fx.store.getAccessRequest('acme', requestId))?.mailedAt).toBeDefined();
    expect(await fx.store.slotsHeld(caps.recipient, 'owner@acme.test', start)).toHaveLength(30);
    expect(await fx.store.slotsHeld(caps.recipient, 'owner@acme.test', start + HOUR)).toEqual([late.id]);
    expect(fx.metrics.total('MailCapSnoozed', { cap: 'recipient' })).toBe(1);
    expect(fx.metrics.total('MailSent')).toBe(31);
    expect(fx.metrics.total('JobDiscarded')).toBe(0);
  });

  it('KeepsOneWindowPerRecipient', async () => {
    fx = await mailFixture();
    const now = fx.clock.now();
    expect(await fx.store.takeSlots('job-a', [{ cap: caps.recipient, subject: 'owner@acme.test' }], now)).toEqual({ granted: true });
    for (let i = 0; i < 29; i++) await fx.store.takeSlots(`job-${i}`, [{ cap: caps.recipient, subject: 'owner@acme.test' }], now);
    expect(await fx.store.takeSlots('job-late', [{ cap: caps.recipient, subject: 'owner@acme.test' }], now)).toEqual({ granted: false, full: [caps.recipient] });
    expect(await fx.store.takeSlots('job-late', [{ cap: caps.recipient, subject: 'someone@else.test' }], now)).toEqual({ granted: true });
  });
});

describe('slots', () => {
  it('AreHeldOncePerJobSoARetryInTheSameWindowTakesNoSecondSlot', async () => {
    fx = await mailFixture();
    const now = fx.clock.now();
    for (let i = 0; i < 4; i++) await fx.store.takeSlots(`job-${i}`, [{ cap: caps.ownerNotify, subject: 'acme' }], now);
    expect(await fx.store.takeSlots('job-0', [{ cap: caps.ownerNotify, subject: 'acme' }], now)).toEqual({ granted: true });
    expect(await fx.store.takeSlots('job-4', [{ cap: caps.ownerNotify, subject: 'acme' }], now)).toEqual({ granted: true });
    // Full: a sixth job is refused, but the five holders keep being granted.
    expect(await fx.store.takeSlots('job-5', [{ cap: caps.ownerNotify, subject: 'acme' }], now)).toEqual({ granted: false, full: [caps.ownerNotify] });
    expect(await fx.store.takeSlots('job-3', [{ cap: caps.ownerNotify, subject: 'acme' }], now + 10 * 60_000)).toEqual({ granted: true });
    expect(await fx.store.slotsHeld(caps.ownerNotify, 'acme', now)).toHaveLength(5);
    // The next window starts empty.
    const next = windowOf(caps.ownerNotify, now).end;
    expect(await fx.store.takeSlots('job-5', [{ cap: caps.ownerNotify, subject: 'acme' }], next)).toEqual({ granted: true });
  });

  it('AreTakenAllOrNoneWhenOneCapIsFull', async () => {
    fx = await mailFixture();
    const now = fx.clock.now();
    for (let i = 0; i < 30; i++) await fx.store.takeSlots(`r-${i}`, [{ cap: caps.recipient, subject: 'owner@acme.test' }], now);
    const both = [
      { cap: caps.ownerNotify, subject: 'acme' },
      { cap: caps.recipient, subject: 'owner@acme.test' },
    ];
    expect(await fx.store.takeSlots('notify-1', both, now)).toEqual({ granted: false, full: [caps.recipient] });
    // The burst slot was not taken either: a snoozed notify does not spend the owner's hour.
    expect(await fx.store.slotsHeld(caps.ownerNotify, 'acme', now)).toEqual([]);
  });
});

describe('the owner-notify burst cap (5 per owner per hour)', () => {
  it('SixNotifiesInAnHourSendFiveAndDropOneDeliberatelyRecordedAndCountedNeverAnError', async () => {
    fx = await mailFixture();
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    const ids = [];
    for (let i = 1; i <= 6; i++) ids.push((await fx.notify('acme', `evt_burst${i}`)).id);
    await fx.settle(HOUR - 1);

    expect(fx.sink.messages()).toHaveLength(5);
    for (const id of ids) expect((await fx.jobs.store.mustGet(id)).state).toBe('completed');
    const notices = await fx.store.listNotices('acme');
    expect(notices.filter((n) => n.status === 'sent')).toHaveLength(5);
    const dropped = notices.filter((n) => n.status === 'dropped');
    expect(dropped).toEqual([expect.objectContaining({ reason: 'owner_burst_cap', droppedAt: iso(fx.clock.now()) })]);
    // The dropped event is the one whose mail never reached the sink.
    const sentIds = fx.sink.messages().map((m) => m.messageId);
    expect(sentIds).not.toContain(`<${dropped[0]!.eventId}@test.redial>`);
    expect(fx.metrics.total('MailDropped', { kind: 'owner.notify', reason: 'owner_burst_cap' })).toBe(1);
    expect(fx.metrics.total('MailSent', { kind: 'owner.notify' })).toBe(5);
    expect(fx.metrics.total('JobDiscarded')).toBe(0);

    // The next hour has five fresh slots.
    fx.clock.set(windowOf(caps.ownerNotify, fx.clock.now()).end);
    const seventh = await fx.notify('acme', 'evt_burst7');
    await fx.settle();
    expect((await fx.jobs.store.mustGet(seventh.id)).state).toBe('completed');
    expect(fx.sink.messages().map((m) => m.messageId)).toContain('<evt_burst7@test.redial>');
  });

  it('ADroppedEventStaysDroppedWhenItsJobRunsAgain', async () => {
    fx = await mailFixture();
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    for (let i = 1; i <= 6; i++) await fx.notify('acme', `evt_again${i}`);
    await fx.settle(HOUR - 1);
    const dropped = (await fx.store.listNotices('acme')).find((n) => n.status === 'dropped')!;
    // A second job for the same event (a producer's duplicate), in a fresh window: nothing is sent.
    fx.clock.advance(2 * HOUR);
    await fx.notify('acme', dropped.eventId);
    await fx.settle();
    expect(fx.sink.messages()).toHaveLength(5);
    expect((await fx.store.getNotice('acme', dropped.eventId))?.status).toBe('dropped');
  });
});

describe('owner.notify without a confirmed owner', () => {
  it('CompletesWithoutSendingCountedAndRecorded', async () => {
    fx = await mailFixture();
    const { id } = await fx.notify('nobody', 'evt_orphan');
    await fx.settle();
    expect((await fx.jobs.store.mustGet(id)).state).toBe('completed');
    expect(fx.sink.messages()).toHaveLength(0);
    expect(await fx.store.getNotice('nobody', 'evt_orphan')).toMatchObject({ status: 'skipped', reason: 'no_confirmed_owner' });
    expect(fx.metrics.total('MailSkipped', { kind: 'owner.notify', reason: 'no_confirmed_owner' })).toBe(1);
  });
});
