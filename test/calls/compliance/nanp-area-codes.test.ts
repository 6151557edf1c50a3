import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { IANAZone } from 'luxon';
import { describe, expect, it } from 'vitest';
import { NANP_AREA_CODE_ZONES } from '../../../functions/calls/compliance/nanp-area-codes.ts';

/**
 * Area codes libphonenumber's numbering metadata (libphonenumber-js 1.13.16, metadata 9.0.43) has in service
 * that the time zone map the table was generated from (libphonenumber, July 2026) does not list yet. Their
 * numbers fall back to every zone of their region (recipient.ts): never called outside local hours, only
 * in a narrower window. When either source moves, this test fails and says which way.
 */
const NOT_YET_IN_THE_TIME_ZONE_MAP = ['273']; // CA: in the numbering metadata since 9.0.40 (September 2026)

const GEOGRAPHIC = new Set(['FIXED_LINE', 'MOBILE', 'FIXED_LINE_OR_MOBILE']);
// Exchanges that cover every central-office pattern the metadata uses for the plan's area codes.
const EXCHANGES = ['234', '345', '456', '567', '678', '789', '890', '923', '201', '310', '410', '520', '630', '740', '850', '960'];

/** Every NANP area code whose numbers libphonenumber's metadata calls fixed-line or mobile, by region. */
function geographicAreaCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (let code = 200; code < 1000; code++) {
    for (const exchange of EXCHANGES) {
      const number = parsePhoneNumberFromString(`+1${code}${exchange}4567`);
      const type = number?.getType();
      if (number?.country && type && GEOGRAPHIC.has(type)) {
        found.set(String(code), number.country);
        break;
      }
    }
  }
  return found;
}

describe('the NANP area code → zones table', () => {
  it('CoversEveryGeographicAreaCodeInServiceOfTheUsCanadaAndThePlansOtherMembers', () => {
    const inService = geographicAreaCodes();
    expect(inService.size).toBeGreaterThan(400);
    expect([...inService.values()]).toEqual(expect.arrayContaining(['US', 'CA', 'PR', 'JM', 'GU']));
    const missing = [...inService.keys()].filter((code) => NANP_AREA_CODE_ZONES[code] === undefined).sort();
    expect(missing).toEqual(NOT_YET_IN_THE_TIME_ZONE_MAP);
  });

  it('ListsOnlyValidZonesAndWellFormedAreaCodes', () => {
    for (const [code, zones] of Object.entries(NANP_AREA_CODE_ZONES)) {
      expect(code).toMatch(/^[2-9]\d{2}$/);
      expect(zones.length).toBeGreaterThan(0);
      for (const zone of zones) expect(IANAZone.isValidZone(zone), `${code}: ${zone}`).toBe(true);
    }
  });

  it('KeepsEveryZoneOfAnAreaCodeThatSpansZones', () => {
    expect(NANP_AREA_CODE_ZONES['212']).toEqual(['America/New_York']);
    expect(NANP_AREA_CODE_ZONES['415']).toEqual(['America/Los_Angeles']);
    expect(NANP_AREA_CODE_ZONES['208']).toEqual(['America/Boise', 'America/Denver', 'America/Los_Angeles']); // Idaho: Mountain south, Pacific north
    expect(NANP_AREA_CODE_ZONES['850']).toEqual(['America/Chicago', 'America/New_York']); // the Florida panhandle
    expect(NANP_AREA_CODE_ZONES['928']).toEqual(['America/Denver', 'America/Phoenix']); // the Navajo Nation keeps DST
  });

  it('LeavesNonGeographicCodesOut', () => {
    for (const code of ['800', '833', '844', '855', '866', '877', '888', '900', '500', '600']) expect(NANP_AREA_CODE_ZONES[code], code).toBeUndefined();
  });
});
