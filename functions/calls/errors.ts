/** Base of every calls-context error. */
export class CallsError extends Error {
  override readonly name: string = 'CallsError';
}

/** Why a call-result webhook's signature was refused; the intake answers 401 with it. */
export type SignatureRefusal = 'missing_headers' | 'invalid_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'no_matching_signature';

/** A call result's Standard Webhooks signature was refused; nothing was read or written. */
export class SignatureError extends CallsError {
  override readonly name = 'SignatureError';
  readonly refusal: SignatureRefusal;
  constructor(refusal: SignatureRefusal, options?: { cause?: unknown }) {
    super(`webhook signature refused: ${refusal}`, options);
    this.refusal = refusal;
  }
}

/** The intake was called on a function that has no CALL_WEBHOOK_SECRET: it cannot check any signature. */
export class IntakeNotConfiguredError extends CallsError {
  override readonly name = 'IntakeNotConfiguredError';
  constructor(options?: { cause?: unknown }) {
    super('the call-result intake has no CALL_WEBHOOK_SECRET', options);
  }
}
