import { describe, expect, it } from 'vitest';
import { distinctZones, offsetRules, regionZones, sameOffsetRules, sameRulesHorizon } from '../../../functions/calls/compliance/zones.ts';

const at = (iso: string) => Date.parse(iso);
const NOW = at('2026-06-01T12:00:00Z');
const transitionsOf = (zone: string, from: string, to: string) =>
  offsetRules(zone, at(from), at(to)).transitions.map((t) => `${new Date(t.at).toISOString()} ${t.offsetMinutes}`);

describe('offset rules: a zone’s offset and every change of it over a span', () => {
  it('FindsEachUsTransitionToTheMillisecond', () => {
    expect(transitionsOf('America/New_York', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual([
      '2026-03-08T07:00:00.000Z -240', // 02:00 EST → 03:00 EDT
      '2026-11-01T06:00:00.000Z -300', // 02:00 EDT → 01:00 EST
    ]);
    expect(offsetRules('America/New_York', at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z')).initialOffsetMinutes).toBe(-300);
  });

  it('FindsEuTransitionsAtOneUtc', () => {
    expect(transitionsOf('Europe/Berlin', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual(['2026-03-29T01:00:00.000Z 120', '2026-10-25T01:00:00.000Z 60']);
  });

  it('FindsHalfHourZonesTransitions', () => {
    // Adelaide: ACDT (+10:30) ends 03:00 local on Sunday 5 April 2026; ACST (+9:30) ends 02:00 local on Sunday 4 October.
    expect(transitionsOf('Australia/Adelaide', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z')).toEqual(['2026-04-04T16:30:00.000Z 570', '2026-10-03T16:30:00.000Z 630']);
    expect(transitionsOf('Asia/Kolkata', '2026-01-01T00:00:00Z', '2028-01-01T00:00:00Z')).toEqual([]);
    expect(offsetRules('Asia/Kolkata', at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z')).initialOffsetMinutes).toBe(330);
  });

  it('RefusesAnUnknownZone', () => {
    expect(() => offsetRules('Mars/Olympus', NOW, NOW + 86_400_000)).toThrow(RangeError);
  });

  it('HorizonIsTwoUtcYearsFromTheFirstOfJanuary', () => {
    expect(sameRulesHorizon(NOW)).toEqual({ from: at('2026-01-01T00:00:00Z'), to: at('2028-01-01T00:00:00Z') });
    expect(sameRulesHorizon(at('2026-12-31T23:59:59Z'))).toEqual(sameRulesHorizon(NOW));
  });
});

describe('same offset rules: identical offsets at every instant of the horizon', () => {
  // [a, b, same?, why]
  const pairs: [string, string, boolean, string][] = [
    ['Europe/Berlin', 'Europe/Zurich', true, 'EU rules in both (Büsingen, DE, keeps Zurich time)'],
    ['America/New_York', 'America/Toronto', true, 'US and Canadian Eastern change together'],
    ['America/New_York', 'America/Detroit', true, 'one clock under two names'],
    ['Europe/London', 'Europe/Lisbon', true, 'WET/WEST and GMT/BST are the same offsets at the same instants'],
    ['America/Denver', 'America/Phoenix', false, 'Arizona keeps no DST'],
    ['America/New_York', 'America/Havana', false, 'Cuba changes on the same dates at midnight, not at 02:00'],
    ['America/New_York', 'America/Chicago', false, 'an hour apart'],
    ['Europe/London', 'Africa/Casablanca', false, 'Morocco suspends its offset for Ramadan'],
    ['Australia/Adelaide', 'Australia/Darwin', false, 'same standard offset, Darwin keeps no DST'],
    ['America/Denver', 'America/Ciudad_Juarez', true, 'Ciudad Juárez has followed US Mountain rules since November 2022'],
  ];
  it.each(pairs)('%s vs %s → %s (%s)', (a, b, same) => {
    expect(sameOffsetRules(a, b, NOW)).toBe(same);
    expect(sameOffsetRules(b, a, NOW)).toBe(same);
  });

  it('ComparesOverTheHorizonOnly: zones that differed before it are one', () => {
    // In 2022 Ciudad Juárez still followed Mexico's rules (no DST from 30 October); over 2026–2027 it matches Denver.
    const y2022 = [at('2022-01-01T00:00:00Z'), at('2023-01-01T00:00:00Z')] as const;
    expect(offsetRules('America/Ciudad_Juarez', ...y2022).transitions).not.toEqual(offsetRules('America/Denver', ...y2022).transitions);
    expect(distinctZones(['America/Denver', 'America/Ciudad_Juarez'], NOW)).toEqual(['America/Denver']);
  });
});

describe('distinct zones: one per group of zones that keep the same clock', () => {
  it('KeepsTheFirstOfEachGroupInTheOrderGivenAndDropsDuplicates', () => {
    expect(distinctZones(['America/Toronto', 'America/Chicago', 'America/New_York', 'America/Chicago', 'America/Winnipeg'], NOW)).toEqual(['America/Toronto', 'America/Chicago']);
  });

  // [region, number of distinct clocks, a zone that must stand for its group]
  const regions: [string, number, string[]][] = [
    ['DE', 1, ['Europe/Berlin']],
    ['GB', 1, ['Europe/London']],
    ['IN', 1, ['Asia/Kolkata']],
    ['ES', 2, ['Africa/Ceuta', 'Atlantic/Canary']], // Ceuta keeps Madrid's clock
    ['US', 8, ['America/Adak', 'America/Anchorage', 'America/Chicago', 'America/Los_Angeles', 'America/Phoenix', 'Pacific/Honolulu']],
    ['RU', 11, ['Europe/Kaliningrad', 'Asia/Anadyr']],
    ['CA', 11, ['America/St_Johns', 'America/Regina', 'America/Vancouver']],
    ['AU', 8, ['Australia/Adelaide', 'Australia/Perth', 'Australia/Lord_Howe', 'Australia/Eucla']],
  ];
  it.each(regions)('region %s keeps %i clock(s)', (region, count, some) => {
    const zones = distinctZones(regionZones(region), NOW);
    expect(zones).toHaveLength(count);
    expect(zones).toEqual(expect.arrayContaining(some));
  });
});

describe('region zones: the tz database’s zones of an ISO 3166 region', () => {
  it('ListsEveryCanonicalZoneOfTheRegion', () => {
    const us = regionZones('US');
    expect(us).toEqual(expect.arrayContaining(['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles', 'America/Anchorage', 'Pacific/Honolulu']));
    expect(us).not.toContain('US/Eastern');
    expect(regionZones('DE')).toEqual(['Europe/Berlin', 'Europe/Zurich']);
  });

  it('IsEmptyForARegionItDoesNotKnow', () => {
    expect(regionZones('XX')).toEqual([]);
    expect(regionZones('')).toEqual([]);
  });
});
