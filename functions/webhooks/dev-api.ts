import * as z from 'zod';
import { unstorableParts } from '../platform/dynamo.ts';
import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { WebhooksContext } from './context.ts';
import { eventTypes } from './events.ts';

/**
 * A local-runtime-only route that publishes an event the way a domain does (its deliveries in one
 * transaction: publish.ts), for trying webhooks by hand before the calls pipeline emits
 * any. Not deployed: only the local runtime (functions/local/runtime.ts) adds it.
 */
export function devEventRoutes(context: () => WebhooksContext): ApiRoute[] {
  const create = route({
    method: 'POST',
    path: '/v1/dev/events',
    auth: 'iam',
    summary: '(local runtime only) Record an event and fan it out to the tenant’s endpoints',
    body: z.strictObject({
      tenantId: z.string().min(1).max(128).regex(/^[A-Za-z0-9._:-]+$/),
      type: z.enum(eventTypes),
      data: z
        .record(z.string(), z.unknown())
        .default({})
        .superRefine((data, ctx) => {
          for (const issue of unstorableParts(data)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
        }),
    }),
    responses: {
      201: { description: 'recorded', schema: z.object({ eventId: z.string() }) },
      400: { description: 'invalid body, or `data` DynamoDB cannot store (an empty key, nesting past 31 levels, a number out of range); nothing written' },
    },
    handler: async ({ body }) => {
      const { deps, publisher } = context();
      const published = await publisher.prepare(body, deps.clock.now());
      if (published.items.length > 0) {
        const result = await deps.store.transact(published.items);
        if (!result.committed) {
          await published.abandon();
          throw result.error;
        }
      }
      await published.afterCommit();
      return { status: 201, body: { eventId: published.event.id } };
    },
  });
  return [create];
}
