import type { AppointmentsSettings } from '../platform/appointments.ts';
import { DEFAULT_ROUND_RETRY } from './backoff.ts';
import type { RoundRetry } from './backoff.ts';
import type { CountryCode } from './contacts/numbers.ts';
import { BatchStatus, batchKey, callsExpiry, LIST_PAGE_SIZE, listKey } from './model.ts';
import type { BatchRow, ListPage } from './model.ts';
import type { CallingWindow } from './window.ts';
import { statusAfterImport } from './control/batch-control.ts';
import { controlFieldsOf } from './control/create.ts';
import type { ControlSettings } from './control/create.ts';

/**
 * A new batch's row and round-1 list pages, whichever way its contacts came (a JSON body, a CSV body, an
 * import job): one builder, so every way makes the same batch. Pure.
 */

/** The settings a batch is created with, as its body or query gave them (validated). */
export interface BatchSettings extends ControlSettings {
  maxAttempts: number;
  callingWindow?: CallingWindow | undefined;
  retry?: RoundRetry | undefined;
  minConversationDurationSeconds: number;
  defaultCountry?: CountryCode | undefined;
  strictNumbers?: boolean | undefined;
  /** The calendar its agent books into (the route has checked the tenant has it). */
  appointments?: AppointmentsSettings | undefined;
}

/** What the batch's contacts came to. */
export interface BatchContactsSummary {
  /** Contacts in round 1's list (for an Importing batch: none yet, the import job adds them page by page). */
  count: number;
  variableNames: readonly string[];
  hasContactData: boolean;
  invalidNumbers: number;
  duplicatesDropped: number;
}

/** Round 1's list pages of these numbers, in order, from page `firstPage`. */
export function listPagesFor(batchId: string, numbers: readonly string[], now: number, firstPage = 0): ListPage[] {
  const pages: ListPage[] = [];
  for (let i = 0; i * LIST_PAGE_SIZE < numbers.length; i++) {
    const page = firstPage + i;
    pages.push({ ...listKey(batchId, 1, page), round: 1, page, numbers: numbers.slice(i * LIST_PAGE_SIZE, (i + 1) * LIST_PAGE_SIZE), expiresAt: callsExpiry(now) });
  }
  return pages;
}

/**
 * A new batch's row in round 1, its counters at their start: Importing for an import; else Scheduled while
 * its `startAt` is ahead (its first start job is number 1), Pending otherwise.
 */
export function newBatchRow(input: {
  batchId: string;
  tenantId: string;
  status: typeof BatchStatus.Pending | typeof BatchStatus.Importing;
  settings: BatchSettings;
  contacts: BatchContactsSummary;
  listPages: number;
  now: number;
  idempotency?: { key: string; requestHash: string } | undefined;
}): BatchRow {
  const { batchId, settings, contacts, now } = input;
  const at = new Date(now).toISOString();
  const control = controlFieldsOf(settings);
  const status = input.status === BatchStatus.Importing ? BatchStatus.Importing : statusAfterImport(control.startAt === undefined ? undefined : Date.parse(control.startAt), now);
  return {
    ...batchKey(batchId),
    batchId,
    tenantId: input.tenantId,
    status,
    round: 1,
    maxAttempts: settings.maxAttempts,
    ...(settings.callingWindow ? { callingWindow: settings.callingWindow } : {}),
    retry: settings.retry ?? DEFAULT_ROUND_RETRY,
    minConversationDurationSeconds: settings.minConversationDurationSeconds,
    contactCount: contacts.count,
    createdAt: at,
    updatedAt: at,
    expiresAt: callsExpiry(now),
    listPages: input.listPages,
    roundSize: contacts.count,
    dialPage: 0,
    dialPos: 0,
    dialComplete: false,
    nQueued: contacts.count,
    nCalling: 0,
    nCompleted: 0,
    nRetryEligible: 0,
    byCode: {},
    finPage: 0,
    finPos: 0,
    nextPages: 0,
    nextSize: 0,
    ...(contacts.variableNames.length > 0 ? { variableNames: [...contacts.variableNames] } : {}),
    ...(contacts.hasContactData ? { hasContactData: true } : {}),
    ...(contacts.invalidNumbers > 0 ? { invalidNumbers: contacts.invalidNumbers } : {}),
    ...(contacts.duplicatesDropped > 0 ? { duplicatesDropped: contacts.duplicatesDropped } : {}),
    ...(settings.defaultCountry ? { defaultCountry: settings.defaultCountry } : {}),
    ...(settings.strictNumbers ? { strictNumbers: true } : {}),
    ...(settings.appointments ? { appointments: settings.appointments } : {}),
    ...control,
    ...(status === BatchStatus.Scheduled ? { starts: 1 } : {}),
    ...(input.idempotency ? { idempotencyKey: input.idempotency.key, requestHash: input.idempotency.requestHash } : {}),
  };
}
