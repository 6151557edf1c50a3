import {
  AccountSuspendedException,
  BadRequestException,
  LimitExceededException,
  MessageRejected,
  SendEmailCommand,
  SendingPausedException,
  SESv2Client,
  TooManyRequestsException,
} from '@aws-sdk/client-sesv2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { classifySesError, THROTTLE_DELAY_MS } from '../../functions/mail/classify.ts';
import { SesMailTransport } from '../../functions/mail/transport.ts';
import { mailFixture, TEST_MAIL_DOMAIN } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

const ses = createAwsClients({ region: 'eu-west-1', credentials: localCredentials }).ses;
const sesMock = mockClient(SESv2Client);

let fx: MailFixture | undefined;
afterEach(async () => {
  sesMock.reset();
  await fx?.stop();
  fx = undefined;
});

const meta = { $metadata: { httpStatusCode: 400 } };

async function sesFixture(configurationSet?: string) {
  fx = await mailFixture({ transport: new SesMailTransport(ses, { configurationSet }) });
  await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
  return fx;
}

describe('SES v2 transport', () => {
  it('SendsTheComposedMessageRawFromTheConfiguredAddressToTheOwnerOnce', async () => {
    sesMock.on(SendEmailCommand).resolves({ MessageId: '0100018d-ses-id' });
    const f = await sesFixture('redial-mail');
    await f.notify('acme', 'evt_ses');
    await f.settle();

    const calls = sesMock.commandCalls(SendEmailCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    expect(input).toEqual({
      FromEmailAddress: `redial <no-reply@${TEST_MAIL_DOMAIN}>`,
      Destination: { ToAddresses: ['owner@acme.test'] },
      Content: { Raw: { Data: expect.any(Uint8Array) } },
      ConfigurationSetName: 'redial-mail',
    });
    const raw = Buffer.from(input.Content!.Raw!.Data!).toString('utf8');
    expect(raw).toMatch(new RegExp(`^Message-ID: <evt_ses@${TEST_MAIL_DOMAIN.replace('.', '\\.')}>\\r$`, 'm'));
    expect(raw).toMatch(/^Auto-Submitted: auto-generated\r$/m);
    expect(raw).toMatch(/^X-Redial-Event-Id: evt_ses\r$/im); // header names are case-insensitive
    expect(raw).toMatch(/^Content-Type: multipart\/alternative;/m);
    expect(await f.store.getNotice('acme', 'evt_ses')).toMatchObject({ status: 'sent', providerMessageId: '0100018d-ses-id', messageId: `<evt_ses@${TEST_MAIL_DOMAIN}>` });
    expect(f.metrics.total('MailSent', { transport: 'ses' })).toBe(1);
  });

  it('LeavesOutTheConfigurationSetWhenNoneIsConfigured', async () => {
    sesMock.on(SendEmailCommand).resolves({ MessageId: 'x' });
    const f = await sesFixture();
    await f.notify('acme', 'evt_noset');
    await f.settle();
    expect(sesMock.commandCalls(SendEmailCommand)[0]!.args[0].input).not.toHaveProperty('ConfigurationSetName');
  });

  it('DiscardsAMessageSesRejectsAsMailRejected', async () => {
    sesMock.on(SendEmailCommand).rejects(new MessageRejected({ message: 'Email address is not verified.', ...meta }));
    const f = await sesFixture();
    const { id } = await f.notify('acme', 'evt_rejected');
    await f.settle();
    const job = await f.jobs.store.mustGet(id);
    expect(job.state).toBe('discarded');
    expect(job.discardReason).toBe('mail_rejected');
    expect(job.attempts[0]!.error).toMatch(/ses MessageRejected: Email address is not verified/);
    expect(sesMock.commandCalls(SendEmailCommand)).toHaveLength(1);
  });

  it('SnoozesAThrottledSendWithoutSpendingAnAttemptThenSendsIt', async () => {
    sesMock
      .on(SendEmailCommand)
      .rejectsOnce(new TooManyRequestsException({ message: 'Maximum sending rate exceeded.', $metadata: { httpStatusCode: 429 } }))
      .resolves({ MessageId: 'ok' });
    const f = await sesFixture();
    const { id } = await f.notify('acme', 'evt_throttled');
    await f.idle();
    const snoozed = await f.jobs.store.mustGet(id);
    expect(snoozed.state).toBe('snoozed');
    expect(snoozed.attempt).toBe(0);
    expect(Date.parse(snoozed.scheduledAt) - f.clock.now()).toBe(THROTTLE_DELAY_MS.rate);
    await f.settle();
    const job = await f.jobs.store.mustGet(id);
    expect(job.state).toBe('completed');
    expect(job.snoozes).toBe(1);
    expect(job.attempts.map((a) => a.outcome)).toEqual(['completed']);
    expect(f.metrics.total('MailThrottled', { transport: 'ses' })).toBe(1);
  });

  it('KeepsSnoozingWhileTheAccountIsPausedAndNeverDiscards', async () => {
    sesMock.on(SendEmailCommand).rejects(new SendingPausedException({ message: 'Sending is paused for this account.', ...meta }));
    const f = await sesFixture();
    const { id } = await f.notify('acme', 'evt_paused');
    // Eight hours of a paused account, longer than the policy's ~6 h of retries: 15-minute snoozes, none spent.
    await f.settle(8 * 3600_000);
    const job = await f.jobs.store.mustGet(id);
    expect(job.state).toBe('snoozed');
    expect(job.attempt).toBe(0);
    expect(job.snoozes).toBe(1 + (8 * 60) / 15); // the first run, then one every 15 minutes
    expect(job.lastSnooze?.reason).toMatch(/SendingPausedException/);
  });

  it('RetriesAnSesOutageOnThePolicy', async () => {
    sesMock.on(SendEmailCommand).rejectsOnce(Object.assign(new Error('We encountered an internal error.'), { name: 'InternalFailure', $metadata: { httpStatusCode: 500 } })).resolves({ MessageId: 'ok' });
    const f = await sesFixture();
    const { id } = await f.notify('acme', 'evt_outage');
    await f.settle();
    const job = await f.jobs.store.mustGet(id);
    expect(job.attempts.map((a) => a.outcome)).toEqual(['retryable', 'completed']);
    expect(job.attempts[0]!.error).toMatch(/ses InternalFailure/);
  });
});

describe('classifySesError', () => {
  const cases: [string, unknown, ReturnType<typeof classifySesError>['type'], number?][] = [
    ['MessageRejected', new MessageRejected({ message: 'rejected', ...meta }), 'rejected'],
    ['BadRequestException', new BadRequestException({ message: 'bad', ...meta }), 'rejected'],
    ['TooManyRequestsException', new TooManyRequestsException({ message: 'rate', ...meta }), 'throttled', THROTTLE_DELAY_MS.rate],
    ['ThrottlingException', Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }), 'throttled', THROTTLE_DELAY_MS.rate],
    ['HTTP 429 of any name', Object.assign(new Error('slow down'), { name: 'Unknown', $metadata: { httpStatusCode: 429 } }), 'throttled', THROTTLE_DELAY_MS.rate],
    ['LimitExceededException', new LimitExceededException({ message: 'quota', ...meta }), 'throttled', THROTTLE_DELAY_MS.quota],
    ['SendingPausedException', new SendingPausedException({ message: 'paused', ...meta }), 'throttled', THROTTLE_DELAY_MS.paused],
    ['AccountSuspendedException', new AccountSuspendedException({ message: 'suspended', ...meta }), 'throttled', THROTTLE_DELAY_MS.paused],
    ['MailFromDomainNotVerifiedException', Object.assign(new Error('not verified'), { name: 'MailFromDomainNotVerifiedException' }), 'retryable'],
    ['InternalFailure', Object.assign(new Error('internal'), { name: 'InternalFailure', $metadata: { httpStatusCode: 500 } }), 'retryable'],
    ['TimeoutError', Object.assign(new Error('socket timed out'), { name: 'TimeoutError' }), 'retryable'],
    ['a connection reset', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'retryable'],
    ['something unknown', 'a string', 'retryable'],
  ];
  it.each(cases)('%s', (_name, error, type, delayMs) => {
    const failure = classifySesError(error);
    expect(failure.type).toBe(type);
    if (delayMs !== undefined) expect(failure).toMatchObject({ delayMs });
  });
});
