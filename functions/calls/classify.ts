import { CallCode, isRetryableCode } from './codes.ts';

/** What the AI call handler reported about one call: a coarse code and the evidence that rides with it. */
export interface CallReport {
  code: string;
  emptyTranscription: boolean;
  durationSeconds: number;
}

/** A normalised outcome: the code redial stores, and whether it earns another round. */
export interface Classification {
  code: string;
  retryable: boolean;
}

/**
 * `FromWebhook` (docs/calls.md, "Classification"): re-derives the outcome from the code plus its evidence.
 *
 * | reported code | evidence | normalised | retryable |
 * |---|---|---|---|
 * | empty (after trim) | — | treated as FAILED | |
 * | NO_PICKUP | — | NO_PICKUP | yes |
 * | FAILED | empty transcription, duration ≤ 0 | FAILED_SIP_EXCEPTION | yes |
 * | FAILED | empty transcription, 0 < duration < min | FAILED_NO_CONVERSATION | yes |
 * | FAILED | otherwise | FAILED | no |
 * | COMPLETED | empty transcription, duration > min | COMPLETED_USER_REJECTION | no |
 * | COMPLETED | otherwise | COMPLETED | no |
 * | TEMPORARY_UNAVAILABLE | — | TEMPORARY_UNAVAILABLE | yes (redial's deviation) |
 * | INVALID_NUMBER, INSUFFICIENT_BALANCE, anything else | — | as given | no |
 *
 * Codes are trimmed and upper-cased first. Whether a code is retried comes from {@link isRetryableCode},
 * the one list the finaliser also reads, so the two can never disagree.
 *
 * @example
 * classifyCallReport({ code: ' failed ', emptyTranscription: true, durationSeconds: 4 }, 10);
 * // → { code: 'FAILED_NO_CONVERSATION', retryable: true }
 */
export function classifyCallReport(report: CallReport, minConversationDurationSeconds: number): Classification {
  const reported = report.code.trim().toUpperCase() || CallCode.failed;
  const code = normalise(reported, report, minConversationDurationSeconds);
  return { code, retryable: isRetryableCode(code) };
}

function normalise(code: string, report: CallReport, min: number): string {
  switch (code) {
    case CallCode.failed:
      if (report.emptyTranscription) {
        // Never connected: infrastructure noise.
        if (report.durationSeconds <= 0) return CallCode.failedSipException;
        // Connected, but no real conversation.
        if (report.durationSeconds < min) return CallCode.failedNoConversation;
      }
      return CallCode.failed;
    case CallCode.completed:
      // Picked up and rejected the agent outright: done, not worth another call.
      return report.emptyTranscription && report.durationSeconds > min ? CallCode.completedUserRejection : CallCode.completed;
    default:
      // NO_PICKUP, TEMPORARY_UNAVAILABLE, INVALID_NUMBER, INSUFFICIENT_BALANCE and unknown codes: as given.
      return code;
  }
}
