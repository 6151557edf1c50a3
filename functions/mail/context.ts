import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { JobClient } from '../jobs/index.ts';
import type { MailConfig } from './config.ts';
import type { MailStore } from './store.ts';
import type { RandomBytes } from './tokens.ts';
import type { MailTransport } from './transport.ts';

/** What a host gives the mail context besides the shared plumbing: its configuration and a transport. */
export interface MailServices {
  config: MailConfig;
  transport: MailTransport;
}

/** Everything the mail context's handlers, routes and domain functions draw on. */
export interface MailDeps extends MailServices {
  store: MailStore;
  jobs: JobClient;
  clock: Clock;
  logger: Logger;
  metrics: MetricsSink;
  /** Where token bytes come from: the OS CSPRNG (tests may pass their own). */
  random: RandomBytes;
}

/** The mail metrics (namespace Redial), by name. Dimensions: `kind`, plus `reason`, `cap` or `transport`. */
export const MailMetric = {
  /** A mail was accepted by the transport. */
  sent: 'MailSent',
  /** owner.notify over the burst cap: deliberately not sent. */
  dropped: 'MailDropped',
  /** Nothing to send: no confirmed owner, a superseded confirmation, a resolved or expired request. */
  skipped: 'MailSkipped',
  /** Over the per-recipient cap: snoozed to the next window. */
  capSnoozed: 'MailCapSnoozed',
  /** The transport throttled (SES rate, quota, paused account): snoozed. */
  throttled: 'MailThrottled',
} as const;
