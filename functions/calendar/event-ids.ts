import { createHash } from 'node:crypto';

/**
 * Event ids redial chooses for the events it inserts, pure. Google's rules for a client-chosen `id`
 * (calendar v3, the Events resource): "characters allowed in the ID are those used in base32hex encoding,
 * i.e. lowercase letters a-v and digits 0-9, see section 3.1.2 in RFC2938; the length of the ID must be
 * between 5 and 1024 characters; the ID must be unique per calendar. Due to the globally distributed
 * nature of the system, we cannot guarantee that ID collisions will be detected at event creation time."
 *
 * So an id is never re-used: each insert gets a fresh one, the lowercase hex (0–9, a–f: inside base32hex)
 * of a SHA-256 over the tenant, the calendar, the call, the start and a counter the hold increments on
 * every insert it makes. A re-sent request for the same booking finds the hold's counter already moved and
 * never sends an id twice; and Google refuses an id it has seen, even a deleted one (409 `duplicate`), so
 * re-using one could only fail. The same inputs give the same id, so the settle job recomputes what it
 * must look for from the hold alone.
 */

/** What an event id is computed from. */
export interface EventIdInput {
  tenantId: string;
  /** redial's calendar id (the tenant's name for it), not the provider's. */
  calendarId: string;
  callId: string;
  /** The appointment's start, epoch ms. */
  start: number;
  /** The hold's insert counter for this booking: 1 for its first insert, 2 for the next… */
  counter: number;
}

const BASE32HEX_ID = /^[0-9a-v]{5,1024}$/;

/** Whether `id` is a valid client-chosen Google event id: base32hex characters (0–9, a–v), 5 to 1024 of them. */
export const isValidEventId = (id: string): boolean => BASE32HEX_ID.test(id);

/**
 * The event id of one insert: 64 lowercase hex characters.
 *
 * @example
 * eventIdFor({ tenantId: 't_acme', calendarId: 'sales', callId: 'c_1', start: Date.parse('2026-03-02T15:00:00Z'), counter: 1 });
 * // → 64 hex characters; with counter: 2, a different 64
 */
export function eventIdFor(input: EventIdInput): string {
  if (!Number.isInteger(input.counter) || input.counter < 1) throw new RangeError(`an insert counter is a whole number ≥ 1, got ${input.counter}`);
  if (!Number.isFinite(input.start)) throw new RangeError('the start must be an instant');
  // Length-prefixed fields: no two different inputs hash the same bytes (a tenant "a#b" and calendar "c"
  // against tenant "a" and calendar "b#c").
  const fields = ['redial-event-v1', input.tenantId, input.calendarId, input.callId, new Date(input.start).toISOString(), String(input.counter)];
  const hash = createHash('sha256');
  for (const field of fields) hash.update(`${Buffer.byteLength(field)}:${field};`);
  return hash.digest('hex');
}
