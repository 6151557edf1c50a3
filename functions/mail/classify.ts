/**
 * What a failed send means, for either transport. Pure: an error in, a classification out. The mail
 * handlers turn it into the job layer's signals (retryable → throw, rejected → discard('mail_rejected'),
 * throttled → snooze), so this table is the whole of mail's failure policy:
 *
 * | transport | error | classification |
 * |---|---|---|
 * | SMTP | reply 5yz (not 503) | rejected: permanent, retrying gets the same answer |
 * | SMTP | reply 4yz, or 503 (bad sequence: the session, not the message) | retryable |
 * | SMTP | connection refused/reset/closed, DNS, TLS, timeouts (connect, greeting, socket) | retryable |
 * | SMTP | authentication failed (even with a 535) or missing | retryable: a configuration fault; ops fix it and the job goes out |
 * | SMTP | envelope or message refused by nodemailer itself (no SMTP reply) | rejected |
 * | SES | `MessageRejected`, `BadRequestException` | rejected |
 * | SES | `TooManyRequestsException`, `ThrottlingException`, `Throttling` | throttled 60 s |
 * | SES | `LimitExceededException` (sending quota) | throttled 15 min |
 * | SES | `SendingPausedException`, `AccountSuspendedException` (a paused account) | throttled 15 min |
 * | SES | `MailFromDomainNotVerifiedException`, `NotFoundException` | retryable: configuration |
 * | SES | 5xx, `InternalFailure`, `ServiceUnavailable`, timeouts, network errors | retryable |
 * | any | anything else | retryable: the policy's attempts bound it |
 *
 * Throttled never spends an attempt and never discards: a throttle or a paused account must not lose
 * a message (seed 000). Rejected is the only way a mail is given up before its attempts run out.
 */
export type SendFailure =
  | { type: 'retryable'; reason: string }
  | { type: 'rejected'; reason: string }
  | { type: 'throttled'; delayMs: number; reason: string };

export type TransportName = 'smtp' | 'ses';

/** How long a throttled send waits, by what throttled it. */
export const THROTTLE_DELAY_MS = {
  rate: 60_000,
  quota: 15 * 60_000,
  paused: 15 * 60_000,
} as const;

/** Network-level failures, as Node and nodemailer name them: the server may be fine a moment later. */
const NETWORK_CODES = new Set([
  'ECONNECTION',
  'ETIMEDOUT',
  'ESOCKET',
  'EDNS',
  'ETLS',
  'EPROXY',
  'EABORT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

/** nodemailer's own refusals of what we asked it to send, before any server replied. */
const LOCAL_REFUSALS = new Set(['EENVELOPE', 'EMESSAGE', 'EMAXRECIPIENTS', 'ECONFIG', 'EREQUIRETLS']);

const AUTH_CODES = new Set(['EAUTH', 'ENOAUTH', 'EOAUTH2']);

const SES_REJECTED = new Set(['MessageRejected', 'BadRequestException']);
const SES_RATE = new Set(['TooManyRequestsException', 'ThrottlingException', 'Throttling']);
const SES_QUOTA = new Set(['LimitExceededException']);
const SES_PAUSED = new Set(['SendingPausedException', 'AccountSuspendedException']);

interface ErrorFields {
  name: string;
  message: string;
  code: string | undefined;
  responseCode: number | undefined;
  response: string | undefined;
  httpStatus: number | undefined;
}

function fieldsOf(error: unknown): ErrorFields {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), code: undefined, responseCode: undefined, response: undefined, httpStatus: undefined };
  const e = error as Error & { code?: unknown; responseCode?: unknown; response?: unknown; $metadata?: { httpStatusCode?: number } };
  return {
    name: e.name,
    message: e.message,
    code: typeof e.code === 'string' ? e.code : undefined,
    responseCode: typeof e.responseCode === 'number' ? e.responseCode : undefined,
    response: typeof e.response === 'string' ? e.response : undefined,
    httpStatus: e.$metadata?.httpStatusCode,
  };
}

/** A short description for the attempt history: what the server said, or what failed. */
function describe(f: ErrorFields): string {
  const what = f.response ?? f.message;
  return [f.code ?? f.name, what].filter(Boolean).join(': ').slice(0, 500);
}

/** Classifies a failed SMTP send (nodemailer's error). */
export function classifySmtpError(error: unknown): SendFailure {
  const f = fieldsOf(error);
  const reason = `smtp ${describe(f)}`;
  // Before the reply code: a 535 refuses our credentials, not this message; fixing SMTP_URL sends it.
  if (f.code && AUTH_CODES.has(f.code)) return { type: 'retryable', reason: `${reason} (check the SMTP credentials)` };
  if (f.responseCode !== undefined) {
    if (f.responseCode >= 500 && f.responseCode <= 599 && f.responseCode !== 503) return { type: 'rejected', reason };
    return { type: 'retryable', reason };
  }
  if (f.code && NETWORK_CODES.has(f.code)) return { type: 'retryable', reason };
  if (f.code && LOCAL_REFUSALS.has(f.code)) return { type: 'rejected', reason };
  return { type: 'retryable', reason };
}

/** Classifies a failed SES v2 SendEmail (an AWS SDK v3 error). */
export function classifySesError(error: unknown): SendFailure {
  const f = fieldsOf(error);
  const reason = `ses ${f.name}: ${f.message}`.slice(0, 500);
  if (SES_REJECTED.has(f.name)) return { type: 'rejected', reason };
  if (SES_RATE.has(f.name)) return { type: 'throttled', delayMs: THROTTLE_DELAY_MS.rate, reason };
  if (SES_QUOTA.has(f.name)) return { type: 'throttled', delayMs: THROTTLE_DELAY_MS.quota, reason };
  if (SES_PAUSED.has(f.name)) return { type: 'throttled', delayMs: THROTTLE_DELAY_MS.paused, reason };
  if (f.httpStatus === 429) return { type: 'throttled', delayMs: THROTTLE_DELAY_MS.rate, reason };
  return { type: 'retryable', reason };
}

/** Classifies a failed send of either transport. */
export function classifySendError(transport: TransportName, error: unknown): SendFailure {
  switch (transport) {
    case 'smtp':
      return classifySmtpError(error);
    case 'ses':
      return classifySesError(error);
  }
}
