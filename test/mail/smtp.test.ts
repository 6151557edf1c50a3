import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { classifySmtpError } from '../../functions/mail/classify.ts';
import { composeRaw } from '../../functions/mail/message.ts';
import { SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';
import { mailFixture } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
  for (const close of closers.splice(0)) await close();
});

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
};

const mail = async () =>
  composeRaw({
    kind: 'owner.notify',
    eventId: 'evt_raw',
    from: 'redial <no-reply@test.redial>',
    to: 'owner@acme.test',
    messageId: '<evt_raw@test.redial>',
    date: Date.parse('2026-01-05T09:00:00Z'),
    content: { subject: 's', text: 't', html: '<p>h</p>' },
  });

describe('SMTP delivery against a real SMTP server', () => {
  it('AServerAnswering451ThenAcceptingGetsTheMailOnTheSecondAttemptWithTheExactMessageId', async () => {
    fx = await mailFixture({ script: (stage, { attempt }) => (stage === 'data' && attempt === 1 ? { code: 451, message: '4.3.0 Temporary system failure, try later' } : undefined) });
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    const { id } = await fx.notify('acme', 'evt_451');
    await fx.settle();

    const job = await fx.jobs.store.mustGet(id);
    expect(job.state).toBe('completed');
    expect(job.attempts.map((a) => a.outcome)).toEqual(['retryable', 'completed']);
    expect(job.attempts[0]!.error).toMatch(/smtp EMESSAGE: 451 4\.3\.0 Temporary system failure/);
    // The mail policy's first wait: 20 s ± 10 %.
    const wait = Date.parse(job.attempts[1]!.at) - Date.parse(job.attempts[0]!.at);
    expect(wait).toBeGreaterThanOrEqual(18_000);
    expect(wait).toBeLessThanOrEqual(22_000);

    expect(fx.sink.dataCount()).toBe(2);
    const [received] = fx.sink.messages();
    expect(fx.sink.messages()).toHaveLength(1);
    expect(received!.messageId).toBe('<evt_451@test.redial>');
    expect(received!.headers['x-redial-event-id']).toBe('evt_451');
    expect(received!.envelope).toEqual({ from: 'no-reply@test.redial', to: ['owner@acme.test'] });
    expect(await fx.store.getNotice('acme', 'evt_451')).toMatchObject({ status: 'sent', messageId: '<evt_451@test.redial>', recipient: 'owner@acme.test' });
  });

  it('AServerAnswering550DiscardsTheJobAsMailRejectedWithTheServersReplyForOps', async () => {
    fx = await mailFixture({ script: (stage) => (stage === 'data' ? { code: 550, message: '5.7.1 Message rejected as spam' } : undefined) });
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    const { id } = await fx.notify('acme', 'evt_550');
    await fx.settle();

    const job = await fx.jobs.store.mustGet(id);
    expect(job.state).toBe('discarded');
    expect(job.discardReason).toBe('mail_rejected');
    expect(job.attempts).toHaveLength(1);
    expect(job.attempts[0]!.error).toMatch(/550 5\.7\.1 Message rejected as spam/);
    expect(fx.sink.messages()).toHaveLength(0);
    // No mark: the notice is not recorded as sent; the discarded job is the record ops retry from.
    expect(await fx.store.getNotice('acme', 'evt_550')).toBeUndefined();
    expect(fx.metrics.total('JobDiscarded', { kind: 'owner.notify', reason: 'mail_rejected' })).toBe(1);
  });

  it('ARecipientRefusedWith550AtRcptIsDiscardedToo', async () => {
    fx = await mailFixture({ script: (stage) => (stage === 'rcpt' ? { code: 550, message: '5.1.1 No such user' } : undefined) });
    await fx.store.putConfirmedContact('acme', 'gone@acme.test', fx.clock.now());
    const { id } = await fx.notify('acme', 'evt_nouser');
    await fx.settle();
    const job = await fx.jobs.store.mustGet(id);
    expect(job.discardReason).toBe('mail_rejected');
    expect(job.attempts[0]!.error).toMatch(/550 5\.1\.1 No such user/);
  });

  it('AServerThatIsDownIsRetryableAndSpendsAnAttempt', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const transport = new SmtpMailTransport(createSmtpClient({ url: `smtp://127.0.0.1:${port}`, connectionTimeoutMs: 1000 }));
    fx = await mailFixture({ transport });
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    const { id } = await fx.notify('acme', 'evt_down');
    await fx.idle();
    const job = await fx.jobs.store.mustGet(id);
    expect(job.state).toBe('retryable');
    expect(job.attempt).toBe(1);
    expect(job.attempts[0]!.error).toMatch(/ECONNREFUSED/);
  });

  it('AServerThatNeverGreetsTimesOutAndIsRetryable', async () => {
    const silent = createServer(() => undefined);
    const port = await listen(silent);
    const client = createSmtpClient({ url: `smtp://127.0.0.1:${port}`, greetingTimeoutMs: 300, connectionTimeoutMs: 1000 });
    const error = await new SmtpMailTransport(client).send({ from: 'no-reply@test.redial', to: 'owner@acme.test', raw: await mail() }, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ETIMEDOUT' });
    expect(classifySmtpError(error)).toMatchObject({ type: 'retryable' });
  });

  it('AServerThatHangsUpMidSessionIsRetryable', async () => {
    const rude = createServer((socket) => {
      socket.write('220 rude.test ESMTP\r\n');
      socket.once('data', () => socket.destroy());
    });
    const port = await listen(rude);
    const client = createSmtpClient({ url: `smtp://127.0.0.1:${port}`, connectionTimeoutMs: 1000 });
    const error = await new SmtpMailTransport(client).send({ from: 'no-reply@test.redial', to: 'owner@acme.test', raw: await mail() }, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(classifySmtpError(error)).toMatchObject({ type: 'retryable' });
  });
});
