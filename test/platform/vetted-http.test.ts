import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AddressRefusedError, HostResolutionError, VettedHttpClient } from '../../functions/platform/vetted-http.ts';
import type { Resolver } from '../../functions/platform/vetted-http.ts';

interface Seen {
  connections: number;
  requests: { url: string; headers: IncomingHttpHeaders }[];
}

const servers: Server[] = [];
const clients: VettedHttpClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server on `host` (any port, or `port`) that counts connections and requests. */
async function serve(host: string, answer: (url: string) => { status: number; headers?: Record<string, string>; body?: string } = () => ({ status: 200 }), port = 0) {
  const seen: Seen = { connections: 0, requests: [] };
  const server = createServer((req, res) => {
    seen.requests.push({ url: req.url ?? '', headers: req.headers });
    const a = answer(req.url ?? '');
    res.writeHead(a.status, a.headers ?? {});
    res.end(a.body ?? 'ok');
  });
  server.on('connection', () => seen.connections++);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { seen, port: (server.address() as AddressInfo).port };
}

/** A resolver that answers from a list, one answer per call, and counts calls. */
function scripted(answers: string[][]): Resolver & { calls: number } {
  const resolve = (async () => {
    const answer = answers[Math.min(resolve.calls, answers.length - 1)]!;
    resolve.calls++;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
  }) as unknown as Resolver & { calls: number };
  resolve.calls = 0;
  return resolve;
}

/** The policy used here: 127.0.0.2 plays the public internet, everything else is refused. */
const only127_0_0_2 = (address: string) => (address === '127.0.0.2' ? undefined : `not allowed: ${address}`);

describe('VettedHttpClient: connects only to the address its policy approved', () => {
  it('AResolverThatAnswersAnApprovedAddressFirstAnd127Next_LeadsToZeroConnectionsTo127', async () => {
    const good = await serve('127.0.0.2');
    const evil = await serve('127.0.0.1', () => ({ status: 200 }), good.port);
    const resolve = scripted([['127.0.0.2'], ['127.0.0.1']]);
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve });
    clients.push(client);
    const response = await client.send({ url: `http://rebind.test:${good.port}/x`, method: 'POST', body: '{}' });
    expect(response.status).toBe(200);
    expect(response.address).toBe('127.0.0.2');
    expect(resolve.calls).toBe(1);
    expect(good.seen.requests).toHaveLength(1);
    expect(evil.seen.connections).toBe(0);
    // The next request resolves again: this time to the refused address, and nothing is sent anywhere.
    await expect(client.send({ url: `http://rebind.test:${good.port}/x`, method: 'POST', body: '{}' })).rejects.toBeInstanceOf(AddressRefusedError);
    expect(resolve.calls).toBe(2);
    expect(evil.seen.connections).toBe(0);
    expect(good.seen.requests).toHaveLength(1);
  });

  it('KeepsTheUrlsHostAsHostHeader', async () => {
    const good = await serve('127.0.0.2');
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    await client.send({ url: `http://hooks.customer.test:${good.port}/in?a=1`, method: 'POST', body: '{}' });
    expect(good.seen.requests[0]).toMatchObject({ url: '/in?a=1', headers: { host: `hooks.customer.test:${good.port}` } });
  });

  it('RefusesTheWholeHostIfAnyAddressIsRefused_AndConnectsNowhere', async () => {
    const good = await serve('127.0.0.2');
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2', '10.0.0.1']]) });
    clients.push(client);
    const error = await client.send({ url: `http://mixed.test:${good.port}/`, method: 'POST', body: '{}' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AddressRefusedError);
    expect(error).toMatchObject({ hostname: 'mixed.test', address: '10.0.0.1' });
    expect(good.seen.connections).toBe(0);
  });

  it('VetsIpLiteralsWithoutAskingTheResolver', async () => {
    const resolve = scripted([['127.0.0.2']]);
    const evil = await serve('127.0.0.1');
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve });
    clients.push(client);
    await expect(client.send({ url: `http://127.0.0.1:${evil.port}/` })).rejects.toBeInstanceOf(AddressRefusedError);
    await expect(client.send({ url: `http://[::ffff:127.0.0.1]:${evil.port}/` })).rejects.toBeInstanceOf(AddressRefusedError);
    expect(resolve.calls).toBe(0);
    expect(evil.seen.connections).toBe(0);
  });

  it('ReportsAHostThatDoesNotResolve', async () => {
    const failing: Resolver = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nope.test'), { code: 'ENOTFOUND' }));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: failing });
    clients.push(client);
    await expect(client.send({ url: 'http://nope.test/' })).rejects.toBeInstanceOf(HostResolutionError);
    const empty = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([[]]) });
    clients.push(empty);
    await expect(empty.send({ url: 'http://empty.test/' })).rejects.toBeInstanceOf(HostResolutionError);
  });

  it('FollowsNoRedirect_AndSendsEachRequestOnce', async () => {
    const target = await serve('127.0.0.2', (url) => (url === '/from' ? { status: 302, headers: { location: '/to' } } : { status: 200 }));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const response = await client.send({ url: `http://r.test:${target.port}/from`, method: 'POST', body: '{}' });
    expect(response.status).toBe(302);
    expect(target.seen.requests.map((r) => r.url)).toEqual(['/from']);
  });

  it('ReadsAtMostMaxResponseBytesOfTheBody', async () => {
    const big = await serve('127.0.0.2', () => ({ status: 200, body: 'x'.repeat(100_000) }));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const response = await client.send({ url: `http://big.test:${big.port}/`, maxResponseBytes: 1000 });
    expect(response.text).toHaveLength(1000);
  });

  it('GivesUpAfterTheTimeout', async () => {
    const server = createServer(() => undefined);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const started = performance.now();
    await expect(client.send({ url: `http://slow.test:${(server.address() as AddressInfo).port}/`, timeoutMs: 200 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

// What the undici client had from its headersTimeout and bodyTimeout, the node:http one has from one signal.
describe('VettedHttpClient: an answer is its whole body, and the timeout bounds all of it', () => {
  it('GivesUpAfterTheTimeout_WhenTheHeadersCameButTheBodyStalls', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.write('abc');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const started = performance.now();
    // node:http says `ECONNRESET: aborted` for its own abort mid-body; the client reports the timeout it was.
    await expect(client.send({ url: `http://stall.test:${(server.address() as AddressInfo).port}/`, timeoutMs: 200 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('APeerThatResetsMidBody_IsAResetAndNotATimeout', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      res.write('abc', () => res.socket?.destroy());
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const failure = await client.send({ url: `http://reset.test:${(server.address() as AddressInfo).port}/`, timeoutMs: 5_000 }).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    expect(failure).toBeDefined();
    expect(failure!.name).not.toBe('TimeoutError');
    expect(failure!.code).toBe('ECONNRESET');
  });

  it('ResolvesWithTheWholeBody_NotOnTheHeaders', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200);
      res.write('first-', () => setTimeout(() => res.end('second'), 100));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]) });
    clients.push(client);
    const response = await client.send({ url: `http://split.test:${(server.address() as AddressInfo).port}/`, method: 'POST', body: '{}' });
    expect(response.text).toBe('first-second');
  });

  it('AnAnswerSlowerThanTheKeepAliveIdleTimeout_StillArrives_WithinTheRequestTimeout', async () => {
    const server = createServer((_req, res) => setTimeout(() => res.end('late'), 300));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    // The idle timeout closes pooled connections nobody uses; a request in flight is bounded by its own timeout only.
    const client = new VettedHttpClient({ policy: only127_0_0_2, resolve: scripted([['127.0.0.2']]), keepAliveTimeoutMs: 50 });
    clients.push(client);
    const response = await client.send({ url: `http://late.test:${(server.address() as AddressInfo).port}/`, method: 'POST', body: '{}', timeoutMs: 2_000 });
    expect(response).toMatchObject({ status: 200, text: 'late' });
  });
});
