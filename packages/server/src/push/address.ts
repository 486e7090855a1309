/**
 * Which addresses a push connection may reach. Only globally routed unicast is public: loopback,
 * RFC 1918, link-local, CGNAT, multicast, unspecified, 0/8, broadcast, documentation, benchmark
 * and other reserved ranges are not, nor IPv6 unique-local, link-local and friends. IPv4 carried
 * inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96) is judged by the IPv4 it carries.
 */
import ipaddr from 'ipaddr.js';

function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | null {
  const range = v6.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145') return v6.toIPv4Address();
  if (range === 'rfc6052') {
    const p = v6.parts;
    // 64:ff9b::/96 keeps the IPv4 in the last 32 bits; the local-use 64:ff9b:1::/48 is never public.
    if (p[2] !== 0) return null;
    return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  }
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

/** The PUT …/push shape rule: an endpoint whose host is a literal non-public IP is refused (names are checked at send time). */
export function endpointHostAllowed(endpoint: string, allowPrivate: boolean): boolean {
  if (allowPrivate) return true;
  const ip = literalIp(new URL(endpoint).hostname);
  return ip === null || isPublicAddress(ip);
}
