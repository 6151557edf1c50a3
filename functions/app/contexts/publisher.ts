import { webhookLeaseTerms } from '../../webhooks/lease.ts';
import { Publisher } from '../../webhooks/publish.ts';
import { WebhookStore } from '../../webhooks/store.ts';
import type { SystemHost } from '../host.ts';

/**
 * The webhooks context's publisher over its store alone, for a function that publishes events but
 * delivers none (the intake, the calls workers): it builds no delivery machinery and no HTTP client.
 */
export function buildPublisher(host: SystemHost): Publisher {
  return new Publisher({
    store: host.webhookStore ?? new WebhookStore(host.db, host.tableNames.webhooks),
    jobs: host.jobs.client,
    clock: host.clock,
    logger: host.logger,
    lease: webhookLeaseTerms(host.webhooks, host.clock),
  });
}
