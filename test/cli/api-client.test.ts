import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { needsSigning, nextCursor, OpsApiClient, OpsApiError, OpsApiResponseError, OpsExportStoppedError, regionFromHost, sigV4Signer } from '../../functions/cli/api-client.ts';
import type { OutboundRequest, OutboundResponse } from '../../functions/platform/outbound.ts';
import { runCli } from '../../functions/cli/cli.ts';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const signingTime = new Date('2026-01-05T09:00:00.000Z');
const apiUrl = 'https://abc123.execute-api.eu-west-1.amazonaws.com';

/** A stand-in for the network that records each request and answers with `answer`. */
function recorder(answer: OutboundResponse = { status: 200, headers: {}, text: '{"jobs":[]}' }) {
  const sent: OutboundRequest[] = [];
  return {
    sent,
    send: (request: OutboundRequest) => {
      sent.push(request);
      return Promise.resolve(answer);
    },
  };
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * SigV4 recomputed from AWS's published algorithm with node:crypto alone, so the signer under test is
 * checked against an independent implementation (paths here need no escaping).
 */
function expectedSignature(request: OutboundRequest, signedHeaders: string[], amzDate: string, region: string): string {
  const url = new URL(request.url);
  const lower = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const headerValue = (name: string) => (name === 'host' ? url.host : (lower[name] ?? ''));
  const query = [...url.searchParams]
    .map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)])
    .sort(([a], [b]) => (a! < b! ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [
    request.method ?? 'GET',
    url.pathname,
    query,
    signedHeaders.map((h) => `${h}:${headerValue(h).trim()}\n`).join(''),
    signedHeaders.join(';'),
    sha256(request.body ?? ''),
  ].join('\n');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${region}/execute-api/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), 'execute-api'), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z-]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

describe('sigV4Signer', () => {
  it('signs a GET with its query for execute-api in the region, dated by the injected clock', async () => {
    const network = recorder();
    const api = new OpsApiClient({ baseUrl: apiUrl, signer: sigV4Signer({ region: 'eu-west-1', credentials, now: () => signingTime }), send: network.send });
    await api.listJobs({ state: 'discarded', kind: 'webhook.deliver', limit: 20 });

    const request = network.sent[0]!;
    const authorization = request.headers?.['authorization'] ?? '';
    const [, keyId, day, region, service, signedHeaders, signature] = AUTHORIZATION.exec(authorization) ?? [];
    expect(keyId).toBe('AKIDEXAMPLE');
    expect(`${day}/${region}/${service}`).toBe('20260105/eu-west-1/execute-api');
    expect(authorization).toContain('/20260105/eu-west-1/execute-api/aws4_request');
    expect(signedHeaders!.split(';')).toEqual(expect.arrayContaining(['host', 'x-amz-date']));
    expect(request.headers?.['x-amz-date']).toBe('20260105T090000Z');
    expect(signature).toBe(expectedSignature(request, signedHeaders!.split(';'), '20260105T090000Z', 'eu-west-1'));
  });

  it('signs a POST body: the signature covers it', async () => {
    const network = recorder({ status: 201, headers: {}, text: '{"jobId":"j1"}' });
    const api = new OpsApiClient({ baseUrl: apiUrl, signer: sigV4Signer({ region: 'eu-west-1', credentials, now: () => signingTime }), send: network.send });
    await api.enqueueProbe({ failTimes: 2 });

    const request = network.sent[0]!;
    const [, , , , , signedHeaders, signature] = AUTHORIZATION.exec(request.headers?.['authorization'] ?? '') ?? [];
    expect(request.body).toBe('{"failTimes":2}');
    expect(signature).toBe(expectedSignature(request, signedHeaders!.split(';'), '20260105T090000Z', 'eu-west-1'));
    expect(signature).not.toBe(expectedSignature({ ...request, body: '{"failTimes":3}' }, signedHeaders!.split(';'), '20260105T090000Z', 'eu-west-1'));
  });

  it('carries a session token when the credentials have one', async () => {
    const network = recorder();
    const signer = sigV4Signer({ region: 'eu-west-1', credentials: { ...credentials, sessionToken: 'TOKEN' }, now: () => signingTime });
    await new OpsApiClient({ baseUrl: apiUrl, signer, send: network.send }).listJobs();
    expect(network.sent[0]!.headers?.['x-amz-security-token']).toBe('TOKEN');
  });
});

describe('target selection', () => {
  it('signs automatically for an execute-api host, with the region taken from the host', async () => {
    const network = recorder();
    const asked: number[] = [];
    const code = await runCli(['--api', apiUrl, 'jobs', 'list'], silentIo(), {
      env: { AWS_REGION: 'us-east-1' },
      credentials: () => {
        asked.push(1);
        return Promise.resolve(credentials);
      },
      now: () => signingTime,
      send: network.send,
    });
    expect(code).toBe(0);
    expect(asked.length).toBeGreaterThan(0);
    expect(network.sent[0]!.headers?.['authorization']).toContain('Credential=AKIDEXAMPLE/20260105/eu-west-1/execute-api/aws4_request');
  });

  it('does not sign a localhost URL, and never asks for credentials', async () => {
    const network = recorder();
    const code = await runCli(['--api', 'http://localhost:3000', 'jobs', 'list'], silentIo(), {
      env: {},
      credentials: () => Promise.reject(new Error('no credentials should be needed locally')),
      now: () => signingTime,
      send: network.send,
    });
    expect(code).toBe(0);
    expect(network.sent[0]!.url).toBe('http://localhost:3000/v1/ops/jobs');
    expect(Object.keys(network.sent[0]!.headers ?? {}).map((h) => h.toLowerCase())).not.toContain('authorization');
  });

  it('signs a custom domain with --iam for --region, and refuses to guess a region', async () => {
    const network = recorder();
    const deps = { env: {}, credentials: () => Promise.resolve(credentials), now: () => signingTime, send: network.send };
    expect(await runCli(['--api', 'https://ops.example.com', '--iam', '--region', 'ap-southeast-2', 'jobs', 'list'], silentIo(), deps)).toBe(0);
    expect(network.sent[0]!.headers?.['authorization']).toContain('/20260105/ap-southeast-2/execute-api/aws4_request');

    const io = silentIo();
    expect(await runCli(['--api', 'https://ops.example.com', '--iam', 'jobs', 'list'], io, deps)).toBe(2);
    expect(io.err()).toContain('cannot tell the AWS region of ops.example.com');
  });

  it('takes REDIAL_API_URL when there is no --api', async () => {
    const network = recorder();
    await runCli(['jobs', 'list', '--state', 'discarded'], silentIo(), {
      env: { REDIAL_API_URL: 'http://127.0.0.1:4321/' },
      credentials: () => Promise.reject(new Error('unused')),
      now: () => signingTime,
      send: network.send,
    });
    expect(network.sent[0]!.url).toBe('http://127.0.0.1:4321/v1/ops/jobs?state=discarded');
  });

  it('knows AWS hosts and their regions', () => {
    expect(needsSigning(new URL(apiUrl), false)).toBe(true);
    expect(needsSigning(new URL('http://127.0.0.1:3000'), false)).toBe(false);
    expect(needsSigning(new URL('http://127.0.0.1:3000'), true)).toBe(true);
    expect(regionFromHost('abc123.execute-api.eu-west-1.amazonaws.com')).toBe('eu-west-1');
    expect(regionFromHost('ops.example.com')).toBeUndefined();
  });
});

describe('OpsApiClient', () => {
  it('turns a 4xx into an OpsApiError with the status, the JSON body and a one-line message', async () => {
    const body = { error: 'conflict', message: 'cannot retry job j1 in state completed', state: 'completed' };
    const api = new OpsApiClient({ baseUrl: 'http://127.0.0.1:3000', send: recorder({ status: 409, headers: {}, text: JSON.stringify(body) }).send });
    const error = await api.retryJob('j1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpsApiError);
    expect((error as OpsApiError).status).toBe(409);
    expect((error as OpsApiError).body).toEqual(body);
    expect((error as OpsApiError).message).toBe('409 conflict: cannot retry job j1 in state completed');
  });

  it('names the fields of a 400 and survives a body that is not JSON', async () => {
    const invalid = { error: 'invalid_request', message: 'invalid query', issues: [{ path: 'query.limit', message: 'Too big' }] };
    const api = new OpsApiClient({ baseUrl: 'http://x.test', send: recorder({ status: 400, headers: {}, text: JSON.stringify(invalid) }).send });
    await expect(api.listJobs()).rejects.toThrow('400 invalid_request: invalid query (query.limit: Too big)');
    const gateway = new OpsApiClient({ baseUrl: 'http://x.test', send: recorder({ status: 502, headers: {}, text: '<html>Bad Gateway</html>' }).send });
    await expect(gateway.listJobs()).rejects.toThrow('502 bad gateway: <html>Bad Gateway</html>');
  });

  it('refuses a 2xx whose body is not what the route promises', async () => {
    const api = new OpsApiClient({ baseUrl: 'http://x.test', send: recorder({ status: 200, headers: {}, text: '{"items":[]}' }).send });
    await expect(api.listJobs()).rejects.toBeInstanceOf(OpsApiResponseError);
  });

  it('sends each request exactly once, even when it fails', async () => {
    let calls = 0;
    const api = new OpsApiClient({
      baseUrl: 'http://x.test',
      send: () => {
        calls++;
        return Promise.resolve({ status: 503, headers: { 'retry-after': '1' }, text: '{"error":"unavailable","message":"temporarily unavailable"}' });
      },
    });
    await expect(api.getJob('j1')).rejects.toThrow('503 unavailable: temporarily unavailable');
    expect(calls).toBe(1);
  });
});

describe('OpsApiClient.exportPages', () => {
  const batchId = `b_acme.${'a'.repeat(32)}`;
  /** Two pages, then a 503 on the third: what the network answers, by cursor. */
  function pages() {
    const sent: OutboundRequest[] = [];
    const answers: Record<string, OutboundResponse> = {
      '': { status: 200, headers: { link: `</v1/batches/${batchId}/export?format=csv&cursor=c1>; rel="next"` }, text: 'number\r\n+1\r\n' },
      c1: { status: 200, headers: { link: `</v1/batches/${batchId}/export?format=csv&cursor=c2>; rel="next"` }, text: '+2\r\n' },
      c2: { status: 503, headers: {}, text: '{"error":"unavailable","message":"temporarily unavailable"}' },
    };
    return {
      sent,
      send: (request: OutboundRequest) => {
        sent.push(request);
        return Promise.resolve(answers[new URL(request.url).searchParams.get('cursor') ?? '']!);
      },
    };
  }

  it('FollowsTheNextLinksCursorOnItsOwnPathAndStopsNamingTheCursorToResumeFrom', async () => {
    const network = pages();
    const api = new OpsApiClient({ baseUrl: 'http://x.test', apiKey: 'rdl_acme.k.s', send: network.send });
    const texts: string[] = [];
    const stopped = await (async () => {
      try {
        for await (const text of api.exportPages(batchId, { format: 'csv' })) texts.push(text);
      } catch (error) {
        return error;
      }
    })();
    expect(texts).toEqual(['number\r\n+1\r\n', '+2\r\n']);
    expect(stopped).toBeInstanceOf(OpsExportStoppedError);
    expect((stopped as OpsExportStoppedError).cursor).toBe('c2');
    expect(network.sent.map((r) => r.url)).toEqual([
      `http://x.test/v1/batches/${batchId}/export?format=csv`,
      `http://x.test/v1/batches/${batchId}/export?format=csv&cursor=c1`,
      `http://x.test/v1/batches/${batchId}/export?format=csv&cursor=c2`,
    ]);
    expect(network.sent.every((r) => r.headers?.['accept'] === 'text/csv' && r.headers['authorization'] === 'Bearer rdl_acme.k.s')).toBe(true);
  });

  it('TheCliWritesThePagesBeforeTheFailureAndSaysHowToResume', async () => {
    const io = silentIo();
    const code = await runCli(['--api', 'http://x.test', '--api-key', 'rdl_acme.k.s', 'batches', 'export', batchId], io, { env: {}, credentials: () => Promise.reject(new Error('none')), now: () => signingTime, send: pages().send });
    expect(code).toBe(1);
    expect(io.out()).toBe('number\r\n+1\r\n+2\r\n');
    expect(io.err()).toContain('503 unavailable');
    expect(io.err()).toContain('resume with --cursor c2');
  });

  it('ReadsOnlyTheCursorOfANextLinkAndRefusesALinkWithout', () => {
    expect(nextCursor(undefined, 'http://x.test/a')).toBeUndefined();
    expect(nextCursor('</stage/v1/x?format=csv&cursor=abc>; rel="next"', 'http://x.test/v1/x')).toBe('abc');
    expect(nextCursor('<https://elsewhere.test/x?cursor=abc>; rel=next', 'http://x.test/v1/x')).toBe('abc');
    expect(() => nextCursor('</v1/x?format=csv>; rel="next"', 'http://x.test/v1/x')).toThrow(OpsApiResponseError);
    expect(() => nextCursor('</v1/x?cursor=a>; rel="prev"', 'http://x.test/v1/x')).toThrow(OpsApiResponseError);
  });
});

function silentIo() {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    out: () => out,
    err: () => err,
  };
}
