import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/platform/clock.ts';
import { createAwsClients } from '../../functions/platform/aws.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import type { ApiRoute } from '../../functions/platform/http.ts';
import { createJobRuntime } from '../../functions/jobs/runtime.ts';
import { callsDefaults } from '../../functions/calls/config.ts';
import { parseMailConfig } from '../../functions/mail/config.ts';
import { webhooksModule } from '../../functions/webhooks/module.ts';
import { allKinds, apiDocument, modules, queues, routesServedBy, System } from '../../functions/app/system.ts';
import type { SystemHost, TableNames } from '../../functions/app/system.ts';
import { apiRoutes } from '../../functions/app/routes.ts';
import { publicLinkRoutes } from '../../functions/app/public-routes.ts';
import { rescuerHandlers } from '../../functions/app/rescuer-handlers.ts';
import { RecordingTransport } from '../support/jobs.ts';

// The deployed functions take parts of the composition root without its modules (docs/architecture.md,
// "Bundles"): the APIs functions/app/routes.ts, the public links their own list and docs/openapi.json, the
// rescuer every kind and the webhooks context's hooks. These hold each part to the whole it stands for.

const key = (r: Pick<ApiRoute, 'method' | 'path' | 'auth'>) => `${r.auth} ${r.method} ${r.path}`;
const unbuilt = () => new System(() => {
  throw new Error('listing the routes builds nothing');
});

/** A host whose clients are built and never called: handlers and routes are only listed here. */
function listingHost(): SystemHost {
  const clients = createAwsClients({ region: 'eu-west-1', endpoints: { dynamodb: 'http://127.0.0.1:9' }, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const clock = new ManualClock();
  const logger = createLogger('routes-test');
  const metrics = new MemoryMetrics();
  const tableNames: TableNames = { jobs: 'jobs', mail: 'mail', webhooks: 'webhooks', calls: 'calls', calendar: 'calendar' };
  const jobs = createJobRuntime({ db: clients.dynamo, jobsTable: tableNames.jobs, queues, transport: new RecordingTransport(), clock, rng: seededRng(1), logger, metrics });
  const mailConfig = parseMailConfig({ MAIL_DOMAIN: 'test.redial', PUBLIC_BASE_URL: 'http://127.0.0.1:9', MAIL_TRANSPORT: 'smtp', SMTP_URL: 'smtp://127.0.0.1:9' });
  return {
    jobs,
    db: clients.dynamo,
    tableNames,
    clock,
    rng: seededRng(2),
    logger,
    metrics,
    calls: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: undefined, callTimeoutSeconds: 600 },
    mail: { config: mailConfig, transport: { name: 'smtp', send: () => Promise.reject(new Error('no mail is sent here')) } },
  };
}

describe('the API functions’ routes (functions/app/routes.ts) are every context module’s', () => {
  it('apiRoutes lists each module’s routes, with /healthz, the operator copies and the OpenAPI document', () => {
    const system = unbuilt();
    const listed = new Set(apiRoutes(system).map(key));
    const fromModules = modules.flatMap((m) => m.routes(() => ({}) as never) as ApiRoute[]);
    expect(fromModules.length).toBeGreaterThan(40);
    for (const route of fromModules) expect(listed.has(key(route)), key(route)).toBe(true);
    // Beyond the modules' own: /healthz, the document, and one operator copy (IAM) of each tenant route.
    const own = new Set(fromModules.map(key));
    const extra = [...listed].filter((k) => !own.has(k));
    expect(extra.filter((k) => !k.startsWith('iam ')).sort()).toEqual(['none GET /healthz', 'none GET /v1/openapi.json']);
    const copies = extra.filter((k) => k.startsWith('iam '));
    expect(copies.filter((k) => !k.includes(' /v1/ops/tenants/{tenantId}'))).toEqual([]);
    expect(copies.length).toBe(fromModules.filter((r) => r.auth === 'tenant').length);
  });
});

describe('the public links’ function (functions/app/lambda/links.ts)', () => {
  it('serves exactly the routes routesServedBy gives publicLinks, in the same order', () => {
    const ours = publicLinkRoutes(
      () => new ManualClock(),
      () => {
        throw new Error('listing builds nothing');
      },
      () => ({}),
    ).map(key);
    expect(ours).toEqual(routesServedBy(unbuilt(), 'publicLinks').map(key));
    expect(ours).toContain('none POST /v1/tenants/{tenantId}/confirm-email');
  });

  it('serves docs/openapi.json, which is the document generated from every route', () => {
    expect(apiDocument(unbuilt().routes())).toEqual(JSON.parse(readFileSync('docs/openapi.json', 'utf8')));
  });
});

describe('the deployed rescuer’s handlers (functions/app/rescuer-handlers.ts)', () => {
  const system = new System(listingHost);
  const all = system.allHandlers();

  it('only the webhooks context has discard hooks, which the rescuer is given', () => {
    const hooked = all.filter((h) => h.onDiscard !== undefined).map((h) => h.kind.kind);
    expect(hooked.sort()).toEqual(['webhook.deliver', 'webhook.recover']);
    const webhooks = new Set(webhooksModule.kinds.map((k) => k.kind));
    for (const kind of hooked) expect(webhooks.has(kind), kind).toBe(true);
  });

  it('holds every kind of every context, each with its policy, and the webhooks hooks themselves', () => {
    const given = rescuerHandlers(system.webhooks.handlers);
    expect(given.map((h) => h.kind.kind).sort()).toEqual(all.map((h) => h.kind.kind).sort());
    expect(given.map((h) => h.kind.kind).sort()).toEqual(allKinds.map((k) => k.kind).sort());
    const byKind = new Map(all.map((h) => [h.kind.kind, h]));
    for (const handler of given) {
      expect(handler.kind.policy, handler.kind.kind).toEqual(byKind.get(handler.kind.kind)!.kind.policy);
      expect(handler.onDiscard !== undefined, handler.kind.kind).toBe(byKind.get(handler.kind.kind)!.onDiscard !== undefined);
    }
  });

  it('a kind the rescuer only prices refuses to run there', async () => {
    const dial = rescuerHandlers([]).find((h) => h.kind.kind === 'calls.dial')!;
    await expect(dial.run({}, {} as never)).rejects.toThrow('calls.dial runs on its queue');
  });
});
