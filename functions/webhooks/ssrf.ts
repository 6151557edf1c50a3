import ipaddr from 'ipaddr.js';

/**
 * The SSRF guard's policy: which URLs and addresses a webhook may be sent to. Pure: the resolving and the
 * connecting to the vetted address happen in functions/platform/vetted-http.ts, which asks this policy
 * about every address a host resolves to, at registration and at every delivery.
 *
 * Only http(s) URLs without credentials; only public unicast addresses. Every range below is refused,
 * for IPv4, for IPv6, and for IPv4 carried inside IPv6 (mapped `::ffff:a.b.c.d` is judged as the IPv4 it
 * carries; IPv4-compatible `::a.b.c.d`, NAT64, 6to4 and Teredo are refused outright). Odd IPv4 spellings
 * (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) are normalised by the URL parser before they get
 * here, and an address outside these lists is still refused unless ipaddr.js calls it plain unicast.
 */

/** Why an address is refused. */
export const BlockReason = {
  loopback: 'loopback',
  private: 'private',
  linkLocal: 'link_local',
  metadata: 'metadata',
  cgnat: 'cgnat',
  multicast: 'multicast',
  reserved: 'reserved',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  uniqueLocal: 'unique_local',
  ipv4Compatible: 'ipv4_compatible',
  translated: 'ipv4_translation',
} as const;
export type BlockReason = (typeof BlockReason)[keyof typeof BlockReason];

/** A refused range, in the order it is checked (the first match names the reason). */
export interface BlockedRange {
  cidr: string;
  reason: BlockReason;
  note: string;
}

/** Every refused IPv4 range. */
export const blockedIPv4: readonly BlockedRange[] = [
  { cidr: '0.0.0.0/8', reason: BlockReason.unspecified, note: '"this network" (RFC 791); 0.0.0.0 reaches the local host' },
  { cidr: '10.0.0.0/8', reason: BlockReason.private, note: 'RFC 1918' },
  { cidr: '100.64.0.0/10', reason: BlockReason.cgnat, note: 'carrier-grade NAT (RFC 6598); also Alibaba metadata 100.100.100.200' },
  { cidr: '127.0.0.0/8', reason: BlockReason.loopback, note: 'RFC 1122' },
  { cidr: '169.254.169.254/32', reason: BlockReason.metadata, note: 'cloud instance metadata (AWS, GCP, Azure)' },
  { cidr: '169.254.0.0/16', reason: BlockReason.linkLocal, note: 'RFC 3927' },
  { cidr: '172.16.0.0/12', reason: BlockReason.private, note: 'RFC 1918' },
  { cidr: '192.0.0.0/24', reason: BlockReason.reserved, note: 'IETF protocol assignments (RFC 6890)' },
  { cidr: '192.0.2.0/24', reason: BlockReason.reserved, note: 'documentation TEST-NET-1 (RFC 5737)' },
  { cidr: '192.88.99.0/24', reason: BlockReason.reserved, note: '6to4 relay anycast (RFC 7526)' },
  { cidr: '192.168.0.0/16', reason: BlockReason.private, note: 'RFC 1918' },
  { cidr: '198.18.0.0/15', reason: BlockReason.reserved, note: 'benchmarking (RFC 2544)' },
  { cidr: '198.51.100.0/24', reason: BlockReason.reserved, note: 'documentation TEST-NET-2 (RFC 5737)' },
  { cidr: '203.0.113.0/24', reason: BlockReason.reserved, note: 'documentation TEST-NET-3 (RFC 5737)' },
  { cidr: '224.0.0.0/4', reason: BlockReason.multicast, note: 'RFC 5771' },
  { cidr: '255.255.255.255/32', reason: BlockReason.broadcast, note: 'limited broadcast' },
  { cidr: '240.0.0.0/4', reason: BlockReason.reserved, note: 'reserved for future use (RFC 1112)' },
];

/** Every refused IPv6 range; `::ffff:0:0/96` (IPv4-mapped) is judged by the IPv4 it carries instead. */
export const blockedIPv6: readonly BlockedRange[] = [
  { cidr: '::/128', reason: BlockReason.unspecified, note: 'RFC 4291' },
  { cidr: '::1/128', reason: BlockReason.loopback, note: 'RFC 4291' },
  { cidr: '::/96', reason: BlockReason.ipv4Compatible, note: 'IPv4-compatible, deprecated (RFC 4291)' },
  { cidr: '64:ff9b::/96', reason: BlockReason.translated, note: 'NAT64 well-known prefix (RFC 6052): reaches IPv4 we did not vet' },
  { cidr: '64:ff9b:1::/48', reason: BlockReason.translated, note: 'local-use NAT64 (RFC 8215)' },
  { cidr: '100::/64', reason: BlockReason.reserved, note: 'discard-only (RFC 6666)' },
  { cidr: '2001::/32', reason: BlockReason.translated, note: 'Teredo (RFC 4380)' },
  { cidr: '2001::/23', reason: BlockReason.reserved, note: 'IETF protocol assignments (RFC 2928)' },
  { cidr: '2001:db8::/32', reason: BlockReason.reserved, note: 'documentation (RFC 3849)' },
  { cidr: '2002::/16', reason: BlockReason.translated, note: '6to4 (RFC 3056)' },
  { cidr: '3fff::/20', reason: BlockReason.reserved, note: 'documentation (RFC 9637)' },
  { cidr: 'fd00:ec2::254/128', reason: BlockReason.metadata, note: 'AWS instance metadata over IPv6' },
  { cidr: 'fc00::/7', reason: BlockReason.uniqueLocal, note: 'unique local (RFC 4193)' },
  { cidr: 'fe80::/10', reason: BlockReason.linkLocal, note: 'RFC 4291' },
  { cidr: 'fec0::/10', reason: BlockReason.reserved, note: 'site-local, deprecated (RFC 3879)' },
  { cidr: 'ff00::/8', reason: BlockReason.multicast, note: 'RFC 4291' },
];

/** Only 2000::/3 is global unicast; anything outside it is not assigned for public use. */
const globalUnicastV6 = ipaddr.parseCIDR('2000::/3');
const mappedV6 = ipaddr.parseCIDR('::ffff:0:0/96');

const parsedV4 = blockedIPv4.map((r) => ({ ...r, range: ipaddr.IPv4.parseCIDR(r.cidr) }));
const parsedV6 = blockedIPv6.map((r) => ({ ...r, range: ipaddr.IPv6.parseCIDR(r.cidr) }));

/** What the guard lets through besides public unicast. */
export interface GuardOptions {
  /** Let 127.0.0.1 and ::1 through, and nothing else (the local runtime's demo receivers). */
  allowLoopback: boolean;
}

/** The verdict on one address. */
export type AddressVerdict = { allowed: true } | { allowed: false; reason: BlockReason; detail: string };

const LOOPBACK_EXCEPTIONS = ['127.0.0.1', '::1'];

/**
 * Judges one IP address (as a resolver returns it, or as a URL literal). A string that is not an IP
 * address is refused.
 *
 * @example
 * vetAddress('10.1.2.3', { allowLoopback: false }); // { allowed: false, reason: 'private', ... }
 */
export function vetAddress(address: string, options: GuardOptions): AddressVerdict {
  const text = canonicalV6(address);
  if (!ipaddr.isValid(text)) return { allowed: false, reason: BlockReason.reserved, detail: `${address} is not an IP address` };
  let ip = ipaddr.parse(text);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).match(mappedV6)) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const canonical = ip.toString();
  if (options.allowLoopback && LOOPBACK_EXCEPTIONS.includes(canonical)) return { allowed: true };
  if (ip.kind() === 'ipv4') {
    const v4 = ip as ipaddr.IPv4;
    const hit = parsedV4.find((r) => v4.match(r.range));
    if (hit) return { allowed: false, reason: hit.reason, detail: `${canonical} is in ${hit.cidr} (${hit.note})` };
    if (v4.range() !== 'unicast') return { allowed: false, reason: BlockReason.reserved, detail: `${canonical} is special-purpose (${v4.range()})` };
    return { allowed: true };
  }
  const v6 = ip as ipaddr.IPv6;
  const hit = parsedV6.find((r) => v6.match(r.range));
  if (hit) return { allowed: false, reason: hit.reason, detail: `${canonical} is in ${hit.cidr} (${hit.note})` };
  if (!v6.match(globalUnicastV6)) return { allowed: false, reason: BlockReason.reserved, detail: `${canonical} is outside global unicast 2000::/3` };
  if (v6.range() !== 'unicast') return { allowed: false, reason: BlockReason.reserved, detail: `${canonical} is special-purpose (${v6.range()})` };
  return { allowed: true };
}

/**
 * IPv6 text in the WHATWG URL serializer's canonical form. ipaddr.js reads the dotted IPv4-compatible
 * form (`::127.0.0.1`, which is how getaddrinfo prints ::/96) as IPv4-mapped; canonical hex (`::7f00:1`)
 * keeps the two apart. IPv4 text is returned as it is.
 */
function canonicalV6(address: string): string {
  if (!address.includes(':')) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** The guard as the vetted client's address policy: `undefined` approves, a string says why not. */
export const addressPolicy =
  (options: GuardOptions) =>
  (address: string): string | undefined => {
    const verdict = vetAddress(address, options);
    return verdict.allowed ? undefined : `${verdict.reason}: ${verdict.detail}`;
  };

/** The verdict on a URL's shape, before any DNS. */
export type UrlVerdict = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * Checks what can be checked without DNS: an absolute http(s) URL, no credentials in it, a host, and, when
 * the host is an IP literal (in any spelling the URL parser accepts), an allowed address.
 */
export function checkUrlShape(raw: string, options: GuardOptions): UrlVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: `scheme ${url.protocol.slice(0, -1)} is not allowed; use https or http` };
  if (url.username || url.password) return { ok: false, reason: 'credentials in the URL are not allowed' };
  if (!url.hostname) return { ok: false, reason: 'no host' };
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (ipaddr.isValid(host)) {
    const verdict = vetAddress(host, options);
    if (!verdict.allowed) return { ok: false, reason: `blocked address (${verdict.reason}): ${verdict.detail}` };
  }
  return { ok: true, url };
}
