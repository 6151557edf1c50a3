import type { ApiRoute } from '../platform/http.ts';
import type { Tracing } from '../platform/tracing.ts';

/**
 * The intake route, annotating the request's trace with the result it carries: `batchId` and `callId`
 * (the keys to search a result's trace by; docs/operations.md, "Following one call result") and, once
 * answered, `outcome` (applied, ignored). Only a request that passed its signature and validation reaches
 * the handler, so an unsigned flood annotates nothing. The contact's number is not annotated: traces are
 * no place for personal data.
 */
export function tracingCallResults(intake: ApiRoute, tracing: Tracing): ApiRoute {
  const handler = intake.handler as (request: unknown) => ReturnType<ApiRoute['handler']>;
  return {
    ...intake,
    handler: async (request: unknown) => {
      // The route's validator ran: the body is a call result.
      const { body } = request as { body: { batchId: string; callId: string } };
      tracing.annotate('batchId', body.batchId);
      tracing.annotate('callId', body.callId);
      const response = await handler(request);
      const outcome = (response.body as { outcome?: unknown } | undefined)?.outcome;
      if (typeof outcome === 'string') tracing.annotate('outcome', outcome);
      return response;
    },
  };
}
