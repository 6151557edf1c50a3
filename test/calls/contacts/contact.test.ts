import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { BatchUniqueness, contactInputSchema, contactNumber, contactSettingsFields, normaliseContacts } from '../../../functions/calls/contacts/contact.ts';
import type { ContactInput } from '../../../functions/calls/contacts/contact.ts';

/** A JSON batch body built the way the batch route will build it: contacts, their settings, normalised in a transform. */
const batchBody = z
  .strictObject({ contacts: z.array(contactInputSchema).min(1).max(10_000), ...contactSettingsFields })
  .transform((body, ctx) => {
    const result = normaliseContacts(body.contacts, body);
    for (const issue of result.issues) ctx.addIssue({ code: 'custom', path: ['contacts', ...issue.path], message: issue.message });
    return result.issues.length > 0 ? z.NEVER : { ...body, ...result };
  });

const issuesOf = (body: unknown) => {
  const result = batchBody.safeParse(body);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('contacts of a JSON batch: normalised against the batch settings', () => {
  it('NumbersBecomeE164AndCarryTheirFieldsAndRegion', () => {
    const body = batchBody.parse({
      defaultCountry: 'GB',
      contacts: [
        { number: '020 7946 0000', externalId: 'crm-1', variables: { first_name: 'Ada', balance: 12.5 }, timezone: 'Europe/London' },
        { number: '+1 415 555 0123' },
      ],
    });
    expect(body.contacts).toEqual([
      { number: '+442079460000', numberValid: true, region: 'GB', externalId: 'crm-1', variables: { first_name: 'Ada', balance: 12.5 }, timezone: 'Europe/London' },
      { number: '+14155550123', numberValid: true, region: 'US' },
    ]);
    expect(body.variableNames).toEqual(['first_name', 'balance']);
  });

  it('APossibleButInvalidNumberIsFlaggedUnlessStrictNumbersRefusesIt', () => {
    const lenient = batchBody.parse({ contacts: [{ number: '+44 7700 900123' }] });
    expect(lenient.contacts).toEqual([{ number: '+447700900123', numberValid: false }]);
    expect(issuesOf({ strictNumbers: true, contacts: [{ number: '+44 20 7946 0000' }, { number: '+44 7700 900123' }] })).toEqual([
      'contacts.1.number: a possible number but not a valid one (no assigned range); strictNumbers refuses it',
    ]);
  });

  it('ANumberThatIsNotPossibleIsRefusedWithItsPath', () => {
    expect(issuesOf({ contacts: [{ number: '+44 20 7946 0000' }, { number: '+44 20 7946' }, { number: '020 7946 0001' }] })).toEqual([
      'contacts.1.number: too short for +44',
      'contacts.2.number: a national number needs the batch’s defaultCountry (or write it with + and its country code)',
    ]);
  });

  it('DuplicatesAreComparedAfterNormalisationAndRefusedUnlessDedupe', () => {
    const contacts = [{ number: '+44 20 7946 0000' }, { number: '+1 415 555 0123' }, { number: '020 7946 0000' }];
    expect(issuesOf({ defaultCountry: 'GB', contacts })).toEqual(['contacts.2.number: duplicate of contacts.0.number (+442079460000)']);
    const deduped = batchBody.parse({ defaultCountry: 'GB', dedupe: true, contacts });
    expect(deduped.contacts.map((c) => c.number)).toEqual(['+442079460000', '+14155550123']);
    expect(deduped.duplicatesDropped).toBe(1);
  });

  it('ADuplicateExternalIdIsRefusedEvenWithDedupe', () => {
    expect(issuesOf({ dedupe: true, contacts: [{ number: '+442079460000', externalId: 'a' }, { number: '+442079460001', externalId: 'a' }] })).toEqual([
      'contacts.1.externalId: duplicate of contacts.0.externalId',
    ]);
  });

  it('ADroppedDuplicateNamesNoVariableColumn', () => {
    const body = batchBody.parse({ dedupe: true, contacts: [{ number: '+442079460000', variables: { a: '1' } }, { number: '+442079460000', variables: { b: '2' } }] });
    expect(body.variableNames).toEqual(['a']);
  });

  it('ABatchHasAtMostFiftyVariableNamesEachSpelledOneWay', () => {
    const contacts: ContactInput[] = Array.from({ length: 51 }, (_, i) => ({ number: `+4420794600${String(i).padStart(2, '0')}`, variables: { [`v${i}`]: i } }));
    expect(issuesOf({ contacts })).toEqual(['contacts.50.variables: a batch uses at most 50 distinct variable names (this contact would make 51)']);
    expect(issuesOf({ contacts: [{ number: '+442079460000', variables: { Name: 'a' } }, { number: '+442079460001', variables: { name: 'b' } }] })).toEqual([
      'contacts.1.variables.name: spelled "Name" by an earlier contact: a variable name has one spelling in a batch',
    ]);
  });

  it('FieldErrorsNameTheirPathAndUnknownFieldsAreRefused', () => {
    const result = batchBody.safeParse({ defaultCountry: 'XX', contacts: [{ number: '+442079460000', externalId: '', variables: { vip: null }, timezone: 'Mars/Olympus', nmber: 1 }] });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['contacts.0', 'contacts.0.externalId', 'contacts.0.timezone', 'contacts.0.variables.vip', 'defaultCountry']);
  });

  it('EmptyVariablesAreLeftOffTheContact', () => {
    expect(batchBody.parse({ contacts: [{ number: '+442079460000', variables: {} }] }).contacts).toEqual([{ number: '+442079460000', numberValid: true, region: 'GB' }]);
  });
});

describe('batch uniqueness', () => {
  it('ARefusedContactTakesNothingSoALaterOneIsNotADuplicate', () => {
    const unique = new BatchUniqueness();
    expect(unique.claim({ number: '+442079460000', externalId: 'a' }, 2)).toEqual({ outcome: 'new' });
    // Refused for its externalId: its number is not taken.
    expect(unique.claim({ number: '+442079460001', externalId: 'a' }, 3)).toEqual({ outcome: 'duplicateExternalId', first: 2 });
    expect(unique.claim({ number: '+442079460001', externalId: 'b' }, 4)).toEqual({ outcome: 'new' });
    expect(unique.claim({ number: '+442079460000', externalId: 'c' }, 5)).toEqual({ outcome: 'duplicateNumber', first: 2 });
    expect(unique.size).toBe(2);
  });

  it('TheBatchSettingsDecideANumbersFate', () => {
    expect(contactNumber('+44 7700 900123', {})).toEqual({ ok: true, fields: { number: '+447700900123', numberValid: false } });
    expect(contactNumber('+44 7700 900123', { strictNumbers: true }).ok).toBe(false);
    expect(contactNumber('020 79', { defaultCountry: 'GB' })).toEqual({ ok: false, message: 'too short for +44' });
  });
});
