import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { CredentialProvider } from '../platform/credentials.ts';
import { formatDuration } from '../platform/format.ts';
import { allStates } from '../jobs/index.ts';
import { allKinds } from '../app/system.ts';
import { policyTable as kindsPolicyTable } from '../ops/jobs-api.ts';
import type { Policy, ScheduleRow } from '../jobs/index.ts';
import { needsSigning, OpsApiClient, OpsApiError, OpsClientError, regionFromHost, sigV4Signer } from './api-client.ts';
import type { PolicyTable, Send } from './api-client.ts';
import type { JobDetail, JobSummary } from '../ops/views.ts';

/**
 * The ops CLI (`npm run ops -- …`): list, show, retry and cancel jobs, enqueue a probe, print the retry
 * policies. bin/ops.ts only wires it to the process; everything here takes its streams, environment,
 * clock and credentials as arguments, so tests run it in-process.
 */

/** Where the CLI writes: `process.stdout` fits, and so does a test's collector. */
export interface CliOutput {
  write(text: string): unknown;
}

/** The CLI's two output streams. */
export interface CliIo {
  stdout: CliOutput;
  stderr: CliOutput;
}

/** What the CLI takes from its surroundings. */
export interface CliDeps {
  /** Read for REDIAL_API_URL, AWS_REGION and AWS_DEFAULT_REGION. */
  env: Record<string, string | undefined>;
  /** AWS credentials, asked for only when a request is signed. */
  credentials: CredentialProvider;
  /** The signing time. */
  now: () => Date;
  /** @default sendOnce */
  send?: Send;
}

/** The local runtime's address (`npm start`). */
export const DEFAULT_API_URL = 'http://127.0.0.1:3000';

/** Exit codes: 0 done, 1 the request failed, 2 the command line is wrong. */
export const ExitCode = { ok: 0, failed: 1, usage: 2 } as const;

/** A command line the CLI cannot act on (a bad --api, no region to sign for). Exit code 2. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

interface GlobalOptions {
  api?: string;
  iam?: boolean;
  region?: string;
  json?: boolean;
}

/**
 * Runs one ops command line (without `node` and the script) and resolves with its exit code; it never
 * calls `process.exit`.
 *
 * @example
 * const code = await runCli(['jobs', 'list', '--state', 'discarded'], { stdout: process.stdout, stderr: process.stderr },
 *   { env: process.env, credentials: defaultCredentialChain(), now: () => new Date() });
 */
export async function runCli(argv: readonly string[], io: CliIo, deps: CliDeps): Promise<number> {
  const program = createProgram(io, deps);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.ok;
  } catch (error) {
    // Commander has printed its own message (usage error) or the help already.
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    if (error instanceof CliUsageError) {
      io.stderr.write(`error: ${error.message}\n`);
      return ExitCode.usage;
    }
    io.stderr.write(`${describeFailure(error)}\n`);
    return ExitCode.failed;
  }
}

function describeFailure(error: unknown): string {
  // API Gateway's IAM refusal says only "Forbidden": say what to check.
  if (error instanceof OpsApiError && error.status === 403) return `${error.message} (check the AWS credentials, the region, and execute-api:Invoke)`;
  if (error instanceof OpsClientError) return error.message;
  return `error: ${error instanceof Error ? error.message : String(error)}`;
}

/** The commander program; {@link runCli} parses with it. */
export function createProgram(io: CliIo, deps: CliDeps): Command {
  const program = new Command('ops')
    .description('Inspect and steer redial jobs: list, show, retry, cancel, probe; print the retry policies')
    .exitOverride()
    .configureOutput({ writeOut: (text) => void io.stdout.write(text), writeErr: (text) => void io.stderr.write(text) })
    .option('--api <url>', `the redial API (env REDIAL_API_URL; default ${DEFAULT_API_URL})`)
    .option('--iam', 'sign requests with SigV4 (automatic for *.amazonaws.com)')
    .option('--region <region>', 'AWS region to sign for (default: from the host, then AWS_REGION)')
    .option('--json', 'machine-readable output');

  const out = (text: string) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const json = (value: unknown) => out(JSON.stringify(value, null, 2));
  const clientOf = (command: Command): { api: OpsApiClient; options: GlobalOptions } => {
    const options = command.optsWithGlobals<GlobalOptions>();
    return { api: apiClient(options, deps), options };
  };

  const jobs = program.command('jobs').description('list, show, retry and cancel jobs');
  jobs
    .command('list')
    .description('jobs by state and kind, newest first')
    .addOption(new Option('--state <state>', 'only jobs in this state').choices(allStates))
    .option('--kind <kind>', 'only jobs of this kind (e.g. webhook.deliver)')
    .option('--limit <n>', 'at most this many (1–200, default 50)', intInRange(1, 200))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: { state?: string; kind?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = clientOf(command);
      const page = await api.listJobs(flags);
      if (options.json) return json(page);
      out(formatJobList(page.jobs, page.cursor));
    });
  jobs
    .command('show')
    .description('one job with its attempt history')
    .argument('<id>', 'job id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const job = await api.getJob(id);
      if (options.json) return json(job);
      out(formatJobDetail(job));
    });
  jobs
    .command('retry')
    .description('run a discarded, cancelled or waiting job now, keeping its history')
    .argument('<id>', 'job id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const job = await api.retryJob(id);
      if (options.json) return json(job);
      out(`retried job ${job.id}: ${job.state}, due ${job.scheduledAt} (attempt ${job.attempt}/${job.maxAttempts})`);
    });
  jobs
    .command('cancel')
    .description('cancel a pending or running job')
    .argument('<id>', 'job id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const job = await api.cancelJob(id);
      if (options.json) return json(job);
      out(`cancelled job ${job.id}: ${job.state} (attempt ${job.attempt}/${job.maxAttempts})`);
    });

  program
    .command('probe')
    .description('enqueue an ops.probe job that fails N times, then completes; prints its id')
    .option('--fail <n>', 'attempts that fail before it completes (0–20)', intInRange(0, 20), 0)
    .option('--note <text>', 'a note kept in the job args')
    .action(async (flags: { fail: number; note?: string }, command: Command) => {
      const { api, options } = clientOf(command);
      const { jobId } = await api.enqueueProbe({ failTimes: flags.fail, ...(flags.note ? { note: flags.note } : {}) });
      if (options.json) return json({ jobId });
      out(jobId);
      io.stderr.write(`enqueued ops.probe (fails ${flags.fail} time${flags.fail === 1 ? '' : 's'}, then completes); follow it: npm run ops -- jobs show ${jobId}\n`);
    });

  program
    .command('policies')
    .description("every kind's retry schedule, from the code (offline: no API needed)")
    .action((_flags: unknown, command: Command) => {
      const table = policyTable();
      if (command.optsWithGlobals<GlobalOptions>().json) return json(table);
      out(formatPolicies(table));
    });

  return program;
}

/** Builds the API client the options ask for: plain locally, SigV4-signed against AWS. */
function apiClient(options: GlobalOptions, deps: CliDeps): OpsApiClient {
  const raw = options.api ?? deps.env['REDIAL_API_URL'] ?? DEFAULT_API_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliUsageError(`--api: not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliUsageError(`--api: not an http(s) URL: ${raw}`);
  const send = deps.send ? { send: deps.send } : {};
  if (!needsSigning(url, options.iam ?? false)) return new OpsApiClient({ baseUrl: raw, ...send });
  // An explicit --region wins; then the host's own (it is the one API Gateway checks); then the environment.
  const region = options.region ?? regionFromHost(url.hostname) ?? deps.env['AWS_REGION'] ?? deps.env['AWS_DEFAULT_REGION'];
  if (!region) throw new CliUsageError(`cannot tell the AWS region of ${url.host}; pass --region or set AWS_REGION`);
  return new OpsApiClient({ baseUrl: raw, signer: sigV4Signer({ region, credentials: deps.credentials, now: deps.now }), ...send });
}

function intInRange(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    return n;
  };
}

// ── formatting ──────────────────────────────────────────────────────────────────────────────────────

/** Left-aligned columns two spaces apart; the last column is not padded. */
function table(header: readonly string[], rows: readonly (readonly string[])[], indent = ''): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    indent +
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The `jobs list` table: id, kind, state, attempt/max, scheduledAt, discardReason, last error. */
export function formatJobList(jobs: readonly JobSummary[], cursor?: string): string {
  if (jobs.length === 0) return 'no jobs';
  const rows = jobs.map((job) => [
    job.id,
    job.kind,
    job.state,
    `${job.attempt}/${job.maxAttempts}`,
    job.scheduledAt,
    job.discardReason ?? '-',
    oneLine(job.errors.at(-1)?.error ?? '-', 60),
  ]);
  const text = table(['ID', 'KIND', 'STATE', 'ATTEMPT', 'SCHEDULED', 'DISCARD', 'LAST ERROR'], rows);
  return cursor ? `${text}\nmore: --cursor ${cursor}` : text;
}

/** The `jobs show` view: the job's fields, then its attempt history. */
export function formatJobDetail(job: JobDetail): string {
  const fields: [string, string][] = [
    ['id', job.id],
    ['kind', job.kind],
    ['queue', job.queue],
    ['state', job.state],
    ['attempt', `${job.attempt}/${job.maxAttempts}`],
    ['scheduled at', job.scheduledAt],
    ['created at', job.createdAt],
    ['updated at', job.updatedAt],
    ['finalised at', job.finalizedAt ?? '-'],
    ['discard reason', job.discardReason ?? '-'],
    ['snoozes', job.lastSnooze ? `${job.snoozes} (last at ${job.lastSnooze.at} until ${job.lastSnooze.until}: ${job.lastSnooze.reason})` : String(job.snoozes)],
    ['args', oneLine(JSON.stringify(job.args) ?? '-', 200)],
  ];
  const width = Math.max(...fields.map(([name]) => name.length));
  const head = fields.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
  if (job.attempts.length === 0) return `${head}\n\nattempts: none yet`;
  const history = table(
    ['#', 'AT', 'DURATION', 'OUTCOME', 'ERROR'],
    job.attempts.map((a) => [String(a.attempt), a.at, formatDuration(a.durationMs), a.outcome, oneLine(a.error ?? '-', 120)]),
  );
  return `${head}\n\nattempts\n${history}`;
}

/** What happens when a policy's attempts run out, in words. */
export function describeExhausted(onExhausted: Policy['onExhausted']): string {
  switch (onExhausted) {
    case 'discard_alert':
      return 'discarded + alert';
    case 'discard':
      return 'discarded, no alert (the kind’s own rules take over)';
    case 'next_period':
      return 'not retried; the next period runs';
  }
}

/** Every kind's policy and un-jittered schedule, offline, assembled from the contexts' kinds; the same shape as `GET /v1/ops/policies`. */
export function policyTable(): PolicyTable {
  return kindsPolicyTable(allKinds);
}

/**
 * The `policies` view: one section per policy (kinds that share one are listed together) with max
 * attempts and what happens when they run out, then each wait: attempt, delay, jitter range, cumulative.
 */
export function formatPolicies(policyTable: PolicyTable): string {
  const groups = new Map<string, { kinds: string[]; entry: PolicyTable['policies'][number] }>();
  for (const entry of policyTable.policies) {
    const key = JSON.stringify({ ...entry, kind: undefined });
    const group = groups.get(key);
    if (group) group.kinds.push(entry.kind);
    else groups.set(key, { kinds: [entry.kind], entry });
  }
  const sections = [...groups.values()].map(({ kinds, entry }) => {
    const head = `${kinds.join(', ')}\n  ${entry.maxAttempts} attempt${entry.maxAttempts === 1 ? '' : 's'}; when exhausted: ${describeExhausted(entry.onExhausted as Policy['onExhausted'])}; jitter ±${Number((entry.jitter * 100).toFixed(2))} %`;
    if (entry.schedule.length === 0) return `${head}\n  no retries`;
    const rows = entry.schedule.map((row: ScheduleRow) => [
      String(row.afterAttempt),
      formatDuration(row.delayMs),
      `${formatDuration(row.minMs)}–${formatDuration(row.maxMs)}`,
      formatDuration(row.cumulativeMs),
    ]);
    const total = entry.schedule.at(-1)?.cumulativeMs ?? 0;
    const waits = entry.schedule.length;
    return `${head}\n${table(['AFTER ATTEMPT', 'WAIT', 'JITTER RANGE', 'CUMULATIVE'], rows, '  ')}\n  ${waits} wait${waits === 1 ? '' : 's'}, ${formatDuration(total)} from the first attempt to the last`;
  });
  return sections.join('\n\n');
}
