import { describe, expect, it } from 'vitest';
import { classifySendError, classifySmtpError } from '../../functions/mail/classify.ts';
import type { SendFailure } from '../../functions/mail/classify.ts';

/** An error shaped like nodemailer's: a code, and for a server reply its code and text. */
const smtpError = (fields: { code?: string; responseCode?: number; response?: string; message?: string }) =>
  Object.assign(new Error(fields.message ?? fields.response ?? 'failed'), fields);

describe('classifySmtpError', () => {
  const cases: [string, unknown, SendFailure['type']][] = [
    ['421 service not available', smtpError({ code: 'EENVELOPE', responseCode: 421, response: '421 4.3.2 Shutting down' }), 'retryable'],
    ['450 mailbox busy', smtpError({ code: 'EENVELOPE', responseCode: 450, response: '450 4.2.1 Mailbox busy' }), 'retryable'],
    ['451 local error', smtpError({ code: 'EMESSAGE', responseCode: 451, response: '451 4.3.0 Try later' }), 'retryable'],
    ['452 insufficient storage', smtpError({ code: 'EENVELOPE', responseCode: 452, response: '452 4.3.1 Insufficient storage' }), 'retryable'],
    ['503 bad sequence (the session, not the message)', smtpError({ code: 'EPROTOCOL', responseCode: 503, response: '503 5.5.1 Bad sequence' }), 'retryable'],
    ['550 no such user', smtpError({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user' }), 'rejected'],
    ['552 message too big', smtpError({ code: 'EMESSAGE', responseCode: 552, response: '552 5.3.4 Too big' }), 'rejected'],
    ['554 transaction failed', smtpError({ code: 'EMESSAGE', responseCode: 554, response: '554 5.7.1 Spam' }), 'rejected'],
    ['535 authentication failed (our configuration, not the message)', smtpError({ code: 'EAUTH', responseCode: 535, response: '535 5.7.8 Bad credentials' }), 'retryable'],
    ['no credentials (configuration)', smtpError({ code: 'ENOAUTH', message: 'Missing credentials for "PLAIN"' }), 'retryable'],
    ['connection refused', smtpError({ code: 'ESOCKET', message: 'connect ECONNREFUSED 127.0.0.1:25' }), 'retryable'],
    ['raw ECONNREFUSED', smtpError({ code: 'ECONNREFUSED' }), 'retryable'],
    ['connection closed', smtpError({ code: 'ECONNECTION', message: 'Connection closed unexpectedly' }), 'retryable'],
    ['greeting timeout', smtpError({ code: 'ETIMEDOUT', message: 'Greeting never received' }), 'retryable'],
    ['DNS failure', smtpError({ code: 'EDNS', message: 'getaddrinfo ENOTFOUND smtp.example.org' }), 'retryable'],
    ['TLS failure', smtpError({ code: 'ETLS', message: 'certificate has expired' }), 'retryable'],
    ['aborted by the job timeout', smtpError({ code: 'EABORT', message: 'aborted' }), 'retryable'],
    ['envelope refused by nodemailer itself', smtpError({ code: 'EENVELOPE', message: 'No recipients defined' }), 'rejected'],
    ['something unknown', new Error('odd'), 'retryable'],
    ['not even an Error', 'a string', 'retryable'],
  ];
  it.each(cases)('%s', (_name, error, type) => {
    expect(classifySmtpError(error).type).toBe(type);
  });

  it('KeepsTheServersReplyInTheReasonForOps', () => {
    expect(classifySmtpError(smtpError({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user' })).reason).toBe('smtp EENVELOPE: 550 5.1.1 No such user');
  });

  it('DispatchesOnTheTransport', () => {
    const throttled = Object.assign(new Error('rate'), { name: 'TooManyRequestsException' });
    expect(classifySendError('ses', throttled).type).toBe('throttled');
    expect(classifySendError('smtp', throttled).type).toBe('retryable');
  });
});
