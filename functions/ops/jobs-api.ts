import * as z from 'zod';
import { conflict, HttpError, notFound, queryInt, route, withErrors } from '../platform/http.ts';
import { InvalidCursorError } from '../platform/dynamo.ts';
import type { ApiRoute, HttpError as HttpErrorType } from '../platform/http.ts';
import { allStates, bulkCancelStates, bulkRetryStates, JobNotFoundError, JobState, MAX_CURSOR_LENGTH, retrySchedule, TransitionRefusedError } from '../jobs/index.ts';
import type { JobClient, JobKind, PeriodicStatus } from '../jobs/index.ts';
import { probeArgs, probeKind } from './probe.ts';
import { jobDetail, jobDetailSchema, jobSummary, jobSummarySchema, periodicListSchema } from './views.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });

/** An ISO-8601 time with a zone (`2026-12-01T08:00:00Z`, `…+01:00`). */
const isoTime = z.iso.datetime({ offset: true });
const states = allStates as [JobState, ...JobState[]];

/** The filters `GET /v1/ops/jobs` and the bulk actions share: state, kind, discard reason, and a range of when the job reached its state. */
const filterFields = {
  kind: z.string().min(1).max(100).optional(),
  reason: z.string().regex(/^[a-z][a-z0-9_]*$/, 'a discard reason: snake_case').max(100).optional(),
  since: isoTime.optional(),
  until: isoTime.optional(),
};

/** Checks what one field cannot: a reason goes with discarded jobs only, and `since` is not after `until`. */
function checkFilter(filter: { state?: string | undefined; reason?: string | undefined; since?: string | undefined; until?: string | undefined }, ctx: z.RefinementCtx): void {
  if (filter.reason !== undefined && filter.state !== JobState.discarded) {
    ctx.addIssue({ code: 'custom', path: ['reason'], message: 'a discard reason filters discarded jobs only: add state=discarded' });
  }
  if (filter.since !== undefined && filter.until !== undefined && Date.parse(filter.since) > Date.parse(filter.until)) {
    ctx.addIssue({ code: 'custom', path: ['until'], message: 'until is before since' });
  }
}

const ms = (time: string | undefined): number | undefined => (time === undefined ? undefined : Date.parse(time));

/** A bulk action's body: a state to act on (one the action may start from), the filters, a dry run, and how many to change in this call. */
const bulkBody = (allowed: readonly JobState[]) =>
  z
    .object({
      state: z.enum(allowed as [JobState, ...JobState[]]),
      ...filterFields,
      dryRun: z.boolean().optional(),
      limit: z.number().int().min(1).max(MAX_BULK_LIMIT).optional(),
    })
    .strict()
    .superRefine(checkFilter);

/** Jobs one bulk call changes at most (its `limit` defaults to this): a call stays well inside API Gateway's 30 s; run it again for the rest. */
export const MAX_BULK_LIMIT = 1000;

const refused = (error: TransitionRefusedError, action: string) =>
  conflict(`cannot ${action} job ${error.jobId} in state ${error.current?.state ?? 'unknown'}`, { state: error.current?.state ?? null });

/** What the ops routes need: the job client, every kind the system runs (for the policy table), and the periodic kinds' last runs. */
export interface OpsDeps {
  jobs: JobClient;
  kinds: readonly JobKind<unknown>[];
  /** A periodic kind's last run, as the job layer keeps it (undefined before its first). */
  periodicStatus(kind: string): Promise<PeriodicStatus | undefined>;
}

/**
 * The ops routes' errors as HTTP answers, in one place: a job that is not there is a 404, a transition
 * its state refuses a 409 (or a 404 when the job is gone), a cursor this listing did not give out a 400.
 */
export function opsHttpError(error: unknown): HttpErrorType | undefined {
  if (error instanceof JobNotFoundError) return notFound(`job ${error.jobId}`);
  if (error instanceof TransitionRefusedError) {
    if (!error.current) return notFound(`job ${error.jobId}`);
    return refused(error, error.transition === 'retryNow' ? 'retry' : error.transition);
  }
  if (error instanceof InvalidCursorError) return new HttpError(400, 'invalid_request', 'invalid query', { issues: [{ path: 'query.cursor', message: error.message }] });
  return undefined;
}

/**
 * The ops job routes (docs/openapi.json, docs/job-layer.md "Ops"): list by state and kind, show one with its attempt history, retry a
 * discarded or cancelled job now, cancel a pending one; plus the probe and the policy table.
 */
export function jobRoutes(deps: () => OpsDeps): ApiRoute[] {
  const jobs = () => deps().jobs;
  const list = route({
    method: 'GET',
    path: '/v1/ops/jobs',
    auth: 'iam',
    summary: 'List jobs by state, kind, discard reason and when they reached their state (since, until), newest first',
    query: z
      .object({
        state: z.enum(states).optional(),
        ...filterFields,
        limit: queryInt(1, 200).optional(),
        cursor: z.string().max(MAX_CURSOR_LENGTH).optional(),
      })
      .superRefine(checkFilter),
    responses: {
      200: {
        description:
          'jobs (discarded and cancelled: newest end first; others: by when the rescuer checks them, latest first); `cursor`, when present, asks for the next page with the same filters (a page may hold fewer than `limit` jobs and still have a cursor)',
        schema: z.object({ jobs: z.array(jobSummarySchema), cursor: z.string().optional() }),
      },
      400: { description: 'a bad filter, or a cursor this listing did not give out' },
    },
    handler: async ({ query }) => {
      const page = await jobs().list({
        ...(query.state ? { state: query.state } : {}),
        ...(query.kind ? { kind: query.kind } : {}),
        ...(query.reason ? { reason: query.reason } : {}),
        ...(query.since ? { since: ms(query.since)! } : {}),
        ...(query.until ? { until: ms(query.until)! } : {}),
        ...(query.limit ? { limit: query.limit } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      return { status: 200, body: { jobs: page.jobs.map(jobSummary), ...(page.cursor ? { cursor: page.cursor } : {}) } };
    },
  });
  const show = route({
    method: 'GET',
    path: '/v1/ops/jobs/{id}',
    auth: 'iam',
    summary: 'One job with its attempt history',
    params: idParams,
    responses: { 200: { description: 'the job', schema: jobDetailSchema }, 404: { description: 'no such job' } },
    handler: async ({ params }) => {
      const row = await jobs().get(params.id);
      if (!row) throw notFound(`job ${params.id}`);
      return { status: 200, body: jobDetail(row) };
    },
  });
  const retry = route({
    method: 'POST',
    path: '/v1/ops/jobs/{id}/retry',
    auth: 'iam',
    summary: 'Run a discarded, cancelled or waiting job now, keeping its history',
    params: idParams,
    responses: { 200: { description: 'the job, available', schema: jobDetailSchema }, 404: { description: 'no such job' }, 409: { description: 'running or completed' } },
    handler: async ({ params }) => {
      return { status: 200, body: jobDetail(await jobs().retry(params.id)) };
    },
  });
  const cancel = route({
    method: 'POST',
    path: '/v1/ops/jobs/{id}/cancel',
    auth: 'iam',
    summary: 'Cancel a pending or running job',
    params: idParams,
    responses: { 200: { description: 'the job, cancelled', schema: jobDetailSchema }, 404: { description: 'no such job' }, 409: { description: 'already finished' } },
    handler: async ({ params }) => {
      return { status: 200, body: jobDetail(await jobs().cancel(params.id)) };
    },
  });
  const probe = route({
    method: 'POST',
    path: '/v1/ops/probes',
    auth: 'iam',
    summary: 'Enqueue an ops.probe job that fails failTimes times, then succeeds',
    body: probeArgs.strict(),
    responses: { 201: { description: 'enqueued', schema: z.object({ jobId: z.string() }) } },
    handler: async ({ body }) => {
      const { id } = await jobs().enqueue(probeKind, body);
      return { status: 201, body: { jobId: id } };
    },
  });
  const counts = route({
    method: 'GET',
    path: '/v1/ops/job-counts',
    auth: 'iam',
    summary: 'How many jobs are in each state (of every kind, or of one), per kind, and the dead letters kept by kind and reason',
    query: z.object({ kind: z.string().max(100).optional() }),
    responses: {
      200: {
        description:
          'from the job counters (docs/job-layer.md, "Counts"): `counts` per state (waiting and running: now; completed and cancelled: since counting began; discarded: the dead letters still kept), `byKind` the same per kind, `deadLetters` the discarded jobs kept by kind and reason and the jobs ops cancelled by kind',
        schema: jobCountsSchema,
      },
    },
    handler: async ({ query }) => {
      const known = deps().kinds.map((k) => k.kind);
      const kinds = query.kind ? [query.kind] : known;
      const read = await jobs().count(kinds);
      return { status: 200, body: { kind: query.kind ?? null, counts: read.byState, byKind: read.byKind, deadLetters: read.deadLetters } };
    },
  });
  const bulkRetry = route({
    method: 'POST',
    path: '/v1/ops/jobs/retry',
    auth: 'iam',
    summary: 'Retry every job matching a filter (discarded, cancelled or waiting), as the single retry does; or count them (dryRun)',
    body: bulkBody(bulkRetryStates),
    responses: {
      200: {
        description:
          '`matched`: jobs matching now; `retried`: how many this call retried (at most `limit`, default 1000; call again for the rest); `until`: the end of the time range applied (the one given, else now). Each retry is conditional on the job as matched, so a call run again after one that failed half-way retries the rest and nothing twice: pass the same `until`, so jobs discarded again since are not taken.',
        schema: z.object({ matched: z.number().int(), retried: z.number().int(), until: z.string() }),
      },
      400: { description: 'a bad filter, or a state jobs cannot be retried from' },
    },
    handler: async ({ body }) => {
      const request = bulkRequest(body, jobs().now());
      const result = await jobs().retryMatching(request);
      return { status: 200, body: { matched: result.matched, retried: result.changed, until: new Date(request.until).toISOString() } };
    },
  });
  const bulkCancel = route({
    method: 'POST',
    path: '/v1/ops/jobs/cancel',
    auth: 'iam',
    summary: 'Cancel every job matching a filter (waiting or running); or count them (dryRun)',
    body: bulkBody(bulkCancelStates),
    responses: {
      200: {
        description:
          '`matched`: jobs matching now; `cancelled`: how many this call cancelled (at most `limit`, default 1000; call again for the rest); `until`: the end of the time range applied (the one given, else now)',
        schema: z.object({ matched: z.number().int(), cancelled: z.number().int(), until: z.string() }),
      },
      400: { description: 'a bad filter, or a state jobs cannot be cancelled from' },
    },
    handler: async ({ body }) => {
      const request = bulkRequest(body, jobs().now());
      const result = await jobs().cancelMatching(request);
      return { status: 200, body: { matched: result.matched, cancelled: result.changed, until: new Date(request.until).toISOString() } };
    },
  });
  const policies = route({
    method: 'GET',
    path: '/v1/ops/policies',
    auth: 'iam',
    summary: 'Every kind with its policy and schedule',
    handler: async () => ({
      status: 200,
      body: {
        ...policyTable(deps().kinds),
        kinds: deps().kinds.map((k) => ({ kind: k.kind, queue: k.queue, timeoutSeconds: k.timeoutSeconds, periodic: k.periodic ?? null, description: k.description })),
      },
    }),
  });
  const periodic = route({
    method: 'GET',
    path: '/v1/ops/periodic',
    auth: 'iam',
    summary: 'Every periodic kind with its period, its last run and its last failure (periodic jobs are never retried)',
    responses: { 200: { description: 'one entry per periodic kind', schema: periodicListSchema } },
    handler: async () => {
      const periodicKinds = deps().kinds.filter((k) => k.periodic);
      const statuses = await Promise.all(periodicKinds.map((k) => deps().periodicStatus(k.kind)));
      return {
        status: 200,
        body: {
          periodic: periodicKinds.map((k, i) => ({
            kind: k.kind,
            everySeconds: k.periodic?.everySeconds ?? 0,
            lastRunAt: statuses[i]?.lastRunAt ?? null,
            lastOutcome: statuses[i]?.lastOutcome ?? null,
            lastJobId: statuses[i]?.lastJobId ?? null,
            lastFailureAt: statuses[i]?.lastFailureAt ?? null,
            lastError: statuses[i]?.lastError ?? null,
          })),
        },
      };
    },
  });
  return withErrors(opsHttpError, [list, counts, bulkRetry, bulkCancel, show, retry, cancel, probe, policies, periodic]);
}

/**
 * The job layer's bulk request from a validated body (times to epoch ms; the limit at most
 * {@link MAX_BULK_LIMIT}); without `until`, the range ends `now`, and the answer says so.
 */
function bulkRequest(
  body: { state: JobState; kind?: string | undefined; reason?: string | undefined; since?: string | undefined; until?: string | undefined; dryRun?: boolean | undefined; limit?: number | undefined },
  now: number,
) {
  return {
    state: body.state,
    ...(body.kind ? { kind: body.kind } : {}),
    ...(body.reason ? { reason: body.reason } : {}),
    ...(body.since ? { since: ms(body.since)! } : {}),
    until: body.until ? ms(body.until)! : now,
    dryRun: body.dryRun ?? false,
    limit: body.limit ?? MAX_BULK_LIMIT,
  };
}

/** `GET /v1/ops/job-counts`. */
export const jobCountsSchema = z.object({
  kind: z.string().nullable(),
  counts: z.record(z.string(), z.number().int()),
  byKind: z.record(z.string(), z.record(z.string(), z.number().int())),
  deadLetters: z.array(z.object({ state: z.enum(['discarded', 'cancelled']), kind: z.string(), reason: z.string().nullable(), count: z.number().int() })),
});

/** Every kind's policy and un-jittered schedule: what `GET /v1/ops/policies` and `ops policies` print. */
export function policyTable(kinds: readonly JobKind<unknown>[]) {
  return {
    policies: kinds.map(({ kind, policy }) => ({
      kind,
      maxAttempts: policy.maxAttempts,
      onExhausted: policy.onExhausted,
      jitter: policy.jitter,
      schedule: retrySchedule(policy),
    })),
  };
}
