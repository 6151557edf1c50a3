import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { assertNever } from '../platform/assert.ts';
import type { Clock } from '../platform/clock.ts';
import { route, withOperatorCopies } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import { openApiDocument } from '../platform/openapi.ts';
import type { Rng } from '../platform/rng.ts';
import type { SecretKey } from '../platform/secret-key.ts';
import type { ApiKeyVerifier } from '../platform/tenancy.ts';
import type { TableDefinition } from '../platform/tables.ts';
import type { JobHandler, JobKind, QueueSpec } from '../jobs/index.ts';
import { jobsTable } from '../jobs/row.ts';
import type { JobRuntime } from '../jobs/runtime.ts';
import { callsDeps } from '../calls/deps.ts';
import type { CallsConfig } from '../calls/config.ts';
import { callsModule } from '../calls/module.ts';
import type { CallsDeps, CallsPorts } from '../calls/module.ts';
import { CallsStore } from '../calls/store.ts';
import type { MailServices } from '../mail/context.ts';
import { mailModule } from '../mail/module.ts';
import type { MailDeps } from '../mail/module.ts';
import { prepareBatchFinalisedNotice, prepareEndpointDisabledNotice, prepareOwnerEmailChange } from '../mail/owner.ts';
import { MailStore } from '../mail/store.ts';
import { secureRandomBytes } from '../mail/tokens.ts';
import { opsModule } from '../ops/module.ts';
import type { OpsDeps } from '../ops/module.ts';
import { createWebhooksContext, webhookLeaseTerms } from '../webhooks/context.ts';
import { Publisher } from '../webhooks/publish.ts';
import { WebhookStore } from '../webhooks/store.ts';
import { webhooksModule } from '../webhooks/module.ts';
import type { WebhookOptions, WebhooksContext } from '../webhooks/module.ts';

/**
 * The composition root: redial's contexts, assembled once. Every Lambda entry point (functions/app/lambda)
 * and the local host build a {@link System} over their host and take what they serve from it; a context
 * is built the first time something asks for it, so a worker builds only its queue's contexts and listing
 * the routes builds none.
 */

/** Every context, in the order the policy table lists them. */
export const modules = [mailModule, webhooksModule, callsModule, opsModule] as const;

/** Every table, by logical name: the job layer's and each context's. */
export const tables = {
  jobs: jobsTable,
  ...mailModule.tables,
  ...webhooksModule.tables,
  ...callsModule.tables,
  ...opsModule.tables,
} as const satisfies Record<string, TableDefinition>;
export type TableKey = keyof typeof tables;
export type TableNames = Record<TableKey, string>;

/** Every job queue, by name: one SQS queue and one worker function each on AWS. */
export const queues = {
  ...mailModule.queues,
  ...webhooksModule.queues,
  ...callsModule.queues,
  ...opsModule.queues,
} as const satisfies Record<string, QueueSpec>;
export type QueueName = keyof typeof queues;
export const queueNames = Object.keys(queues) as QueueName[];

/** Every job kind (data only): the policy table, the rescuer and the panel read it. */
export const allKinds: readonly JobKind<unknown>[] = modules.flatMap((m) => m.kinds);

/** What a host (a Lambda's cold start, the local host) gives the system. */
export interface SystemHost {
  jobs: JobRuntime;
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
  /** The webhooks context's store, the intake's publisher's too. @default a WebhookStore over `db` (a host may pass another implementation) */
  webhookStore?: WebhookStore;
}

type ModuleName = (typeof modules)[number]['name'];

/** Redial assembled over one host. Contexts are built on first use, once. */
export class System {
  private readonly hostOf: () => SystemHost;
  private built: SystemHost | undefined;
  private callsDeps: CallsDeps | undefined;
  private mailDeps: MailDeps | undefined;
  private webhooksContext: WebhooksContext | undefined;
  private eventPublisher: Publisher | undefined;
  private opsDeps: OpsDeps | undefined;

  /** `host` is called once, the first time anything needs it. */
  constructor(host: () => SystemHost) {
    this.hostOf = host;
  }

  get host(): SystemHost {
    return (this.built ??= this.hostOf());
  }

  /** The calls context, its ports wired to webhooks (events) and mail (the owner's mail). */
  get calls(): CallsDeps {
    return (this.callsDeps ??= this.buildCalls());
  }

  get mail(): MailDeps {
    if (!this.mailDeps) {
      const host = this.host;
      if (!host.mail) throw new Error('this host has no mail configuration');
      this.mailDeps = {
        ...host.mail,
        store: new MailStore(host.db, host.tableNames.mail),
        jobs: host.jobs.client,
        clock: host.clock,
        logger: host.logger,
        metrics: host.metrics,
        random: secureRandomBytes,
      };
    }
    return this.mailDeps;
  }

  get webhooks(): WebhooksContext {
    if (!this.webhooksContext) {
      const host = this.host;
      this.webhooksContext = createWebhooksContext({
        jobs: host.jobs.client,
        db: host.db,
        table: host.tableNames.webhooks,
        clock: host.clock,
        ...(host.wallClock ? { wallClock: host.wallClock } : {}),
        logger: host.logger,
        metrics: host.metrics,
        ...(host.secretKey ? { secretKey: host.secretKey } : {}),
        ...(host.webhooks ? { webhooks: host.webhooks } : {}),
        ...(host.webhookStore ? { store: host.webhookStore } : {}),
        // An endpoint's disabling mails the tenant's owner: the mail context's owner.notify, committed with the notice.
        ownerMail: {
          endpointDisabled: (input) => {
            const job = prepareEndpointDisabledNotice(host.jobs.client, input);
            return { items: [job.item], jobs: [job] };
          },
        },
      });
    }
    return this.webhooksContext;
  }

  /** How tenant routes check a presented API key (the calls context's keys, with their per-container cache). */
  get apiKeys(): ApiKeyVerifier {
    return this.calls.keys;
  }

  get ops(): OpsDeps {
    return (this.opsDeps ??= { jobs: this.host.jobs.client, kinds: allKinds, periodicStatus: (kind) => this.host.jobs.store.getPeriodic(kind) });
  }

  /** The handlers of one queue's kinds: only the context that owns the queue is built. */
  handlers(queue: QueueName): JobHandler<unknown>[] {
    const owner = modules.find((m) => queue in m.queues);
    if (!owner) throw new Error(`no context owns queue ${queue}`);
    return this.handlersOf(owner.name).filter((h) => h.kind.queue === queue);
  }

  /** Every handler of every context (the rescuer's: their policies price lost attempts, their hooks run on its discards). */
  allHandlers(): JobHandler<unknown>[] {
    return modules.flatMap((m) => [...this.handlersOf(m.name)]);
  }

  /**
   * Every route of the API (docs/openapi.json), the OpenAPI route itself included, each tenant route
   * followed by its operator copy (`/v1/ops/tenants/{tenantId}/…`). Builds nothing.
   */
  routes(): ApiRoute[] {
    const healthz = route({
      method: 'GET',
      path: '/healthz',
      auth: 'none',
      summary: 'Liveness',
      handler: () => Promise.resolve({ status: 200, body: { status: 'ok', time: new Date(this.host.clock.now()).toISOString() } }),
    });
    const list: ApiRoute[] = withOperatorCopies([
      healthz,
      ...opsModule.routes(() => this.ops),
      ...callsModule.routes(() => this.calls),
      ...mailModule.routes(() => this.mail),
      ...webhooksModule.routes(() => this.webhooks),
    ]);
    const all: ApiRoute[] = [];
    const openapi = route({
      method: 'GET',
      path: '/v1/openapi.json',
      // Public: it describes the API, which tenants' developers read without AWS credentials (it reveals no data).
      auth: 'none',
      summary: 'This API as an OpenAPI 3.1 document, generated from the zod schemas that validate it',
      // The document lists every route, this one included (docs/openapi.json is the same document).
      handler: () => Promise.resolve({ status: 200, body: apiDocument(all) }),
    });
    all.push(...list, openapi);
    return all;
  }

  /** Closes what the built contexts hold open (the webhooks HTTP client's pooled connections). */
  async close(): Promise<void> {
    await this.webhooksContext?.close();
  }

  private handlersOf(name: ModuleName): readonly JobHandler<unknown>[] {
    switch (name) {
      default:
        return assertNever(name);
      case 'calls':
        return callsModule.handlers(this.calls);
      case 'mail':
        return mailModule.handlers(this.mail);
      case 'webhooks':
        return webhooksModule.handlers(this.webhooks);
      case 'ops':
        return opsModule.handlers(this.ops);
    }
  }

  private buildCalls(): CallsDeps {
    const host = this.host;
    if (!host.calls) throw new Error('this host has no calls configuration');
    const config = host.calls;
    const ports: CallsPorts = {
      events: {
        // The webhooks context's publisher over its store alone: the intake builds no delivery machinery.
        prepare: async (input, now) => {
          const publisher = this.webhooksContext?.publisher ?? (this.eventPublisher ??= new Publisher({ store: host.webhookStore ?? new WebhookStore(host.db, host.tableNames.webhooks), jobs: host.jobs.client, clock: host.clock, logger: host.logger, lease: webhookLeaseTerms(host.webhooks, host.clock) }));
          const published = await publisher.prepare(input, now);
          return { eventId: published.event.id, items: published.items, jobs: [], afterCommit: () => published.afterCommit(), abandon: () => published.abandon() };
        },
      },
      ownerMail: {
        batchFinalised: (input) => {
          const job = prepareBatchFinalisedNotice(host.jobs.client, input);
          return { items: [job.item], jobs: [job] };
        },
        ownerEmailChanged: async ({ tenantId, ownerEmail, now }) => {
          const { items, jobs } = await prepareOwnerEmailChange(this.mail, tenantId, ownerEmail, now);
          return { items, jobs };
        },
      },
    };
    return callsDeps({
      store: host.callsStore ?? new CallsStore(host.db, host.tableNames.calls),
      jobs: host.jobs.client,
      ports,
      clock: host.clock,
      ...(host.wallClock ? { wallClock: host.wallClock } : {}),
      rng: host.rng,
      logger: host.logger,
      config,
    });
  }
}

/**
 * The deployed functions that serve HTTP on AWS, each with only the grants its routes need (lib/access.ts):
 * `intake` serves the calls context's public route (the signed call-result intake), `publicLinks` the other
 * public routes (the links sent by mail, /healthz and the OpenAPI document), `tenantApi` the tenant routes
 * (an API key, checked in the function), `api` every route behind IAM (the operators', the operator copies of
 * the tenant routes among them).
 */
export type HttpFunction = 'intake' | 'publicLinks' | 'tenantApi' | 'api';

const routeKey = (r: Pick<ApiRoute, 'method' | 'path'>) => `${r.method} ${r.path}`;

/** Which deployed function serves each route of the API, by `METHOD /path`. Builds nothing. */
export function httpFunctionsByRoute(system: System): Record<string, HttpFunction> {
  const intake = new Set(callsModule.routes(() => system.calls).filter((r) => r.auth === 'none').map(routeKey));
  const served = (r: ApiRoute): HttpFunction => (r.auth === 'iam' ? 'api' : r.auth === 'tenant' ? 'tenantApi' : intake.has(routeKey(r)) ? 'intake' : 'publicLinks');
  return Object.fromEntries(system.routes().map((r) => [routeKey(r), served(r)]));
}

/** The routes one deployed function serves (its Lambda entry point routes these and nothing else). */
export function routesServedBy(system: System, fn: HttpFunction): ApiRoute[] {
  const byRoute = httpFunctionsByRoute(system);
  return system.routes().filter((r) => byRoute[routeKey(r)] === fn);
}

/** The OpenAPI document of redial's API (docs/openapi.json is a copy, checked by a test). */
export const apiDocument = (routes: readonly ApiRoute[]) =>
  openApiDocument(routes, {
    title: 'redial',
    version: '1',
    description:
      'Outbound calling campaigns with one owner of retries. Tenant routes take one of the tenant’s API keys (`Authorization: Bearer rdl_…`) and act for its tenant alone; ' +
      'operator routes (every `/v1/ops/…` route, the operator copies of the tenant routes under `/v1/ops/tenants/{tenantId}` among them, and tenant administration) use IAM auth on AWS; ' +
      'the signed call-result intake, the links sent by mail, /healthz and this document are public.',
  });
