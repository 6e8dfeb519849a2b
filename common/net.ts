import { BlockList, isIP } from 'node:net';

/** IPv4 ranges a webhook must never reach, as [network, prefix length]. */
const FORBIDDEN_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // this network; 0.0.0.0 is the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // private
  ['192.168.0.0', 16], // private
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, including the broadcast address
];

const FORBIDDEN_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, private)
  ['ff00::', 8], // multicast
];

/**
 * IPv6 prefixes that carry an IPv4 address in their last 32 bits: IPv4-mapped
 * (::ffff:0:0/96) and the NAT64 well-known prefix (64:ff9b::/96, RFC 6052).
 */
const V4_EMBEDDING_PREFIXES = ['::ffff:', '64:ff9b::'];

const blockList = new BlockList();
for (const [network, prefix] of FORBIDDEN_V4) {
  blockList.addSubnet(network, prefix, 'ipv4');
  for (const embedding of V4_EMBEDDING_PREFIXES) blockList.addSubnet(embedding + network, 96 + prefix, 'ipv6');
}
for (const [network, prefix] of FORBIDDEN_V6) blockList.addSubnet(network, prefix, 'ipv6');

/**
 * True when `ip` is an address a webhook must not be sent to: loopback, private
 * (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), link-local, multicast,
 * unspecified or reserved, or an IPv6 address embedding such an IPv4 address.
 * Accepts IPv4 dotted quads and IPv6 in any notation, bracketed or with a zone
 * index. Anything that is not an IP address counts as forbidden (fail closed):
 * resolve names first and check each address the connection will use.
 */
export function isForbiddenAddress(ip: string): boolean {
  let address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = address.indexOf('%');
  if (zone !== -1 && address.includes(':')) address = address.slice(0, zone);
  const version = isIP(address);
  if (version === 0) return true;
  return blockList.check(address, version === 4 ? 'ipv4' : 'ipv6');
}
