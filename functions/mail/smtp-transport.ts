import type { SESv2Client } from '@aws-sdk/client-sesv2';
import type { Transporter } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import { createSmtpClient } from '../platform/smtp.ts';
import type { TransportConfig } from './config.ts';
import { SesMailTransport } from './transport.ts';
import type { MailTransport, RawMail } from './transport.ts';

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

/** The transport a configuration names: SES with the given client, or SMTP through functions/platform. */
export function transportFor(config: TransportConfig, clients: { ses: SESv2Client }): MailTransport {
  switch (config.type) {
    case 'ses':
      return new SesMailTransport(clients.ses, { configurationSet: config.configurationSet });
    case 'smtp':
      return new SmtpMailTransport(createSmtpClient({ url: config.url }));
  }
}
