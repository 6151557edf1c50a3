import { DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H, MAX_CALLS_PER_NUMBER_PER_24H } from './compliance/cap.ts';
import { idempotencyKeyHeaders } from '../platform/idempotency.ts';
import { appointmentsSchema } from '../platform/appointments.ts';
import { tenantIdSchema } from '../platform/tenancy.ts';
import * as z from 'zod';
import { batchIds } from './model.ts';
import { e164 } from './intake-schemas.ts';
import { callingWindowSchema } from './window.ts';
import { retryOnSchema } from './control/batch-control.ts';
import { contactInputSchema, contactSettingsFields, normaliseContacts } from './contacts/contact.ts';

/**
 * The calls API's request and response schemas (docs/openapi.json is generated from them). Validation happens here, at the edge: a
 * request that fails gets a 400 naming the field, and nothing is written.
 */

/** Ids redial makes up and tenants choose: short, URL- and key-safe. */
export const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'expected 1–64 of A–Z, a–z, 0–9, _ and -');

/** The most contacts one batch takes (its round-1 list is written in the batch's own transaction). */
export const MAX_CONTACTS_PER_BATCH = 10_000;

export const tenantParams = z.object({ tenantId: tenantIdSchema });
// Request bodies are strict: an unknown field (a typo such as `maxAtempts`) is a 400 naming it, never a
// silent fallback to a default.
export const tenantBody = z.strictObject({
  concurrencyLimit: z.number().int().min(1).max(1000),
  ownerEmail: z.email().max(254).optional(),
  /** Calls to one number in any 24 hours, across the tenant's batches (docs/calls.md, "The frequency cap"). */
  maxCallsPerNumberPer24h: z.number().int().min(1).max(MAX_CALLS_PER_NUMBER_PER_24H).default(DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H),
});
export type TenantBody = z.infer<typeof tenantBody>;

export const tenantResponse = z.object({
  tenantId: z.string(),
  concurrencyLimit: z.number(),
  ownerEmail: z.string().nullable(),
  activeCalls: z.number(),
  maxCallsPerNumberPer24h: z.number(),
});

/** A batch's id names its tenant: `b_<tenantId>.<32 hex>` (model.ts `batchIds`). */
export const batchParams = z.object({ id: batchIds.schema });

/** Campaign control's settings of a new batch (control/batch-control.ts); `startAt` and `maxConcurrentCalls` are checked against now and the tenant in the handler. */
function controlSettingsFields() {
  return {
    startAt: startAtSchema.optional().describe('when the batch starts (ISO-8601, at most 30 days ahead): Scheduled until then; absent or past: at once'),
    maxConcurrentCalls: maxConcurrentCallsSchema.optional().describe('its calls in progress at most, 1 to the tenant’s limit (default: the tenant’s limit)'),
    retryOn: retryOnSchema.optional().describe('the normalised codes that earn another round: a subset of the retryable codes (default: all of them); [] retries nothing'),
  };
}

/** ISO-8601 with a zone (`Z` or an offset). */
export const startAtSchema = z.iso.datetime({ offset: true });
/** 1 to the tenant's limit (at most 1,000, a tenant's largest); the tenant's own limit is checked in the handler. */
export const maxConcurrentCallsSchema = z.number().int().min(1).max(1000);

/** A batch's settings other than its contacts: the JSON body's fields, and a CSV import's (as query parameters there). */
export const batchSettingsFields = {
  tenantId: tenantIdSchema.optional().describe('optional: the tenant is your API key’s (the path’s, on the operator copy); another tenant’s id is a 403'),
  /** Rounds: how many times a contact may be dialled. */
  maxAttempts: z.number().int().min(1).max(10),
  callingWindow: callingWindowSchema.optional(),
  retry: z
    .strictObject({ baseSeconds: z.number().int().min(1).max(86_400), capSeconds: z.number().int().min(1).max(7 * 86_400) })
    .refine((r) => r.capSeconds >= r.baseSeconds, { message: 'capSeconds must be at least baseSeconds', path: ['capSeconds'] })
    .optional(),
  minConversationDurationSeconds: z.number().int().min(0).max(3600).default(10),
  ...contactSettingsFields,
  ...controlSettingsFields(),
};

/**
 * `POST /v1/batches` as JSON: contacts `{number, externalId?, variables?, timezone?}` read against the
 * batch's contact settings (contacts/contact.ts `normaliseContacts`): numbers into E.164, duplicates and
 * invalid numbers refused (or dropped, flagged) with the contact's path. The validated body carries the
 * normalised contacts and the batch's variable names in order of first use.
 */
export const batchBody = z
  .strictObject({
    ...batchSettingsFields,
    /** JSON batches only (a CSV import's settings are query parameters, which do not nest). */
    appointments: appointmentsSchema.optional().describe('the calendar the agent books appointments into during calls, and how (docs/appointments.md); one of your calendars'),
    contacts: z.array(contactInputSchema).min(1).max(MAX_CONTACTS_PER_BATCH),
  })
  .transform((body, ctx) => {
    const result = normaliseContacts(body.contacts, body);
    for (const issue of result.issues) ctx.addIssue({ code: 'custom', path: ['contacts', ...issue.path], message: issue.message });
    if (result.issues.length > 0) return z.NEVER;
    return { ...body, contacts: result.contacts, variableNames: result.variableNames, duplicatesDropped: result.duplicatesDropped };
  });
export type BatchBody = z.infer<typeof batchBody>;

/** `POST /v1/batches`' headers: an optional client-chosen key that makes a retried request create nothing new. */
export const batchHeaders = idempotencyKeyHeaders('batch');

const countsSchema = z.object({
  byStatus: z.object({ Queued: z.number(), Calling: z.number(), Completed: z.number(), RetryEligible: z.number(), Suppressed: z.number() }),
  /** Contacts passed by the dialer and waiting for their window or their number's cap (compliance/dial-items.ts). */
  deferred: z.number(),
  byCode: z.record(z.string(), z.number()),
});

/** `GET /v1/batches/{id}/contacts/{number}/attempts`: one entry per call, first round first. */
export const attemptsResponse = z.object({
  batchId: z.string(),
  contactNumber: z.string(),
  attempts: z.array(
    z.object({
      round: z.number(),
      callId: z.string(),
      reportedCode: z.string().nullable(),
      code: z.string(),
      retryable: z.boolean(),
      source: z.enum(['webhook', 'watchdog', 'placer']),
      durationSeconds: z.number().nullable(),
      placedAt: z.string().nullable(),
      completedAt: z.string(),
      recordingUrl: z.string().nullable(),
      transcriptUrl: z.string().nullable(),
      summary: z.string().nullable(),
      data: z.record(z.string(), z.unknown()).nullable(),
      endedReason: z.string().nullable(),
    }),
  ),
});

export const batchResponse = z.object({
  batchId: z.string(),
  tenantId: z.string(),
  status: z.enum(['Importing', 'Scheduled', 'Pending', 'InProgress', 'Paused', 'Finalised', 'Cancelled', 'Deleted']),
  pausedFrom: z.enum(['Importing', 'Scheduled', 'Pending', 'InProgress']).nullable().describe('while Paused: the status resume returns it to'),
  pausedAt: z.string().nullable().describe('while Paused: when the pause committed; 30 days on, the batch is Cancelled'),
  startAt: z.string().nullable().describe('its scheduled start, if it was given one'),
  maxConcurrentCalls: z.number().nullable().describe('its calls in progress at most (null: the tenant’s limit)'),
  retryOn: z.array(z.string()).describe('the normalised codes that earn another round'),
  parentBatchId: z.string().nullable().describe('the batch this one re-runs contacts of (`POST …/rerun`)'),
  round: z.number(),
  maxAttempts: z.number(),
  contactCount: z.number(),
  counts: countsSchema,
  createdAt: z.string(),
  finalisedAt: z.string().nullable(),
  variableNames: z.array(z.string()).describe('the variable names the contacts use, in import order (the export’s columns)'),
  invalidNumbers: z.number().describe('contacts whose number is possible but not valid (accepted, flagged)'),
  duplicatesDropped: z.number().describe('contacts dropped as duplicates (`dedupe`)'),
  appointments: z
    .object({ calendarId: z.string(), durationMinutes: z.number(), bufferMinutes: z.number(), maxDaysAhead: z.number() })
    .nullable()
    .describe('the calendar its agent books appointments into, and how (null: it books none)'),
});

/** `GET /v1/batches`: the newest batches first. */
export const batchListResponse = z.object({
  batches: z.array(batchResponse),
  /** Present when more batches follow: pass it as `?cursor=` for the next page. */
  cursor: z.string().optional(),
});

/** `GET /v1/batches/{id}/rounds`: what each round came to (functions/calls/rounds.ts). */
export const roundsResponse = z.object({
  batchId: z.string(),
  rounds: z.array(
    z.object({
      round: z.number().int(),
      size: z.number().int().describe('contacts the round dials'),
      byCode: z.record(z.string(), z.number().int()).describe('completed calls of the round by normalised code, those promoted to the next round included'),
      pending: z.number().int().describe('contacts of the round without an outcome yet'),
      closed: z.boolean().describe('the round’s finaliser closed it'),
      recorded: z.boolean().describe('false for a round closed before rounds were recorded: its byCode is empty'),
    }),
  ),
});

/** `…/contacts/{number}`: a batch and one of its contacts' E.164 number. */
export const contactParams = z.object({ id: batchIds.schema, number: e164 });

export const contactsResponse = z.object({
  contacts: z.array(
    z.object({
      contactNumber: z.string(),
      status: z.enum(['Queued', 'Calling', 'Completed', 'RetryEligible', 'Suppressed']),
      code: z.string().nullable(),
      attempts: z.number(),
      callingZones: z
        .object({ zones: z.array(z.string()), source: z.enum(['contact', 'number', 'areaCode', 'region-all', 'batch']), reason: z.string() })
        .nullable()
        .describe("the zones the batch's calling window is evaluated in for this contact (open only while open in all), and why; null without a window"),
      deferred: z
        .object({ until: z.string(), reason: z.enum(['window', 'cap']) })
        .nullable()
        .describe('passed by the dialer in this round but not called yet: its window is closed (or its number at its 24 h cap) until `until`'),
      externalId: z.string().nullable(),
      variables: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
      timezone: z.string().nullable(),
      numberValid: z.boolean().describe('false for a possible number in no assigned range (accepted, flagged)'),
      region: z.string().nullable().describe('ISO 3166-1 alpha-2, when the number names one region'),
      lastCall: z
        .object({
          round: z.number(),
          completedAt: z.string(),
          recordingUrl: z.string().optional(),
          transcriptUrl: z.string().optional(),
          summary: z.string().optional(),
          endedReason: z.string().optional(),
        })
        .nullable()
        .describe('the latest completed call and its artefacts (`…/attempts` lists every call)'),
    }),
  ),
  /** Present when more contacts follow: pass it as `?cursor=` for the next page. */
  cursor: z.string().optional(),
});

/**
 * The call-result webhook's body. `callId` is the one the dialer gave the placer for this call: only a
 * result for the contact's current call applies. Not strict, unlike the API's bodies: the AI call handler
 * may add fields of its own, and a result refused for them would be a result lost. `code` is the handler's coarse code, trimmed and
 * upper-cased before classification; empty means FAILED. Codes are identifiers (letters, digits, `_`).
 */
export { callResultBody, callResultResponse, e164 } from './intake-schemas.ts';
export type { CallResultBody } from './intake-schemas.ts';
