import * as z from 'zod';
import { parseConfig } from '../platform/config.ts';

/** A DNS name: the right-hand side of every Message-ID redial writes. */
const domainName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/, 'not a domain name');

/** A base URL without a trailing slash, http(s) only. */
const baseUrl = z
  .string()
  .url()
  .refine((url) => /^https?:\/\//.test(url), 'must be an http(s) URL')
  .transform((url) => url.replace(/\/+$/, ''));

/**
 * The mail context's environment, parsed once at start-up (Lambda cold start or `npm start`).
 *
 * | variable | meaning |
 * |---|---|
 * | `MAIL_DOMAIN` | right-hand side of every Message-ID (`<event id@MAIL_DOMAIN>`) |
 * | `MAIL_FROM` | the From header; default `redial <no-reply@MAIL_DOMAIN>` |
 * | `PUBLIC_BASE_URL` | where the links in mails point (confirm-email, approve/deny) |
 * | `MAIL_TRANSPORT` | `ses` (AWS) or `smtp` |
 * | `SMTP_URL` | `smtp://[user:pass@]host:port` or `smtps://…`; required for `smtp` |
 * | `SES_CONFIGURATION_SET` | optional SES configuration set for `ses` |
 */
export const mailEnv = z
  .object({
    MAIL_DOMAIN: domainName,
    MAIL_FROM: z.string().min(3).max(320).optional(),
    PUBLIC_BASE_URL: baseUrl,
    MAIL_TRANSPORT: z.enum(['ses', 'smtp']),
    SMTP_URL: z
      .string()
      .url()
      .refine((url) => /^smtps?:\/\//.test(url), 'must be an smtp:// or smtps:// URL')
      .optional(),
    SES_CONFIGURATION_SET: z.string().min(1).max(64).optional(),
  })
  .superRefine((env, ctx) => {
    if (env.MAIL_TRANSPORT === 'smtp' && !env.SMTP_URL) ctx.addIssue({ code: 'custom', path: ['SMTP_URL'], message: 'required when MAIL_TRANSPORT is smtp' });
  });

/** Which transport sends, and how it is reached. */
export type TransportConfig = { type: 'smtp'; url: string } | { type: 'ses'; configurationSet: string | undefined };

/** The mail configuration, as the handlers use it. */
export interface MailConfig {
  /** Right-hand side of every Message-ID. */
  domain: string;
  /** The From header. */
  from: string;
  /** Base of the links in mails, no trailing slash. */
  publicBaseUrl: string;
  transport: TransportConfig;
}

/** Parses the mail configuration from the environment; a missing or malformed variable fails at start-up. */
export function parseMailConfig(env: Record<string, string | undefined> = process.env): MailConfig {
  const parsed = parseConfig(mailEnv, env);
  return {
    domain: parsed.MAIL_DOMAIN,
    from: parsed.MAIL_FROM ?? `redial <no-reply@${parsed.MAIL_DOMAIN}>`,
    publicBaseUrl: parsed.PUBLIC_BASE_URL,
    transport:
      parsed.MAIL_TRANSPORT === 'smtp' ? { type: 'smtp', url: parsed.SMTP_URL! } : { type: 'ses', configurationSet: parsed.SES_CONFIGURATION_SET },
  };
}
