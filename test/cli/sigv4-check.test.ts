import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { sigV4Signer } from '../../functions/cli/api-client.ts';
import type { OutboundRequest } from '../../functions/platform/outbound.ts';
import { sigV4Check } from '../support/sigv4-check.ts';

/**
 * The signature check the remote panel's browser test stands in for API Gateway's IAM auth with
 * (test/support/sigv4-check.ts): a request the CLI's signer signed passes, and any change the signature
 * covers is refused — so that test's "every request verified" can fail.
 */

const REGION = 'eu-west-1';
const credentials = { accessKeyId: 'AKIDCHECKTEST', secretAccessKey: 'check-test-secret' };
const signedAt = new Date('2026-01-05T09:00:00.000Z');
const HOST = '127.0.0.1:4567';

/** What the local HTTP server hands the handler for a request as it arrived. */
function eventOf(request: OutboundRequest, changes: { host?: string; path?: string; query?: string; body?: string } = {}): APIGatewayProxyEventV2 {
  const url = new URL(request.url);
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    headers: { ...headers, host: changes.host ?? url.host },
    rawPath: changes.path ?? url.pathname,
    rawQueryString: changes.query ?? url.search.slice(1),
    requestContext: { http: { method: request.method ?? 'GET' } },
    ...(changes.body !== undefined ? { body: changes.body } : request.body !== undefined ? { body: request.body } : {}),
  } as unknown as APIGatewayProxyEventV2;
}

/** The event without the body-hash header, so only the signature itself stands for the body. */
function withoutBodyHash(event: APIGatewayProxyEventV2): APIGatewayProxyEventV2 {
  const headers = { ...event.headers };
  expect(headers['x-amz-content-sha256']).toBeDefined();
  delete headers['x-amz-content-sha256'];
  return { ...event, headers };
}

async function signedRequest(options: { secret?: string; region?: string; at?: Date; method?: 'GET' | 'POST'; path?: string; body?: string } = {}): Promise<OutboundRequest> {
  const sign = sigV4Signer({ region: options.region ?? REGION, credentials: { ...credentials, secretAccessKey: options.secret ?? credentials.secretAccessKey }, now: () => options.at ?? signedAt });
  return sign({
    url: `http://${HOST}${options.path ?? '/v1/ops/jobs?state=discarded&kind=ops.probe'}`,
    method: options.method ?? 'GET',
    headers: { accept: 'application/json', ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(options.body !== undefined ? { body: options.body } : {}),
  });
}

async function verdict(event: APIGatewayProxyEventV2, now = signedAt.getTime()) {
  const check = sigV4Check({ credentials, region: REGION, publicRoutes: ['GET /v1/public/{id}'], now: () => now });
  const served: string[] = [];
  const answer = await check.wrap(async (e) => {
    served.push(e.rawPath);
    return { statusCode: 200, body: '{}' };
  })(event, undefined as never);
  return { status: answer.statusCode, served, log: check.log };
}

describe('the SigV4 check standing in for API Gateway IAM auth', () => {
  it('ServesARequestTheCliSigned_GetWithAQueryAndPostWithABody', async () => {
    const get = await verdict(eventOf(await signedRequest()));
    expect(get).toEqual({ status: 200, served: ['/v1/ops/jobs'], log: { verified: ['GET /v1/ops/jobs'], refused: [] } });
    const post = await verdict(eventOf(await signedRequest({ method: 'POST', path: '/v1/ops/jobs/retry', body: '{"state":"discarded","dryRun":true}' })));
    expect(post.log.verified).toEqual(['POST /v1/ops/jobs/retry']);
  });

  it('RefusesAnyChangeTheSignatureCovers_AndNeverCallsTheHandler', async () => {
    const get = await signedRequest();
    const post = await signedRequest({ method: 'POST', path: '/v1/ops/jobs/retry', body: '{"state":"discarded","dryRun":true}' });
    const cases: [string, Promise<{ status: number | undefined; served: string[]; log: { refused: string[] } }>, string][] = [
      ['wrong secret', signedRequest({ secret: 'not-it' }).then((r) => verdict(eventOf(r))), 'the signature does not match'],
      ['another region', signedRequest({ region: 'us-east-1' }).then((r) => verdict(eventOf(r))), 'signed for us-east-1/execute-api'],
      ['changed query', verdict(eventOf(get, { query: 'state=discarded&kind=webhook.deliver' })), 'the signature does not match'],
      ['changed path', verdict(eventOf(get, { path: '/v1/ops/policies' })), 'the signature does not match'],
      ['changed host', verdict(eventOf(get, { host: '127.0.0.1:9999' })), 'the signature does not match'],
      ['changed body', verdict(eventOf(post, { body: '{"state":"discarded","dryRun":false}' })), 'x-amz-content-sha256 is not the body’s'],
      ['changed body, its hash dropped', verdict(withoutBodyHash(eventOf(post, { body: '{"state":"discarded","dryRun":false}' }))), 'the signature does not match'],
      ['stale', verdict(eventOf(get), signedAt.getTime() + 6 * 60_000), 'signature expired'],
      ['unsigned', verdict({ ...eventOf(get), headers: { host: HOST } }), 'missing or malformed Authorization'],
    ];
    for (const [name, pending, why] of cases) {
      const { status, served, log } = await pending;
      expect({ name, status, served, refused: log.refused }).toEqual({ name, status: 403, served: [], refused: [expect.stringContaining(`: ${why}`)] });
    }
  });

  it('LetsPublicRoutesAndNonApiPathsThroughUnsigned', async () => {
    const unsigned = (path: string) => ({ headers: { host: HOST }, rawPath: path, rawQueryString: '', requestContext: { http: { method: 'GET' } } }) as unknown as APIGatewayProxyEventV2;
    expect((await verdict(unsigned('/v1/public/abc'))).status).toBe(200);
    expect((await verdict(unsigned('/healthz'))).status).toBe(200);
    expect((await verdict(unsigned('/v1/ops/jobs'))).status).toBe(403);
  });
});
