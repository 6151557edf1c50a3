import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { CALL_RESULT_METRIC, countingCallResults } from '../../functions/calls/metrics.ts';
import { createApiHandler, HttpError, route, unavailable } from '../../functions/platform/http.ts';
import type { ApiResponse } from '../../functions/platform/http.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';

/** An intake-shaped route whose handler answers (or throws) what each test gives it. */
const intakeAnswering = (answer: () => Promise<ApiResponse>) =>
  route({ method: 'POST', path: '/v1/calls/webhook', auth: 'none', summary: 'test intake', handler: answer });

const post = (handler: ReturnType<typeof createApiHandler>) =>
  handler(
    { version: '2.0', routeKey: 'POST /v1/calls/webhook', rawPath: '/v1/calls/webhook', rawQueryString: '', headers: {}, body: '{}', isBase64Encoded: false, requestContext: { http: { method: 'POST', path: '/v1/calls/webhook' } } } as unknown as APIGatewayProxyEventV2,
    {} as never,
  ) as Promise<{ statusCode: number }>;

async function countOf(answer: () => Promise<ApiResponse>): Promise<{ status: number; counts: { dimensions: Record<string, string>; value: number }[] }> {
  const metrics = new MemoryMetrics();
  const handler = createApiHandler([countingCallResults(intakeAnswering(answer), metrics)], createLogger('test'));
  const response = await post(handler);
  return { status: response.statusCode, counts: metrics.list().filter((c) => c.name === CALL_RESULT_METRIC).map(({ dimensions, value }) => ({ dimensions, value })) };
}

describe('call results counted by outcome', () => {
  it('CountsAppliedAndIgnoredAsTheIntakeAnsweredThem', async () => {
    expect(await countOf(() => Promise.resolve({ status: 200, body: { outcome: 'applied', code: 'NO_PICKUP', retryable: true } }))).toEqual({
      status: 200,
      counts: [{ dimensions: { outcome: 'applied' }, value: 1 }],
    });
    expect((await countOf(() => Promise.resolve({ status: 200, body: { outcome: 'ignored' } }))).counts).toEqual([{ dimensions: { outcome: 'ignored' }, value: 1 }]);
  });

  it('CountsA503AndATransientAwsErrorAsUnavailableAndAnythingElseThrownAsFailed', async () => {
    expect(await countOf(() => Promise.reject(unavailable()))).toEqual({ status: 503, counts: [{ dimensions: { outcome: 'unavailable' }, value: 1 }] });
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    expect(await countOf(() => Promise.reject(throttled))).toEqual({ status: 503, counts: [{ dimensions: { outcome: 'unavailable' }, value: 1 }] });
    expect(await countOf(() => Promise.reject(new Error('bug')))).toEqual({ status: 500, counts: [{ dimensions: { outcome: 'failed' }, value: 1 }] });
    expect((await countOf(() => Promise.reject(new HttpError(409, 'conflict', 'no')))).counts).toEqual([{ dimensions: { outcome: 'failed' }, value: 1 }]);
  });
});
