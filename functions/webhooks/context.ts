import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { clockMs } from '../platform/clock.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { SecretKey } from '../platform/secret-key.ts';
import { VettedHttpClient } from '../platform/vetted-http.ts';
import type { Resolver } from '../platform/vetted-http.ts';
import { handle, JobNotFoundError, snooze, TransitionRefusedError } from '../jobs/index.ts';
import type { JobClient, JobHandler } from '../jobs/index.ts';
import { AttemptLog } from './attempt-log.ts';
import { Deliveries, DRAIN_BUDGET_MS } from './delivery.ts';
import type { WebhookDeps, WebhookHttp } from './deps.ts';
import { Endpoints } from './endpoints.ts';
import { EndpointManagement, purgeDeleted, webhookPurgeKind } from './manage.ts';
import { sendNotice, webhookNoticeKind } from './notices.ts';
import type { OwnerMailPort } from './notices.ts';
import { webhookFanoutKind } from './events.ts';
import { fanout } from './fanout.ts';
import { webhookDeliverKind, webhookRecoverKind, webhookRestartKind, webhookSweepKind, webhookWakeKind } from './kinds.ts';
import { KeptEvents } from './kept-events.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, webhookLeaseTerms } from './lease.ts';
import type { LeaseTerms } from './lease.ts';
import { Publisher } from './publish.ts';
import { Recoveries } from './recover.ts';
import { EndpointSecrets } from './secrets.ts';
import { addressPolicy } from './ssrf.ts';
import { WebhookStore } from './store.ts';
import { sweep } from './sweep.ts';
import type { SweepReport } from './sweep.ts';
import { wakeLookAgainAt, WaitList } from './waitlist.ts';

/** How the webhooks context is set up; every field has a production default. */
export interface WebhookOptions {
  /** Let 127.0.0.1 and ::1 receivers through the SSRF guard (the local runtime only). @default false */
  allowLoopback?: boolean;
  /** The DNS resolver the SSRF guard vets. @default the system resolver */
  resolve?: Resolver;
  /** One attempt's whole exchange must finish within this. @default 10000 */
  requestTimeoutMs?: number;
  /**
   * How long, in real time from the start of its run (measured on the job clock, as its lease is), a
   * delivery that succeeded goes on sending the deliveries waiting behind it with no job (0: none; each is
   * handed the lease as a job). @default 15000
   */
  drainBudgetMs?: number;
  /** Wraps the client deliveries send with (a host that watches or alters outbound requests). @default none */
  wrapHttp?: (client: WebhookHttp) => WebhookHttp;
  /** The endpoint lease's terms, when a host bounds its sends otherwise. @default {@link leaseTerms} of the request timeout on the clock's speed */
  lease?: LeaseTerms;
}

export { DEFAULT_REQUEST_TIMEOUT_MS, webhookLeaseTerms } from './lease.ts';

/** What the webhooks context takes from its host (the composition root builds it once per process). */
export interface WebhookHost {
  jobs: JobClient;
  db: DynamoDBDocumentClient;
  /** The webhooks table's physical name. */
  table: string;
  clock: Clock;
  /** The outside world's time where it differs from `clock` (a scaled local clock): receivers check webhook-timestamp against it. */
  wallClock?: Clock;
  logger: Logger;
  metrics: MetricsSink;
  /**
   * The key endpoint secrets are encrypted with: KMS on AWS (only the API and the webhooks worker may use
   * it), a local key elsewhere. A function given none refuses to register or sign.
   */
  secretKey?: SecretKey;
  webhooks?: WebhookOptions;
  /** The store. @default a WebhookStore over `db` and `table` */
  store?: WebhookStore;
  /** The owner mail an endpoint's disabling sends (the mail context's). @default none */
  ownerMail?: OwnerMailPort;
}

/** The webhooks context, assembled. */
export interface WebhooksContext {
  deps: WebhookDeps;
  endpoints: Endpoints;
  /** Changing, deleting and rotating an endpoint (manage.ts). */
  manage: EndpointManagement;
  /** Recoveries of an endpoint's missed events (recover.ts). */
  recoveries: Recoveries;
  deliveries: Deliveries;
  waitList: WaitList;
  /** Publishing an event inside a domain's transaction (publish.ts). */
  publisher: Publisher;
  /** webhook.fanout, webhook.deliver, webhook.wake, webhook.restart, webhook.sweep and webhook.recover, for the webhooks and deliveries queues' workers. */
  handlers: JobHandler<unknown>[];
  sweep(now: number): Promise<SweepReport>;
  /** Closes the HTTP client's pooled connections. */
  close(): Promise<void>;
}

/** What a function that may not use the endpoint-secrets key gets (the intake, the rescuer): it refuses. */
const noSecretKey: SecretKey = {
  encrypt: () => Promise.reject(new Error('this function may not use the endpoint-secrets key')),
  decrypt: () => Promise.reject(new Error('this function may not use the endpoint-secrets key')),
};

export { webhookKinds } from './kinds.ts';

/**
 * Builds the webhooks context. `http` replaces the vetted client (tests that need a client of their
 * own); by default the guard's policy is the client's address policy, so registration and delivery
 * apply the same ranges.
 */
export function createWebhooksContext(host: WebhookHost, http?: WebhookHttp & { close?(): Promise<void> }): WebhooksContext {
  const options = host.webhooks ?? {};
  const guard = { allowLoopback: options.allowLoopback ?? false };
  const own = http ?? new VettedHttpClient({ policy: addressPolicy(guard), ...(options.resolve ? { resolve: options.resolve } : {}) });
  const client = options.wrapHttp ? options.wrapHttp(own) : own;
  const deps: WebhookDeps = {
    store: host.store ?? new WebhookStore(host.db, host.table),
    attemptLog: new AttemptLog(host.db, host.table),
    keptEvents: new KeptEvents(host.db, host.table),
    secrets: new EndpointSecrets(host.secretKey ?? noSecretKey, host.clock),
    jobs: host.jobs,
    clock: host.clock,
    wallClock: host.wallClock ?? host.clock,
    logger: host.logger,
    metrics: host.metrics,
    http: client,
    guard,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    drainBudgetMs: clockMs(host.clock, options.drainBudgetMs ?? DRAIN_BUDGET_MS),
    lease: webhookLeaseTerms(options, host.clock),
    ...(host.ownerMail ? { ownerMail: host.ownerMail } : {}),
  };
  const waitList = new WaitList(deps);
  const deliveries = new Deliveries(deps, waitList);
  const endpoints = new Endpoints(deps);
  const manage = new EndpointManagement(deps);
  const recoveries = new Recoveries(deps, host.db);
  const publisher = new Publisher({ store: deps.store, jobs: deps.jobs, clock: deps.clock, logger: deps.logger, lease: deps.lease });

  const handlers = [
    handle(webhookFanoutKind, async (args, ctx) => {
      await fanout(deps, waitList, args, ctx);
    }),
    handle(webhookDeliverKind, (args, ctx) => deliveries.deliver(args, ctx), { onDiscard: (args, job) => deliveries.discarded(args, job) }),
    handle(webhookWakeKind, async (args, ctx) => {
      const row = await deps.store.getEndpoint(args.endpointId);
      if (!row || row.holder !== args.jobId) return;
      try {
        await deps.jobs.wake(args.jobId);
      } catch (error) {
        // Still running: look again later, by its claim's end at the latest (a lost run holds it to then).
        if (error instanceof TransitionRefusedError && error.current?.state === 'running') {
          const claimUntil = error.current.leaseUntil === undefined ? undefined : Date.parse(error.current.leaseUntil);
          throw snooze({ until: wakeLookAgainAt(ctx.now(), Date.parse(ctx.createdAt), claimUntil) }, `delivery ${args.jobId} is still running (claimed until ${error.current.leaseUntil ?? '?'})`);
        }
        // Finished, gone, or due already: nothing to wake.
        if (error instanceof TransitionRefusedError || error instanceof JobNotFoundError) return;
        throw error;
      }
    }),
    handle(webhookNoticeKind, async (args, ctx) => {
      await sendNotice(deps, publisher, args, ctx);
    }),
    handle(webhookPurgeKind, async (args) => {
      await purgeDeleted(deps, args.endpointId);
    }),
    handle(webhookRestartKind, async (args, ctx) => {
      await waitList.restart(args.endpointId, ctx.now());
    }),
    handle(webhookRecoverKind, (args, ctx) => recoveries.run(args, ctx), { onDiscard: (args, job) => recoveries.discarded(args, job) }),
    handle(webhookSweepKind, async (_args, ctx) => {
      const report = await sweep(deps, waitList, ctx.now());
      if (report.disabled + report.restarted + report.released + report.expired > 0) ctx.logger.info('webhook sweep', { ...report });
    }),
  ] as JobHandler<unknown>[];

  return {
    deps,
    endpoints,
    manage,
    recoveries,
    deliveries,
    waitList,
    publisher,
    handlers,
    sweep: (now) => sweep(deps, waitList, now),
    close: async () => {
      if (own instanceof VettedHttpClient) await own.close();
      else await http?.close?.();
    },
  };
}
