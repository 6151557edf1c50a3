import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { CredentialProvider } from '../platform/credentials.ts';
import { formatDuration } from '../platform/format.ts';
import { createLogger } from '../platform/logger.ts';
import { startPanelServer } from '../panel/server.ts';
import { allStates } from '../jobs/index.ts';
import { allKinds } from '../app/system.ts';
import { policyTable as kindsPolicyTable } from '../ops/jobs-api.ts';
import type { Policy, ScheduleRow } from '../jobs/index.ts';
import { needsSigning, OpsApiClient, OpsApiError, OpsClientError, OpsExportStoppedError, regionFromHost, sigV4Signer } from './api-client.ts';
import type { BulkJobRequest, CalendarView, JobListQuery, PolicyTable, Send } from './api-client.ts';
import type { JobDetail, JobSummary } from '../ops/views.ts';

/**
 * The ops CLI (`npm run ops -- …`): list, show, retry and cancel jobs, enqueue a probe, print the retry
 * policies, serve the ops panel in front of an API (`panel`), issue, list and revoke tenants' API keys
 * (`keys`), and read and act on a tenant's batches and endpoints (`batches`, `endpoints`) — as that tenant
 * with one of its API keys (`--api-key`, or REDIAL_API_KEY), or as an operator through the operator copies
 * of the tenant routes. bin/ops.ts only wires it to the process; everything here takes its streams,
 * environment, clock and credentials as arguments, so tests run it in-process.
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
  /** Read for REDIAL_API_URL, REDIAL_API_KEY, AWS_REGION and AWS_DEFAULT_REGION. */
  env: Record<string, string | undefined>;
  /** AWS credentials, asked for only when a request is signed. */
  credentials: CredentialProvider;
  /** The signing time. */
  now: () => Date;
  /** @default sendOnce */
  send?: Send;
  /** Resolves when a long-running command (`panel`) should stop: bin/ops.ts on SIGINT or SIGTERM, a test when it is done. */
  untilStopped?: () => Promise<void>;
}

/** Where `ops panel` listens on 127.0.0.1 unless told otherwise (the local runtime has 3000). */
export const DEFAULT_PANEL_PORT = 3100;

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
  apiKey?: string;
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
  if (error instanceof OpsApiError && error.status === 401) return `${error.message} (check the API key: --api-key or REDIAL_API_KEY)`;
  // API Gateway's IAM refusal says only "Forbidden": say what to check.
  if (error instanceof OpsApiError && error.status === 403 && error.body.error !== 'forbidden') return `${error.message} (check the AWS credentials, the region, and execute-api:Invoke)`;
  if (error instanceof OpsExportStoppedError) return `${error.message} (what came before it is on stdout; resume with --cursor ${error.cursor})`;
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
    .option('--api-key <key>', "batches and endpoints as the tenant of this API key (env REDIAL_API_KEY); without one, as an operator")
    .option('--json', 'machine-readable output');

  const out = (text: string) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const json = (value: unknown) => out(JSON.stringify(value, null, 2));
  const clientOf = (command: Command): { api: OpsApiClient; options: GlobalOptions } => {
    const options = command.optsWithGlobals<GlobalOptions>();
    return { api: apiClient(options, deps), options };
  };
  /** The client of a tenant command: the key's tenant with --api-key (or REDIAL_API_KEY), else the operator. */
  const tenantClientOf = (command: Command, tenant?: string): { api: OpsApiClient; options: GlobalOptions } => {
    const options = command.optsWithGlobals<GlobalOptions>();
    const apiKey = options.apiKey ?? deps.env['REDIAL_API_KEY'];
    if (apiKey === undefined || apiKey === '') return { api: apiClient(options, deps), options };
    if (tenant !== undefined) throw new CliUsageError('--tenant is for operators: with an API key, the tenant is the key’s');
    return { api: new OpsApiClient({ baseUrl: baseUrlOf(options, deps).href, apiKey, ...(deps.send ? { send: deps.send } : {}) }), options };
  };

  const jobs = program.command('jobs').description('list, show, retry and cancel jobs');
  jobs
    .command('list')
    .description('jobs by state, kind, discard reason and when they reached their state, newest first')
    .addOption(new Option('--state <state>', 'only jobs in this state').choices(allStates))
    .option('--kind <kind>', 'only jobs of this kind (e.g. webhook.deliver)')
    .option('--reason <reason>', 'only discarded jobs with this reason (e.g. http_4xx; needs --state discarded)')
    .option('--since <time>', 'reached their state (were discarded) at or after: an ISO time or an age (30m, 2h, 7d)')
    .option('--until <time>', 'reached their state at or before: an ISO time or an age')
    .option('--limit <n>', 'at most this many (1–200, default 50)', intInRange(1, 200))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: ListFlags & { limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = clientOf(command);
      const page = await api.listJobs({ ...filterOf(flags, deps.now()), ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) });
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
  const bulkOptions = (command: Command, verb: string) =>
    command
      .addOption(new Option('--state <state>', `${verb} every job in this state that matches the filters (instead of one id)`).choices(allStates))
      .option('--kind <kind>', 'only jobs of this kind')
      .option('--reason <reason>', 'only discarded jobs with this reason')
      .option('--since <time>', 'reached their state at or after: an ISO time or an age (30m, 2h, 7d)')
      .option('--until <time>', 'reached their state at or before (default: now, fixed when the command starts; pass it again to finish an interrupted run)')
      .option('--dry-run', 'only count the jobs that match')
      .option('--limit <n>', `${verb} at most this many`, intInRange(1, 1_000_000));
  bulkOptions(jobs.command('retry').description('run a discarded, cancelled or waiting job now, keeping its history; or every job matching --state and the filters'), 'retry')
    .argument('[id]', 'job id')
    .action(async (id: string | undefined, flags: BulkFlags, command: Command) => {
      const { api, options } = clientOf(command);
      if (id === undefined) {
        const result = await runBulk('retry', flags, io, deps, (request) => api.retryJobs(request).then((r) => ({ matched: r.matched, changed: r.retried, until: r.until })));
        if (options.json) return json({ matched: result.matched, retried: result.changed, until: result.until });
        return out(result.summary);
      }
      if (flags.state) throw new CliUsageError('pass a job id or --state with filters, not both');
      const job = await api.retryJob(id);
      if (options.json) return json(job);
      out(`retried job ${job.id}: ${job.state}, due ${job.scheduledAt} (attempt ${job.attempt}/${job.maxAttempts})`);
    });
  bulkOptions(jobs.command('cancel').description('cancel a pending or running job; or every job matching --state and the filters'), 'cancel')
    .argument('[id]', 'job id')
    .action(async (id: string | undefined, flags: BulkFlags, command: Command) => {
      const { api, options } = clientOf(command);
      if (id === undefined) {
        const result = await runBulk('cancel', flags, io, deps, (request) => api.cancelJobs(request).then((r) => ({ matched: r.matched, changed: r.cancelled, until: r.until })));
        if (options.json) return json({ matched: result.matched, cancelled: result.changed, until: result.until });
        return out(result.summary);
      }
      if (flags.state) throw new CliUsageError('pass a job id or --state with filters, not both');
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

  const keys = program.command('keys').description("operators: issue, list and revoke a tenant's API keys");
  keys
    .command('create')
    .description('issue an API key for a tenant; the key is printed once, here (stored only as its hash)')
    .argument('<tenantId>', 'the tenant')
    .action(async (tenantId: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const created = await api.createKey(tenantId);
      if (options.json) return json(created);
      out(created.key);
      io.stderr.write(`issued ${created.keyId} for tenant ${tenantId}: shown once; the tenant sends it as Authorization: Bearer <key> (or REDIAL_API_KEY for this CLI)\n`);
    });
  keys
    .command('list')
    .description("a tenant's keys: issued, last used (to the minute), revoked; never a key itself")
    .argument('<tenantId>', 'the tenant')
    .action(async (tenantId: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const list = await api.listKeys(tenantId);
      if (options.json) return json({ keys: list });
      out(list.length === 0 ? 'no keys' : table(['KEY', 'CREATED', 'LAST USED', 'REVOKED'], list.map((k) => [k.keyId, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ?? '-'])));
    });
  keys
    .command('revoke')
    .description('revoke a key: every request with it is refused within 30 s')
    .argument('<tenantId>', 'the tenant')
    .argument('<keyId>', 'the key id (k_…)')
    .action(async (tenantId: string, keyId: string, _flags: unknown, command: Command) => {
      const { api, options } = clientOf(command);
      const key = await api.revokeKey(tenantId, keyId);
      if (options.json) return json(key);
      out(`revoked ${key.keyId} of tenant ${tenantId} at ${key.revokedAt ?? '?'}`);
    });

  const batches = program.command('batches').description("a tenant's batches (--api-key: the key's tenant; else as an operator)");
  batches
    .command('list')
    .description('batches, newest first')
    .option('--tenant <tenantId>', "operators: one tenant's batches (default: every tenant's)")
    .option('--limit <n>', 'at most this many (1–100, default 25)', intInRange(1, 100))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: { tenant?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const page = await api.listBatches({ ...(flags.tenant ? { tenantId: flags.tenant } : {}), ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) });
      if (options.json) return json(page);
      if (page.batches.length === 0) return out('no batches');
      const text = table(
        ['BATCH', 'TENANT', 'STATUS', 'ROUND', 'CONTACTS', 'CREATED'],
        page.batches.map((b) => [b.batchId, b.tenantId, b.status, `${b.round}/${b.maxAttempts}`, String(b.contactCount), b.createdAt]),
      );
      out(page.cursor ? `${text}\nmore: --cursor ${page.cursor}` : text);
    });
  batches
    .command('show')
    .description('one batch: status, round, contacts by status and by code')
    .argument('<id>', 'batch id (b_<tenantId>.…)')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const batch = await api.getBatch(id);
      if (options.json) return json(batch);
      const counts = (record: Record<string, number>) => Object.entries(record).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
      out(
        [
          `batch      ${batch.batchId} (tenant ${batch.tenantId})`,
          `status     ${batch.status}, round ${batch.round}/${batch.maxAttempts}`,
          `contacts   ${batch.contactCount}: ${counts(batch.counts.byStatus)}`,
          `by code    ${counts(batch.counts.byCode)}`,
          `created    ${batch.createdAt}${batch.finalisedAt ? `; finalised ${batch.finalisedAt}` : ''}`,
          ...(batch.startAt ? [`starts     ${batch.startAt}`] : []),
          ...(batch.pausedFrom ? [`paused     ${batch.pausedAt ?? '?'} (resume returns it to ${batch.pausedFrom})`] : []),
          ...(batch.maxConcurrentCalls !== null ? [`max calls  ${batch.maxConcurrentCalls} at once`] : []),
          ...(batch.parentBatchId ? [`rerun of   ${batch.parentBatchId}`] : []),
        ].join('\n'),
      );
    });
  batches
    .command('pause')
    .description('pause a batch: no dial after the pause; calls in flight finish (idempotent; 30 days paused cancels it)')
    .argument('<id>', 'batch id (b_<tenantId>.…)')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const batch = await api.pauseBatch(id);
      if (options.json) return json(batch);
      out(`paused ${batch.batchId}: ${batch.status}${batch.pausedFrom ? ` (from ${batch.pausedFrom})` : ''}`);
    });
  batches
    .command('resume')
    .description('resume a paused batch: back to the status it had, its dialer woken (idempotent)')
    .argument('<id>', 'batch id (b_<tenantId>.…)')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const batch = await api.resumeBatch(id);
      if (options.json) return json(batch);
      out(`resumed ${batch.batchId}: ${batch.status}`);
    });
  batches
    .command('rerun')
    .description('a new batch of a finished batch’s contacts whose final code is one of --codes (default: the retryable codes); never suppressed ones')
    .argument('<id>', 'batch id (b_<tenantId>.…)')
    .option('--codes <codes>', 'comma-separated normalised codes (e.g. NO_PICKUP,TIMEOUT)')
    .option('--idempotency-key <key>', 'the same key again creates nothing new (answers the batch it created)')
    .action(async (id: string, flags: { codes?: string; idempotencyKey?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const codes = flags.codes?.split(',').map((c) => c.trim()).filter((c) => c !== '');
      const created = await api.rerunBatch(id, codes ? { codes } : {}, flags.idempotencyKey);
      if (options.json) return json(created);
      out(`rerun of ${id}: ${created.batchId}`);
    });

  batches
    .command('export')
    .description('a batch’s results, one row per contact in upload order, to stdout (every page, followed in order); in any status')
    .argument('<id>', 'batch id (b_<tenantId>.…)')
    .addOption(new Option('--format <format>', 'csv (a header line, then one line a contact) or jsonl (one JSON object a line)').choices(['csv', 'jsonl']).default('csv'))
    .option('--cursor <cursor>', 'resume a stopped export at this page (as its error printed); a CSV then has no header line')
    .action(async (id: string, flags: { format: 'csv' | 'jsonl'; cursor?: string }, command: Command) => {
      const { api } = tenantClientOf(command);
      // Each page is written as it arrives: an export of any size holds one page in memory.
      for await (const text of api.exportPages(id, { format: flags.format, ...(flags.cursor ? { cursor: flags.cursor } : {}) })) io.stdout.write(text);
    });

  const calendars = program.command('calendars').description("a tenant's calendars, which batches book appointments into (--api-key: the key's tenant; else as an operator, with --tenant)");
  const calendarLine = (c: CalendarView) =>
    `${c.calendarId}: ${c.provider} ${c.providerCalendarId}, ${c.timezone}, ${Object.entries(c.bookableHours)
      .map(([day, ranges]) => `${day} ${ranges.map(([from, to]) => `${from}–${to}`).join(' ')}`)
      .join('; ')}; credentials ${c.credentialsStored ? 'stored' : 'missing'}; updated ${c.updatedAt}`;
  calendars
    .command('put')
    .description('create or update a calendar from a JSON file `{provider, providerCalendarId?, credentials?, timezone, bookableHours}` (credentials: required when creating it; kept when left out)')
    .argument('<calendarId>', 'the calendar id you choose (1–64 of A–Z, a–z, 0–9, _ and -)')
    .argument('<file>', 'the JSON file (its credentials are sent once, stored encrypted, never shown again)')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (calendarId: string, file: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      let body: unknown;
      try {
        body = JSON.parse(await readFile(file, 'utf8'));
      } catch (error) {
        throw new CliUsageError(`cannot read ${file} as JSON: ${error instanceof Error ? error.message : String(error)}`);
      }
      const calendar = await api.putCalendar(flags.tenant, calendarId, body);
      if (options.json) return json(calendar);
      out(calendarLine(calendar));
    });
  calendars
    .command('get')
    .description('a calendar (never its credentials)')
    .argument('<calendarId>', 'the calendar id')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (calendarId: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const calendar = await api.calendar(flags.tenant, calendarId);
      if (options.json) return json(calendar);
      out(calendarLine(calendar));
    });
  calendars
    .command('list')
    .description('the calendars, a page at a time')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .option('--limit <n>', 'at most this many (1–100, default 100)', intInRange(1, 100))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: { tenant?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const page = await api.listCalendars(flags.tenant, { ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) });
      if (options.json) return json(page);
      if (page.calendars.length === 0) return out(page.cursor ? `none on this page\nmore: --cursor ${page.cursor}` : 'no calendars');
      const text = table(
        ['CALENDAR', 'PROVIDER', 'ZONE', 'CREDENTIALS', 'UPDATED'],
        page.calendars.map((c) => [c.calendarId, `${c.provider} ${c.providerCalendarId}`, c.timezone, c.credentialsStored ? 'stored' : 'missing', c.updatedAt]),
      );
      out(page.cursor ? `${text}\nmore: --cursor ${page.cursor}` : text);
    });
  calendars
    .command('delete')
    .description('delete a calendar (refused while a live batch books into it)')
    .argument('<calendarId>', 'the calendar id')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (calendarId: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const calendar = await api.deleteCalendar(flags.tenant, calendarId);
      if (options.json) return json(calendar);
      out(`deleted calendar ${calendar.calendarId}`);
    });

  const suppressions = program.command('suppressions').description("a tenant's suppression list: numbers never dialled (--api-key: the key's tenant; else as an operator, with --tenant)");
  suppressions
    .command('add')
    .description('put a number on the list (again: its reason replaced, its first createdAt kept)')
    .argument('<number>', 'the number, in international form (+14155550123)')
    .option('--reason <reason>', 'why (up to 200 characters)')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (number: string, flags: { reason?: string; tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const entry = await api.putSuppression(flags.tenant, number, flags.reason);
      if (options.json) return json(entry);
      out(`suppressed ${entry.number} (${entry.source}${entry.reason ? `: ${entry.reason}` : ''}) since ${entry.createdAt}`);
    });
  suppressions
    .command('remove')
    .description('take a number off the list (its audit records stay)')
    .argument('<number>', 'the number, in international form')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (number: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const entry = await api.deleteSuppression(flags.tenant, number);
      if (options.json) return json(entry);
      out(`removed ${entry.number} from the suppression list`);
    });
  suppressions
    .command('list')
    .description('the list, a page at a time')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .option('--limit <n>', 'at most this many (1–500, default 100)', intInRange(1, 500))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: { tenant?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const page = await api.listSuppressions(flags.tenant, { ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) });
      if (options.json) return json(page);
      if (page.suppressions.length === 0) return out(page.cursor ? `none on this page\nmore: --cursor ${page.cursor}` : 'no suppressed numbers');
      const text = table(
        ['NUMBER', 'SOURCE', 'SINCE', 'REASON'],
        page.suppressions.map((e) => [e.number, e.source, e.createdAt, e.reason ?? '']),
      );
      out(page.cursor ? `${text}\nmore: --cursor ${page.cursor}` : text);
    });
  suppressions
    .command('import')
    .description('numbers from a CSV file (a `number` column, optionally `reason`; up to 3 MB): checked at once, written by an import job')
    .argument('<file>', 'the CSV file')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (file: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      let csv: string;
      try {
        csv = await readFile(file, 'utf8');
      } catch (error) {
        throw new CliUsageError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
      }
      const started = await api.importSuppressions(flags.tenant, csv);
      if (options.json) return json(started);
      out(`import ${started.importId}: ${started.total} numbers to write (${started.rows} rows, ${started.duplicatesDropped} duplicates dropped); progress: suppressions import-status ${started.importId}`);
    });
  suppressions
    .command('import-status')
    .description('an import’s progress')
    .argument('<importId>', 'the import id (si_<tenantId>.…)')
    .option('--tenant <tenantId>', 'operators: the tenant')
    .action(async (importId: string, flags: { tenant?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const row = await api.suppressionImport(flags.tenant, importId);
      if (options.json) return json(row);
      out(`import ${row.importId}: ${row.status}, ${row.written} of ${row.total} written${row.finishedAt ? `, finished ${row.finishedAt}` : ''}`);
    });

  const endpoints = program.command('endpoints').description("a tenant's webhook endpoints (--api-key: the key's tenant; else as an operator)");
  endpoints
    .command('list')
    .description('endpoints, newest first')
    .option('--tenant <tenantId>', "operators: one tenant's endpoints (default: every tenant's)")
    .option('--limit <n>', 'at most this many (1–100, default 25)', intInRange(1, 100))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (flags: { tenant?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command, flags.tenant);
      const page = await api.listEndpoints({ ...(flags.tenant ? { tenantId: flags.tenant } : {}), ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) });
      if (options.json) return json(page);
      if (page.endpoints.length === 0) return out('no endpoints');
      const text = table(
        ['ENDPOINT', 'TENANT', 'STATE', 'DELIVERED', 'URL'],
        page.endpoints.map((e) => [e.endpointId, e.tenantId, e.disabled ? `disabled (${e.disabledReason ?? '?'})` : e.failingSince ? `failing since ${e.failingSince}` : 'enabled', String(e.delivered), e.url]),
      );
      out(page.cursor ? `${text}\nmore: --cursor ${page.cursor}` : text);
    });
  endpoints
    .command('show')
    .description('one endpoint: URL, health, what waits in its list')
    .argument('<id>', 'endpoint id (ep_<tenantId>.…)')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const e = await api.getEndpoint(id);
      if (options.json) return json(e);
      out(
        [
          `endpoint   ${e.endpointId} (tenant ${e.tenantId})`,
          `url        ${e.url}`,
          `events     ${e.eventTypes?.join(', ') ?? 'every type'}`,
          `state      ${e.disabled ? `disabled (${e.disabledReason ?? '?'}) at ${e.disabledAt ?? '?'}` : 'enabled'}${e.failingSince ? `; failing since ${e.failingSince}` : ''}`,
          `delivered  ${e.delivered}; waiting ${e.waiting}`,
          ...(e.description ? [`note       ${e.description}`] : []),
          ...(e.rotation ? [`secret     rotated ${e.rotation.rotatedAt}; previous ${e.rotation.previousSecretUntil ? `signs too until ${e.rotation.previousSecretUntil}` : 'ended'}`] : []),
        ].join('\n'),
      );
    });
  endpoints
    .command('enable')
    .description('enable an endpoint again (clears failingSince and the disable reason)')
    .argument('<id>', 'endpoint id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const e = await api.enableEndpoint(id);
      if (options.json) return json(e);
      out(`enabled ${e.endpointId}`);
    });
  endpoints
    .command('redeliver')
    .description('run every discarded delivery of an endpoint again (enable it first if it is disabled)')
    .argument('<id>', 'endpoint id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const result = await api.redeliverEndpoint(id);
      if (options.json) return json(result);
      out(`requeued ${result.requeued} deliver${result.requeued === 1 ? 'y' : 'ies'} of ${id}`);
    });
  endpoints
    .command('update')
    .description("change an endpoint's URL (checked as at registration), event types or description")
    .argument('<id>', 'endpoint id')
    .option('--url <url>', 'the new URL: every request that starts after the change goes there')
    .option('--event-types <types>', "comma-separated event types, or 'all' for every type")
    .option('--description <text>', "a note for people (an empty string removes it)")
    .action(async (id: string, flags: { url?: string; eventTypes?: string; description?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command);
      if (flags.url === undefined && flags.eventTypes === undefined && flags.description === undefined) throw new CliUsageError('endpoints update: pass --url, --event-types or --description');
      const e = await api.updateEndpoint(id, {
        ...(flags.url !== undefined ? { url: flags.url } : {}),
        ...(flags.eventTypes !== undefined ? { eventTypes: flags.eventTypes === 'all' ? null : flags.eventTypes.split(',').map((t) => t.trim()).filter((t) => t !== '') } : {}),
        ...(flags.description !== undefined ? { description: flags.description === '' ? null : flags.description } : {}),
      });
      if (options.json) return json(e);
      out(`updated ${e.endpointId}: ${e.url}; events ${e.eventTypes?.join(', ') ?? 'every type'}`);
    });
  endpoints
    .command('delete')
    .description('delete an endpoint: nothing more is sent to it; what waited for it is discarded (endpoint_deleted); its attempt log stays readable 30 days')
    .argument('<id>', 'endpoint id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const d = await api.deleteEndpoint(id);
      if (options.json) return json(d);
      out(`deleted ${d.endpointId} at ${d.deletedAt}; purge job ${d.purgeJobId}`);
    });
  endpoints
    .command('rotate-secret')
    .description('a new signing secret, shown once; the previous one signs too for 24 h (both signatures are sent)')
    .argument('<id>', 'endpoint id')
    .option('--expire-old-now', 'end the previous secret at once')
    .action(async (id: string, flags: { expireOldNow?: boolean }, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const r = await api.rotateEndpointSecret(id, flags.expireOldNow ? { expireOldNow: true } : {});
      if (options.json) return json(r);
      out(`new secret (shown once): ${r.secret}\nprevious secret ${r.previousSecretUntil ? `signs too until ${r.previousSecretUntil}` : 'ended'}`);
    });
  endpoints
    .command('attempts')
    .description("an endpoint's attempt log, newest first: every attempt of the last 30 days, a page at a time")
    .argument('<id>', 'endpoint id')
    .option('--since <time>', 'attempts at or after: an ISO time or an age (30m, 2h, 7d)')
    .option('--until <time>', 'attempts before: an ISO time or an age')
    .option('--status <status>', 'a result (delivered, throttled, failed, gone, rejected, blocked) or an HTTP status')
    .option('--event-type <type>', 'only this event type')
    .option('--limit <n>', 'at most this many (1–200, default 50)', intInRange(1, 200))
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .action(async (id: string, flags: { since?: string; until?: string; status?: string; eventType?: string; limit?: number; cursor?: string }, command: Command) => {
      const { api, options } = tenantClientOf(command);
      const now = deps.now();
      const page = await api.endpointAttempts(id, {
        ...(flags.since ? { since: timeOf('--since', flags.since, now) } : {}),
        ...(flags.until ? { until: timeOf('--until', flags.until, now) } : {}),
        ...(flags.status ? { status: flags.status } : {}),
        ...(flags.eventType ? { eventType: flags.eventType } : {}),
        ...(flags.limit ? { limit: flags.limit } : {}),
        ...(flags.cursor ? { cursor: flags.cursor } : {}),
      });
      if (options.json) return json(page);
      const text =
        page.attempts.length === 0
          ? 'no attempts'
          : table(
              ['AT', 'EVENT', 'TYPE', 'ATTEMPT', 'RESULT', 'STATUS', 'MS', 'NEXT RETRY', 'SOURCE'],
              page.attempts.map((a) => [a.at, a.eventId, a.eventType, String(a.attempt), a.result, a.status === null ? (a.errorClass ?? '-') : String(a.status), String(a.durationMs), a.nextRetryAt ?? '-', a.source]),
            );
      out(page.cursor ? `${text}\nmore: --cursor ${page.cursor}` : text);
    });
  endpoints
    .command('recover')
    .description('send an endpoint again every event of a window it subscribed to and did not receive (same webhook-id); with a recovery id, show that recovery')
    .argument('<id>', 'endpoint id')
    .argument('[recoveryId]', 'show this recovery instead of starting one')
    .option('--since <time>', 'the window start: an ISO time or an age (30m, 2h, 7d), at most 30 days back')
    .option('--until <time>', 'the window end (default now)')
    .option('--dry-run', 'count what would be requeued, requeue nothing')
    .action(async (id: string, recoveryId: string | undefined, flags: { since?: string; until?: string; dryRun?: boolean }, command: Command) => {
      const { api, options } = tenantClientOf(command);
      if (recoveryId === undefined) {
        if (!flags.since) throw new CliUsageError('endpoints recover: pass --since (and --until, --dry-run), or a recovery id to show one');
        const now = deps.now();
        const started = await api.recoverEndpoint(id, {
          since: timeOf('--since', flags.since, now),
          ...(flags.until ? { until: timeOf('--until', flags.until, now) } : {}),
          ...(flags.dryRun ? { dryRun: true } : {}),
        });
        if (options.json) return json(started);
        return out(`recovery ${started.recoveryId} started; follow it with: endpoints recover ${id} ${started.recoveryId}`);
      }
      const r = await api.endpointRecovery(id, recoveryId);
      if (options.json) return json(r);
      out(`recovery ${r.recoveryId} ${r.status}${r.dryRun ? ' (dry run)' : ''}: ${r.since} – ${r.until}; matched ${r.matched}, requeued ${r.requeued}, in flight ${r.inFlight}${r.error ? `; ${r.error}` : ''}`);
    });

  program
    .command('panel')
    .description('serve the ops panel on 127.0.0.1 in front of --api: every page reads and acts through that API (signed with SigV4 for AWS)')
    .option('--port <n>', `the port on 127.0.0.1, 0 for any free one (default ${DEFAULT_PANEL_PORT})`, intInRange(0, 65535), DEFAULT_PANEL_PORT)
    .action(async (flags: { port: number }, command: Command) => {
      if (!deps.untilStopped) throw new CliUsageError('this host cannot keep the panel running (no untilStopped)');
      const { api } = clientOf(command);
      // Fail at once, with the API's own words, if it cannot be reached or refuses the credentials.
      await api.servedPolicies();
      const server = await startPanelServer({ api, port: flags.port, logger: createLogger('redial-panel') });
      try {
        out(`panel ${server.url}/panel → ${api.baseUrl}${api.signed ? ' (every request signed with SigV4)' : ''}`);
        io.stderr.write('the panel answers this machine only (127.0.0.1); Ctrl-C stops it\n');
        await deps.untilStopped();
      } finally {
        await server.close();
      }
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

/** The API's URL: --api, else REDIAL_API_URL, else the local runtime's. */
function baseUrlOf(options: GlobalOptions, deps: CliDeps): URL {
  const raw = options.api ?? deps.env['REDIAL_API_URL'] ?? DEFAULT_API_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliUsageError(`--api: not a URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliUsageError(`--api: not an http(s) URL: ${raw}`);
  return url;
}

/** Builds the operator's API client the options ask for: plain locally, SigV4-signed against AWS. */
function apiClient(options: GlobalOptions, deps: CliDeps): OpsApiClient {
  const raw = options.api ?? deps.env['REDIAL_API_URL'] ?? DEFAULT_API_URL;
  const url = baseUrlOf(options, deps);
  const send = deps.send ? { send: deps.send } : {};
  if (!needsSigning(url, options.iam ?? false)) return new OpsApiClient({ baseUrl: raw, ...send });
  // An explicit --region wins; then the host's own (it is the one API Gateway checks); then the environment.
  const region = options.region ?? regionFromHost(url.hostname) ?? deps.env['AWS_REGION'] ?? deps.env['AWS_DEFAULT_REGION'];
  if (!region) throw new CliUsageError(`cannot tell the AWS region of ${url.host}; pass --region or set AWS_REGION`);
  return new OpsApiClient({ baseUrl: raw, signer: sigV4Signer({ region, credentials: deps.credentials, now: deps.now }), ...send });
}

interface ListFlags {
  state?: string;
  kind?: string;
  reason?: string;
  since?: string;
  until?: string;
}

interface BulkFlags extends ListFlags {
  dryRun?: boolean;
  limit?: number;
}

/** The list filters as the API takes them: times as ISO, an age (`2h`) counted back from `now`. */
function filterOf(flags: ListFlags, now: Date): Omit<JobListQuery, 'limit' | 'cursor'> {
  return {
    ...(flags.state ? { state: flags.state } : {}),
    ...(flags.kind ? { kind: flags.kind } : {}),
    ...(flags.reason ? { reason: flags.reason } : {}),
    ...(flags.since ? { since: timeOf('--since', flags.since, now) } : {}),
    ...(flags.until ? { until: timeOf('--until', flags.until, now) } : {}),
  };
}

const AGE_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** An ISO time as given, or an age (`90s`, `30m`, `2h`, `7d`) as the ISO time that long before `now`. */
export function timeOf(flag: string, value: string, now: Date): string {
  const age = /^(\d+)([smhd])$/.exec(value);
  if (age) return new Date(now.getTime() - Number(age[1]) * AGE_UNITS[age[2]!]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value))) return value;
  throw new CliUsageError(`${flag}: expected an ISO time (2026-12-01T08:00:00Z) or an age (30m, 2h, 7d), got ${JSON.stringify(value)}`);
}

/** Jobs one bulk request changes: a request stays short (API Gateway cuts one off at 30 s). */
export const BULK_CHUNK = 200;

/**
 * A bulk retry or cancel by filter: a dry run counts what matches, then requests of {@link BULK_CHUNK}
 * change it, a progress bar on stderr after each, until nothing is left (or `--limit` is reached). The
 * time range ends at `--until`, or where the dry run's answer says it ended (the API's now, on the job
 * layer's clock), so jobs that end in the state again while it runs (a retried job discarded again) are not
 * taken twice; the summary says the `--until` that finishes an interrupted run.
 */
async function runBulk(
  verb: 'retry' | 'cancel',
  flags: BulkFlags,
  io: CliIo,
  deps: CliDeps,
  act: (request: BulkJobRequest) => Promise<{ matched: number; changed: number; until: string }>,
): Promise<{ matched: number; changed: number; until: string; summary: string }> {
  if (!flags.state) throw new CliUsageError(`jobs ${verb}: pass a job id, or --state (with --kind, --reason, --since, --until) to ${verb} every job that matches`);
  const filter = { ...filterOf(flags, deps.now()), state: flags.state };
  const done = verb === 'retry' ? 'retried' : 'cancelled';
  const { matched, until } = await act({ ...filter, dryRun: true });
  const request = { ...filter, until };
  const total = Math.min(matched, flags.limit ?? Number.POSITIVE_INFINITY);
  const rerun = `--until ${until}`;
  if (flags.dryRun || total === 0) return { matched, changed: 0, until, summary: `${matched} job${matched === 1 ? '' : 's'} match${matched === 1 ? 'es' : ''}${flags.dryRun ? ` (dry run: none ${done})` : ''}` };
  let changed = 0;
  for (;;) {
    const left = total - changed;
    if (left <= 0) break;
    const step = await act({ ...request, limit: Math.min(BULK_CHUNK, left) });
    changed += step.changed;
    io.stderr.write(`${progressBar(Math.min(changed, total), total)} ${changed}/${total} ${done}\n`);
    // Nothing changed: what still matched moved on meanwhile (run, retried or cancelled by someone else).
    if (step.changed === 0) break;
  }
  return { matched, changed, until, summary: `${done} ${changed} of ${matched} matching job${matched === 1 ? '' : 's'} (to finish an interrupted run, repeat it with ${rerun})` };
}

/** `[██████░░░░░░]`, 24 cells wide. */
export function progressBar(done: number, total: number, width = 24): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
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
