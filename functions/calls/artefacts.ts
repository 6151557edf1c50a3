import * as z from 'zod';
import { unstorableParts } from '../platform/dynamo.ts';
import { externalIdSchema } from './contacts/fields.ts';

/**
 * A call's artefacts, as the call-result webhook may carry them beside its code, and what of them an
 * event carries. The intake stores them whole; `call.completed` carries the links and a short summary,
 * never `data`: each event waits in every subscribed endpoint's list, so whatever it carries is stored
 * once per endpoint, and `data` is read through the API instead.
 *
 * Sizes are UTF-8 bytes: of the text for URLs and the summary, of `JSON.stringify(data)` for data.
 */

export const MAX_ARTEFACT_URL_BYTES = 2048;
export const MAX_SUMMARY_BYTES = 4096;
export const MAX_DATA_BYTES = 8192;
export const MAX_ENDED_REASON = 128;
/** The most of a summary an event carries. */
export const MAX_EVENT_SUMMARY_BYTES = 1024;

/**
 * A body cap for the intake that fits every artefact at its largest: 32 KiB. Worst case: today's fields
 * (about 400 bytes: a 200-character callId, ids, a code), two URLs of 2 KiB (printable ASCII: JSON escapes
 * nothing in them), a 4 KiB summary of quotes or newlines, each written as two bytes in JSON (8 KiB; other
 * control characters are refused), 8 KiB of data (measured serialised), an endedReason and an externalId
 * of at most 128 characters (≤ 3 bytes each, or 2 escaped) — under 22 KiB.
 */
export const INTAKE_MAX_BODY_BYTES_WITH_ARTEFACTS = 32 * 1024;

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

// Printable ASCII without space, quote, backslash and angle brackets: a URL as sent on the wire, already
// percent-encoded, which JSON writes as it is.
const URL_CHARACTERS = /^[!#-;=?-[\]-~]+$/;

/** An artefact's link: https only, as sent (not re-encoded, so a signed URL stays valid), at most 2 KiB, no credentials in it. */
export const artefactUrlSchema = z.string().superRefine((text, ctx) => {
  const fail = (message: string) => ctx.addIssue({ code: 'custom', message });
  if (utf8Bytes(text) > MAX_ARTEFACT_URL_BYTES) return fail(`at most ${MAX_ARTEFACT_URL_BYTES} bytes`);
  if (!URL_CHARACTERS.test(text)) return fail('expected a URL of printable ASCII, percent-encoded (no spaces, quotes, backslashes or angle brackets)');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail('not a URL');
  }
  if (url.protocol !== 'https:') return fail('expected an https URL');
  if (url.username !== '' || url.password !== '') return fail('a URL with credentials in it is refused: every subscribed endpoint would receive them');
});

/** A short text about the call, at most 4 KiB; tab, newline and carriage return are its only control characters. */
export const summarySchema = z.string().superRefine((text, ctx) => {
  if (utf8Bytes(text) > MAX_SUMMARY_BYTES) ctx.addIssue({ code: 'custom', message: `at most ${MAX_SUMMARY_BYTES} bytes (UTF-8)` });
  if (/(?![\t\n\r])\p{Cc}/u.test(text)) ctx.addIssue({ code: 'custom', message: 'no control characters other than tab, newline and carriage return' });
});

/** The call handler's own structured results: a JSON object, at most 8 KiB serialised, that DynamoDB can store. */
export const callDataSchema = z.record(z.string(), z.unknown()).superRefine((data, ctx) => {
  const bytes = utf8Bytes(JSON.stringify(data));
  if (bytes > MAX_DATA_BYTES) ctx.addIssue({ code: 'custom', message: `at most ${MAX_DATA_BYTES} bytes serialised (JSON, UTF-8); ${bytes} given` });
  for (const part of unstorableParts(data)) ctx.addIssue({ code: 'custom', path: part.path, message: part.message });
});

/** Why the call ended, in the handler's words (`customer-ended-call`, `voicemail`): 1–128 characters, no control characters. */
export const endedReasonSchema = z
  .string()
  .min(1)
  .max(MAX_ENDED_REASON)
  .regex(/^\P{Cc}*$/u, 'no control characters');

/**
 * The artefact fields of the call-result webhook's body, every one optional: spread into its schema
 * (`callResultBody.extend(callArtefactFields)`). `externalId` is the contact's, echoed by the placer.
 */
export const callArtefactFields = {
  recordingUrl: artefactUrlSchema.optional(),
  transcriptUrl: artefactUrlSchema.optional(),
  summary: summarySchema.optional(),
  data: callDataSchema.optional(),
  endedReason: endedReasonSchema.optional(),
  externalId: externalIdSchema.optional(),
};

/** The artefacts alone, as a call-result body carries them (other fields pass, as in the intake's schema). */
export const callArtefactsSchema = z.object(callArtefactFields);
export type CallArtefacts = z.infer<typeof callArtefactsSchema>;

/** What a `call.completed` event carries of a call's artefacts. */
export interface EventArtefacts {
  recordingUrl?: string;
  transcriptUrl?: string;
  /** At most {@link MAX_EVENT_SUMMARY_BYTES}. */
  summary?: string;
  /** Set when `summary` is the start of a longer one (the API has it whole). */
  summaryTruncated?: true;
  endedReason?: string;
  externalId?: string;
}

/**
 * The artefacts an event carries: the links, the reason, the externalId, and the summary cut to
 * {@link MAX_EVENT_SUMMARY_BYTES} — never `data`. Only fields present are set.
 *
 * @example
 * artefactsForEvent({ summary: 'é'.repeat(600), data: { score: 3 } });
 * // → { summary: 'é'.repeat(512), summaryTruncated: true }
 */
export function artefactsForEvent(artefacts: CallArtefacts): EventArtefacts {
  const event: EventArtefacts = {};
  if (artefacts.recordingUrl !== undefined) event.recordingUrl = artefacts.recordingUrl;
  if (artefacts.transcriptUrl !== undefined) event.transcriptUrl = artefacts.transcriptUrl;
  if (artefacts.summary !== undefined) {
    event.summary = truncateUtf8(artefacts.summary, MAX_EVENT_SUMMARY_BYTES);
    if (event.summary.length < artefacts.summary.length) event.summaryTruncated = true;
  }
  if (artefacts.endedReason !== undefined) event.endedReason = artefacts.endedReason;
  if (artefacts.externalId !== undefined) event.externalId = artefacts.externalId;
  return event;
}

/**
 * The longest start of `text` whose UTF-8 encoding takes at most `maxBytes`, cut between two code points:
 * never inside a multi-byte character or between the halves of a surrogate pair. (A grapheme made of
 * several code points, such as a flag or an accent written apart, may still be cut between them.)
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // A byte 10xxxxxx continues a character: back up to the byte that starts it.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
