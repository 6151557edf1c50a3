import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import type { JobClient } from '../jobs/index.ts';
import type { BookingStore } from './booking-store.ts';
import type { CalendarCredentials } from './credentials.ts';
import type { CalendarProvider } from './port.ts';
import type { CalendarPorts } from './ports.ts';
import type { CalendarSettingsStore, LoadedCalendar } from './settings-store.ts';

/**
 * What the calendar context's handlers and routes draw on. The composition root builds it once per
 * container (functions/app/contexts/calendar.ts), the provider with it: one access-token cache per container.
 *
 * Routes take it as a function, called on a request (never while listing the routes):
 *
 * ```ts
 * export function settingsRoutes(calendar: () => CalendarDeps): ApiRoute[]   // settings-api.ts
 * export function settleHandler(deps: SettleDeps): JobHandler<SettleArgs>    // settle-job.ts (supplier.invoke), SettleDeps picked from these
 * export function toolRoutes(deps: () => BookingDeps): ApiRoute[]            // tools-api.ts: BookingDeps adds the calls context's liveness,
 *                                                                            // batch settings and signature check (booking-deps.ts)
 * ```
 */
export interface CalendarDeps {
  /** Tenants' calendar settings (settings-store.ts). */
  settings: CalendarSettingsStore;
  /** Seals and opens calendars' credentials (credentials.ts); absent on a host without the secrets key. */
  credentials: CalendarCredentials | undefined;
  /**
   * A tenant's calendar with its credentials unsealed (settings-store.ts `calendarLoader`), or undefined
   * when there is no such calendar. Throws when credentials are stored but this host has no secrets key.
   */
  loadCalendar(tenantId: string, calendarId: string): Promise<LoadedCalendar | undefined>;
  /** The calendar provider (Google Calendar v3 over the send-once client; locally pointed at the simulator). Built once per container. */
  provider: CalendarProvider;
  /** Holds and appointments (booking-store.ts), on the `calendar` table. */
  bookings: BookingStore;
  /** The DynamoDB client and the `calendar` table's name. */
  db: DynamoDBDocumentClient;
  table: string;
  jobs: JobClient;
  /** What calendar asks of other contexts: batches (liveness of those naming a calendar), events for tenants' endpoints. */
  ports: CalendarPorts;
  /** Job time (the local runtime's TIME_SCALE applies to it). */
  clock: Clock;
  /** The outside world's time: route budgets, provider deadlines and signatures are real seconds. */
  wallClock: Clock;
  rng: Rng;
  logger: Logger;
  metrics: MetricsSink;
  /**
   * The secret the agent's tool requests are signed with, as call results are (CALL_WEBHOOK_SECRET:
   * Standard Webhooks); undefined where this function serves no tool route (they answer 503 there).
   */
  toolsSecret: string | undefined;
}

/** Where the provider sends its requests, when not to Google (the local runtime: its calendar simulator). */
export interface CalendarConfig {
  /** @default GOOGLE_CALENDAR_BASE_URL */
  calendarBaseUrl?: string;
  /** @default GOOGLE_TOKEN_URL */
  tokenUrl?: string;
  /** The tool requests' signing secret (CALL_WEBHOOK_SECRET); only the function serving the tools has it. */
  toolsSecret?: string;
  /** Another booking store, in place of `BookingStore` (the fault simulation's planted bugs: sim/bugs-calendar.ts). @default none */
  bookingStore?: (db: DynamoDBDocumentClient, tableName: string) => BookingStore;
  /** A wrapper around the provider (the fault simulation's planted bugs). @default none */
  wrapProvider?: (provider: CalendarProvider) => CalendarProvider;
}
