import { HttpError } from '../../platform/http.ts';
import type { PreparedJob } from '../../jobs/index.ts';
import type { CallsDeps } from '../deps.ts';
import { dialKind } from '../kinds.ts';
import { BatchStatus, jobIds } from '../model.ts';
import type { BatchRow } from '../model.ts';
import { checkMaxConcurrentCalls, checkStartAt } from './batch-control.ts';
import { BatchSettingError } from './errors.ts';
import { prepareStart } from './service.ts';

/** A new batch's control settings, as its request gave them (validated at the edge). */
export interface ControlSettings {
  /** ISO-8601. */
  startAt?: string | undefined;
  maxConcurrentCalls?: number | undefined;
  retryOn?: string[] | undefined;
}

/**
 * Checks a new batch's control settings against now and its tenant (what the edge's schema cannot know):
 * `startAt` at most 30 days ahead, `maxConcurrentCalls` at most the tenant's limit; a 400 naming the field
 * (`body.startAt`, or `query.startAt` for a CSV body), nothing written. The tenant is read only when a
 * limit was asked for; a tenant that does not exist is the creation transaction's to refuse (404).
 */
export async function checkNewBatchControl(deps: CallsDeps, tenantId: string, settings: ControlSettings, now: number, where: 'body' | 'query'): Promise<void> {
  try {
    if (settings.startAt !== undefined) checkStartAt(Date.parse(settings.startAt), now);
    if (settings.maxConcurrentCalls !== undefined) {
      const tenant = await deps.store.getTenantRow(tenantId);
      if (tenant) checkMaxConcurrentCalls(settings.maxConcurrentCalls, tenant.concurrencyLimit);
    }
  } catch (error) {
    if (error instanceof BatchSettingError) throw new HttpError(400, 'invalid_request', `invalid ${where}`, { issues: [{ path: `${where}.${error.path}`, message: error.message }] });
    throw error;
  }
}

/** The control fields of a new batch's row (absent fields are absent: the defaults apply). `startAt` normalised to UTC ISO. */
export function controlFieldsOf(settings: ControlSettings): Pick<BatchRow, 'startAt' | 'maxConcurrentCalls' | 'retryOn'> {
  return {
    ...(settings.startAt !== undefined ? { startAt: new Date(Date.parse(settings.startAt)).toISOString() } : {}),
    ...(settings.maxConcurrentCalls !== undefined ? { maxConcurrentCalls: settings.maxConcurrentCalls } : {}),
    ...(settings.retryOn !== undefined ? { retryOn: [...settings.retryOn] } : {}),
  };
}

/**
 * The job a new (or newly imported) batch starts with, in its creation transaction: a Scheduled batch's
 * start job (its first, due at `startAt`), else round 1's dialer (which checks the window itself). An
 * Importing batch's is its import job (imports/create.ts).
 */
export function firstJob(deps: CallsDeps, batch: Pick<BatchRow, 'batchId' | 'status' | 'startAt' | 'starts'>): PreparedJob {
  if (batch.status === BatchStatus.Scheduled) {
    if (batch.startAt === undefined || batch.starts === undefined) throw new Error(`a Scheduled batch ${batch.batchId} without startAt or its start job's number`);
    return prepareStart(deps, batch.batchId, batch.starts, batch.startAt);
  }
  return deps.jobs.prepare(dialKind, { batchId: batch.batchId, round: 1 }, { id: jobIds.dial(batch.batchId, 1) });
}
