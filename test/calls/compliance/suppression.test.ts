import { describe, expect, it } from 'vitest';
import { RETRYABLE_CODES } from '../../../functions/calls/codes.ts';
import {
  SUPPRESSED_CODE,
  SUPPRESSED_STATUS,
  suppressedOutcome,
  suppressionAuditKey,
  suppressionKey,
  suppressionPartition,
  suppressionShard,
  SUPPRESSION_SHARDS,
} from '../../../functions/calls/compliance/suppression.ts';

describe('suppression: keys and the suppressed outcome', () => {
  it('KeysAnEntryByTenantAndNumberAloneSoTheDialAndTheIntakeNeedNoRead', () => {
    const key = suppressionKey('acme', '+14155550101');
    expect(key).toEqual({ pk: `TENANT#acme#SUPP#${suppressionShard('+14155550101')}`, sk: 'NUMBER#+14155550101' });
    expect(suppressionKey('acme', '+14155550101')).toEqual(key);
    // Another tenant's entry for the same number is another item.
    expect(suppressionKey('globex', '+14155550101').pk).not.toBe(key.pk);
    expect(suppressionKey('globex', '+14155550101').pk.startsWith('TENANT#globex#')).toBe(true);
  });

  it('SpreadsATenantsEntriesOverItsShards', () => {
    const counts = new Array<number>(SUPPRESSION_SHARDS).fill(0);
    for (let i = 0; i < 4000; i++) counts[suppressionShard(`+1415555${String(i).padStart(4, '0')}`)]!++;
    for (const count of counts) expect(count).toBeGreaterThan(850); // 1,000 each on average
    expect(suppressionPartition('acme', 3)).toBe('TENANT#acme#SUPP#3');
  });

  it('KeepsAuditRecordsPerNumberInTimeOrder', () => {
    const added = suppressionAuditKey('acme', '+14155550101', '2026-06-01T12:00:00.000Z', 'added');
    const removed = suppressionAuditKey('acme', '+14155550101', '2026-06-02T08:00:00.000Z', 'removed');
    expect(added.pk).toBe(removed.pk);
    expect(added.pk.startsWith('TENANT#acme#')).toBe(true);
    expect(added.sk < removed.sk).toBe(true);
  });

  it('EndsASuppressedContactTerminalWithNoAttemptSpent', () => {
    expect(suppressedOutcome(1)).toEqual({ status: 'Suppressed', code: 'SUPPRESSED', retryable: false, attempts: 0, round: 1 });
    expect(suppressedOutcome(3, { attempts: 2 })).toEqual({ status: SUPPRESSED_STATUS, code: SUPPRESSED_CODE, retryable: false, attempts: 2, round: 3 });
    expect(RETRYABLE_CODES.has(SUPPRESSED_CODE)).toBe(false);
  });
});
