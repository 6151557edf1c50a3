import { IANAZone } from 'luxon';
import * as z from 'zod';

/** A contact's `timezone`: an IANA zone (apart from fields.ts so that the intake's bundle carries no luxon). Pure. */

/**
 * What is wrong with a contact's time zone, or undefined: it must be an IANA zone name that luxon knows
 * (`IANAZone.isValidZone`, as calling windows are checked). A fixed UTC offset (`+03:00`), which luxon also
 * takes, is refused: it has no daylight-saving rules, so it would drift an hour off local time half the year.
 */
export function timezoneProblem(zone: string): string | undefined {
  if (/^[+-]/.test(zone) || !isIanaZone(zone)) return 'not an IANA time zone (e.g. Europe/Berlin)';
  return undefined;
}

// IANAZone.isValidZone builds an Intl.DateTimeFormat on every call, whose ICU memory lives outside the JS
// heap and so does not hasten a GC: 100,000 CSV rows with a zone took the import's RSS from about 100 MB
// to 350–800 MB. A batch names few zones, so answers are remembered — up to a bound, so that a file of
// distinct strings (case variants) cannot grow the memory without limit.
const zoneAnswers = new Map<string, boolean>();
const MAX_ZONE_ANSWERS = 1024;
function isIanaZone(zone: string): boolean {
  let valid = zoneAnswers.get(zone);
  if (valid === undefined) {
    valid = IANAZone.isValidZone(zone);
    if (zoneAnswers.size < MAX_ZONE_ANSWERS) zoneAnswers.set(zone, valid);
  }
  return valid;
}

export const timezoneSchema = z.string().superRefine((zone, ctx) => {
  const problem = timezoneProblem(zone);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
