import { z } from 'zod';
import { conflict, HttpError, notFound, queryInt, route, withErrors } from '../platform/http.ts';
import { InvalidCursorError } from '../platform/dynamo.ts';
import type { ApiRoute, HttpError as HttpErrorType } from '../platform/http.ts';
import { allStates, JobNotFoundError, retrySchedule, TransitionRefusedError } from '../jobs/index.ts';
import type { JobClient, JobKind } from '../jobs/index.ts';
import { probeArgs, probeKind } from './probe.ts';
import { jobDetail, jobDetailSchema, jobSummary, jobSummarySchema } from './views.ts';

const idParams = z.object({ id: z.string().min(1).max(200) });

const refused = (error: TransitionRefusedError, action: string) =>
  conflict(`cannot ${action} job ${error.jobId} in state ${error.current?.state ?? 'unknown'}`, { state: error.current?.state ?? null });

/** What the ops routes need: the job client, and every kind the system runs (for the policy table). */
export interface OpsDeps {
  jobs: JobClient;
  kinds: readonly JobKind<unknown>[];
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
    summary: 'List jobs by state and kind, newest first',
    query: z.object({
      state: z.enum(allStates as [string, ...string[]]).optional(),
      kind: z.string().max(100).optional(),
      limit: queryInt(1, 200).optional(),
      cursor: z.string().max(2000).optional(),
    }),
    responses: {
      200: { description: 'jobs; `cursor`, when present, asks for the next page (with the same state)', schema: z.object({ jobs: z.array(jobSummarySchema), cursor: z.string().optional() }) },
      400: { description: 'a bad filter, or a cursor this listing did not give out' },
    },
    handler: async ({ query }) => {
      const page = await jobs().list({
        ...(query.state ? { state: query.state as (typeof allStates)[number] } : {}),
        ...(query.kind ? { kind: query.kind } : {}),
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
    summary: 'How many jobs are in each state, optionally of one kind',
    query: z.object({ kind: z.string().max(100).optional() }),
    responses: { 200: { description: 'counts per state', schema: z.object({ kind: z.string().nullable(), counts: z.record(z.string(), z.number().int()) }) } },
    handler: async ({ query }) => ({ status: 200, body: { kind: query.kind ?? null, counts: await jobs().count(query.kind) } }),
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
  return withErrors(opsHttpError, [list, counts, show, retry, cancel, probe, policies]);
}

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
