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
