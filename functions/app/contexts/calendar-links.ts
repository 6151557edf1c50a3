import { batchGet, MAX_BATCH_GET_KEYS } from '../../platform/dynamo.ts';
import { CalendarSettingsStore } from '../../calendar/settings-store.ts';
import type { CalendarBatches } from '../../calendar/module.ts';
import type { AppointmentCalendars } from '../../calls/module.ts';
import { BatchStatus, batchIds, batchKey } from '../../calls/model.ts';
import type { SystemHost } from '../host.ts';

/**
 * The links between the calls and calendar contexts, each a port one declares and the other's store
 * answers: a batch naming a calendar in its `appointments` (calls asks calendar), and the live batches that
 * name a calendar (calendar asks calls). Apart from contexts/calls.ts and calendar.ts, so the functions that
 * need neither link (the intake, the workers) carry neither context's store for the other.
 */

/** Batch statuses after which a batch books nothing more. */
const FINISHED: ReadonlySet<string> = new Set([BatchStatus.Finalised, BatchStatus.Cancelled, BatchStatus.Deleted]);

/** For the calls context: a new batch's calendar, checked and marked in the batch's own transaction. */
export function calendarPort(host: SystemHost): AppointmentCalendars {
  let store: CalendarSettingsStore | undefined;
  return {
    useForBatch: async ({ tenantId, calendarId, batchId }) => {
      const settings = (store ??= new CalendarSettingsStore(host.db, host.tableNames.calendar));
      // Read first, so a batch naming no calendar of its tenant is a 400 before anything is written; the
      // item's condition covers a delete between this read and the batch's commit.
      if (!(await settings.get(tenantId, calendarId))) return undefined;
      return { items: [settings.useForBatchItem(tenantId, calendarId, batchId)], jobs: [] };
    },
  };
}

/** For the calendar context: which of a tenant's batches are live (consistent reads of their rows). */
export function calendarBatches(host: SystemHost): CalendarBatches {
  return {
    live: async (tenantId, ids) => {
      // Only the tenant's own batches: an id naming another tenant is not read.
      const own = ids.filter((id) => batchIds.parse(id)?.tenantId === tenantId);
      const live: string[] = [];
      for (let i = 0; i < own.length; i += MAX_BATCH_GET_KEYS) {
        const rows = await batchGet(host.db, host.tableNames.calls, own.slice(i, i + MAX_BATCH_GET_KEYS).map(batchKey), { attributes: ['batchId', 'status'] });
        for (const row of rows) if (!FINISHED.has(row['status'] as string)) live.push(row['batchId'] as string);
      }
      return live.sort();
    },
  };
}
