import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { ownerOf } from '../support/webhooks.ts';
import type { Resolver } from '../../functions/platform/vetted-http.ts';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import { UrlRefusedError } from '../../functions/webhooks/errors.ts';
import { checkUrlShape, vetAddress } from '../../functions/webhooks/ssrf.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const strict = { allowLoopback: false };

/** Every refused range, with one address in it and the reason it is refused for. */
const blocked: [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['::1', 'loopback'],
  ['10.1.2.3', 'private'],
  ['172.16.5.4', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['fd12:3456::1', 'unique_local'],
  ['fc00::1', 'unique_local'],
  ['169.254.1.1', 'link_local'],
  ['fe80::1', 'link_local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.254', 'cgnat'],
  ['169.254.169.254', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'metadata'],
  ['::127.0.0.1', 'ipv4_compatible'],
  ['::10.0.0.1', 'ipv4_compatible'],
  ['64:ff9b::a00:1', 'ipv4_translation'],
  ['2002:7f00:1::', 'ipv4_translation'],
  ['2001:0:4136:e378::1', 'ipv4_translation'],
  ['febf::1', 'link_local'],
  ['fec0::1', 'reserved'],
  ['4000::1', 'reserved'],
];

/** URLs whose host is an IP literal in an odd spelling; each means a blocked address. */
const oddSpellings = [
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://0x7f.1/',
  'http://017700000001/',
  'http://127.0.0.1./',
  'http://0/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:7f00:1]/',
  'http://[0:0:0:0:0:0:0:1]/',
  'http://[::127.0.0.1]/',
  'http://[fd00:ec2::254]/latest/meta-data',
  'http://169.254.169.254/latest/meta-data',
];

describe('the SSRF policy (pure)', () => {
  it('refuses every blocked range, IPv4 and IPv6, IPv4-mapped and IPv4-compatible too, naming the reason', () => {
    for (const [address, reason] of blocked) {
      const verdict = vetAddress(address, strict);
      expect(verdict, address).toMatchObject({ allowed: false, reason });
    }
  });

  it('allows public unicast addresses', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:81c::200e', '::ffff:8.8.8.8']) {
      expect(vetAddress(address, strict), address).toEqual({ allowed: true });
    }
  });

  it('with loopback allowed, lets exactly 127.0.0.1 and ::1 through, and nothing else', () => {
    const loose = { allowLoopback: true };
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) expect(vetAddress(address, loose), address).toEqual({ allowed: true });
    for (const [address] of blocked.filter(([a]) => !['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(a))) {
      expect(vetAddress(address, loose).allowed, address).toBe(false);
    }
  });

  it('refuses odd spellings of blocked addresses, other schemes and credentials in URLs', () => {
    for (const url of oddSpellings) expect(checkUrlShape(url, strict), url).toMatchObject({ ok: false, reason: expect.stringMatching(/blocked address/) });
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)', 'not a url', '//example.com/x']) {
      expect(checkUrlShape(url, strict).ok, url).toBe(false);
    }
    expect(checkUrlShape('https://user:pw@example.com/', strict)).toMatchObject({ ok: false, reason: expect.stringMatching(/credentials/) });
    expect(checkUrlShape('https://hooks.example.com/in', strict).ok).toBe(true);
  });
});

/** A resolver answering from a table, host by host, counting calls; the table can change between calls. */
function table(answers: Record<string, string[]>): Resolver & { calls: string[]; answers: Record<string, string[]> } {
  const resolve = (async (hostname: string) => {
    resolve.calls.push(hostname);
    const found = resolve.answers[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
  }) as Resolver & { calls: string[]; answers: Record<string, string[]> };
  resolve.calls = [];
  resolve.answers = { ...answers };
  return resolve;
}

describe('the SSRF guard at registration (production policy: no loopback)', () => {
  let fx: Awaited<ReturnType<typeof webhooksFixture>>;
  const resolve = table({ 'hooks.example.com': ['93.184.216.34'], 'localhost': ['127.0.0.1'], 'internal.corp': ['10.0.0.5'], 'mixed.example.com': ['93.184.216.34', '10.0.0.1'], 'meta.example.com': ['169.254.169.254'] });
  beforeAll(async () => {
    fx = await webhooksFixture({ allowLoopback: false, resolve });
  });
  afterAll(() => fx.close());

  it('refuses each blocked range and each odd spelling as a URL literal, writing nothing', async () => {
    const urls = [...blocked.map(([address]) => (address.includes(':') ? `http://[${address}]/hook` : `http://${address}/hook`)), ...oddSpellings];
    for (const url of urls) await expect(fx.webhooks.endpoints.register(operatorScope('ssrf'), { url }), url).rejects.toBeInstanceOf(UrlRefusedError);
    expect(await fx.webhooks.deps.store.tenantEndpoints('ssrf')).toEqual([]);
  });

  it('refuses host names that resolve to a blocked address, or to any blocked address among others', async () => {
    for (const host of ['localhost', 'internal.corp', 'mixed.example.com', 'meta.example.com']) {
      await expect(fx.webhooks.endpoints.register(operatorScope('ssrf'), { url: `https://${host}/hook` }), host).rejects.toThrow(/resolves to a blocked address/);
    }
    await expect(fx.webhooks.endpoints.register(operatorScope('ssrf'), { url: 'https://nowhere.example/hook' })).rejects.toThrow(/does not resolve/);
    expect(await fx.webhooks.deps.store.tenantEndpoints('ssrf')).toEqual([]);
  });

  it('accepts a host that resolves to public addresses only', async () => {
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('ssrf-ok'), { url: 'https://hooks.example.com/hook' });
    expect((await fx.webhooks.endpoints.get(ownerOf(endpointId), endpointId)).url).toBe('https://hooks.example.com/hook');
  });
});

describe('the SSRF guard at every delivery', () => {
  let fx: Awaited<ReturnType<typeof webhooksFixture>>;
  let loopback: Receiver;
  const resolve = table({ 'hooks.example.com': ['93.184.216.34'] });
  beforeAll(async () => {
    fx = await webhooksFixture({ allowLoopback: false, resolve, requestTimeoutMs: 300 });
    loopback = await Receiver.start();
  });
  afterAll(async () => {
    await loopback.close();
    await fx.close();
  });

  it('discards a delivery as ssrf_blocked when its host now resolves to any blocked range, connecting nowhere', async () => {
    // One endpoint per range, registered while its host resolved to a public address; all run at once.
    await Promise.all(
      blocked.map(async ([address, reason], i) => {
        const host = `h${i}.example.com`;
        resolve.answers[host] = ['93.184.216.34'];
        const tenantId = `t-h${i}`;
        const { endpointId } = await fx.webhooks.endpoints.register(operatorScope(tenantId), { url: `http://${host}:${loopback.port}/hook` });
        resolve.answers[host] = [address];
        const event = await fx.recordEvent(tenantId);
        const result = await fx.run(deliveryJobId(event.id, endpointId));
        expect(result.result, address).toBe('discarded');
        const row = await fx.job(deliveryJobId(event.id, endpointId));
        expect(row.discardReason, address).toBe('ssrf_blocked');
        expect(row.attempts[0]?.error, address).toContain(reason);
      }),
    );
    expect(loopback.requests).toHaveLength(0);
  });

  it('a resolver that answers a public address first and 127.0.0.1 next leads to zero connections to 127.0.0.1', async () => {
    // Every lookup after the first answers 127.0.0.1: a client that resolved again after the guard
    // (the classic rebinding gap) would reach the loopback receiver. This one connects to what it vetted.
    const answers = [['93.184.216.34'], ['93.184.216.34'], ['127.0.0.1']];
    let calls = 0;
    const rebinding: Resolver = async () => {
      const answer = answers[Math.min(calls++, answers.length - 1)]!;
      return answer.map((address) => ({ address, family: 4 as const }));
    };
    const rfx = await webhooksFixture({ allowLoopback: false, resolve: rebinding, requestTimeoutMs: 300 });
    try {
      const { endpointId } = await rfx.webhooks.endpoints.register(operatorScope('rebind'), { url: `http://rebind.example.com:${loopback.port}/hook` });
      expect(calls).toBe(1);
      const event = await rfx.recordEvent('rebind');
      const id = deliveryJobId(event.id, endpointId);
      // Attempt 1: vetted 93.184.216.34 and went there (unreachable here: a connection failure).
      expect((await rfx.run(id)).result).toBe('retryable');
      expect(calls).toBe(2);
      expect((await rfx.job(id)).attempts[0]?.error).not.toMatch(/127\.0\.0\.1/);
      // Attempt 2: the resolver now says 127.0.0.1, and the guard refuses it before any connection.
      expect((await rfx.runWhenDue(id)).result).toBe('discarded');
      expect((await rfx.job(id)).discardReason).toBe('ssrf_blocked');
      expect(calls).toBe(3);
      expect(loopback.requests).toHaveLength(0);
    } finally {
      await rfx.close();
    }
  });
});
