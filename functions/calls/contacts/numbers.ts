import { isSupportedCountry, parsePhoneNumberWithError, ParseError, validatePhoneNumberLength } from 'libphonenumber-js/max';
import type { CountryCode } from 'libphonenumber-js/max';
import * as z from 'zod';

/*
 * Why the `max` metadata. Two checks are made on every number, and they need different data:
 *   possible — the length fits the country's numbering plan: any of the three sets can tell;
 *   valid    — the digits fall in a range the plan assigns: only `max` has every range. `min` keeps one
 *              pattern per country, so its `isValid()` accepts numbers `max` refuses (of 24,747 random
 *              possible numbers over every country, `min` calls 9,112 valid, `max` 4,676); `mobile` has
 *              mobile ranges only and calls every landline invalid (+44 20 7946 0000), which a calling
 *              campaign dials.
 * The cost: 188 KiB minified (48 KiB gzip) against `min`'s 117 KiB (29). `npm run bench -- import-parse`
 * measures both figures.
 */

export type { CountryCode };

/** An ISO 3166-1 alpha-2 country libphonenumber has a numbering plan for (`GB`, `US`): a batch's `defaultCountry`. */
export const countryCodeSchema = z
  .string()
  .refine((code): code is CountryCode => /^[A-Z]{2}$/.test(code) && isSupportedCountry(code), { message: 'expected an ISO 3166-1 alpha-2 country code with a numbering plan, such as GB or US' });

/** The longest number text read (an E.164 number is at most 16 characters; spaces, dashes and brackets may triple that). */
export const MAX_NUMBER_TEXT = 64;

const E164 = /^\+[1-9]\d{1,14}$/;

/** A number read: its E.164 form, whether its digits are in an assigned range, and its region when the number names one. */
export interface NormalisedNumber {
  ok: true;
  /** E.164: `+` and at most 15 digits. */
  number: string;
  /**
   * Whether the digits fall in a range the country's numbering plan assigns (libphonenumber's `isValid`
   * on the `max` metadata). A possible but not valid number (fictional ranges such as +44 7700 900xxx,
   * an unassigned US area code) is still dialable in form: the batch decides (`strictNumbers`).
   */
  valid: boolean;
  /**
   * The number's region (ISO 3166-1 alpha-2), for recipient-local hours: the region whose plan the number
   * is valid in, or else the one region its calling code could mean (+49 → DE even for a number not
   * valid). Absent when neither names one — a number not valid under a shared code (+1, +44, +7), or a
   * non-geographic code (+800, +882, …): the batch's own zone applies to those.
   */
  region?: CountryCode;
}

/** Why a number was refused (the message the API shows for it). */
export interface RefusedNumber {
  ok: false;
  message: string;
}

/** What {@link normaliseNumber} makes of one number's text. */
export type NumberVerdict = NormalisedNumber | RefusedNumber;

const lengthMessages: Record<string, string> = {
  TOO_SHORT: 'too short',
  TOO_LONG: 'too long',
  INVALID_LENGTH: 'not a length its country uses',
  INVALID_COUNTRY: 'unknown country calling code',
  NOT_A_NUMBER: 'not a phone number',
};

/**
 * Reads a phone number into E.164. The international form (`+44 20 7946 0000`, with any spaces, dots, dashes and brackets) stands alone; a
 * national form (`020 7946 0000`, or `0044…` with the country's own international prefix) needs
 * `defaultCountry`. Refused: text that is not one number (no extraction from surrounding text), an
 * unknown country calling code, a length the country's plan does not use (not *possible*), and an
 * extension (a dialled number has none). A possible number whose digits are not in an assigned range is
 * accepted with `valid: false`.
 *
 * @example
 * normaliseNumber('020 7946 0000', { defaultCountry: 'GB' }); // → { ok: true, number: '+442079460000', valid: true, region: 'GB' }
 * normaliseNumber('+44 7700 900123');                         // → { ok: true, number: '+447700900123', valid: false }
 * normaliseNumber('+44 20 7946');                             // → { ok: false, message: 'too short for +44' }
 */
export function normaliseNumber(text: string, options: { defaultCountry?: CountryCode | undefined } = {}): NumberVerdict {
  const raw = text.trim();
  if (raw === '') return { ok: false, message: 'required' };
  if (raw.length > MAX_NUMBER_TEXT) return { ok: false, message: `at most ${MAX_NUMBER_TEXT} characters` };
  let parsed;
  try {
    parsed = parsePhoneNumberWithError(raw, { ...(options.defaultCountry ? { defaultCountry: options.defaultCountry } : {}), extract: false });
  } catch (error) {
    if (!(error instanceof ParseError)) throw error;
    if (error.message === 'INVALID_COUNTRY' && !raw.startsWith('+') && !options.defaultCountry) {
      return { ok: false, message: 'a national number needs the batch’s defaultCountry (or write it with + and its country code)' };
    }
    return { ok: false, message: lengthMessages[error.message] ?? 'not a phone number' };
  }
  if (parsed.ext !== undefined) return { ok: false, message: 'extensions are not supported' };
  if (!parsed.isPossible()) {
    const why = validatePhoneNumberLength(parsed.number) ?? 'INVALID_LENGTH';
    return { ok: false, message: `${lengthMessages[why] ?? 'not a possible number'} for +${parsed.countryCallingCode}` };
  }
  // libphonenumber's E.164 is the standard's; checked all the same, since the rest of redial keys on it.
  if (!E164.test(parsed.number)) return { ok: false, message: 'not an E.164 number' };
  const valid = parsed.isValid();
  // The same rule as issue 27's regionOfNumber (functions/calls/compliance/recipient.ts): the plan's region, or the
  // one region the calling code could mean.
  const candidates = parsed.country ? [parsed.country] : parsed.getPossibleCountries();
  return { ok: true, number: parsed.number, valid, ...(candidates.length === 1 ? { region: candidates[0] } : {}) };
}
