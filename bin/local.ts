#!/usr/bin/env node
// npm start: redial on one machine. It assembles; functions/local/runtime.ts decides.
import { Command } from 'commander';
import * as z from 'zod';
import { parseConfig } from '../functions/platform/config.ts';
import { join } from 'node:path';
import { startLocalRuntime } from '../functions/local/runtime.ts';
import { DEMO_TIME_SCALE, runDemo } from '../functions/demo/campaign.ts';
import { DemoApi } from '../functions/demo/client.ts';
import { DemoReceivers } from '../functions/demo/receivers.ts';
import { progressView } from '../functions/demo/progress-view.ts';
import { DEV_WEBHOOK_SECRET, localCallsEnv } from '../functions/calls/local/config.ts';

const program = new Command('redial-local')
  .description('Run redial locally: DynamoDB Local, in-process queues and timers, the API on 127.0.0.1')
  .option('--memory', 'keep no data (DynamoDB Local in memory)')
  .option('--no-demo', 'do not run the demo campaign')
  .parse();
const flags = program.opts<{ memory?: boolean; demo: boolean }>();

const env = parseConfig(
  z
    .object({
      PORT: z.coerce.number().int().min(0).max(65535).default(3000),
      DATA_DIR: z.string().min(1).default('.data'),
      TIME_SCALE: z.coerce.number().positive().max(1000).optional(),
      MAIL_DOMAIN: z.string().min(1).optional(),
      MAIL_FROM: z.string().min(3).optional(),
      SMTP_URL: z.string().url().optional(),
      PUBLIC_BASE_URL: z.string().url().optional(),
      WEBHOOK_ALLOW_LOOPBACK: z.enum(['0', '1', 'false', 'true']).default('1'),
      DISCARDED_RETENTION_DAYS: z.coerce.number().int().min(1).max(365).optional(),
    })
    .extend(localCallsEnv.shape),
);
// Warnings go to the terminal, except while the demo prints its progress there.
process.env['LOG_LEVEL'] ??= flags.demo ? 'ERROR' : 'WARN';

// The demo runs in scaled time (about a minute for some 40 minutes of campaign) unless TIME_SCALE says otherwise.
const timeScale = env.TIME_SCALE ?? (flags.demo ? DEMO_TIME_SCALE : 1);
const receivers = flags.demo ? new DemoReceivers() : undefined;
const runtime = await startLocalRuntime({
  port: env.PORT,
  dataDir: flags.memory ? undefined : env.DATA_DIR,
  timeScale,
  ...(receivers ? { extraRoutes: receivers.routes() } : {}),
  calls: {
    placerUrl: env.CALL_PLACER_URL,
    webhookSecret: env.CALL_WEBHOOK_SECRET,
    callTimeoutSeconds: env.CALL_TIMEOUT_SECONDS,
    simulatorSeed: env.SIMULATOR_SEED,
    simulatorMix: env.SIMULATOR_MIX,
  },
  mail: { domain: env.MAIL_DOMAIN, from: env.MAIL_FROM, smtpUrl: env.SMTP_URL, publicBaseUrl: env.PUBLIC_BASE_URL },
  webhookAllowLoopback: env.WEBHOOK_ALLOW_LOOPBACK === '1' || env.WEBHOOK_ALLOW_LOOPBACK === 'true',
  ...(env.DISCARDED_RETENTION_DAYS !== undefined ? { discardedRetentionDays: env.DISCARDED_RETENTION_DAYS } : {}),
});
console.log(`redial is running
  API             ${runtime.url}   (health: ${runtime.url}/healthz)
  DynamoDB Local  ${runtime.dynamo.endpoint}   pid ${runtime.dynamo.pid}, data ${flags.memory ? 'in memory' : env.DATA_DIR}
  mail            ${runtime.smtpSink ? `SMTP sink ${runtime.smtpSink.url}, messages at ${runtime.url}/v1/ops/mail` : `SMTP ${env.SMTP_URL ?? ''}`}; Message-ID domain ${runtime.mail.domain}
  time scale      ${timeScale === 1 ? '1 (real time)' : `${timeScale}: time is scaled, 1 s of job time passes in ${timeScale} s (${+(1 / timeScale).toFixed(1)}× real time)${env.TIME_SCALE === undefined ? '; TIME_SCALE=1 for real time' : ''}`}
  call placer     ${runtime.simulator ? `${runtime.simulator.url}   (built-in simulator, seed ${env.SIMULATOR_SEED})` : runtime.calls.placerUrl}
  call intake     ${runtime.calls.callbackUrl}   secret ${env.CALL_WEBHOOK_SECRET ? '(CALL_WEBHOOK_SECRET)' : `${DEV_WEBHOOK_SECRET} (dev default)`}
  ops panel       ${runtime.url}/panel
  ops CLI         npm run ops -- jobs list --api ${runtime.url}
Press Ctrl-C to stop.`);

let stopping = false;
const demoStop = new AbortController();
if (receivers) {
  console.log('\ndemo campaign: a tenant, four customer endpoints and a batch of 40 contacts, through the public API');
  runDemo({
    api: new DemoApi(runtime.url),
    receivers,
    stateFile: flags.memory ? undefined : join(env.DATA_DIR, 'demo.json'),
    print: (line) => console.log(line),
    progress: progressView(process.stdout),
    timeScale,
    signal: demoStop.signal,
  }).then(
    () => console.log(`\nthe demo is done; redial keeps serving. Open ${runtime.url}/panel to find and fix what failed.`),
    // A demo cut short by Ctrl-C has not failed: it resumes at the next start.
    (error: unknown) => stopping || console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`),
  );
}

const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  demoStop.abort(new Error(signal)); // the demo's progress block is left whole before anything else is printed
  console.log(`\n${signal}: stopping…`);
  runtime.stop().then(
    () => {
      console.log('stopped; nothing left running');
      process.exit(0);
    },
    (error: unknown) => {
      console.error('stop failed', error);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
// `npm start` does not pass SIGTERM on to its script: when npm goes, this process is re-parented. Stop then too.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && shutdown('parent process exited'), 500).unref();
