import * as z from 'zod';
import { csvImportQuery } from '../contacts/csv-import.ts';
import { batchSettingsFields, maxConcurrentCallsSchema } from '../schemas.ts';
import { retryOnSchema } from '../control/batch-control.ts';
import { uploadIds } from './uploads.ts';

/**
 * A CSV batch's settings: the JSON batch's, as query parameters for a CSV body (`POST /v1/batches/csv`),
 * or as the JSON body of an import (`POST /v1/batches/imports`), plus what to do with invalid rows and
 * duplicates (contacts/csv-import.ts). Validated at the edge, as every request is.
 */

/**
 * A JSON value in one query parameter (`callingWindow={"timezone":…}` URL-encoded): what cannot be a flat
 * parameter is written as the JSON body would have it, and validated by the same schema.
 */
function jsonParameter<T extends z.ZodType>(schema: T) {
  return z
    .string()
    .max(2000)
    .transform((text, ctx): unknown => {
      try {
        return JSON.parse(text);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'expected JSON (URL-encoded), as the JSON body’s field' });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

/** `POST /v1/batches/csv`'s query: every setting of a JSON batch, numbers and booleans as text, `callingWindow` and `retry` as JSON. */
export const csvBatchQuery = csvImportQuery.extend({
  tenantId: batchSettingsFields.tenantId,
  maxAttempts: z.coerce.number().int().min(1).max(10),
  minConversationDurationSeconds: z.coerce.number().int().min(0).max(3600).default(10),
  callingWindow: jsonParameter(batchSettingsFields.callingWindow.unwrap()).optional().describe('the calling window as JSON (URL-encoded), as the JSON body has it'),
  retry: jsonParameter(batchSettingsFields.retry.unwrap()).optional().describe('the round retry as JSON (URL-encoded), as the JSON body has it'),
  startAt: batchSettingsFields.startAt,
  maxConcurrentCalls: z.coerce.number().pipe(maxConcurrentCallsSchema).optional().describe('its calls in progress at most, 1 to the tenant’s limit (default: the tenant’s limit)'),
  retryOn: z
    .string()
    .max(500)
    .transform((text) => (text === '' ? [] : text.split(',').map((code) => code.trim())))
    .pipe(retryOnSchema)
    .optional()
    .describe('the normalised codes that earn another round, comma-separated (empty: none; default: every retryable code)'),
});
export type CsvBatchQuery = z.infer<typeof csvBatchQuery>;

/** `POST /v1/batches/imports`' body: the upload to import and the batch's settings. */
export const importBody = z.strictObject({
  uploadId: uploadIds.schema.describe('the `uploadId` of `POST /v1/uploads`, once its file was PUT'),
  ...batchSettingsFields,
  skipInvalid: z.boolean().optional().describe('import the valid rows and list the refused ones (up to 1,000, with their count), instead of refusing the file'),
  /** How the import job paces itself: pages (500 contacts) per run, and a wait between runs. */
  pagesPerRun: z.number().int().min(1).max(200).optional().describe('list pages (500 contacts each) the import job writes per run (default 20)'),
  pageDelayMs: z.number().int().min(0).max(60_000).optional().describe('how long the import job waits between runs (default 0: unpaced)'),
});
export type ImportBody = z.infer<typeof importBody>;


export const uploadResponse = z.object({
  uploadId: z.string(),
  url: z.string().describe('PUT the file there, as its raw bytes (no form encoding), before `expiresAt`'),
  method: z.literal('PUT'),
  expiresAt: z.string(),
  maxBytes: z.number(),
});

/** Rows refused, listed: the first ones, and how many in all. */
const refusedSchema = z.object({
  rows: z.number().int().describe('rows refused in all'),
  issues: z.array(z.object({ row: z.number().int().optional(), column: z.string().optional(), message: z.string() })).describe('the first issues (up to 1,000)'),
  issuesOmitted: z.number().int(),
});

export const csvBatchResponse = z.object({
  batchId: z.string(),
  accepted: z.number().int().describe('contacts in the batch'),
  duplicatesDropped: z.number().int(),
  refused: refusedSchema.optional().describe('with skipInvalid: the rows left out'),
});

export const importResponse = csvBatchResponse.extend({ status: z.literal('Importing') });
