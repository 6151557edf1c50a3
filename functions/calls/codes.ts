/**
 * Call outcome codes: the coarse codes the AI call handler reports, the normalised codes redial derives
 * from them (a code is a claim, not a conclusion: docs/calls.md, "Classification"), and the one list that says which
 * normalised codes earn another round.
 */
export const CallCode = {
  completed: 'COMPLETED',
  failed: 'FAILED',
  noPickup: 'NO_PICKUP',
  temporaryUnavailable: 'TEMPORARY_UNAVAILABLE',
  invalidNumber: 'INVALID_NUMBER',
  insufficientBalance: 'INSUFFICIENT_BALANCE',
  /** FAILED, empty transcription, duration ≤ 0: the SIP session never established. */
  failedSipException: 'FAILED_SIP_EXCEPTION',
  /** FAILED, empty transcription, 0 < duration < min: connected, no conversation. */
  failedNoConversation: 'FAILED_NO_CONVERSATION',
  /** COMPLETED, empty transcription, duration > min: picked up and rejected the agent. */
  completedUserRejection: 'COMPLETED_USER_REJECTION',
  /** The watchdog ended a call whose result never arrived. */
  timeout: 'TIMEOUT',
  /** A call ended in a state the platform did not expect (kept from the calling platform's list of codes; redial sets it nowhere yet). */
  timeoutUnexpectedStatus: 'TIMEOUT_UNEXPECTED_STATUS',
  /** The call placer refused or failed the dial. */
  internalError: 'INTERNAL_ERROR',
  SUPPRESSED: 'SUPPRESSED',
} as const;

export type KnownCallCode = (typeof CallCode)[keyof typeof CallCode];

/**
 * The single authority on what is retried: a contact whose normalised code is in this list is promoted
 * to RetryEligible by the finaliser while the batch has rounds left (docs/calls.md, "Classification").
 * TEMPORARY_UNAVAILABLE is redial's deliberate addition (docs/deviations.md §1): a SIP 480 is temporary
 * by definition.
 */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set<KnownCallCode>([
  CallCode.timeout,
  CallCode.timeoutUnexpectedStatus,
  CallCode.internalError,
  CallCode.noPickup,
  CallCode.failedNoConversation,
  CallCode.failedSipException,
  CallCode.temporaryUnavailable,
]);

/** Whether a normalised code earns the contact another round. */
export const isRetryableCode = (code: string): boolean => RETRYABLE_CODES.has(code);
