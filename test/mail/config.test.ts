import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../functions/platform/config.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { redactArgs } from '../../functions/ops/views.ts';

const base = { MAIL_DOMAIN: 'mail.acme.test', PUBLIC_BASE_URL: 'https://redial.acme.test/', MAIL_TRANSPORT: 'ses' };

describe('the mail configuration', () => {
  it('DefaultsTheFromHeaderAndTrimsTheBaseUrl', () => {
    expect(parseMailConfig(base)).toEqual({
      domain: 'mail.acme.test',
      from: 'redial <no-reply@mail.acme.test>',
      publicBaseUrl: 'https://redial.acme.test',
      transport: { type: 'ses', configurationSet: undefined },
    });
  });

  it('NeedsAnSmtpUrlForSmtp', () => {
    expect(() => parseMailConfig({ ...base, MAIL_TRANSPORT: 'smtp' })).toThrow(/SMTP_URL: required when MAIL_TRANSPORT is smtp/);
    expect(parseMailConfig({ ...base, MAIL_TRANSPORT: 'smtp', SMTP_URL: 'smtps://u:p@smtp.acme.test:465' }).transport).toEqual({ type: 'smtp', url: 'smtps://u:p@smtp.acme.test:465' });
  });

  it('RefusesBadValuesAtStartUpNamingEachOne', () => {
    const error = (() => {
      try {
        parseMailConfig({ MAIL_DOMAIN: 'not a domain', PUBLIC_BASE_URL: 'ftp://x', MAIL_TRANSPORT: 'pigeon', SMTP_URL: 'http://x' });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    for (const name of ['MAIL_DOMAIN', 'PUBLIC_BASE_URL', 'MAIL_TRANSPORT', 'SMTP_URL']) expect((error as Error).message).toContain(name);
  });
});

describe('the ops view of job arguments', () => {
  it('NeverShowsALinkToken', () => {
    expect(redactArgs({ tenantId: 'acme', requestId: 'areq_1', token: 'secret' })).toEqual({ tenantId: 'acme', requestId: 'areq_1', token: '[redacted]' });
    expect(redactArgs({ failTimes: 2 })).toEqual({ failTimes: 2 });
    expect(redactArgs(null)).toBeNull();
  });
});
