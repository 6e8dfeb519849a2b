import test from 'ava';
import { isForbiddenAddress } from '../../common/net.js';

// Used by the webhook endpoint schema, and again at delivery time on the address
// actually connected to.

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
  for (const ip of ['2606:4700:4700::1111', '2001:4860:4860::8888', '[2a00:1450::1]', 'fbff::1', 'ff::1']) {
    t.false(isForbiddenAddress(ip), ip);
  }
});

test('isForbiddenAddress treats anything that is not an IP address as forbidden', (t) => {
  for (const value of ['', 'localhost', 'example.com', '127.1', '2130706433', '1.2.3.4.5', '8.8.8.8%eth0']) {
    t.true(isForbiddenAddress(value), value);
  }
});
