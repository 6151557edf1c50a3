import * as z from 'zod';
import { callArtefactFields } from './artefacts.ts';

/*
 * The call-result intake's schemas, apart from the other calls schemas (schemas.ts re-exports them): the
 * intake's bundle validates a result without the batch schemas' calling-window zones (luxon).
 */

/** An E.164 number: `+`, a country code that does not start with 0, at most 15 digits in all. */
export const e164 = z.string().regex(/^\+[1-9]\d{1,14}$/, 'expected an E.164 number such as +14155550123');

export const callResultBody = z.object({
  batchId: z.string().regex(/^[A-Za-z0-9_.-]{1,140}$/, 'expected a batch id').describe('the batchId the placer was given for this call (`b_<tenantId>.<hex>`)'),
  contactNumber: e164,
  callId: z.string().min(1).max(200).describe('the callId the placer was given for this call'),
  code: z.string().regex(/^\s*[A-Za-z0-9_]{0,64}\s*$/, 'expected a code of letters, digits and _ (at most 64), or empty'),
  emptyTranscription: z.boolean(),
  durationSeconds: z.number().min(-86_400).max(86_400),
  // The call's artefacts (artefacts.ts), each optional, and what the placer echoes back of its request.
  ...callArtefactFields,
  placedAt: z.iso.datetime({ offset: false }).optional().describe('the placedAt the placer was given for this call, echoed back'),
  optOut: z.boolean().optional().describe('the person asked not to be called again: the number joins the tenant’s suppression list (even when the result itself is ignored as late or a duplicate) and `contact.opted_out` goes out, once per number and call'),
});
export type CallResultBody = z.infer<typeof callResultBody>;

export const callResultResponse = z.object({
  outcome: z.enum(['applied', 'ignored']),
  code: z.string().optional(),
  retryable: z.boolean().optional(),
});
