import { SendEmailCommand } from '@aws-sdk/client-sesv2';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import type { TransportName } from './classify.ts';

/** A composed message on its way out: the envelope and the RFC 5322 bytes ({@link composeRaw}). */
export interface RawMail {
  /** The From header as configured (`redial <no-reply@…>`). */
  from: string;
  to: string;
  raw: Buffer;
}

/**
 * Where mail leaves redial: SES v2 on AWS, SMTP elsewhere (smtp-transport.ts, kept apart so that no Lambda
 * bundle carries nodemailer). A transport sends once and reports what
 * happened; it never retries (its client is built in functions/platform with retries off) and never
 * classifies: a failure is thrown as the transport's own error, for {@link classifySendError}.
 */
export interface MailTransport {
  readonly name: TransportName;
  /** Sends once. Resolves when the server or service accepted the message, with its own id if it gave one. */
  send(mail: RawMail, signal: AbortSignal): Promise<{ providerMessageId: string | undefined }>;
}

/**
 * SES v2 SendEmail with raw content, so the message SES is handed is the one we composed. SES keeps our
 * headers except Message-ID and Date, which it replaces with its own (AWS: "Amazon SES header fields");
 * see docs/mail.md for what that means for duplicates.
 */
export class SesMailTransport implements MailTransport {
  readonly name = 'ses' as const;
  private readonly client: SESv2Client;
  private readonly configurationSet: string | undefined;

  constructor(client: SESv2Client, options: { configurationSet?: string | undefined } = {}) {
    this.client = client;
    this.configurationSet = options.configurationSet;
  }

  async send(mail: RawMail, signal: AbortSignal): Promise<{ providerMessageId: string | undefined }> {
    const result = await this.client.send(
      new SendEmailCommand({
        FromEmailAddress: mail.from,
        Destination: { ToAddresses: [mail.to] },
        Content: { Raw: { Data: mail.raw } },
        ...(this.configurationSet ? { ConfigurationSetName: this.configurationSet } : {}),
      }),
      { abortSignal: signal },
    );
    return { providerMessageId: result.MessageId };
  }
}
