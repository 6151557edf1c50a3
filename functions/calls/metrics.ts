import { isTransientAwsError } from '../platform/aws.ts';
import { HttpError } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { MetricsSink } from '../platform/metrics.ts';

/** Counted once per call result that reached the intake's handler, by `outcome`: applied, ignored, unavailable, failed. */
export const CALL_RESULT_METRIC = 'CallResult';

/**
 * The intake route, counting each result's outcome (`CallResult`, dimension `outcome`) for the
 * operator's dashboard: `applied` and `ignored` as the route answered; `unavailable` for a 503 (nothing
 * written, the sender tries again); `failed` for anything else thrown. Requests refused before the
 * handler (401, 400, 413) are not results; the API's access log has them.
 */
export function countingCallResults(intake: ApiRoute, metrics: MetricsSink): ApiRoute {
  const handler = intake.handler as (request: unknown) => ReturnType<ApiRoute['handler']>;
  return {
    ...intake,
    handler: async (request: unknown) => {
      try {
        const response = await handler(request);
        const outcome = (response.body as { outcome?: unknown } | undefined)?.outcome;
        metrics.count(CALL_RESULT_METRIC, { outcome: typeof outcome === 'string' ? outcome : `http_${response.status}` });
        return response;
      } catch (error) {
        const unavailable = (error instanceof HttpError && error.status === 503) || isTransientAwsError(error);
        metrics.count(CALL_RESULT_METRIC, { outcome: unavailable ? 'unavailable' : 'failed' });
        throw error;
      }
    },
  };
}
