import { afterEach, describe, expect, it } from 'vitest';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import type { SmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { composeRaw, isMessageIdSafe, messageIdFor } from '../../functions/mail/message.ts';
import { renderAccessRequest, renderBatchFinalised, renderEmailConfirmation } from '../../functions/mail/templates.ts';
import { escapeHtml } from '../../functions/platform/html.ts';
import { envelopeAddress, SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';

let sink: SmtpSink | undefined;
afterEach(async () => {
  await sink?.stop();
  sink = undefined;
});

describe('batch.finalised', () => {
  it('SummarisesByNormalisedCodeMostFrequentFirst', () => {
    const mail = renderBatchFinalised('acme', { batchId: 'b_7', rounds: 2, maxAttempts: 3, contacts: 9, byCode: { NO_PICKUP: 2, COMPLETED: 5, FAILED: 2 } });
    expect(mail.subject).toBe('Batch b_7 finalised: 9 contacts');
    expect(mail.text).toContain('Batch b_7 of tenant acme is finalised after 2 rounds of 3.');
    const rows = mail.text.split('\n').filter((line) => /^ {2}[A-Z_]+ +\d+$/.test(line)).map((line) => line.trim().split(/ +/));
    expect(rows).toEqual([
      ['COMPLETED', '5'],
      ['FAILED', '2'],
      ['NO_PICKUP', '2'],
    ]);
    expect(mail.html).toContain('<code>COMPLETED</code></td><td style="text-align: right;">5</td>');
  });

  it('EscapesEveryValueInTheHtmlAndKeepsTheSubjectOnOneLine', () => {
    const mail = renderBatchFinalised('t<1>', { batchId: 'b"\r\nBcc: x@evil', byCode: { '<script>alert(1)</script>': 1 } });
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).toContain('t&lt;1&gt;');
    expect(mail.subject).not.toMatch(/[\r\n]/);
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});

describe('link templates', () => {
  it('PutTheLinksInBothBodies', () => {
    const confirm = renderEmailConfirmation({ tenantId: 'acme', email: 'new@acme.test', link: 'https://api.test/v1/tenants/acme/confirm-email?token=abc&x=1', expiresAt: '2026-01-06T09:00:00.000Z' });
    expect(confirm.text).toContain('https://api.test/v1/tenants/acme/confirm-email?token=abc&x=1');
    expect(confirm.html).toContain('href="https://api.test/v1/tenants/acme/confirm-email?token=abc&amp;x=1"');
    const access = renderAccessRequest({ tenantId: 'acme', requesterEmail: 'p@x.test', approveLink: 'https://a/approve', denyLink: 'https://a/deny', expiresAt: 'later' });
    expect(access.text).toMatch(/Approve: https:\/\/a\/approve\n\nDeny: {4}https:\/\/a\/deny/);
    expect(access.html).toContain('href="https://a/approve"');
    expect(access.html).toContain('href="https://a/deny"');
  });
});

describe('Message-ID', () => {
  it('IsTheEventIdAtTheMailDomain', () => {
    expect(messageIdFor('evt_3f2a', 'mail.example.com')).toBe('<evt_3f2a@mail.example.com>');
    expect(messageIdFor('owner.email_confirmation.conf_ab12', 'x.test')).toBe('<owner.email_confirmation.conf_ab12@x.test>');
  });

  it('RefusesAnEventIdThatCouldBreakTheHeader', () => {
    for (const id of ['', 'a b', 'x@y', '<x>', 'a\r\nBcc: victim@x', '.leading', 'double..dot', 'x'.repeat(201)]) {
      expect(isMessageIdSafe(id), JSON.stringify(id)).toBe(false);
      expect(() => messageIdFor(id, 'x.test')).toThrow(RangeError);
    }
  });
});

describe('a composed message, through a real SMTP server', () => {
  it('ArrivesWithOurHeadersAndBothPartsDecodable', async () => {
    sink = await startSmtpSink();
    const date = Date.parse('2026-01-05T09:00:00.000Z');
    const content = renderEmailConfirmation({ tenantId: 'acme', email: 'zoë@acme.test', link: `https://api.test/v1/tenants/acme/confirm-email?token=${'A'.repeat(43)}`, expiresAt: 'soon' });
    const raw = await composeRaw({ kind: 'owner.email_confirmation', eventId: 'evt_hello', from: 'redial <no-reply@x.test>', to: 'owner@acme.test', messageId: '<evt_hello@x.test>', date, content: { ...content, subject: 'Café ✓ confirmed' } });
    expect(raw.toString('utf8').match(/^Message-ID:/gim)).toHaveLength(1);
    await new SmtpMailTransport(createSmtpClient({ url: sink.url })).send({ from: 'redial <no-reply@x.test>', to: 'owner@acme.test', raw }, new AbortController().signal);
    const [message] = await sink.waitFor(1);
    expect(message!.messageId).toBe('<evt_hello@x.test>');
    expect(message!.subject).toBe('Café ✓ confirmed');
    expect(message!.date).toBe('Mon, 05 Jan 2026 09:00:00 +0000');
    expect(message!.headers['auto-submitted']).toBe('auto-generated');
    expect(message!.text).toContain(`https://api.test/v1/tenants/acme/confirm-email?token=${'A'.repeat(43)}`);
    expect(message!.text).toContain('zoë@acme.test');
    expect(message!.html).toContain('<h2 style="font-size: 18px;">Confirm your owner address</h2>');
  });

  it('TakesTheEnvelopeSenderFromTheFromHeader', () => {
    expect(envelopeAddress('redial <no-reply@x.test>')).toBe('no-reply@x.test');
    expect(envelopeAddress('no-reply@x.test')).toBe('no-reply@x.test');
    expect(() => envelopeAddress('nobody')).toThrow(RangeError);
  });
});
