import { createHash } from 'node:crypto';

/**
 * A tenant's suppression list (do-not-call), pure: its keys and what a suppressed contact's outcome is.
 * The store comes later (docs/calls.md, "Suppression (design)"): `PUT /v1/suppressions/{number}` writes
 * the entry, `DELETE` removes it and leaves an audit record, the intake's `optOut: true` writes it in the
 * intake's transaction, and every dial's transaction holds a ConditionCheck `attribute_not_exists(pk)` on
 * the entry of each number it dials, so a number suppressed before the dial commits is never called.
 *
 * ```
 *  entry   pk TENANT#<tenantId>#SUPP#<shard 0–3>   sk NUMBER#<E.164>               {reason?, source, createdAt}
 *  audit   pk TENANT#<tenantId>#SUPPAUDIT          sk <E.164>#<ISO time>#<action>  {reason?, source}
 * ```
 *
 * The entries of a tenant are spread over {@link SUPPRESSION_SHARDS} partitions by a hash of the number:
 * every dial of the tenant reads one (a ConditionCheck), and the largest tenant dials 200 a second at the
 * 1,000-results-a-second burst (docs/capacity.md), which four partitions keep far below half of a
 * partition's rate. `GET /v1/suppressions` pages through the shards in turn (Query each, in number order).
 */
export const SUPPRESSION_SHARDS = 4;

/** Which shard a number's suppression entry lives in. */
export const suppressionShard = (number: string): number => createHash('sha256').update(number).digest().readUInt32BE(0) % SUPPRESSION_SHARDS;

/** The partition of one shard of a tenant's suppression list. */
export const suppressionPartition = (tenantId: string, shard: number): string => `TENANT#${tenantId}#SUPP#${shard}`;

/** The key of a number's entry in a tenant's suppression list: built from tenant and number alone, so the dial checks it and the intake writes it without a read. */
export const suppressionKey = (tenantId: string, number: string) => ({ pk: suppressionPartition(tenantId, suppressionShard(number)), sk: `NUMBER#${number}` });

/** How a number came onto (or off) the list. */
export const SuppressionSource = {
  /** `PUT`/`DELETE /v1/suppressions/{number}`. */
  api: 'api',
  /** A suppression CSV import. */
  import: 'import',
  /** The person asked, on a call: the intake's `optOut: true`. */
  optOut: 'opt_out',
} as const;
export type SuppressionSource = (typeof SuppressionSource)[keyof typeof SuppressionSource];

/** A suppression entry as stored. */
export interface SuppressionRow {
  pk: string;
  sk: string;
  tenantId: string;
  number: string;
  reason?: string;
  source: SuppressionSource;
  createdAt: string;
  /** For an opt-out: the call it came from. */
  callId?: string;
  batchId?: string;
}

/** The key of one audit record of a number's suppression: what happened to it, and when (kept after a DELETE). */
export const suppressionAuditKey = (tenantId: string, number: string, atIso: string, action: 'added' | 'removed') => ({
  pk: `TENANT#${tenantId}#SUPPAUDIT`,
  sk: `${number}#${atIso}#${action}`,
});

/** The status a suppressed contact ends in (beside Queued, Calling, Completed, RetryEligible). */
export const SUPPRESSED_STATUS = 'Suppressed';
/** The code a suppressed contact ends with: terminal, never in a batch's `retryOn`. */
export const SUPPRESSED_CODE = 'SUPPRESSED';

/** What a contact's item says once the dial found its number suppressed. */
export interface SuppressedOutcome {
  status: typeof SUPPRESSED_STATUS;
  code: typeof SUPPRESSED_CODE;
  retryable: false;
  /** Rounds it was dialled in: unchanged, since no call was placed (no attempt spent). */
  attempts: number;
  /** The round in which the dial found it suppressed. */
  round: number;
}

/**
 * A suppressed contact's outcome in round `round`: status `Suppressed`, code `SUPPRESSED`, not retried,
 * and no attempt spent — its attempts stay what its earlier rounds made them (0 in round 1).
 *
 * @example
 * suppressedOutcome(2, { attempts: 1 }); // → { status: 'Suppressed', code: 'SUPPRESSED', retryable: false, attempts: 1, round: 2 }
 */
export function suppressedOutcome(round: number, previous?: { attempts: number }): SuppressedOutcome {
  return { status: SUPPRESSED_STATUS, code: SUPPRESSED_CODE, retryable: false, attempts: previous?.attempts ?? 0, round };
}
