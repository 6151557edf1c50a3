import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../platform/clock.ts';
import { route } from '../platform/http.ts';
import { openApiDocument } from '../platform/openapi.ts';
import type { Route } from '../platform/http.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { Rng } from '../platform/rng.ts';
import type { TableDefinition } from '../platform/tables.ts';
import type { JobHandler, JobKind, QueueName } from '../jobs/index.ts';
import { jobsTable } from '../jobs/row.ts';
import { webhooksTable } from '../webhooks/events.ts';
import { callsDeps, callsHandlers, callsKinds, callsRoutes, callsTable, CallsStore } from '../calls/index.ts';
import type { CallsConfig, CallsDeps, TenantWriteHook } from '../calls/index.ts';
import type { MailDeps, MailServices } from '../mail/context.ts';
import { prepareOwnerEmailChange } from '../mail/owner.ts';
import { mailHandlers } from '../mail/handlers.ts';
import { mailKinds } from '../mail/kinds.ts';
import { mailRoutes } from '../mail/routes.ts';
import { MailStore, mailTable } from '../mail/store.ts';
import { secureRandomBytes } from '../mail/tokens.ts';
import { webhookRoutes } from '../webhooks/api.ts';
import { webhookKinds, webhooksContext } from '../webhooks/context.ts';
import type { WebhookOptions } from '../webhooks/context.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import { jobRoutes } from './jobs-api.ts';
import { probeHandler, probeKind } from './probe.ts';

/**
 * The composition root: every table, job kind, handler and route of redial, in one place. Lambda entry
 * points and the local runtime both assemble from here, so they run the same code.
 */

/** Every table, by logical name. */
export const tables = { jobs: jobsTable, webhooks: webhooksTable, calls: callsTable, mail: mailTable } as const satisfies Record<string, TableDefinition>;
export type TableKey = keyof typeof tables;
export type TableNames = Record<TableKey, string>;

/** Every job kind (data only): the rescuer prices lost attempts and enqueues periodic jobs from this list. */
export const allKinds: readonly JobKind<never>[] = [probeKind, ...callsKinds, ...mailKinds, ...webhookKinds] as unknown as JobKind<never>[];

/** What every context's handlers and routes may draw on. */
export interface SystemDeps {
  jobs: JobRuntime;
  db: DynamoDBDocumentClient;
  tableNames: TableNames;
  clock: Clock;
  /** The outside world's time where it differs from `clock` (the local runtime's scaled time); default `clock`. */
  wallClock?: Clock;
  rng: Rng;
  logger: Logger;
  metrics: MetricsSink;
  /** The calls context's configuration (placer, intake secret, call timeout). */
  calls: CallsConfig;
  /** The mail context's configuration and transport (SES on AWS, SMTP locally). */
  mail: MailServices;
  /** Webhook delivery settings; the local runtime lets loopback receivers through. */
  webhooks?: WebhookOptions;
  /** The calls context's store. @default a CallsStore over `db` (a host may pass another implementation) */
  callsStore?: CallsStore;
}

/**
 * What other contexts add to a tenant's PUT transaction (mail: the owner-email confirmation). Each hook's
 * items commit with the tenant or not at all.
 */
/**
 * What other contexts write with a tenant's PUT, in the same transaction: mail asks a new or changed owner
 * address to confirm itself (an owner.email_confirmation job and the pending address), or nothing when the
 * address is the one already confirmed.
 */
function tenantWriteHooks(deps: SystemDeps): TenantWriteHook[] {
  return [
    async ({ tenantId, ownerEmail, now }) => {
      if (!ownerEmail) return { items: [], jobs: [] };
      const { items, jobs } = await prepareOwnerEmailChange(mailDepsOf(deps), tenantId, ownerEmail, now);
      return { items, jobs };
    },
  ];
}

const callsDepsCache = new WeakMap<SystemDeps, CallsDeps>();

/** The calls context's deps, built once per system so its handlers and routes share one batch cache. */
export function callsDepsOf(deps: SystemDeps): CallsDeps {
  let built = callsDepsCache.get(deps);
  if (!built) {
    built = callsDeps({
      store: deps.callsStore ?? new CallsStore(deps.db, deps.tableNames.calls),
      jobs: deps.jobs.client,
      webhooksTable: deps.tableNames.webhooks,
      clock: deps.clock,
      ...(deps.wallClock ? { wallClock: deps.wallClock } : {}),
      rng: deps.rng,
      logger: deps.logger,
      config: deps.calls,
      tenantWriteHooks: tenantWriteHooks(deps),
    });
    callsDepsCache.set(deps, built);
  }
  return built;
}

/** The mail context's view of the system. */
export function mailDepsOf(deps: SystemDeps): MailDeps {
  return {
    ...deps.mail,
    store: new MailStore(deps.db, deps.tableNames.mail),
    jobs: deps.jobs.client,
    clock: deps.clock,
    logger: deps.logger,
    metrics: deps.metrics,
    random: secureRandomBytes,
  };
}

/** Every handler, grouped by the queue whose worker runs it. */
export function handlersByQueue(deps: SystemDeps): Record<QueueName, JobHandler<never>[]> {
  return { ops: [probeHandler as unknown as JobHandler<never>], calls: callsHandlers(callsDepsOf(deps)), webhooks: webhooksContext(deps).handlers, mail: mailHandlers(mailDepsOf(deps)) };
}

/** Every route of the API (documented in docs/openapi.json), the OpenAPI route itself included. */
export function apiRoutes(deps: SystemDeps): Route<never, never, never>[] {
  const healthz = route({
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    summary: 'Liveness',
    handler: () => Promise.resolve({ status: 200, body: { status: 'ok', time: new Date(deps.clock.now()).toISOString() } }),
  });
  // Mail's dependencies are resolved per request: listing the routes (CDK, OpenAPI) needs no configuration.
  let mail: MailDeps | undefined;
  const mailDeps = () => (mail ??= mailDepsOf(deps));
  const routes: Route<never, never, never>[] = [
    healthz as unknown as Route<never, never, never>,
    ...jobRoutes({ jobs: deps.jobs.client, kinds: allKinds }),
    ...callsRoutes(callsDepsOf(deps)),
    ...mailRoutes(mailDeps),
    ...webhookRoutes(() => webhooksContext(deps)),
  ];
  const openapi = route({
    method: 'GET',
    path: '/v1/openapi.json',
    auth: 'iam',
    summary: 'This API as an OpenAPI 3.1 document, generated from the zod schemas that validate it',
    handler: () => Promise.resolve({ status: 200, body: apiDocument(routes) }),
  });
  routes.push(openapi as unknown as Route<never, never, never>);
  return routes;
}

/**
 * The deployed functions that serve HTTP on AWS, each with only the grants its routes need (lib/access.ts):
 * `intake` serves the calls context's public route (the signed call-result intake), `publicLinks` the other
 * public routes (the links sent by mail, and /healthz), `api` every route behind IAM.
 */
export type HttpFunction = 'intake' | 'publicLinks' | 'api';

const routeKey = (r: Pick<Route<never, never, never>, 'method' | 'path'>) => `${r.method} ${r.path}`;

/** Which deployed function serves each route of {@link apiRoutes}, by `METHOD /path`. */
export function httpFunctionsByRoute(deps: SystemDeps): Record<string, HttpFunction> {
  const intake = new Set(callsRoutes(callsDepsOf(deps)).filter((r) => r.auth === 'none').map(routeKey));
  return Object.fromEntries(apiRoutes(deps).map((r) => [routeKey(r), r.auth === 'iam' ? 'api' : intake.has(routeKey(r)) ? 'intake' : 'publicLinks']));
}

/** The routes one deployed function serves (its Lambda entry point routes these and nothing else). */
export function routesServedBy(deps: SystemDeps, fn: HttpFunction): Route<never, never, never>[] {
  const byRoute = httpFunctionsByRoute(deps);
  return apiRoutes(deps).filter((r) => byRoute[routeKey(r)] === fn);
}

/** Every HTTP route: the API, plus what a host serves beside it (the local panel, the call-placer simulator). */
export function allRoutes(deps: SystemDeps, extra: readonly Route<never, never, never>[] = []): Route<never, never, never>[] {
  return [...apiRoutes(deps), ...extra];
}

/** The OpenAPI document of redial's API (docs/openapi.json is a copy, checked by a test). */
export const apiDocument = (routes: readonly Route<never, never, never>[]) =>
  openApiDocument(routes, {
    title: 'redial',
    version: '1',
    description: 'Outbound calling campaigns with one owner of retries. Every route uses IAM auth on AWS except the signed call-result intake, the links sent by mail and /healthz.',
  });
