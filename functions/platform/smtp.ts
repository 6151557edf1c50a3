import nodemailer from 'nodemailer';
import type { Transporter } from 'nodemailer';

/**
 * The only place in redial that builds an SMTP client. Like every outbound client here it sends once:
 * no pool (a message per connection, nothing queued inside nodemailer to be re-sent), and nodemailer's
 * SMTP transport has no retry of its own. Every wait has a bound, so a dead or silent server fails the
 * send promptly and the job layer decides what happens next.
 */
export interface SmtpClientOptions {
  /** `smtp://[user:pass@]host:port` (STARTTLS when offered) or `smtps://…` (TLS from the start). */
  url: string;
  /** Time to establish the TCP connection. @default 10_000 */
  connectionTimeoutMs?: number;
  /** Time from connecting to the server's 220 greeting. @default 10_000 */
  greetingTimeoutMs?: number;
  /** Inactivity on an open connection. @default 20_000 */
  socketTimeoutMs?: number;
  /** Time to resolve the host. @default 10_000 */
  dnsTimeoutMs?: number;
}

/** An SMTP transport that sends each message once, over its own connection, within bounded waits. */
export function createSmtpClient(options: SmtpClientOptions): Transporter {
  return nodemailer.createTransport({
    url: options.url,
    pool: false,
    connectionTimeout: options.connectionTimeoutMs ?? 10_000,
    greetingTimeout: options.greetingTimeoutMs ?? 10_000,
    socketTimeout: options.socketTimeoutMs ?? 20_000,
    dnsTimeout: options.dnsTimeoutMs ?? 10_000,
    logger: false,
    debug: false,
  });
}
