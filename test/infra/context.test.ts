import { describe, expect, it } from 'vitest';
import { stackPropsFromContext } from '../../lib/context.ts';
import { DEFAULT_QUEUE_SETTINGS, DEFAULT_THROTTLING, StackConfigurationError } from '../../lib/redial-stack.ts';

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
      queues: DEFAULT_QUEUE_SETTINGS,
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
        toolsRateLimit: '300',
        linksRateLimit: '5',
        apiBurstLimit: '50',
        tenantRateLimit: 40,
        intakeReservedConcurrency: '40',
        deletionProtection: 'false',
        deliveriesConcurrency: '300',
        callsBatchSize: 5,
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
        calendarTools: { rateLimit: 300, burstLimit: DEFAULT_THROTTLING.calendarTools.burstLimit },
        publicLinks: { rateLimit: 5, burstLimit: DEFAULT_THROTTLING.publicLinks.burstLimit },
        tenantApi: { rateLimit: 40, burstLimit: DEFAULT_THROTTLING.tenantApi.burstLimit },
        api: { rateLimit: DEFAULT_THROTTLING.api.rateLimit, burstLimit: 50 },
      },
      queues: { ...DEFAULT_QUEUE_SETTINGS, deliveries: { ...DEFAULT_QUEUE_SETTINGS.deliveries, maxConcurrency: 300 }, calls: { ...DEFAULT_QUEUE_SETTINGS.calls, batchSize: 5 } },
    });
  });

  it('refuses numbers and flags it cannot read, each named', () => {
    const attempt = () => stackPropsFromContext(reader({ ...required, intakeReservedConcurrency: 'lots', deletionProtection: 'maybe', intakeRateLimit: '0' }));
    expect(attempt).toThrow(/intakeRateLimit must be a whole number ≥ 1, got "0"/);
    expect(attempt).toThrow(/intakeReservedConcurrency must be a whole number ≥ 1, got "lots"/);
    expect(attempt).toThrow(/deletionProtection must be true or false, got "maybe"/);
  });

  it('refuses a queue batch size or concurrency an SQS event source would not take, each named', () => {
    const attempt = () => stackPropsFromContext(reader({ ...required, dialBatchSize: '20', deliveriesConcurrency: '1', callsConcurrency: 5000 }));
    expect(attempt).toThrow(/dialBatchSize must be at most 10/);
    expect(attempt).toThrow(/deliveriesConcurrency must be a whole number ≥ 2, got "1"/);
    expect(attempt).toThrow(/callsConcurrency must be at most 1000/);
  });
});
