import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { gte } from '../../functions/platform/semver-gte.ts';

/** The package the bundles' alias replaces, as installed (the one the X-Ray SDK would load without the alias). */
const semver = createRequire(import.meta.url)('semver') as { gte(a: string, b: string): boolean; SEMVER_SPEC_VERSION: string };

/** Versions that exercise every rule of precedence: main parts, pre-release identifiers numeric and not, build metadata, the `v` prefix and whitespace. */
const VERSIONS = [
  '0.0.0',
  '0.0.1',
  '0.1.0',
  '1.0.0',
  'v1.0.0',
  ' 1.0.0 ',
  '1.0.0+build.7',
  '1.0.0+other',
  '1.0.0-alpha',
  '1.0.0-alpha.1',
  '1.0.0-alpha.beta',
  '1.0.0-beta',
  '1.0.0-beta.2',
  '1.0.0-beta.11',
  '1.0.0-rc.1',
  '1.0.0-rc.1+build.1',
  '1.0.0-0',
  '1.0.0-00a',
  '1.0.0-1a',
  '1.0.0--',
  '1.0.0-a-b',
  '1.0.0-99999999999999999999',
  '1.0.0-100000000000000000000',
  '1.0.1',
  '1.2.3',
  '1.10.0',
  '2.0.0',
  '2.7.14',
  '2.7.15',
  '2.7.16',
  '2.1692.0',
  '3.1169.0',
  '10.0.0',
  '9007199254740991.0.0',
];

/** What semver refuses in strict mode; the alias must refuse it too (a TypeError), not answer. */
const INVALID = ['', '1', '1.2', '01.0.0', '1.01.0', '1.0.0-01', '1.0.0-', '1.0.0+', '1.0.0-a..b', 'V1.0.0', '=1.0.0', '1.0.0.0', 'x.y.z', `1.0.0-${'a'.repeat(260)}`, '9007199254740992.0.0'];

describe('the semver alias of the bundles (gte only)', () => {
  it('orders the SemVer 2.0 precedence example as the specification does', () => {
    const chain = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0'];
    for (let i = 1; i < chain.length; i++) {
      expect(gte(chain[i]!, chain[i - 1]!), `${chain[i]} ≥ ${chain[i - 1]}`).toBe(true);
      expect(gte(chain[i - 1]!, chain[i]!), `${chain[i - 1]} ≥ ${chain[i]}`).toBe(false);
    }
  });

  it('answers the X-Ray patcher’s check (an SDK v2 version against 2.7.15) as semver does', () => {
    expect(gte('2.1692.0', '2.7.15')).toBe(true);
    expect(gte('2.7.15', '2.7.15')).toBe(true);
    expect(gte('2.7.14', '2.7.15')).toBe(false);
  });

  it('agrees with the installed semver on every ordered pair of the versions', () => {
    const disagreements: string[] = [];
    for (const a of VERSIONS) {
      for (const b of VERSIONS) {
        if (gte(a, b) !== semver.gte(a, b)) disagreements.push(`gte(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      }
    }
    expect(VERSIONS.length ** 2).toBe(1156);
    expect(disagreements).toEqual([]);
  });

  it('throws a TypeError where semver does, on each side', () => {
    for (const bad of INVALID) {
      expect(() => semver.gte(bad, '1.0.0'), `semver accepts ${JSON.stringify(bad)}`).toThrow(TypeError);
      expect(() => gte(bad, '1.0.0'), JSON.stringify(bad)).toThrow(TypeError);
      expect(() => gte('1.0.0', bad), JSON.stringify(bad)).toThrow(TypeError);
    }
    expect(() => gte(undefined as unknown as string, '1.0.0')).toThrow(/Must be a string/);
  });
});
