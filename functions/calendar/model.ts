import type { TableDefinition } from '../platform/tables.ts';
import { tenantKeyPrefix } from '../platform/tenancy.ts';

/**
 * The calendar context's records and their keys. One table, `calendar`, single-table (pk/sk). Every item a
 * tenant owns has a partition key that begins with `TENANT#<tenantId>#` (functions/platform/tenancy.ts):
 *
 * | item | pk | sk |
 * |---|---|---|
 * | a calendar's settings (credentials sealed) | `TENANT#<tenantId>#CAL#<calendarId>` | `CALENDAR` |
 * | the tenant's calendars, one entry each (listing) | `TENANT#<tenantId>#CALENDARS` | `<calendarId>` |
 * | a hold cell (5 minutes of a calendar, holds.ts) | `TENANT#<tenantId>#CAL#<calendarId>#HOLDS` | `cell#<UTC minute>Z` |
 * | an appointment | `TENANT#<tenantId>#BATCH#<batch hex>#APPTS` | `APPT#<appointmentId>` |
 * | a call's appointment (one per call) | `TENANT#<tenantId>#BATCH#<batch hex>#APPTS` | `CALL#<callId>` |
 *
 * A batch's appointments share one partition, so the contacts listing and the export join them with one
 * Query; a calendar's hold cells share one, sorted by time, so availability reads `[from, to)` with one Query.
 */
export const calendarTable = {
  name: 'calendar',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** A calendar's settings item. */
export const calendarKey = (tenantId: string, calendarId: string) => ({ pk: `${tenantKeyPrefix(tenantId)}CAL#${calendarId}`, sk: 'CALENDAR' });

/** The tenant's calendar index entry. */
export const calendarIndexKey = (tenantId: string, calendarId: string) => ({ pk: `${tenantKeyPrefix(tenantId)}CALENDARS`, sk: calendarId });

/** The partition of a batch's appointments and its calls' pointers (`batchHex`: the batch id's own part). */
export const appointmentsPartition = (tenantId: string, batchHex: string): string => `${tenantKeyPrefix(tenantId)}BATCH#${batchHex}#APPTS`;

// ─── The booking's items (booking-store.ts) ─────────────────────────────────────────────────────────

/** An appointment's item: `APPT#<appointmentId>` in its batch's appointments partition. */
export const appointmentKey = (tenantId: string, batchHex: string, appointmentId: string) => ({ pk: appointmentsPartition(tenantId, batchHex), sk: `APPT#${appointmentId}` });

/** A call's pointer to its appointment (one per call): `CALL#<callId>` in the same partition. */
export const callPointerKey = (tenantId: string, batchHex: string, callId: string) => ({ pk: appointmentsPartition(tenantId, batchHex), sk: `CALL#${callId}` });

export const APPOINTMENT_PREFIX = 'APPT#';
