import { getCountry } from 'countries-and-timezones';
import { IANAZone } from 'luxon';

/**
 * Time zones as the calling window sees them: which zones keep the same clock (so a region or an area code
 * that lists several of them may still have one), and which zones a region has. Pure: time comes in as an
 * argument; the only state is a cache of what was already computed.
 *
 * **Same offset rules.** Two zones keep the same clock over a horizon when their UTC offset is equal at
 * every instant of it: the same offset at its start and the same transitions (instant and new offset)
 * inside it. The horizon is {@link SAME_RULES_YEARS} calendar years from 1 January (UTC) of the year of the
 * decision: it always covers the next twelve months, which is longer than a campaign can be scheduled
 * ahead (30 days) and run, and it is the same all year, so its answer can be cached per year. A pair that
 * differed earlier in the year and agrees from now on counts as two zones until the year turns: the
 * error is on the strict side (the contact waits for both), never the lax one.
 *
 * Transitions are found by reading each zone's offset once a day (luxon's `IANAZone`, over Node's ICU
 * time zone data) and bisecting to the millisecond where it changed, so two zones that change on the same
 * day at different hours (America/Havana and America/New_York) are told apart. This assumes no zone
 * changes its offset twice within one day, which no rule in the tz database does.
 */
export const SAME_RULES_YEARS = 2;

const DAY_MS = 86_400_000;

/** One change of a zone's UTC offset: at `at` (epoch ms) the offset becomes `offsetMinutes`. */
export interface OffsetTransition {
  at: number;
  offsetMinutes: number;
}

/** A zone's clock over a span: its offset at the start and every change inside it. */
export interface OffsetRules {
  zone: string;
  from: number;
  to: number;
  initialOffsetMinutes: number;
  transitions: readonly OffsetTransition[];
}

/** The span over which zones are compared for a decision at `nowMs`: {@link SAME_RULES_YEARS} UTC years from 1 January of now's year. */
export function sameRulesHorizon(nowMs: number): { from: number; to: number } {
  const year = new Date(nowMs).getUTCFullYear();
  return { from: Date.UTC(year, 0, 1), to: Date.UTC(year + SAME_RULES_YEARS, 0, 1) };
}

/** A zone's UTC offset in minutes at an instant. */
export const offsetAt = (zone: string, ms: number): number => IANAZone.create(zone).offset(ms);

/**
 * A zone's offset at `from` and every change of it in [from, to): read once a day, each change bisected to
 * the millisecond (the first instant with the new offset).
 */
export function offsetRules(zone: string, from: number, to: number): OffsetRules {
  const iana = IANAZone.create(zone);
  if (!iana.isValid) throw new RangeError(`not an IANA time zone: ${zone}`);
  const transitions: OffsetTransition[] = [];
  const initialOffsetMinutes = iana.offset(from);
  let previous = initialOffsetMinutes;
  for (let t = from; t < to; t += DAY_MS) {
    const end = Math.min(t + DAY_MS, to);
    const next = iana.offset(end);
    if (next === previous) continue;
    // The change lies in (t, end]: find its first instant.
    let lo = t;
    let hi = end;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (iana.offset(mid) === previous) lo = mid;
      else hi = mid;
    }
    if (hi < to) transitions.push({ at: hi, offsetMinutes: next });
    previous = next;
  }
  return { zone, from, to, initialOffsetMinutes, transitions };
}

const rulesCache = new Map<string, OffsetRules>();

/** {@link offsetRules} over the horizon of `nowMs` ({@link sameRulesHorizon}), computed once per zone and year. */
export function horizonRules(zone: string, nowMs: number): OffsetRules {
  const { from, to } = sameRulesHorizon(nowMs);
  const key = `${zone}|${from}`;
  let rules = rulesCache.get(key);
  if (!rules) {
    rules = offsetRules(zone, from, to);
    rulesCache.set(key, rules);
  }
  return rules;
}

/** Whether two spans of rules give the same offset at every instant. */
export const sameRules = (a: OffsetRules, b: OffsetRules): boolean =>
  a.from === b.from &&
  a.to === b.to &&
  a.initialOffsetMinutes === b.initialOffsetMinutes &&
  a.transitions.length === b.transitions.length &&
  a.transitions.every((t, i) => t.at === b.transitions[i]!.at && t.offsetMinutes === b.transitions[i]!.offsetMinutes);

/** Whether two zones keep the same clock over the horizon of `nowMs` (see the module's doc). */
export const sameOffsetRules = (a: string, b: string, nowMs: number): boolean => a === b || sameRules(horizonRules(a, nowMs), horizonRules(b, nowMs));

/**
 * The zones that keep different clocks, one for each group of zones with the same offset rules over the
 * horizon of `nowMs`: the first zone of each group, in the order given, stands for it. Duplicates go.
 *
 * @example
 * distinctZones(['Europe/Berlin', 'Europe/Zurich'], Date.parse('2026-06-01T00:00:00Z'));
 * // → ['Europe/Berlin']   (Büsingen, DE, keeps Zurich's clock, which is Berlin's)
 */
export function distinctZones(zones: readonly string[], nowMs: number): string[] {
  const kept: { zone: string; rules: OffsetRules }[] = [];
  for (const zone of zones) {
    if (kept.some((k) => k.zone === zone)) continue;
    const rules = horizonRules(zone, nowMs);
    if (!kept.some((k) => sameRules(k.rules, rules))) kept.push({ zone, rules });
  }
  return kept.map((k) => k.zone);
}

/**
 * The IANA zones of an ISO 3166 region (`US`, `DE`), as the tz database's zone1970.tab lists them
 * (through `countries-and-timezones`, which follows each tz release): canonical zones only, including a
 * zone another country owns that the region's clocks follow (DE lists Europe/Zurich for Büsingen). Empty
 * for a code the package does not know.
 */
export function regionZones(region: string): string[] {
  return [...(getCountry(region)?.timezones ?? [])];
}
