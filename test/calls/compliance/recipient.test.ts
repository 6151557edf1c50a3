import { describe, expect, it } from 'vitest';
import { nanpAreaCode, recipientZones, regionOfNumber, ZoneSource } from '../../../functions/calls/compliance/recipient.ts';
import type { RecipientContact, RecipientZones } from '../../../functions/calls/compliance/recipient.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const BATCH = { timezone: 'Europe/London', perContact: true };

describe('recipient zones: which zones a contact’s window is evaluated in, and why', () => {
  // [what, contact, zones, source]
  const cases: [string, RecipientContact, string[], ZoneSource][] = [
    ['the contact’s own timezone wins over its number', { number: '+14155550101', timezone: 'Asia/Tokyo' }, ['Asia/Tokyo'], 'contact'],
    ['a NANP area code in one zone', { number: '+14155550101' }, ['America/Los_Angeles'], 'areaCode'],
    ['a NANP area code in New York', { number: '+12125550123' }, ['America/New_York'], 'areaCode'],
    ['a Caribbean member of the plan', { number: '+18765550100' }, ['America/Jamaica'], 'areaCode'],
    // 208 (Idaho) lists Boise, Denver and Los Angeles; Boise and Denver keep one clock.
    ['an area code spanning zones keeps each clock once', { number: '+12085550123' }, ['America/Boise', 'America/Los_Angeles'], 'areaCode'],
    ['a region with one zone', { number: '+442071838750' }, ['Europe/London'], 'number'],
    ['a region whose zones keep one clock', { number: '+4930123456' }, ['Europe/Berlin'], 'number'],
    ['a region on a half-hour offset', { number: '+919876543210' }, ['Asia/Kolkata'], 'number'],
    ['a region given by the caller is not parsed again', { number: '+4930123456', region: 'ES' }, ['Africa/Ceuta', 'Atlantic/Canary'], 'region-all'],
    ['a number of no known region: the batch’s zone', { number: '+999123456' }, ['Europe/London'], 'batch'],
  ];
  it.each(cases)('%s', (_what, contact, zones, source) => {
    const chosen = recipientZones(contact, BATCH, NOW);
    expect(chosen.zones).toEqual(zones);
    expect(chosen.source).toBe(source);
    expect(chosen.reason).not.toBe('');
  });

  it('NonGeographicNanpNumbersTakeEveryZoneOfTheirRegion', () => {
    // Toll-free 800 is in no area code table row: the US, every clock.
    const chosen = recipientZones({ number: '+18005550100' }, BATCH, NOW);
    expect(chosen.source).toBe(ZoneSource.regionAll);
    expect(chosen.zones).toEqual(expect.arrayContaining(['America/Los_Angeles', 'America/Chicago', 'Pacific/Honolulu', 'America/Anchorage']));
    expect(chosen.zones).toHaveLength(8);
    expect(chosen.reason).toMatch(/region US spans 8 zones/);
  });

  it('ARegionWithSeveralClocksGivesThemAll', () => {
    const moscow = recipientZones({ number: '+79161234567' }, BATCH, NOW);
    expect(moscow.source).toBe(ZoneSource.regionAll);
    expect(moscow.zones).toEqual(expect.arrayContaining(['Europe/Kaliningrad', 'Asia/Anadyr']));
    const adelaide = recipientZones({ number: '+61881234567' }, BATCH, NOW);
    expect(adelaide.source).toBe(ZoneSource.regionAll);
    expect(adelaide.zones).toEqual(expect.arrayContaining(['Australia/Adelaide', 'Australia/Perth', 'Australia/Lord_Howe']));
  });

  it('PerContactOffKeepsTheBatchZoneForEveryone', () => {
    const off = { timezone: 'America/Chicago', perContact: false };
    for (const contact of [{ number: '+14155550101', timezone: 'Asia/Tokyo' }, { number: '+4930123456' }, { number: '+18005550100' }]) {
      expect(recipientZones(contact, off, NOW)).toEqual<RecipientZones>({ zones: ['America/Chicago'], source: 'batch', reason: "callingWindow.perContact is false: the batch's zone" });
    }
  });

  it('RefusesAContactTimezoneThatIsNotAZone', () => {
    expect(() => recipientZones({ number: '+4930123456', timezone: 'Europe/Atlantis' }, BATCH, NOW)).toThrow(RangeError);
  });
});

describe('numbers: region and area code', () => {
  // [number, region]
  const regions: [string, string | undefined][] = [
    ['+14155550101', 'US'],
    ['+14165550101', 'CA'],
    ['+16845550100', 'AS'],
    ['+442071838750', 'GB'],
    ['+447781123456', 'GG'], // a Guernsey mobile: +44 is shared by GB, GG, IM and JE
    ['+77012345678', 'KZ'], // +7 is shared by Russia and Kazakhstan
    ['+79161234567', 'RU'],
    ['+999123456', undefined],
    ['not a number', undefined],
  ];
  it.each(regions)('%s is in region %s', (number, region) => {
    expect(regionOfNumber(number)).toBe(region);
  });

  it('ReadsTheAreaCodeOfNanpNumbersOnly', () => {
    expect(nanpAreaCode('+14155550101')).toBe('415');
    expect(nanpAreaCode('+12085550123')).toBe('208');
    expect(nanpAreaCode('+4930123456')).toBeUndefined();
    expect(nanpAreaCode('+1415555010')).toBeUndefined(); // nine digits
    expect(nanpAreaCode('+11155550101')).toBeUndefined(); // an area code never starts with 1
  });
});
