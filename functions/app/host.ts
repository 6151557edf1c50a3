import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import type { SecretKey } from '../platform/secret-key.ts';
import type { JobClientRuntime } from '../jobs/client-runtime.ts';
import type { CalendarConfig } from '../calendar/deps.ts';
import type { CallsConfig } from '../calls/config.ts';
import type { CallsStore } from '../calls/store.ts';
import type { UploadStore } from '../calls/imports/uploads.ts';
import type { MailServices } from '../mail/context.ts';
import type { WebhookOptions } from '../webhooks/module.ts';
import type { WebhookStore } from '../webhooks/store.ts';
import type { TableNames } from './catalog.ts';

/** What a host (a Lambda's cold start, the local host) gives the system. */
export interface SystemHost {
  /** The job layer as the contexts use it (the client, the store); a host that runs jobs has the whole runtime (functions/jobs/runtime.ts). */
  jobs: JobClientRuntime;
  db: DynamoDBDocumentClient;
  tableNames: TableNames;
  clock: Clock;
  /** The outside world's time where it differs from `clock` (the local host's scaled time); default `clock`. */
  wallClock?: Clock;
  rng: Rng;
  logger: Logger;
  metrics: MetricsSink;
  /** The calls context's configuration (placer, intake secret, call timeout); a host that runs no calls code may leave it out. */
  calls?: CallsConfig;
  /** The calendar context's provider URLs (the local runtime: its simulator) and the tools' signing secret; default: Google, no tools. */
  calendar?: CalendarConfig;
  /** The mail context's configuration and transport (SES on AWS, SMTP locally); a host that sends no mail may leave it out. */
  mail?: MailServices;
  /** Webhook delivery settings; the local host lets loopback receivers through. */
  webhooks?: WebhookOptions;
  /**
   * The key webhook endpoint secrets are encrypted with (KMS on AWS, a local key elsewhere). Only the
   * functions that register endpoints or sign deliveries are given one; without it the webhooks context
   * refuses to.
   */
  secretKey?: SecretKey;
  /** The calls context's store. @default a CallsStore over `db` (a host may pass another implementation) */
  callsStore?: CallsStore;
  /** Where large contacts files are uploaded for import (S3 on AWS, a folder locally); only the functions serving the import routes have it. */
  uploads?: UploadStore;
  /** The webhooks context's store, the intake's publisher's too. @default a WebhookStore over `db` (a host may pass another implementation) */
  webhookStore?: WebhookStore;
}
