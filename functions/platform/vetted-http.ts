import { lookup } from 'node:dns/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import type { OutboundRequest, OutboundResponse } from './outbound.ts';

/**
 * Outbound HTTP to addresses a caller has vetted: the client for URLs that customers choose (webhook
 * endpoints). It resolves the host once, hands every address to the caller's policy, and connects to the
 * approved address itself, so a second DNS answer (DNS rebinding) never decides where a request goes.
 * Host header and TLS server name stay those of the URL. Like {@link sendOnce}: sent once, no redirect
 * followed, a timeout; the caller classifies what comes back.
 */

/** One address a host resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses. Injected so tests can answer what they like. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo), every address, IPv4 first. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, order: 'ipv4first' });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** A policy on addresses: `undefined` approves, a string refuses and says why. */
export type AddressPolicy = (address: string) => string | undefined;

/** The policy refused an address the host resolved to; nothing was sent. */
export class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError';
  readonly hostname: string;
  readonly address: string;
  readonly reason: string;
  constructor(hostname: string, address: string, reason: string) {
    super(`${hostname} resolves to ${address}: ${reason}`);
    this.hostname = hostname;
    this.address = address;
    this.reason = reason;
  }
}

/** The host did not resolve to any address; nothing was sent. */
export class HostResolutionError extends Error {
  override readonly name = 'HostResolutionError';
  readonly hostname: string;
  constructor(hostname: string, options?: { cause?: unknown }) {
    super(`${hostname} does not resolve`, options);
    this.hostname = hostname;
  }
}

/** A request to a vetted address. */
export interface VettedRequest extends OutboundRequest {
  /** Abandon the whole exchange (resolve, connect, headers, body) after this long. @default 10000 */
  timeoutMs?: number;
  /** Read at most this much of the response body; the rest is dropped. @default 4096 */
  maxResponseBytes?: number;
}

/** The response, and the address it came from. */
export interface VettedResponse extends OutboundResponse {
  address: string;
}

export interface VettedHttpClientOptions {
  /** Approves or refuses each address the host resolves to. Every address must pass. */
  policy: AddressPolicy;
  /** @default systemResolver */
  resolve?: Resolver;
  /** How long an idle kept-alive connection to a vetted address stays open. @default 4000 */
  keepAliveTimeoutMs?: number;
}

/**
 * An HTTP client that only connects to addresses its policy approved.
 *
 * Every request resolves the URL's host, refuses the request if any address fails the policy, and
 * dispatches to the first approved address as the origin (`http://203.0.113.7:443`), with the URL's host
 * as Host header and TLS server name. Kept-alive connections are pooled per vetted address, so a
 * connection is only reused for a request whose own vetting chose that same address.
 *
 * @example
 * const client = new VettedHttpClient({ policy: (address) => (isLoopback(address) ? 'loopback' : undefined) });
 * const response = await client.send({ url: 'https://hooks.example.com/in', method: 'POST', body: '{}' });
 */
export class VettedHttpClient {
  private readonly policy: AddressPolicy;
  private readonly resolve: Resolver;
  // node:http(s) rather than undici: the same pooled, send-once requests without ≈ 0.5 MB in every Lambda
  // bundle that registers or delivers to endpoints (docs/architecture.md, "Bundles"). An agent pools by
  // host, port and TLS server name, and the host is always the vetted address.
  private readonly agents: { 'http:': http.Agent; 'https:': https.Agent };

  constructor(options: VettedHttpClientOptions) {
    this.policy = options.policy;
    this.resolve = options.resolve ?? systemResolver;
    // `timeout` closes a pooled connection that stays idle this long; a request in flight is bounded by its signal.
    const pool = { keepAlive: true, timeout: options.keepAliveTimeoutMs ?? 4_000 };
    this.agents = { 'http:': new http.Agent(pool), 'https:': new https.Agent(pool) };
  }

  /**
   * Resolves and vets the host (see {@link vet}), then sends the request once to the approved address.
   * Rejects with {@link AddressRefusedError} or {@link HostResolutionError} before connecting, and with
   * the network error or timeout after; any HTTP status resolves.
   */
  async send(request: VettedRequest): Promise<VettedResponse> {
    const timeout = AbortSignal.timeout(request.timeoutMs ?? 10_000);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const url = new URL(request.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`unsupported protocol ${url.protocol}`);
    const target = await this.vet(url.hostname);
    signal.throwIfAborted();
    const hostname = bare(url.hostname);
    const options: https.RequestOptions = {
      host: target.address,
      family: target.family,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: `${url.pathname}${url.search}`,
      method: request.method ?? 'GET',
      headers: { ...request.headers, host: url.host },
      ...(isIP(hostname) ? {} : { servername: hostname }),
      signal,
    };
    let response: http.IncomingMessage;
    let text: string;
    try {
      response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const sent = url.protocol === 'https:' ? https.request({ ...options, agent: this.agents['https:'] }, resolve) : http.request({ ...options, agent: this.agents['http:'] }, resolve);
        sent.once('error', reject);
        sent.end(request.body);
      });
      text = await readCapped(response, request.maxResponseBytes ?? 4096);
    } catch (error) {
      // node:http reports an abort mid-body as `ECONNRESET: aborted`, which reads like the peer's reset:
      // when the signal ended it, the signal's reason (TimeoutError, or the caller's) is what happened.
      throw signal.aborted ? signal.reason : error;
    }
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(response.headers)) {
      if (value !== undefined) headers[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    return { status: response.statusCode ?? 0, headers, text, address: target.address };
  }

  /**
   * Resolves `hostname` (an IP literal resolves to itself) and runs every address through the policy.
   * Returns the address to connect to: the first one, IPv4 before IPv6.
   */
  async vet(hostname: string): Promise<ResolvedAddress> {
    const host = bare(hostname);
    const family = isIP(host);
    let addresses: ResolvedAddress[];
    if (family === 4 || family === 6) {
      addresses = [{ address: host, family }];
    } else {
      try {
        addresses = await this.resolve(host);
      } catch (error) {
        throw new HostResolutionError(host, { cause: error });
      }
    }
    if (addresses.length === 0) throw new HostResolutionError(host);
    for (const { address } of addresses) {
      const refused = this.policy(address);
      if (refused !== undefined) throw new AddressRefusedError(host, address, refused);
    }
    return [...addresses].sort((a, b) => a.family - b.family)[0]!;
  }

  /** Closes pooled connections. */
  close(): Promise<void> {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
    return Promise.resolve();
  }
}

/** `[::1]` → `::1`: URL keeps IPv6 literals in brackets. */
const bare = (hostname: string): string => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/** Reads up to `max` bytes of a body as text and drops the rest. */
async function readCapped(body: http.IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size < max) chunks.push(chunk.subarray(0, max - size));
    size += chunk.length;
    if (size >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}
