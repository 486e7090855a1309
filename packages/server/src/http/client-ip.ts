/** The client address for rate limits: X-Real-IP only when the peer is loopback (a local reverse proxy). */
import ipaddr from 'ipaddr.js';

export function isLoopback(addr: string | undefined): boolean {
  if (!addr || !ipaddr.isValid(addr)) return false;
  return ipaddr.process(addr).range() === 'loopback';
}

export function clientIp(peer: string | undefined, realIpHeader: string | string[] | undefined): string {
  if (isLoopback(peer) && typeof realIpHeader === 'string' && realIpHeader.trim() !== '') return realIpHeader.trim();
  return peer ?? 'unknown';
}

/**
 * What every per-address limit counts by. An IPv6 client counts by its /64, since one subscriber
 * is handed a whole /64 and could otherwise take a fresh bucket for every address in it; an
 * IPv4-mapped address counts as the IPv4 address it carries. Any spelling of one address or /64
 * gives the same key. A value that is no address at all is its own key.
 */
export function limitAddress(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  const parts = (addr as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
