// The address guard allows globally routable unicast addresses only, and judges
// every IPv6 form that embeds an IPv4 address by that IPv4 address.

import test from 'ava';
import { isForbiddenAddress } from '../../common/net.js';

/** 127.0.0.1 in every notation that embeds an IPv4 address. */
const LOOPBACK_FORMS = {
  'IPv4': '127.0.0.1',
  'IPv4-mapped, dotted': '::ffff:127.0.0.1',
  'IPv4-mapped, hex': '::ffff:7f00:1',
  'IPv4-compatible': '::127.0.0.1',
  'IPv4-compatible, hex': '::7f00:1',
  'NAT64 well-known prefix': '64:ff9b::127.0.0.1',
  'NAT64 well-known prefix, hex': '64:ff9b::7f00:1',
  'NAT64 local-use prefix': '64:ff9b:1::7f00:1',
  'NAT64 local-use prefix, /48 layout': '64:ff9b:1:7f00:0:100::',
  '6to4': '2002:7f00:1::',
  '6to4 with a host part': '2002:7f00:1:1::1',
  'SIIT translated': '::ffff:0:127.0.0.1',
};

test('127.0.0.1 is refused in every form that embeds it', (t) => {
  for (const [form, ip] of Object.entries(LOOPBACK_FORMS)) t.true(isForbiddenAddress(ip), `${form}: ${ip}`);
});

test('the cloud metadata address and private addresses are refused in the embedding forms too', (t) => {
  for (const ip of ['169.254.169.254', '::ffff:169.254.169.254', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::1', '::ffff:10.1.2.3', '2002:c0a8:101::', '::10.0.0.1']) {
    t.true(isForbiddenAddress(ip), ip);
  }
});

test('a public IPv4 address is allowed in the forms that route to it', (t) => {
  for (const ip of ['8.8.8.8', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) t.false(isForbiddenAddress(ip), ip);
});

test('benchmarking, IETF-assigned, documentation and 6to4 relay IPv4 ranges are refused', (t) => {
  for (const ip of ['198.18.0.0', '198.19.255.255', '192.0.0.0', '192.0.0.255', '192.0.2.1', '198.51.100.7', '203.0.113.9', '192.88.99.1']) {
    t.true(isForbiddenAddress(ip), ip);
  }
  for (const ip of ['198.17.255.255', '198.20.0.0', '192.0.1.0', '192.0.3.0']) t.false(isForbiddenAddress(ip), ip);
});

test('IPv6 outside global unicast is refused, whatever it is', (t) => {
  for (const ip of ['fbff::1', 'ff::1', '100::1', '4000::1', 'e000::1', '::2', '::ffff:0:0']) t.true(isForbiddenAddress(ip), ip);
});

test('the non-global parts of global unicast are refused: Teredo, documentation, IETF assignments', (t) => {
  for (const ip of ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:db8::1', '2001:2::1', '3fff::1']) t.true(isForbiddenAddress(ip), ip);
  for (const ip of ['2001:200::1', '2a00:1450:4001::200e', '2606:4700:4700::1111']) t.false(isForbiddenAddress(ip), ip);
});

test('isForbiddenAddress refuses loopback, private, CGNAT, link-local, multicast and unspecified IPv4', (t) => {
  for (const ip of [
    '127.0.0.1',
    '127.255.255.255',
    '10.0.0.0',
    '10.255.255.255',
    '172.16.0.0',
    '172.31.255.255',
    '192.168.0.0',
    '192.168.255.255',
    '100.64.0.0',
    '100.127.255.255',
    '169.254.0.0',
    '169.254.255.255',
    '224.0.0.0',
    '239.255.255.255',
    '0.0.0.0',
    '255.255.255.255',
  ]) {
    t.true(isForbiddenAddress(ip), ip);
  }
});

test('isForbiddenAddress allows public IPv4 just outside those ranges', (t) => {
  for (const ip of [
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255',
    '11.0.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '169.255.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '223.255.255.255',
  ]) {
    t.false(isForbiddenAddress(ip), ip);
  }
});

test('isForbiddenAddress refuses IPv6 loopback, unique local, link-local, multicast and unspecified', (t) => {
  for (const ip of [
    '::1',
    '0:0:0:0:0:0:0:1',
    '::',
    'fc00::',
    'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    'fe80::1',
    'febf::1',
    'ff00::',
    'ff02::1',
    'FE80::1',
    '[::1]',
    'fe80::1%eth0',
  ]) {
    t.true(isForbiddenAddress(ip), ip);
  }
});

test('isForbiddenAddress refuses IPv4-mapped and NAT64 forms of forbidden IPv4 addresses', (t) => {
  for (const ip of ['::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:a00:1', '::ffff:192.168.1.1', '64:ff9b::10.0.0.1']) {
    t.true(isForbiddenAddress(ip), ip);
  }
  t.false(isForbiddenAddress('::ffff:8.8.8.8'));
  t.false(isForbiddenAddress('64:ff9b::8.8.8.8'));
});

test('isForbiddenAddress allows public IPv6', (t) => {
  for (const ip of ['2606:4700:4700::1111', '2001:4860:4860::8888', '[2a00:1450::1]']) {
    t.false(isForbiddenAddress(ip), ip);
  }
});

test('isForbiddenAddress treats anything that is not an IP address as forbidden', (t) => {
  for (const value of ['', 'localhost', 'example.com', '127.1', '2130706433', '1.2.3.4.5', '8.8.8.8%eth0']) {
    t.true(isForbiddenAddress(value), value);
  }
});
