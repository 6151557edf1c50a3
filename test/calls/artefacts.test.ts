import { describe, expect, it } from 'vitest';
import {
  artefactsForEvent,
  callArtefactFields,
  callArtefactsSchema,
  INTAKE_MAX_BODY_BYTES_WITH_ARTEFACTS,
  MAX_DATA_BYTES,
  MAX_EVENT_SUMMARY_BYTES,
  MAX_SUMMARY_BYTES,
  truncateUtf8,
} from '../../functions/calls/artefacts.ts';
import { callResultBody } from '../../functions/calls/schemas.ts';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const issues = (value: unknown) => {
  const result = callArtefactsSchema.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('call artefacts on the result webhook', () => {
  it('TakesTheLinksSummaryDataReasonAndEchoedExternalIdAllOptional', () => {
    const artefacts = {
      recordingUrl: 'https://media.example.com/rec/1.wav?X-Amz-Signature=abc%2Fdef&X-Amz-Expires=3600',
      transcriptUrl: 'https://media.example.com/t/1.json',
      summary: 'Caller agreed to a visit on Tuesday.\nNo objections.',
      data: { booked: true, slot: '2026-12-08T10:00:00Z', score: 0.8, tags: ['a', 'b'], nested: { x: 1 } },
      endedReason: 'customer-ended-call',
      externalId: 'crm-42',
    };
    expect(callArtefactsSchema.parse(artefacts)).toEqual(artefacts);
    expect(callArtefactsSchema.parse({})).toEqual({});
  });

  it('ALinkIsHttpsOnlyAsSentWithoutCredentialsAndAtMost2KiB', () => {
    expect(issues({ recordingUrl: 'http://media.example.com/1.wav' })).toEqual(['recordingUrl: expected an https URL']);
    expect(issues({ transcriptUrl: 'ftp://x/1' })).toEqual(['transcriptUrl: expected an https URL']);
    expect(issues({ recordingUrl: 'https://user:pw@media.example.com/1' })).toEqual(['recordingUrl: a URL with credentials in it is refused: every subscribed endpoint would receive them']);
    expect(issues({ recordingUrl: 'not a url' })).toEqual(['recordingUrl: expected a URL of printable ASCII, percent-encoded (no spaces, quotes, backslashes or angle brackets)']);
    expect(issues({ recordingUrl: 'https://x.example/a b' })).toHaveLength(1);
    expect(issues({ recordingUrl: 'https://x.example/"><script>' })).toHaveLength(1);
    expect(issues({ recordingUrl: 'https://x.example/é' })).toHaveLength(1);
    expect(issues({ recordingUrl: 'javascript:alert(1)' })).toEqual(['recordingUrl: expected an https URL']);
    const prefix = 'https://media.example.com/';
    expect(issues({ recordingUrl: prefix + 'a'.repeat(2048 - prefix.length) })).toEqual([]);
    expect(issues({ recordingUrl: prefix + 'a'.repeat(2049 - prefix.length) })).toEqual(['recordingUrl: at most 2048 bytes']);
  });

  it('ASummaryIsAtMost4KiBOfUtf8WithNoControlCharactersButTabAndLineEnds', () => {
    expect(issues({ summary: 'x'.repeat(MAX_SUMMARY_BYTES) })).toEqual([]);
    expect(issues({ summary: 'x'.repeat(MAX_SUMMARY_BYTES + 1) })).toEqual(['summary: at most 4096 bytes (UTF-8)']);
    // 2,048 × 'é' is 4,096 bytes; one more character is over.
    expect(issues({ summary: 'é'.repeat(2048) })).toEqual([]);
    expect(issues({ summary: 'é'.repeat(2049) })).toHaveLength(1);
    expect(issues({ summary: 'a\tb\r\nc' })).toEqual([]);
    expect(issues({ summary: 'a\u0000b' })).toEqual(['summary: no control characters other than tab, newline and carriage return']);
  });

  it('DataIsAnObjectOfAtMost8KiBSerialisedThatDynamoDbCanStore', () => {
    // {"v":"…"} is 8 bytes around the value.
    expect(issues({ data: { v: 'x'.repeat(MAX_DATA_BYTES - 8) } })).toEqual([]);
    expect(issues({ data: { v: 'x'.repeat(MAX_DATA_BYTES - 7) } })).toEqual(['data: at most 8192 bytes serialised (JSON, UTF-8); 8193 given']);
    expect(issues({ data: ['a'] })).toHaveLength(1);
    expect(issues({ data: 'text' })).toHaveLength(1);
    expect(issues({ data: null })).toHaveLength(1);
    expect(issues({ data: { big: 2 ** 60 } })).toEqual(['data.big: a number must be within ±(2^53 − 1)']);
  });

  it('AnEndedReasonIsOneTo128CharactersAndTheExternalIdFollowsTheContactRule', () => {
    expect(issues({ endedReason: '' })).toHaveLength(1);
    expect(issues({ endedReason: 'x'.repeat(129) })).toHaveLength(1);
    expect(issues({ endedReason: 'a\nb' })).toEqual(['endedReason: no control characters']);
    expect(issues({ externalId: 'x'.repeat(129) })).toEqual(['externalId: an externalId is 1–128 characters']);
  });

  it('ExtendsTheIntakeBodyWhichStillLetsUnknownFieldsPass', () => {
    const body = callResultBody.extend(callArtefactFields);
    const base = { batchId: 'b_1', contactNumber: '+442079460000', callId: 'call_x', code: 'COMPLETED', emptyTranscription: false, durationSeconds: 30 };
    expect(body.parse({ ...base, summary: 'ok', vendorField: 1 })).toMatchObject({ ...base, summary: 'ok' });
    const bad = body.safeParse({ ...base, recordingUrl: 'http://x.example/1' });
    expect(bad.error!.issues.map((i) => i.path.join('.'))).toEqual(['recordingUrl']);
  });

  it('TheLargestBodyWithEveryArtefactFitsTheSuggestedIntakeCap', () => {
    const url = 'https://media.example.com/' + 'a'.repeat(2048 - 26);
    const body = {
      batchId: 'b'.repeat(64),
      contactNumber: '+123456789012345',
      callId: 'c'.repeat(200),
      code: 'X'.repeat(64),
      emptyTranscription: false,
      durationSeconds: -86_399.123456789,
      recordingUrl: url,
      transcriptUrl: url,
      // Quotes are written as two bytes each in JSON: the largest a valid summary gets.
      summary: '"'.repeat(MAX_SUMMARY_BYTES),
      data: { v: 'x'.repeat(MAX_DATA_BYTES - 8) },
      endedReason: '"'.repeat(128),
      externalId: '日'.repeat(128),
    };
    expect(callResultBody.extend(callArtefactFields).safeParse(body).success).toBe(true);
    expect(bytes(JSON.stringify(body))).toBeLessThan(INTAKE_MAX_BODY_BYTES_WITH_ARTEFACTS);
  });
});

describe('call artefacts in the call.completed event', () => {
  it('CarriesTheLinksReasonAndExternalIdButNeverData', () => {
    const event = artefactsForEvent({ recordingUrl: 'https://r.example/1', transcriptUrl: 'https://t.example/1', summary: 'short', endedReason: 'voicemail', externalId: 'crm-1', data: { secret: 'x' } });
    expect(event).toEqual({ recordingUrl: 'https://r.example/1', transcriptUrl: 'https://t.example/1', summary: 'short', endedReason: 'voicemail', externalId: 'crm-1' });
    expect(artefactsForEvent({})).toEqual({});
  });

  it('CutsTheSummaryTo1KiBOnACharacterBoundaryAndSaysSo', () => {
    const exact = 'x'.repeat(MAX_EVENT_SUMMARY_BYTES);
    expect(artefactsForEvent({ summary: exact })).toEqual({ summary: exact });
    const long = artefactsForEvent({ summary: 'x'.repeat(MAX_EVENT_SUMMARY_BYTES + 1) });
    expect(long).toEqual({ summary: exact, summaryTruncated: true });
    // 'é' is 2 bytes: 1,023 bytes of 'x' then 'é' would end one byte past the limit, so the 'é' goes.
    const twoByte = artefactsForEvent({ summary: 'x'.repeat(1023) + 'é' });
    expect(twoByte).toEqual({ summary: 'x'.repeat(1023), summaryTruncated: true });
  });

  it('NeverCutsInsideAMultiByteCharacterOrASurrogatePair', () => {
    for (const char of ['é', '日', '😀']) {
      for (let max = 0; max <= 12; max++) {
        const cut = truncateUtf8(char.repeat(5), max);
        expect(bytes(cut), `${char} ${max}`).toBeLessThanOrEqual(max);
        // Whole characters only: as many as fit.
        expect(cut, `${char} ${max}`).toBe(char.repeat(Math.min(5, Math.floor(max / bytes(char)))));
        expect(cut.includes('\uFFFD')).toBe(false);
      }
    }
    expect(truncateUtf8('abc', 3)).toBe('abc');
  });
});
