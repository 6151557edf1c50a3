import { assertNever } from '../platform/assert.ts';
import { route, withOperatorCopies } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { openApiDocument } from '../platform/openapi.ts';
import type { ApiKeyVerifier } from '../platform/tenancy.ts';
import type { JobHandler } from '../jobs/index.ts';
import { callsModule } from '../calls/module.ts';
import type { CallsDeps } from '../calls/module.ts';
import { mailModule } from '../mail/module.ts';
import type { MailDeps } from '../mail/module.ts';
import { opsModule } from '../ops/module.ts';
import type { OpsDeps } from '../ops/module.ts';
import type { Publisher } from '../webhooks/publish.ts';
import { webhooksModule } from '../webhooks/module.ts';
import type { WebhooksContext } from '../webhooks/module.ts';
import type { QueueName } from './catalog.ts';
import { buildCalls } from './contexts/calls.ts';
import { buildMail } from './contexts/mail.ts';
import { buildOps } from './contexts/ops.ts';
import { buildPublisher } from './contexts/publisher.ts';
import { buildWebhooks } from './contexts/webhooks.ts';
import type { SystemHost } from './host.ts';

/**
 * The composition root: redial's contexts, assembled once. Every Lambda entry point (functions/app/lambda)
 * and the local host build a {@link System} over their host and take what they serve from it; a context
 * is built the first time something asks for it, so a worker builds only its queue's contexts and listing
 * the routes builds none.
 */

/** Every context, in the order the policy table lists them. */
export const modules = [mailModule, webhooksModule, callsModule, opsModule] as const;

export { allKinds, queueNames, queues, tableEnvName, tableNamesFromEnv, tables } from './catalog.ts';
export type { QueueName, TableKey, TableNames } from './catalog.ts';
export type { SystemHost } from './host.ts';

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
    return (this.mailDeps ??= buildMail(this.host));
  }

  get webhooks(): WebhooksContext {
    return (this.webhooksContext ??= buildWebhooks(this.host));
  }

  /** How tenant routes check a presented API key (the calls context's keys, with their per-container cache). */
  get apiKeys(): ApiKeyVerifier {
    return this.calls.keys;
  }

  get ops(): OpsDeps {
    return (this.opsDeps ??= buildOps(this.host));
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
    // The webhooks context's publisher when this process built the context, else one over its store alone.
    return buildCalls(this.host, () => this.webhooksContext?.publisher ?? (this.eventPublisher ??= buildPublisher(this.host)));
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
