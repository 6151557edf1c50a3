import { nextOpeningFor } from './hours.ts';
import type { WindowHours } from './hours.ts';

/**
 * Which contacts a dial group dials now and which it defers, pure (docs/calls.md, "Deferred contacts
 * (design)"). A contact is deferred by its own calling window (recipient-local hours: compliance/hours.ts)
 * or by its number's frequency cap (compliance/cap.ts); a deferred contact keeps its list position, and so
 * its call id (`callIdFor(batchId, number, {round, page, pos})`), and is dialled later from the round's
 * deferred list, which the dialer reads in time order: it sleeps until the earliest deferral, never polls.
 *
 * ```
 *  list page   … | 7 NY | 8 LA | 9 NY | 10 TX | 11 NY | …        06:30 in Los Angeles, 09:30 in New York
 *                   ▲ cursor
 *  plan             dial   defer  dial   defer   dial             cursor → 12; deferred: 8 until 16:00Z,
 *                          (LA)          (TX)                       10 until 14:00Z; wake at 14:00Z
 * ```
 *
 * The cursor passes a prefix of the candidates: each is dialled, deferred or found unreachable (its window
 * never opens in all its zones at once); the plan stops at the first candidate it has no room for (no
 * dial left in the group, or no room for another deferral in the transaction), so nothing is skipped.
 */
export const DeferReason = {
  /** Its calling window is closed in at least one of its zones. */
  window: 'window',
  /** Its number has had its tenant's `maxCallsPerNumberPer24h` calls in the last 24 h. */
  cap: 'cap',
} as const;
export type DeferReason = (typeof DeferReason)[keyof typeof DeferReason];

/** A contact the dialer may dial: its list position (its call's identity), its number and the zones its window is evaluated in. */
export interface DialCandidate {
  page: number;
  pos: number;
  number: string;
  /** From `recipientZones` (compliance/recipient.ts); the window must be open in every one. */
  zones: readonly string[];
}

/** A deferred contact: its list position, its number, and when it may be dialled. */
export interface Deferral {
  page: number;
  pos: number;
  number: string;
  /** The first instant at which its window is open in all its zones and its number is under its cap. */
  notBefore: number;
  /** What keeps it from being dialled now (the window when both do). */
  reason: DeferReason;
}

/** What a dial group reads to plan. */
export interface DialPlanInput {
  /** The batch's calling window hours; undefined: no window, always open. */
  hours: WindowHours | undefined;
  /** In the order to dial: the round's list from the cursor (one page), or the due entries of the deferred list. */
  candidates: readonly DialCandidate[];
  /** Numbers at their cap as the dial read their cap slots → when each frees (cap.ts `capFreesAt`). */
  capFreeAt: ReadonlyMap<string, number>;
  nowMs: number;
  /** Dials the group may make: its size, the run's budget, the free concurrency slots. */
  maxDials: number;
  /** Deferrals (and unreachable contacts) the group's transaction has room for. */
  maxDeferrals: number;
}

/** A dial group's plan. */
export interface DialPlan {
  /** Dial now, in this order. */
  dial: DialCandidate[];
  /** Defer, each until its `notBefore`. */
  defer: Deferral[];
  /**
   * Never dialled in this window: no instant within a year has it open in all its zones at once (for
   * instance every Russian zone, 09:00–17:00). The design ends them with a terminal code and no attempt
   * spent, as suppressed contacts (docs/calls.md, "Deferred contacts (design)").
   */
  unreachable: DialCandidate[];
  /** How many candidates, from the first, the plan decided: the cursor moves past exactly these. */
  decided: number;
  /** The earliest `notBefore` among `defer`: when this plan next needs the dialer. */
  earliestDeferral: number | undefined;
}

/**
 * When a contact may next be dialled: the first instant at or after `nowMs` (and after its number frees,
 * when it is at its cap) at which its window is open in all its zones. Null: never ({@link nextOpeningFor}).
 */
export function eligibleAt(hours: WindowHours | undefined, zones: readonly string[], nowMs: number, capFreeAt?: number): number | null {
  const from = Math.max(nowMs, capFreeAt ?? nowMs);
  return hours ? nextOpeningFor(hours, zones, from) : from;
}

/**
 * The plan for one dial group (see the module's doc). Contacts that share their zones share one window
 * computation.
 *
 * @example
 * planDialGroup({ hours, candidates, capFreeAt: new Map(), nowMs, maxDials: 5, maxDeferrals: 40 });
 * // → { dial: [7, 9, 11], defer: [8 (window), 10 (window)], unreachable: [], decided: 5, earliestDeferral: … }
 */
export function planDialGroup(input: DialPlanInput): DialPlan {
  const { hours, candidates, capFreeAt, nowMs } = input;
  const openings = new Map<string, number | null>();
  const windowOpening = (zones: readonly string[]): number | null => {
    const key = zones.join('|');
    if (!openings.has(key)) openings.set(key, eligibleAt(hours, zones, nowMs));
    return openings.get(key)!;
  };
  const plan: DialPlan = { dial: [], defer: [], unreachable: [], decided: 0, earliestDeferral: undefined };
  for (const candidate of candidates) {
    const opens = windowOpening(candidate.zones);
    const capped = capFreeAt.get(candidate.number);
    const cappedNow = capped !== undefined && capped > nowMs;
    const at = opens === null || !cappedNow ? opens : eligibleAt(hours, candidate.zones, nowMs, capped);
    if (at === nowMs) {
      if (plan.dial.length >= input.maxDials) break;
      plan.dial.push(candidate);
    } else {
      if (plan.defer.length + plan.unreachable.length >= input.maxDeferrals) break;
      if (at === null) {
        plan.unreachable.push(candidate);
      } else {
        const reason = opens === nowMs ? DeferReason.cap : DeferReason.window;
        plan.defer.push({ page: candidate.page, pos: candidate.pos, number: candidate.number, notBefore: at, reason });
        plan.earliestDeferral = Math.min(plan.earliestDeferral ?? at, at);
      }
    }
    plan.decided++;
  }
  return plan;
}

/**
 * What the dialer does when a group is done: dial on at once while the round's list has positions left
 * under the cursor; else sleep until the earliest entry of the deferred list; else the round is fully
 * dialled. Never a poll: every wake-up is a time a deferral named.
 */
export function dialerNext(state: { listLeft: boolean; earliestDeferral: number | undefined; nowMs: number }): { next: 'dial' } | { next: 'sleep'; until: number } | { next: 'done' } {
  if (state.listLeft) return { next: 'dial' };
  if (state.earliestDeferral === undefined) return { next: 'done' };
  if (state.earliestDeferral <= state.nowMs) return { next: 'dial' };
  return { next: 'sleep', until: state.earliestDeferral };
}
