import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { createAwsClients, localCredentials } from '../platform/aws.ts';
import { ScaledClock, systemClock } from '../platform/clock.ts';
import type { TimerClock } from '../platform/clock.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { ApiHandler } from '../platform/local/http-server.ts';
import { createLogger } from '../platform/logger.ts';
import { MemoryMetrics } from '../platform/metrics.ts';
import { seededRng, systemRng } from '../platform/rng.ts';
import { LocalSecretKey } from '../platform/secret-key.ts';
import type { Rng } from '../platform/rng.ts';
import { ensureTables, freePort, startDynamoDbLocal } from '../platform/local/dynamodb-local.ts';
import { writeFileAtomic } from '../platform/local/files.ts';
import type { LocalQueue } from '../platform/local/queues.ts';
import { startSmtpSink } from '../platform/local/smtp-sink.ts';
import type { SmtpSink } from '../platform/local/smtp-sink.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import { callsDefaults, DEFAULT_CALL_TIMEOUT_SECONDS } from '../calls/config.ts';
import type { CallsConfig } from '../calls/config.ts';
import { DEV_WEBHOOK_SECRET } from '../calls/local/config.ts';
import { CalendarSimulator } from '../calendar/local/simulator.ts';
import { CallPlacerSimulator } from '../calls/local/simulator.ts';
import type { SimulatedOutcome } from '../calls/local/simulator.ts';
import { parseMailConfig } from '../mail/config.ts';
import type { MailConfig } from '../mail/config.ts';
import { transportFor } from '../mail/smtp-transport.ts';
import { devEventRoutes } from '../webhooks/dev-api.ts';
import { tables } from '../app/system.ts';
import type { System, TableNames } from '../app/system.ts';
import { OpsApiClient } from '../cli/api-client.ts';
import { panelRoutes } from '../panel/index.ts';
import { createLocalHost } from './host.ts';
import { mailSinkRoutes } from './mail-sink-api.ts';

/** How to run redial on one machine. */
export interface LocalOptions {
  /** HTTP port on 127.0.0.1 (0: any free port). */
  port: number;
  /** Where DynamoDB Local keeps its data; undefined keeps it in memory. */
  dataDir: string | undefined;
  /**
   * A DynamoDB Local already running, to keep this runtime's tables in (under `tablePrefix`) instead of
   * starting one: a test run shares its own (test/support/global-setup.ts), which saves a JVM start per
   * runtime. `stop()` leaves it running.
   */
  dynamo?: { endpoint: string; tablePrefix: string };
  /** 1 = real time; 0.001 makes a 10 h backoff pass in 36 s. */
  timeScale: number;
  /** How often the rescuer runs, in real ms. */
  rescueIntervalMs?: number;
  /** A due job idle for this long (real ms) is taken for a lost wake-up. */
  rescueAfterRealMs?: number;
  rng?: Rng;
  /** The calls context: a real placer, or (default) the built-in simulator with this seed and mix. */
  calls?: {
    placerUrl?: string | undefined;
    webhookSecret?: string | undefined;
    callTimeoutSeconds?: number;
    simulatorSeed?: number;
    simulatorMix?: Partial<Record<SimulatedOutcome, number>> | undefined;
  };
  /** Routes served beside the API and the panel (the demo's customer endpoints). */
  extraRoutes?: readonly ApiRoute[];
  /**
   * Wraps the served API (routes, panel and all) in a check of the caller's own: a test stands API
   * Gateway's IAM auth in front of the local API with it (a SigV4 check). Off by default.
   */
  apiMiddleware?: (handler: ApiHandler) => ApiHandler;
  /** Mail settings (MAIL_DOMAIN, MAIL_FROM, SMTP_URL, PUBLIC_BASE_URL); each has a local default. */
  mail?: LocalMailOptions;
  /** Let webhook receivers on 127.0.0.1 and ::1 through the SSRF guard (WEBHOOK_ALLOW_LOOPBACK). @default true */
  webhookAllowLoopback?: boolean;
  /** How long discarded jobs stay before TTL removes them, days (DISCARDED_RETENTION_DAYS). @default 30 */
  discardedRetentionDays?: number;
}

/** Mail on one machine: by default every message goes to the built-in SMTP sink. */
export interface LocalMailOptions {
  /** @default 'redial.local' */
  domain?: string | undefined;
  /** @default 'redial <no-reply@MAIL_DOMAIN>' */
  from?: string | undefined;
  /** A real SMTP server instead of the built-in sink. @default the sink */
  smtpUrl?: string | undefined;
  /** Where the links in mails point. @default this runtime's own URL */
  publicBaseUrl?: string | undefined;
}

/** A running local stack. */
export interface LocalRuntime {
  url: string;
  /** The DynamoDB Local it uses; `pid` when it started it. */
  dynamo: { endpoint: string; pid: number | undefined };
  clock: TimerClock;
  jobs: JobRuntime;
  queues: LocalQueue[];
  metrics: MemoryMetrics;
  system: System;
  /** The calls configuration this runtime runs with (the placer, the intake's URL). */
  calls: CallsConfig;
  /** The built-in call placer, unless a placer URL was given. */
  simulator: CallPlacerSimulator | undefined;
  /** The built-in calendar (Google Calendar's shapes on 127.0.0.1), which the calendar provider talks to here. */
  calendarSimulator: CalendarSimulator;
  mail: MailConfig;
  /** The built-in SMTP sink; undefined when SMTP_URL names another server. */
  smtpSink: SmtpSink | undefined;
  /** Resolves when every queue is idle (nothing visible, nothing in flight). */
  idle(): Promise<void>;
  /** Stops everything this runtime started, DynamoDB Local included (not an outside one, `LocalOptions.dynamo`). */
  stop(): Promise<void>;
}

const clockFile = (dataDir: string) => join(dataDir, 'clock.json');

/**
 * The local runtime's clock. With TIME_SCALE < 1, job time runs ahead of the wall clock; the stored jobs
 * carry job time, so a restart resumes from the last saved job time rather than jumping back to now.
 */
function localClock(dataDir: string | undefined, timeScale: number): TimerClock {
  let saved = 0;
  if (dataDir && existsSync(clockFile(dataDir))) {
    const parsed = z.object({ now: z.number() }).safeParse(JSON.parse(readFileSync(clockFile(dataDir), 'utf8')));
    if (parsed.success) saved = parsed.data.now;
  }
  if (timeScale === 1 && saved <= Date.now()) return systemClock;
  return new ScaledClock(timeScale, Math.max(saved, Date.now()));
}

function saveClock(dataDir: string, clock: TimerClock): void {
  writeFileAtomic(clockFile(dataDir), JSON.stringify({ now: clock.now() }));
}

/** The physical table names the local runtime uses. */
export const localTableNames: TableNames = Object.fromEntries(Object.keys(tables).map((key) => [key, `redial-${key}`])) as TableNames;

/**
 * Starts redial on one machine (`npm start`): DynamoDB Local, the tables from the same definitions CDK
 * deploys, the SMTP sink that keeps every mail (unless `mail.smtpUrl` names a real server), the call-placer
 * simulator (unless `calls.placerUrl` names a real placer), and the local host over them (host.ts: the
 * in-process queues, the workers, the rescuer on its period, and the API, the panel and the sink's pages
 * on 127.0.0.1).
 */
export async function startLocalRuntime(options: LocalOptions): Promise<LocalRuntime> {
  const logger = createLogger('redial-local');
  const stops: (() => Promise<void> | void)[] = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse()) await fn();
  };
  let dynamo: LocalRuntime['dynamo'];
  if (options.dynamo) {
    dynamo = { endpoint: options.dynamo.endpoint, pid: undefined };
  } else {
    const started = await startDynamoDbLocal(options.dataDir ? { dataDir: join(options.dataDir, 'dynamodb') } : {});
    stops.push(() => started.stop());
    dynamo = { endpoint: started.endpoint, pid: started.pid };
  }
  const prefix = options.dynamo?.tablePrefix;
  const tableNames = prefix === undefined ? localTableNames : (Object.fromEntries(Object.keys(tables).map((key) => [key, `${prefix}-${key}`])) as TableNames);
  try {
    await ensureTables(
      dynamo.endpoint,
      Object.entries(tables).map(([key, definition]) => ({ definition, tableName: tableNames[key as keyof TableNames] })),
    );
    // Started before the queues, so it stops after them: a mail in flight at shutdown still finds it.
    const smtpSink = options.mail?.smtpUrl ? undefined : await startSmtpSink();
    if (smtpSink) stops.push(() => smtpSink.stop());
    const clock = localClock(options.dataDir, options.timeScale);
    const speed = clock.speed ?? 1;
    if (options.dataDir) {
      const save = () => saveClock(options.dataDir!, clock);
      const saver = setInterval(save, 1000);
      stops.push(() => {
        clearInterval(saver);
        save();
      });
    }
    const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: dynamo.endpoint }, credentials: localCredentials });
    stops.push(() => clients.dynamo.destroy());
    const metrics = new MemoryMetrics();
    const rng = options.rng ?? systemRng();
    const webhookSecret = options.calls?.webhookSecret ?? DEV_WEBHOOK_SECRET;
    let simulator: CallPlacerSimulator | undefined;
    if (!options.calls?.placerUrl) {
      // Signatures are stamped with the wall clock, whatever TIME_SCALE does to job time.
      simulator = await CallPlacerSimulator.start({
        clock,
        signingClock: systemClock,
        rng: seededRng(options.calls?.simulatorSeed ?? 1),
        secret: webhookSecret,
        ...(options.calls?.simulatorMix ? { mix: options.calls.simulatorMix } : {}),
      });
      const started = simulator;
      stops.push(() => started.close());
    }
    // The built-in calendar: the provider talks to it as to Google (functions/calendar/local/simulator.ts).
    // Its clock is the wall clock: access tokens and request deadlines are real seconds, whatever TIME_SCALE does.
    const calendarSimulator = await CalendarSimulator.start({ clock: systemClock });
    stops.push(() => calendarSimulator.close());
    // The placer needs the intake's URL before the server starts: pick the port first — after the simulators
    // have bound theirs (port 0), so that none of them can be handed the port picked here before the API binds it.
    const port = options.port || (await freePort());
    // Where outside parties reach this runtime: the call placer's callbackUrl and the links in mails.
    const publicBaseUrl = (options.mail?.publicBaseUrl ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
    const calls: CallsConfig = {
      ...callsDefaults,
      placerUrl: options.calls?.placerUrl ?? simulator!.url,
      callbackUrl: `${publicBaseUrl}/v1/calls/webhook`,
      webhookSecret,
      callTimeoutSeconds: options.calls?.callTimeoutSeconds ?? DEFAULT_CALL_TIMEOUT_SECONDS,
    };
    const mail = parseMailConfig({
      MAIL_DOMAIN: options.mail?.domain ?? 'redial.local',
      MAIL_FROM: options.mail?.from,
      PUBLIC_BASE_URL: publicBaseUrl,
      MAIL_TRANSPORT: 'smtp',
      SMTP_URL: options.mail?.smtpUrl ?? smtpSink?.url,
    });
    // The panel's forms carry it; a POST without it is refused (a second guard beside sameOriginOnly).
    const formToken = randomBytes(32).toString('base64url');
    const host = await createLocalHost({
      db: clients.dynamo,
      tableNames,
      clock,
      rng,
      logger,
      metrics,
      speed,
      // Webhook endpoint secrets are encrypted at rest here too (KMS's place): under a key kept beside the
      // data, so endpoints registered before a restart still sign; with --memory, one for this process.
      ...(options.dataDir ? { secretKey: LocalSecretKey.atPath(join(options.dataDir, 'endpoint-secrets.key')) } : {}),
      // Uploaded contacts files wait beside the data (S3's place); with --memory, in a temporary folder.
      ...(options.dataDir ? { uploadsDir: join(options.dataDir, 'uploads') } : {}),
      contexts: {
        wallClock: systemClock,
        calls,
        mail: { config: mail, transport: transportFor(mail.transport, clients) },
        webhooks: { allowLoopback: options.webhookAllowLoopback ?? true },
        // The agent's calendar tools are signed as call results are, with the intake's secret.
        calendar: { calendarBaseUrl: calendarSimulator.calendarBaseUrl, tokenUrl: calendarSimulator.tokenUrl, toolsSecret: webhookSecret },
      },
      rescuer: { intervalMs: options.rescueIntervalMs ?? 5_000, rescueAfterMs: (options.rescueAfterRealMs ?? 30_000) * speed },
      ...(options.discardedRetentionDays !== undefined ? { discardedRetentionSeconds: options.discardedRetentionDays * 86400 } : {}),
      serve: {
        port,
        extraRoutes: ({ system }) => [
          // The panel reads and acts through this runtime's own API, as it does through a deployed one's.
          ...panelRoutes({ formToken, api: new OpsApiClient({ baseUrl: `http://127.0.0.1:${port}` }) }),
          ...(smtpSink ? mailSinkRoutes(smtpSink) : []),
          ...devEventRoutes(() => system.webhooks),
          ...(options.extraRoutes ?? []),
        ],
        // No IAM here: only the runtime's own pages and clients are served (not a page on another site).
        origins: [`http://127.0.0.1:${port}`, `http://localhost:${port}`, publicBaseUrl],
        ...(options.apiMiddleware ? { wrap: options.apiMiddleware } : {}),
      },
    });
    stops.push(() => host.stop());

    return {
      url: host.url!,
      dynamo,
      clock,
      jobs: host.jobs,
      queues: host.queues,
      metrics,
      system: host.system,
      calls,
      simulator,
      calendarSimulator,
      mail,
      smtpSink,
      idle: () => host.idle(),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
