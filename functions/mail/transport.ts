import { SendEmailCommand } from '@aws-sdk/client-sesv2';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import type { Transporter } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import { createSmtpClient } from '../platform/smtp.ts';
import type { TransportName } from './classify.ts';
import type { TransportConfig } from './config.ts';

/** A composed message on its way out: the envelope and the RFC 5322 bytes ({@link composeRaw}). */
export interface RawMail {
  /** The From header as configured (`redial <no-reply@…>`). */
  from: string;
  to: string;
  raw: Buffer;
}

/**
 * Where mail leaves redial: SES v2 on AWS, SMTP elsewhere. A transport sends once and reports what
 * happened; it never retries (its client is built in functions/platform with retries off) and never
 * classifies: a failure is thrown as the transport's own error, for {@link classifySendError}.
 */
export interface MailTransport {
  readonly name: TransportName;
  /** Sends once. Resolves when the server or service accepted the message, with its own id if it gave one. */
  send(mail: RawMail, signal: AbortSignal): Promise<{ providerMessageId: string | undefined }>;
}

/** The bare address of a From header (`redial <no-reply@x>` → `no-reply@x`), for the SMTP envelope. */
export function envelopeAddress(from: string): string {
  const [first] = addressparser(from, { flatten: true });
  if (!first || !('address' in first) || !first.address) throw new RangeError(`no address in ${JSON.stringify(from)}`);
  return first.address;
}

/** SMTP through nodemailer: the raw message, our envelope, one connection, no retry. */
export class SmtpMailTransport implements MailTransport {
  readonly name = 'smtp' as const;
  private readonly client: Transporter;

  constructor(client: Transporter) {
    this.client = client;
  }

  async send(mail: RawMail, signal: AbortSignal): Promise<{ providerMessageId: string | undefined }> {
    const info = (await this.client.sendMail({ envelope: { from: envelopeAddress(mail.from), to: [mail.to] }, raw: mail.raw, signal })) as {
      response?: string;
    };
    return { providerMessageId: info.response };
  }
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

/** The transport a configuration names: SES with the given client, or SMTP through functions/platform. */
export function transportFor(config: TransportConfig, clients: { ses: SESv2Client }): MailTransport {
  switch (config.type) {
    case 'ses':
      return new SesMailTransport(clients.ses, { configurationSet: config.configurationSet });
    case 'smtp':
      return new SmtpMailTransport(createSmtpClient({ url: config.url }));
  }
}
