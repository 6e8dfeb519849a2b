/**
 * The address guard of webhook delivery: only globally routable unicast addresses
 * may be connected to. An allow-list, not a block-list: IPv6 outside global unicast
 * (2000::/3) is refused whatever it is, and every IPv6 form that carries an IPv4
 * address is decoded and judged by that address, so `::ffff:127.0.0.1`,
 * `64:ff9b::7f00:1` or `2002:7f00:1::` reach no further than `127.0.0.1` does.
 */
import { isIP } from 'node:net';

type Bytes = Uint8Array;
type Prefix = readonly [network: Bytes, bits: number];

/**
 * IPv4 ranges that are not globally reachable (the IANA special-purpose registry),
 * plus multicast and the reserved 240/4 with the broadcast address.
 */
const NON_GLOBAL_V4: readonly Prefix[] = [
  v4Prefix('0.0.0.0', 8), // "this network"; 0.0.0.0 is the unspecified address
  v4Prefix('10.0.0.0', 8), // private
  v4Prefix('100.64.0.0', 10), // carrier-grade NAT
  v4Prefix('127.0.0.0', 8), // loopback
  v4Prefix('169.254.0.0', 16), // link-local (cloud metadata services live here)
  v4Prefix('172.16.0.0', 12), // private
  v4Prefix('192.0.0.0', 24), // IETF protocol assignments
  v4Prefix('192.0.2.0', 24), // documentation (TEST-NET-1)
  v4Prefix('192.88.99.0', 24), // deprecated 6to4 relay anycast
  v4Prefix('192.168.0.0', 16), // private
  v4Prefix('198.18.0.0', 15), // benchmarking
  v4Prefix('198.51.100.0', 24), // documentation (TEST-NET-2)
  v4Prefix('203.0.113.0', 24), // documentation (TEST-NET-3)
  v4Prefix('224.0.0.0', 4), // multicast
  v4Prefix('240.0.0.0', 4), // reserved, and 255.255.255.255
];

/** Global unicast: every IPv6 address a webhook may reach lies in here. */
const GLOBAL_UNICAST_V6 = v6Prefix('2000::', 3);

/** Inside 2000::/3 but not globally reachable. */
const NON_GLOBAL_V6: readonly Prefix[] = [
  v6Prefix('2001::', 23), // IETF protocol assignments: Teredo (which hides an IPv4 address), benchmarking, ORCHID
  v6Prefix('2001:db8::', 32), // documentation
  v6Prefix('3fff::', 20), // documentation
];

/** IPv6 prefixes that carry an IPv4 address, and where: the address is judged as that IPv4 one. */
const V4_CARRIERS: ReadonlyArray<readonly [prefix: Prefix, offset: number]> = [
  [v6Prefix('::ffff:0:0', 96), 12], // IPv4-mapped
  [v6Prefix('::', 96), 12], // IPv4-compatible (deprecated); :: and ::1 decode to 0.0.0.0/8
  [v6Prefix('64:ff9b::', 96), 12], // NAT64 well-known prefix (RFC 6052)
  [v6Prefix('2002::', 16), 2], // 6to4: the IPv4 address follows the prefix
];

/**
 * Always refused: the local-use NAT64 prefix (RFC 8215) maps to whatever a local
 * translator reaches, and the SIIT translated form (::ffff:0:a.b.c.d) is not routed.
 */
const LOCAL_V4_CARRIERS: readonly Prefix[] = [v6Prefix('64:ff9b:1::', 48), v6Prefix('::ffff:0:0:0', 96)];

/**
 * True when a webhook must not be sent to `ip`: anything but a globally routable
 * unicast address. Accepts IPv4 dotted quads and IPv6 in any notation, bracketed or
 * with a zone index. Anything that is not an IP address counts as forbidden (fail
 * closed): resolve names first and check each address the connection will use.
 */
export function isForbiddenAddress(ip: string): boolean {
  let address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = address.indexOf('%');
  if (zone !== -1 && address.includes(':')) address = address.slice(0, zone);
  const version = isIP(address);
  if (version === 4) return !isGlobalV4(parseV4(address));
  if (version === 6) return !isGlobalV6(parseV6(address));
  return true;
}

function isGlobalV4(bytes: Bytes): boolean {
  return !NON_GLOBAL_V4.some((prefix) => matches(bytes, prefix));
}

function isGlobalV6(bytes: Bytes): boolean {
  if (LOCAL_V4_CARRIERS.some((prefix) => matches(bytes, prefix))) return false;
  for (const [prefix, offset] of V4_CARRIERS) {
    if (matches(bytes, prefix)) return isGlobalV4(bytes.subarray(offset, offset + 4));
  }
  return matches(bytes, GLOBAL_UNICAST_V6) && !NON_GLOBAL_V6.some((prefix) => matches(bytes, prefix));
}

function matches(bytes: Bytes, [network, bits]: Prefix): boolean {
  if (bytes.length !== network.length) return false;
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== network[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === ((network[whole] as number) & mask);
}

function parseV4(address: string): Bytes {
  return Uint8Array.from(address.split('.').map(Number));
}

/** A valid IPv6 address (checked with `isIP`) as 16 bytes; `::` and a trailing dotted quad included. */
function parseV6(address: string): Bytes {
  let text = address;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    for (const byte of parseV4(text.slice(lastColon + 1))) tail.push(byte);
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, after] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(after);
  const words = after === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    bytes[2 * i] = word >> 8;
    bytes[2 * i + 1] = word & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  return bytes;
}

function v4Prefix(network: string, bits: number): Prefix {
  return [parseV4(network), bits];
}

function v6Prefix(network: string, bits: number): Prefix {
  return [parseV6(network), bits];
}
