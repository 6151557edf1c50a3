/**
 * The per-number frequency cap: at most `maxCallsPerNumberPer24h` calls to one number in any 24 hours,
 * across all of a tenant's batches, counted when the dial commits (a placer that then refuses the call
 * does not give the call back). Pure: the key layout, which slot a dial claims, and when a number frees;
 * the store makes the claim one conditional write inside the dial's transaction (docs/calls.md, "The
 * frequency cap (design)").
 *
 * **Slots, not a counter.** A number has `cap` slot items; each holds the dial time of one call. A dial
 * claims a slot that is free — never written, or holding a call 24 h old or older — with a Put whose
 * condition is exactly that freeness:
 *
 * ```
 *  pk TENANT#<tenantId>#CAP#<E.164>   sk SLOT#<k>   {at: dial time (ms), callId, batchId, expiresAt}
 *
 *  claim slot k:  Put … ConditionExpression  attribute_not_exists(pk) OR #at <= :cutoff   (cutoff = now − 24 h)
 * ```
 *
 * No read-modify-write: the condition is checked on the slot as stored when the transaction commits, not
 * on what the dial read. Each slot holds at most one call per 24 h (it can be claimed again only once its
 * call is 24 h old), so with `cap` slots no 24 h window (t − 24 h, t] holds more than `cap` calls. Two
 * dials that read the same slots pick the same slot (the lowest free one) and one of them is refused
 * (the transaction is cancelled; its reason returns the slot as stored, so the loser knows without a read
 * whether another slot is free). The items expire by TTL a day after their call; a slot's freeness never
 * depends on the TTL having run (DynamoDB deletes expired items within days, not at once).
 *
 * **A lowered cap.** Slots at or above a newly lowered cap still count (every slot read counts, whatever
 * its index), and claims go only to slots below the cap, lowest first: a number already at or over the new
 * cap waits until enough of its calls are 24 h old.
 */
export const DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H = 3;
/** The highest cap a tenant may set: one slot item per call, each read by every dial of the number. */
export const MAX_CALLS_PER_NUMBER_PER_24H = 20;
/** The cap's sliding window. */
export const CAP_WINDOW_MS = 24 * 3_600_000;
/** A slot item's TTL after its call: past the window, with an hour's margin (TTL only tidies; the condition decides). */
export const CAP_SLOT_TTL_MS = CAP_WINDOW_MS + 3_600_000;

/** The partition of a number's cap slots within its tenant's keys (every dial of the number reads it with one Query). */
export const capPartition = (tenantId: string, number: string): string => `TENANT#${tenantId}#CAP#${number}`;
/** The key of slot `slot` of a number's cap. */
export const capSlotKey = (tenantId: string, number: string, slot: number) => ({ pk: capPartition(tenantId, number), sk: `SLOT#${String(slot).padStart(2, '0')}` });

/** A cap slot item as stored. */
export interface CapSlotRow {
  pk: string;
  sk: string;
  slot: number;
  /** When the call that holds it was dialled (its dial's commit time, epoch ms). */
  at: number;
  callId: string;
  batchId: string;
  /** TTL, epoch seconds: {@link CAP_SLOT_TTL_MS} after `at`. */
  expiresAt: number;
}

/** What a dial read of a number's cap: each slot item it found (absent slots are free). */
export type CapSlotRead = Pick<CapSlotRow, 'slot' | 'at'>;

/**
 * The named condition of a claim: the slot was never written, or its call is at least 24 h old at `nowMs`.
 * The store puts it on the slot's Put in the dial's transaction.
 */
export const capClaimCondition = (nowMs: number) => ({
  expression: 'attribute_not_exists(pk) OR #at <= :cutoff',
  names: { '#at': 'at' },
  values: { ':cutoff': nowMs - CAP_WINDOW_MS },
});

/** Whether a slot read holds a call that still counts at `nowMs`. */
export const slotCounts = (slot: CapSlotRead, nowMs: number): boolean => slot.at > nowMs - CAP_WINDOW_MS;

/** A dial's decision for one number: claim a slot, or wait until it frees. */
export type CapDecision = { claim: number } | { freesAt: number };

/**
 * Which slot a dial claims, given the tenant's cap and the slots it read: the lowest slot below the cap that
 * is free (absent, or holding a call 24 h old). When the calls that still count (in any slot, below the
 * cap or above a lowered one) are `cap` or more, none: the number waits until {@link capFreesAt}.
 *
 * @example
 * decideCapSlot([{ slot: 0, at: now - 3_600_000 }], 3, now);            // → { claim: 1 }
 * decideCapSlot([0, 1, 2].map((slot) => ({ slot, at: now - 60_000 })), 3, now); // → { freesAt: now - 60_000 + 24 h }
 */
export function decideCapSlot(read: readonly CapSlotRead[], cap: number, nowMs: number): CapDecision {
  if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`maxCallsPerNumberPer24h must be a positive integer, not ${cap}`);
  const counting = read.filter((s) => slotCounts(s, nowMs));
  if (counting.length >= cap) return { freesAt: capFreesAt(read, cap, nowMs)! };
  const taken = new Set(counting.map((s) => s.slot));
  for (let slot = 0; slot < cap; slot++) if (!taken.has(slot)) return { claim: slot };
  // Unreachable: fewer than `cap` slots count, so one of the `cap` slots below the cap is free.
  throw new Error('unreachable: a number under its cap has a free slot below it');
}

/**
 * When a number at or over its cap frees (the first instant a dial may claim a slot), or undefined when it
 * is under its cap at `nowMs`. With k calls counting and a cap c ≤ k, the (k − c + 1)-th oldest must
 * turn 24 h old; with c = k that is the oldest.
 */
export function capFreesAt(read: readonly CapSlotRead[], cap: number, nowMs: number): number | undefined {
  const counting = read
    .filter((s) => slotCounts(s, nowMs))
    .map((s) => s.at)
    .sort((a, b) => a - b);
  if (counting.length < cap) return undefined;
  return counting[counting.length - cap]! + CAP_WINDOW_MS;
}
