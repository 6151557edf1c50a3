/**
 * What a Lambda bundle gets for `semver` (an esbuild alias, lib/constructs/function.ts `BUNDLING_ALIASES`):
 * `gte`, the one function any bundled code calls. The X-Ray SDK under Powertools' tracer requires `semver`
 * whole (≈ 29 KB) for one check in its SDK-v2 patcher (`captureAWS`: `semver.gte(AWS.VERSION, '2.7.15')`),
 * which redial never calls; this keeps that check working, with semver 7's strict parsing and precedence,
 * at a tenth of the bytes. test/platform/semver-gte.test.ts holds it to the package it replaces.
 *
 * Nothing in redial imports this module. Code that called another `semver` function would fail at the call
 * (`semver.x is not a function`), so the bundle test checks that the patcher is its only importer.
 */

/** semver's own limit: a longer string is refused before the pattern runs. */
const MAX_LENGTH = 256;
const NUMERIC = '0|[1-9]\\d*';
const PRERELEASE_ID = `(?:\\d*[a-zA-Z-][a-zA-Z0-9-]*|${NUMERIC})`;
const BUILD_ID = '[a-zA-Z0-9-]+';
/** semver's FULL pattern (strict mode): `v?MAJOR.MINOR.PATCH[-pre.release][+build.meta]`. */
const FULL = new RegExp(`^v?(${NUMERIC})\\.(${NUMERIC})\\.(${NUMERIC})(?:-(${PRERELEASE_ID}(?:\\.${PRERELEASE_ID})*))?(?:\\+${BUILD_ID}(?:\\.${BUILD_ID})*)?$`);
const DIGITS = /^[0-9]+$/;

interface Version {
  main: [number, number, number];
  prerelease: (string | number)[];
}

function parse(version: unknown): Version {
  if (typeof version !== 'string') throw new TypeError(`Invalid version. Must be a string. Got type "${typeof version}".`);
  if (version.length > MAX_LENGTH) throw new TypeError(`version is longer than ${MAX_LENGTH} characters`);
  const m = FULL.exec(version.trim());
  if (!m) throw new TypeError(`Invalid Version: ${version}`);
  const main = [Number(m[1]), Number(m[2]), Number(m[3])] as [number, number, number];
  main.forEach((n, i) => {
    if (n > Number.MAX_SAFE_INTEGER) throw new TypeError(`Invalid ${['major', 'minor', 'patch'][i]!} version`);
  });
  // Numeric identifiers compare as numbers (semver keeps one too large to be exact as its string).
  const prerelease = m[4] ? m[4].split('.').map((id) => (DIGITS.test(id) && Number(id) < Number.MAX_SAFE_INTEGER ? Number(id) : id)) : [];
  return { main, prerelease };
}

/** semver's compareIdentifiers: numeric below alphanumeric, numbers by value, strings by code unit. */
function compareIdentifiers(a: string | number, b: string | number): number {
  const aNumeric = DIGITS.test(String(a));
  const bNumeric = DIGITS.test(String(b));
  const x = aNumeric && bNumeric ? Number(a) : a;
  const y = aNumeric && bNumeric ? Number(b) : b;
  if (x === y) return 0;
  if (aNumeric && !bNumeric) return -1;
  if (bNumeric && !aNumeric) return 1;
  return x < y ? -1 : 1;
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a.main[i] !== b.main[i]) return a.main[i]! < b.main[i]! ? -1 : 1;
  // A pre-release sorts below its release; build metadata never counts.
  if (a.prerelease.length === 0 || b.prerelease.length === 0) return Number(a.prerelease.length === 0) - Number(b.prerelease.length === 0);
  for (let i = 0; ; i++) {
    const x = a.prerelease[i];
    const y = b.prerelease[i];
    if (x === undefined && y === undefined) return 0;
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const c = compareIdentifiers(x, y);
    if (c !== 0) return c;
  }
}

/** Whether version `a` is greater than or equal to `b` (semver's `gte`, strict; throws a TypeError on an invalid version as semver does). */
export function gte(a: string, b: string): boolean {
  return compare(parse(a), parse(b)) >= 0;
}
