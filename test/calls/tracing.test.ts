import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { routesServedBy } from '../../functions/app/system.ts';
import { callIdFor } from '../../functions/calls/model.ts';
import { signCallWebhook } from '../../functions/calls/signature.ts';
import { tracingCallResults } from '../../functions/calls/tracing.ts';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { callsFixture, numbers, TEST_SECRET } from '../support/calls.ts';
import type { CallsFixture } from '../support/calls.ts';
import { RecordingTracing } from '../support/tracing.ts';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** The intake route as functions/app/lambda/intake.ts serves it, on a server of its own, each request in a span as Lambda's handler subsegment. */
async function tracedIntake(fx: CallsFixture) {
  const tracing = new RecordingTracing();
  const routes = routesServedBy(fx.system, 'intake').map((route) => tracingCallResults(route, tracing));
  const api = createApiHandler(routes, createLogger('test'));
  const server = await startHttpServer({ port: 0, handler: (event, context) => tracing.span('## handler', () => api(event, context)) });
  stops.push(() => server.close());
  const post = async (body: unknown, secret = TEST_SECRET) => {
    const raw = JSON.stringify(body);
    const headers = signCallWebhook(secret, `msg_${randomUUID()}`, Math.floor(fx.clock.now() / 1000), raw);
    const response = await fetch(`${server.url}/v1/calls/webhook`, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } });
    return response.status;
  };
  return { tracing, post };
}

describe('the intake’s traces', () => {
  it('AnnotatesEachResultWithItsBatchIdCallIdAndOutcome_AndARequestRefusedAtTheDoorWithNothing', async () => {
    const fx = await callsFixture({ resultDelayMs: () => 3_600_000 });
    stops.push(() => fx.stop());
    const [number] = numbers(1);
    const batchId = await fx.createBatch({ numbers: [number!], maxAttempts: 1, concurrencyLimit: 1 });
    await fx.quiesce();
    const { tracing, post } = await tracedIntake(fx);
    const callId = callIdFor(batchId, number!, { round: 1, page: 0, pos: 0 });
    const result = { batchId, contactNumber: number, callId, code: 'NO_PICKUP', emptyTranscription: true, durationSeconds: 0 };

    expect(await post(result)).toBe(200);
    expect(await post(result)).toBe(200); // the same result again: ignored
    expect(await post(result, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).toBe(401);
    expect(await post({ batchId })).toBe(400);

    const requests = tracing.named('## handler');
    expect(requests.map((s) => s.annotations)).toEqual([{ batchId, callId, outcome: 'applied' }, { batchId, callId, outcome: 'ignored' }, {}, {}]);
    // The contact's number is in no annotation.
    expect(JSON.stringify(tracing.spans.map((s) => s.annotations))).not.toContain(number!);
  });
});
