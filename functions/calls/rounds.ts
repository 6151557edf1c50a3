import { RETRIED_PREFIX } from './model.ts';
import type { BatchRow, RoundRow } from './model.ts';

/** What one round of a batch came to. */
export interface RoundOutcome {
  round: number;
  /** Contacts the round dials: the batch's contacts in round 1, those the previous round promoted after. */
  size: number;
  /** Completed calls of this round by normalised code, those promoted to the next round included. */
  byCode: Record<string, number>;
  /** Contacts of the round without an outcome yet (not dialled, or their call in progress). */
  pending: number;
  /** The round's finaliser closed it (re-armed the batch, or finalised it). */
  closed: boolean;
  /**
   * False when the batch's rounds were not recorded (a round closed before rounds were kept): its byCode
   * is then empty and its pending count unknown (0).
   */
  recorded: boolean;
}

const retriedOf = (row: RoundRow | undefined): Record<string, number> =>
  Object.fromEntries(
    Object.entries(row ?? {})
      .filter(([key]) => key.startsWith(RETRIED_PREFIX))
      .map(([key, n]) => [key.slice(RETRIED_PREFIX.length), n as number]),
  );

const sum = (counts: Readonly<Record<string, number>>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * Each round's outcomes, from the batch and its round rows (calls/model.ts `RoundRow`). A contact leaves
 * the batch's byCode when the finaliser promotes it and enters the round's `retried:<code>`, so for round r
 *
 * ```
 * outcomes(r) = byCodeAfter(r) − byCodeAfter(r − 1) + retried(r)
 * ```
 *
 * where byCodeAfter(0) is empty and, for the round in progress (or a last round closed without its row),
 * byCodeAfter(r) is the batch's byCode now. The same sum holds half-way through a promotion: each step
 * moves its contacts from byCode to retried in one transaction.
 */
export function roundOutcomes(batch: BatchRow, rows: readonly RoundRow[]): RoundOutcome[] {
  const byRound = new Map(rows.map((row) => [row.round, row]));
  const outcomes: RoundOutcome[] = [];
  let before: Record<string, number> | undefined = {};
  for (let round = 1; round <= batch.round; round++) {
    const row = byRound.get(round);
    const closed = row?.byCodeAfter !== undefined;
    const after = row?.byCodeAfter ?? (round === batch.round ? batch.byCode : undefined);
    const retried = retriedOf(row);
    const size = round === batch.round ? batch.roundSize : round === 1 ? batch.contactCount : sum(retriedOf(byRound.get(round - 1)));
    if (!after || !before) {
      outcomes.push({ round, size, byCode: {}, pending: 0, closed, recorded: false });
    } else {
      const byCode: Record<string, number> = {};
      for (const code of new Set([...Object.keys(after), ...Object.keys(retried)])) {
        const n = (after[code] ?? 0) - (before[code] ?? 0) + (retried[code] ?? 0);
        if (n > 0) byCode[code] = n;
      }
      outcomes.push({ round, size, byCode, pending: Math.max(0, size - sum(byCode)), closed, recorded: true });
    }
    before = row?.byCodeAfter;
  }
  return outcomes;
}
