import { seededRng } from '../functions/platform/rng.ts';
import type { Rng } from '../functions/platform/rng.ts';
import type { Campaign, Fault } from './plan.ts';

/**
 * Appointments in a plan (issue 29): for some plans, each tenant puts a calendar in the built-in calendar
 * (functions/calendar/local/simulator.ts) and some of its batches book into it; the simulated agent
 * (sim/world/calendar-agent.ts) asks availability and books during some calls. Drawn from a generator of its
 * own (seeded `seed × 67 + 6259`), after every other draw, so the campaigns and faults of every plan are drawn
 * as they were, and the plans it leaves alone (most) run exactly as before. Of the offsets that draw about
 * 30 %, 6259 leaves every seed `npm test` runs (1–4 and the planted bugs' seeds) without calendars: 152 of
 * seeds 1–500 have them (139 with a batch that books, 339 such batches), the first seed 10.
 *
 * The calendar faults aim at the calendar request a tool route sends (the nth freeBusy, insert or delete):
 * a timeout after the request was applied, a 5xx before or after it, a slow answer (inside the route's
 * 2.5 s budget, or after it: an insert that lands once the route gave up), a lost response. A crash between
 * the insert and the commit is `crash.afterSideEffect` aimed at the booking route: the world marks the
 * route's run when its insert reaches the calendar (scope.ts `routeSideEffect`), and the run dies at its next
 * AWS request, the first of its Booked (or Failed) commit.
 */

/** The booking tool's route: a crash after its insert reached the calendar, before the commit, aims at it. */
export const BOOK_ROUTE = 'POST /v1/calls/appointments';

/** The share of plans with calendars. */
export const CALENDAR_PLAN_SHARE = 0.3;

/** The bookable hours every simulated calendar has (its zone is UTC's in January: Europe/London). */
export const SIM_BOOKABLE_HOURS = { mon: [['09:00', '17:00']], tue: [['09:00', '17:00']], wed: [['09:00', '17:00']], thu: [['09:00', '17:00']], fri: [['09:00', '17:00']] } as const;
export const SIM_CALENDAR_ZONE = 'Europe/London';

/** The calendar id a tenant's calendar has in a plan. */
export const calendarIdOf = (tenantId: string): string => `cal-${tenantId}`;

const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.int(0, items.length - 1)]!;
const chance = (rng: Rng, p: number): boolean => rng.float() < p;

/** Adds calendars and `appointments` to some plans' campaigns; returns the calendar faults (ids from `firstId`). */
export function drawCalendars(seed: number, campaign: Campaign, firstId: number): Fault[] {
  const rng = seededRng(seed * 67 + 6259);
  if (!chance(rng, CALENDAR_PLAN_SHARE)) return [];
  let booking = 0;
  for (const tenant of campaign.tenants) {
    const calendarId = calendarIdOf(tenant.id);
    tenant.calendars = [calendarId];
    for (const batch of tenant.batches) {
      // A batch created from a CSV file (drawImports) books nothing: the import's request carries no settings.
      if (batch.import || !chance(rng, 0.7)) continue;
      batch.appointments = { calendarId, durationMinutes: pick(rng, [30, 30, 45, 60]), bufferMinutes: pick(rng, [0, 0, 5, 15]), maxDaysAhead: 14 };
      booking += batch.contacts.length;
    }
  }
  if (booking === 0) return [];
  const faults: Fault[] = [];
  const count = rng.int(0, 3);
  for (let i = 0; i < count; i++) {
    const id = firstId + faults.length;
    const roll = rng.float();
    const op = roll < 0.6 ? 'insert' : roll < 0.85 ? 'freeBusy' : 'delete';
    const nth = rng.int(1, 3);
    switch (pick(rng, ['calendar.timeoutAfterSend', 'calendar.serverError', 'calendar.slow', 'calendar.lostResponse', 'crash'] as const)) {
      case 'calendar.timeoutAfterSend':
        faults.push({ id, kind: 'calendar.timeoutAfterSend', op, nth });
        break;
      case 'calendar.serverError':
        faults.push({ id, kind: 'calendar.serverError', op, nth, applied: chance(rng, 0.5) });
        break;
      case 'calendar.slow':
        // Inside the budget (2.5 s less the route's margin), or after it.
        faults.push({ id, kind: 'calendar.slow', op, nth, ms: chance(rng, 0.5) ? rng.int(3, 15) * 100 : rng.int(26, 40) * 100 });
        break;
      case 'calendar.lostResponse':
        faults.push({ id, kind: 'calendar.lostResponse', op, nth });
        break;
      case 'crash':
        faults.push({ id, kind: 'crash.afterSideEffect', target: { where: 'api', name: BOOK_ROUTE }, nth });
        break;
    }
  }
  return faults;
}
