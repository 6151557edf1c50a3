import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { IANAZone } from 'luxon';
import { NANP_AREA_CODE_ZONES } from './nanp-area-codes.ts';
import { distinctZones, regionZones } from './zones.ts';

/**
 * Recipient-local hours: which zones a contact's calling window is evaluated in, and why. Pure (the clock
 * comes in as `nowMs`; it decides which zones keep the same clock, compliance/zones.ts).
 *
 * ```
 *  callingWindow.perContact false ................................... the batch's zone      batch
 *  the contact's own `timezone` ..................................... that zone            contact
 *  +1 number whose area code is in the NANP table ................... its zones            areaCode
 *  number of a known region (libphonenumber) with one clock ......... that zone            number
 *  number of a known region with several clocks ..................... every one of them    region-all
 *  anything else (no region: an unknown or unassigned number) ....... the batch's zone      batch
 * ```
 *
 * "One clock": zones with the same offset rules count as one ({@link distinctZones}): Germany lists
 * Europe/Berlin and Europe/Zurich (Büsingen), which keep the same time, so a German number has one zone.
 * An area code that spans zones (208, Idaho: Boise and Los Angeles) keeps all of them, as a region does:
 * the contact is dialled only while the window is open in every one (compliance/hours.ts).
 */
export const ZoneSource = {
  /** The contact's own `timezone`. */
  contact: 'contact',
  /** The number's region, which keeps one clock. */
  number: 'number',
  /** A NANP (+1) number's area code, from the checked-in table (compliance/nanp-area-codes.ts). */
  areaCode: 'areaCode',
  /** The number's region keeps several clocks: every one of them. */
  regionAll: 'region-all',
  /** The batch's window zone: `perContact` is off, or the number has no known region. */
  batch: 'batch',
} as const;
export type ZoneSource = (typeof ZoneSource)[keyof typeof ZoneSource];

/** The zones a contact's window is evaluated in (open only while open in all of them), where they came from, and why, as the contact listing shows it. */
export interface RecipientZones {
  zones: string[];
  source: ZoneSource;
  reason: string;
}

/** What the zone choice reads of a contact. */
export interface RecipientContact {
  /** E.164 (`+14155550101`), as the batch stores it. */
  number: string;
  /** The contact's own IANA zone, when its row gave one (issue 26). */
  timezone?: string;
  /** The number's ISO 3166 region when the caller already parsed it; otherwise parsed here. */
  region?: string;
}

/** What the zone choice reads of the batch. */
export interface RecipientWindow {
  /** The calling window's zone: today's single zone, and the fallback. */
  timezone: string;
  /** `callingWindow.perContact`; false keeps one zone for the whole batch. */
  perContact: boolean;
}

/**
 * The ISO 3166 region of an E.164 number by libphonenumber's full metadata (`libphonenumber-js/max`, the
 * bundle the number normaliser uses): the region whose numbering plan the number is valid in, or, for a
 * number valid in none, the one region its country calling code could mean. Undefined when neither says
 * (an unknown calling code, or a shared one such as +1 or +7 with a number of no region's plan).
 */
export function regionOfNumber(e164: string): string | undefined {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed) return undefined;
  if (parsed.country) return parsed.country;
  const possible = parsed.getPossibleCountries();
  return possible.length === 1 ? possible[0] : undefined;
}

/** The area code of a NANP (+1) number in E.164, or undefined for any other number. */
export const nanpAreaCode = (e164: string): string | undefined => /^\+1([2-9]\d{2})\d{7}$/.exec(e164)?.[1];

/**
 * The zones a contact's calling window is evaluated in, the rule that chose them and why (the table in this
 * module's doc, applied top to bottom).
 *
 * @example
 * recipientZones({ number: '+12085550123' }, { timezone: 'America/New_York', perContact: true }, Date.parse('2026-06-01T00:00:00Z'));
 * // → { zones: ['America/Boise', 'America/Los_Angeles'], source: 'areaCode', reason: 'area code 208 spans 2 zones: …' }
 */
export function recipientZones(contact: RecipientContact, window: RecipientWindow, nowMs: number): RecipientZones {
  if (!window.perContact) return { zones: [window.timezone], source: ZoneSource.batch, reason: "callingWindow.perContact is false: the batch's zone" };
  if (contact.timezone !== undefined) {
    if (!IANAZone.isValidZone(contact.timezone)) throw new RangeError(`contact ${contact.number}: not an IANA time zone: ${contact.timezone}`);
    return { zones: [contact.timezone], source: ZoneSource.contact, reason: "the contact's own timezone" };
  }
  const areaCode = nanpAreaCode(contact.number);
  const areaZones = areaCode === undefined ? undefined : NANP_AREA_CODE_ZONES[areaCode];
  if (areaZones) {
    const zones = distinctZones(areaZones, nowMs);
    return {
      zones,
      source: ZoneSource.areaCode,
      reason: zones.length === 1 ? `area code ${areaCode}` : `area code ${areaCode} spans ${zones.length} zones: dialled while the window is open in each`,
    };
  }
  const region = contact.region ?? regionOfNumber(contact.number);
  const listed = region === undefined ? [] : regionZones(region);
  if (region === undefined || listed.length === 0) {
    return { zones: [window.timezone], source: ZoneSource.batch, reason: "the number has no known region: the batch's zone" };
  }
  const zones = distinctZones(listed, nowMs);
  if (zones.length === 1) return { zones, source: ZoneSource.number, reason: `region ${region} keeps one clock` };
  return { zones, source: ZoneSource.regionAll, reason: `region ${region} spans ${zones.length} zones: dialled while the window is open in each` };
}
