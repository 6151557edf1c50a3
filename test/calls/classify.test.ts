import { describe, expect, it } from 'vitest';
import { classifyCallReport } from '../../functions/calls/classify.ts';
import { isRetryableCode, RETRYABLE_CODES } from '../../functions/calls/codes.ts';

const MIN = 10;

// [reported code, emptyTranscription, durationSeconds, normalised code, retryable, the branch it covers]
const table: [string, boolean, number, string, boolean, string][] = [
  // NO_PICKUP: retryable whatever the evidence.
  ['NO_PICKUP', true, 0, 'NO_PICKUP', true, 'no pickup'],
  ['NO_PICKUP', false, 120, 'NO_PICKUP', true, 'no pickup with evidence'],
  // FAILED, empty transcription: the duration decides, at every boundary.
  ['FAILED', true, -3, 'FAILED_SIP_EXCEPTION', true, 'negative duration counts as never connected'],
  ['FAILED', true, 0, 'FAILED_SIP_EXCEPTION', true, 'duration 0: never connected'],
  ['FAILED', true, 0.5, 'FAILED_NO_CONVERSATION', true, 'just above 0'],
  ['FAILED', true, MIN - 1, 'FAILED_NO_CONVERSATION', true, 'min − 1: connected, no conversation'],
  ['FAILED', true, MIN, 'FAILED', false, 'min: a genuine failure'],
  ['FAILED', true, MIN + 1, 'FAILED', false, 'min + 1: a genuine failure'],
  // FAILED with a transcription: a real conversation, terminal at any duration.
  ['FAILED', false, 0, 'FAILED', false, 'transcribed, 0 s'],
  ['FAILED', false, MIN - 1, 'FAILED', false, 'transcribed, min − 1'],
  ['FAILED', false, MIN + 1, 'FAILED', false, 'transcribed, min + 1'],
  // COMPLETED, empty transcription: rejection only strictly above min.
  ['COMPLETED', true, 0, 'COMPLETED', false, 'empty, 0 s'],
  ['COMPLETED', true, MIN - 1, 'COMPLETED', false, 'empty, min − 1'],
  ['COMPLETED', true, MIN, 'COMPLETED', false, 'empty, exactly min: not a rejection'],
  ['COMPLETED', true, MIN + 1, 'COMPLETED_USER_REJECTION', false, 'empty, min + 1: picked up and rejected'],
  ['COMPLETED', false, MIN + 1, 'COMPLETED', false, 'transcribed, min + 1'],
  ['COMPLETED', false, 0, 'COMPLETED', false, 'transcribed, 0 s'],
  // An empty code is FAILED, and then the FAILED rules apply.
  ['', true, 0, 'FAILED_SIP_EXCEPTION', true, 'empty code, never connected'],
  ['   ', true, MIN - 1, 'FAILED_NO_CONVERSATION', true, 'blank code, short'],
  ['', false, 30, 'FAILED', false, 'empty code, transcribed'],
  // Trimmed and upper-cased first.
  [' no_pickup ', true, 0, 'NO_PICKUP', true, 'lower-case with spaces'],
  ['failed', true, 0, 'FAILED_SIP_EXCEPTION', true, 'lower-case failed'],
  ['  Completed', true, MIN + 1, 'COMPLETED_USER_REJECTION', false, 'mixed case completed'],
  ['temporary_unavailable ', true, 0, 'TEMPORARY_UNAVAILABLE', true, 'lower-case temporary unavailable'],
  // TEMPORARY_UNAVAILABLE: redial's deviation, retryable.
  ['TEMPORARY_UNAVAILABLE', true, 0, 'TEMPORARY_UNAVAILABLE', true, 'temporary unavailable'],
  // Stored as given, terminal.
  ['INVALID_NUMBER', true, 0, 'INVALID_NUMBER', false, 'invalid number'],
  ['invalid_number', false, 12, 'INVALID_NUMBER', false, 'invalid number, lower-case'],
  ['INSUFFICIENT_BALANCE', true, 0, 'INSUFFICIENT_BALANCE', false, 'insufficient balance'],
  ['VOICEMAIL', true, 40, 'VOICEMAIL', false, 'unknown code'],
  ['busy', true, 0, 'BUSY', false, 'unknown code, lower-case'],
  // A code the handler sends that happens to be a normalised name is taken as given, through the list.
  ['FAILED_SIP_EXCEPTION', false, 100, 'FAILED_SIP_EXCEPTION', true, 'a normalised code reported directly'],
];

describe('classification: FromWebhook, exactly', () => {
  it.each(table)('%j, empty=%s, %s s → %s (retryable %s): %s', (code, emptyTranscription, durationSeconds, normalised, retryable) => {
    expect(classifyCallReport({ code, emptyTranscription, durationSeconds }, MIN)).toEqual({ code: normalised, retryable });
  });

  it('UsesTheBatchMinimumNotAConstant', () => {
    const report = { code: 'FAILED', emptyTranscription: true, durationSeconds: 25 };
    expect(classifyCallReport(report, 30).code).toBe('FAILED_NO_CONVERSATION');
    expect(classifyCallReport(report, 25).code).toBe('FAILED');
    expect(classifyCallReport({ code: 'COMPLETED', emptyTranscription: true, durationSeconds: 25 }, 0).code).toBe('COMPLETED_USER_REJECTION');
  });

  it('TheRetryableListIsExactlyTheBriefsSeven', () => {
    expect([...RETRYABLE_CODES].sort()).toEqual(
      ['FAILED_NO_CONVERSATION', 'FAILED_SIP_EXCEPTION', 'INTERNAL_ERROR', 'NO_PICKUP', 'TEMPORARY_UNAVAILABLE', 'TIMEOUT', 'TIMEOUT_UNEXPECTED_STATUS'].sort(),
    );
    for (const terminal of ['FAILED', 'COMPLETED', 'COMPLETED_USER_REJECTION', 'INVALID_NUMBER', 'INSUFFICIENT_BALANCE', 'VOICEMAIL']) expect(isRetryableCode(terminal), terminal).toBe(false);
  });

  it('EveryRowsRetryableFlagComesFromTheOneList', () => {
    for (const [code, empty, duration] of table) {
      const result = classifyCallReport({ code, emptyTranscription: empty, durationSeconds: duration }, MIN);
      expect(result.retryable).toBe(RETRYABLE_CODES.has(result.code));
    }
  });
});
