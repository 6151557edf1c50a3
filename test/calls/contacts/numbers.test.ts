import { describe, expect, it } from 'vitest';
import { countryCodeSchema, normaliseNumber } from '../../../functions/calls/contacts/numbers.ts';
import type { CountryCode } from '../../../functions/calls/contacts/numbers.ts';

describe('numbers: E.164 with libphonenumber (max metadata)', () => {
  // [what, text, defaultCountry, E.164, valid, region]
  const accepted: [string, string, CountryCode | undefined, string, boolean, string | undefined][] = [
    ['international with spaces', '+44 20 7946 0000', undefined, '+442079460000', true, 'GB'],
    ['international with brackets, dashes and dots', '+1 (415) 555-0123', undefined, '+14155550123', true, 'US'],
    ['dots', '+1.415.555.0123', undefined, '+14155550123', true, 'US'],
    ['national with the batch country', '020 7946 0000', 'GB', '+442079460000', true, 'GB'],
    ['national with the trunk prefix in brackets', '+44 (0)20 7946 0000', undefined, '+442079460000', true, 'GB'],
    ['the country’s international prefix (00) with its default country', '0044 20 7946 0000', 'GB', '+442079460000', true, 'GB'],
    ['a + number ignores the default country', '+49 151 23456789', 'GB', '+4915123456789', true, 'DE'],
    ['US national', '415 555 0123', 'US', '+14155550123', true, 'US'],
    ['surrounding spaces', '  +33 1 23 45 67 89  ', undefined, '+33123456789', true, 'FR'],
    // Possible but not valid: Ofcom's drama range, an unassigned US area code (555).
    ['UK drama range: possible, not valid, no region', '+44 7700 900123', undefined, '+447700900123', false, undefined],
    ['US area code 555: possible, not valid', '+1 555 555 5555', undefined, '+15555555555', false, undefined],
    ['non-geographic (+800): valid, no region', '+800 1234 5678', undefined, '+80012345678', true, undefined],
    // A code of one country names its region even for a number its plan does not assign.
    ['Germany, not valid: the one region of +49', '+49 1234 5678', undefined, '+4912345678', false, 'DE'],
    ['Russia/Kazakhstan (+7), not valid: no region', '+7 000 123 45 67', undefined, '+70001234567', false, undefined],
    ['Singapore, not valid: the one region of +65', '+65 1234 5678', undefined, '+6512345678', false, 'SG'],
  ];
  it.each(accepted)('Accepts %s', (_what, text, defaultCountry, e164, valid, region) => {
    const verdict = normaliseNumber(text, { defaultCountry });
    expect(verdict).toEqual({ ok: true, number: e164, valid, ...(region ? { region } : {}) });
  });

  // [what, text, defaultCountry, message]
  const refused: [string, string, CountryCode | undefined, string][] = [
    ['empty', '   ', undefined, 'required'],
    ['too short for its country', '+44 20 7946', undefined, 'too short for +44'],
    ['too long for its country', '+1 415 555 0123 4567', undefined, 'too long for +1'],
    ['an unknown country calling code', '+999 123 456', undefined, 'unknown country calling code'],
    ['a country code starting with 0', '+0123456', undefined, 'unknown country calling code'],
    ['national without a default country', '020 7946 0000', undefined, 'a national number needs the batch’s defaultCountry (or write it with + and its country code)'],
    ['letters', '1-800-FLOWERS', 'US', 'not a phone number'],
    ['a number inside other text', 'call +14155550123 now', undefined, 'not a phone number'],
    ['two plus signs', '++14155550123', undefined, 'not a phone number'],
    ['an extension', '+1 415 555 0123 ext 5', undefined, 'extensions are not supported'],
    ['over 64 characters', `+1 ${'4'.repeat(70)}`, undefined, 'at most 64 characters'],
  ];
  it.each(refused)('Refuses %s', (_what, text, defaultCountry, message) => {
    expect(normaliseNumber(text, { defaultCountry })).toEqual({ ok: false, message });
  });

  it('TheSameNumberWrittenThreeWaysNormalisesToOneE164', () => {
    const forms = ['+44 20 7946 0000', '020 7946 0000', '0044 (0)20-7946-0000'].map((t) => normaliseNumber(t, { defaultCountry: 'GB' }));
    expect(new Set(forms.map((f) => (f.ok ? f.number : f.message)))).toEqual(new Set(['+442079460000']));
  });

  it('TheDefaultCountryIsAnIsoCodeWithANumberingPlan', () => {
    expect(countryCodeSchema.parse('GB')).toBe('GB');
    for (const bad of ['gb', 'GBR', 'ZZ', '', 'UK']) expect(countryCodeSchema.safeParse(bad).success, bad).toBe(false);
  });
});
