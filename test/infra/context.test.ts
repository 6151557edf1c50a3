import { describe, expect, it } from 'vitest';
import { stackPropsFromContext } from '../../lib/context.ts';
import { DEFAULT_THROTTLING, StackConfigurationError } from '../../lib/redial-stack.ts';

const reader = (context: Record<string, unknown>) => (key: string) => context[key];
const required = { callPlacerUrl: 'https://placer.example.com/calls', mailDomain: 'mail.example.org' };

describe('stack properties from the CDK context', () => {
  it('refuses to synthesize without a call placer or a mail domain, naming both and how to pass them', () => {
    const attempt = () => stackPropsFromContext(reader({}));
    expect(attempt).toThrow(StackConfigurationError);
    expect(attempt).toThrow(/callPlacerUrl is missing[\s\S]*-c callPlacerUrl=https:\/\/[\s\S]*mailDomain is missing[\s\S]*-c mailDomain=/);
    expect(attempt).toThrow(/npm run synth/);
    expect(() => stackPropsFromContext(reader({ mailDomain: 'mail.example.org' }))).toThrow(/callPlacerUrl is missing/);
    expect(() => stackPropsFromContext(reader({ callPlacerUrl: 'https://p.example.com' }))).toThrow(/mailDomain is missing/);
  });

  it('builds the stack properties from the two required values, with the documented defaults', () => {
    expect(stackPropsFromContext(reader(required))).toEqual({
      callPlacerUrl: 'https://placer.example.com/calls',
      mail: { domain: 'mail.example.org' },
      throttling: DEFAULT_THROTTLING,
    });
  });

  it('reads every optional key, from strings as `-c` passes them or typed values from cdk.json', () => {
    const props = stackPropsFromContext(
      reader({
        ...required,
        mailFrom: 'Acme <robot@acme.test>',
        sesIdentity: 'acme.test',
        sesConfigurationSet: 'redial',
        publicBaseUrl: 'https://redial.acme.test',
        alarmEmail: 'oncall@acme.test',
        callTimeoutSeconds: '900',
        discardedRetentionDays: '14',
        intakeRateLimit: '500',
        intakeBurstLimit: 800,
        linksRateLimit: '5',
        apiBurstLimit: '50',
        intakeReservedConcurrency: '40',
        deletionProtection: 'false',
      }),
    );
    expect(props).toEqual({
      callPlacerUrl: 'https://placer.example.com/calls',
      mail: { domain: 'mail.example.org', from: 'Acme <robot@acme.test>', sesIdentity: 'acme.test', configurationSet: 'redial', publicBaseUrl: 'https://redial.acme.test' },
      alarmEmail: 'oncall@acme.test',
      callTimeoutSeconds: 900,
      discardedRetentionDays: 14,
      intakeReservedConcurrency: 40,
      deletionProtection: false,
      throttling: {
        intake: { rateLimit: 500, burstLimit: 800 },
        publicLinks: { rateLimit: 5, burstLimit: DEFAULT_THROTTLING.publicLinks.burstLimit },
        api: { rateLimit: DEFAULT_THROTTLING.api.rateLimit, burstLimit: 50 },
      },
    });
  });

  it('refuses numbers and flags it cannot read, each named', () => {
    const attempt = () => stackPropsFromContext(reader({ ...required, intakeReservedConcurrency: 'lots', deletionProtection: 'maybe', intakeRateLimit: '0' }));
    expect(attempt).toThrow(/intakeRateLimit must be a whole number ≥ 1, got "0"/);
    expect(attempt).toThrow(/intakeReservedConcurrency must be a whole number ≥ 1, got "lots"/);
    expect(attempt).toThrow(/deletionProtection must be true or false, got "maybe"/);
  });
});
