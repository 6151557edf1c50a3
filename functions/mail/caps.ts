/**
 * The mail caps (seed 000, "Mail throttle"), as data:
 *
 * - **recipient**: at most 30 mails per recipient address per hour, every kind together. Over it, the job
 *   snoozes to the start of the next window: nothing is dropped, no attempt is spent.
 * - **ownerNotify**: at most 5 owner.notify mails per owner (tenant) per hour. Over it, the notice is a
 *   deliberate drop: recorded, counted, and the job completes.
 *
 * Windows are fixed UTC hours (`[09:00, 10:00)`), so "the next window" is a time anyone can compute. A
 * slot is held by a job id: a job that runs twice in one window (a retry, a redelivery) holds one slot, not
 * two. A failed send keeps its slot: the cap counts attempts to mail someone, since a send that timed
 * out may still have been delivered.
 */
export interface Cap {
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
  /** What happens over the limit. */
  readonly over: 'snooze' | 'drop';
}

export const caps = {
  recipient: { name: 'recipient', limit: 30, windowMs: 3600_000, over: 'snooze' },
  ownerNotify: { name: 'owner_notify', limit: 5, windowMs: 3600_000, over: 'drop' },
} as const satisfies Record<string, Cap>;

/** The window `now` falls in: `[start, end)`. */
export function windowOf(cap: Cap, now: number): { start: number; end: number } {
  const start = Math.floor(now / cap.windowMs) * cap.windowMs;
  return { start, end: start + cap.windowMs };
}

/** The key a recipient's counter is kept under: the address, lower-cased (mailboxes treat case alike in practice). */
export const recipientKey = (address: string): string => address.trim().toLowerCase();
