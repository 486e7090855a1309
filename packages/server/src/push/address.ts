/**
 * Which addresses a push connection may reach. Only globally routed unicast is public: loopback,
 * RFC 1918, link-local, CGNAT, multicast, unspecified, 0/8, broadcast, documentation, benchmark
 * and other reserved ranges are not, nor IPv6 unique-local, link-local and friends. IPv4 carried
 * inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, IPv4-compatible ::a.b.c.d, 6to4) is judged by the IPv4 it carries.
 */
import ipaddr from 'ipaddr.js';

function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = v6.range();
  const p = v6.parts;
  const v4At = (i: number) => new ipaddr.IPv4([p[i]! >> 8, p[i]! & 0xff, p[i + 1]! >> 8, p[i + 1]! & 0xff]);
  if (range === 'ipv4Mapped' || range === 'rfc6145') return v6.toIPv4Address();
  // 64:ff9b::/96 keeps the IPv4 in the last 32 bits; the local-use 64:ff9b:1::/48 is never public.
  if (range === 'rfc6052') return p[2] === 0 ? v4At(6) : null;
  // The deprecated IPv4-compatible ::a.b.c.d (RFC 4291 §2.5.5.1), :: and ::1 included, and 6to4 2002:aabb:ccdd::/48.
  if (p.slice(0, 6).every((x) => x === 0)) return v4At(6);
  if (range === '6to4') return v4At(1);
  return null;
}

export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast';
  const v6 = ip as ipaddr.IPv6;
  const v4 = embeddedIpv4(v6);
  if (v4) return v4.range() === 'unicast';
  return v6.range() === 'unicast';
}

/** The host of a URL as an IP literal (brackets removed), or null when it is a name. */
export function literalIp(hostname: string): string | null {
  const h = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(h) && (h.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(h)) ? h : null;
}

/**
 * The PUT …/push shape rule: an endpoint whose host is a literal non-public IP is refused, whatever
 * the configuration (PUSH_ALLOW_PRIVATE_TARGETS changes where a push may connect, never what is a
 * valid subscription). Names are checked at send time. The WHATWG URL parser has already turned
 * every IPv4 spelling (decimal `2130706433`, hex `0x7f.1`, octal `0177.0.0.1`, short `127.1`) into
 * dotted quads, so only those and bracketed IPv6 reach literalIp.
 */
export function endpointHostAllowed(endpoint: string): boolean {
  const ip = literalIp(new URL(endpoint).hostname);
  return ip === null || isPublicAddress(ip);
}
