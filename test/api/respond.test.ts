/**
 * The origin of `doc_url` links (api/respond.ts): the configured public one, else the
 * request's Host header when it names a host, else the api's own listen address.
 */
import test from 'ava';
import { baseUrlOf, ownOrigin } from '../../api/respond.js';

const listening = { publicBaseUrl: null, host: '127.0.0.1', port: 3000 };

test('PUBLIC_BASE_URL wins over any Host header', (t) => {
  t.is(baseUrlOf({ ...listening, publicBaseUrl: 'https://pay.example' }, { protocol: 'http', host: 'evil.example' }), 'https://pay.example');
});

test('a Host header that names a host is the origin', (t) => {
  for (const host of ['localhost:3000', 'api.example.com', '127.0.0.1:8080', '[::1]:3000', 'example.com.']) {
    t.is(baseUrlOf(listening, { protocol: 'http', host }), `http://${host}`, host);
  }
});

test('a missing or malformed Host header gives the listen address, never its contents', (t) => {
  for (const host of ['', 'a"b<script>', 'a b', 'user@host', 'host:port', 'host/../x', '[zz]:1', 'x:999999']) {
    const origin = baseUrlOf(listening, { protocol: 'http', host });
    t.is(origin, 'http://127.0.0.1:3000', JSON.stringify(host));
    t.notThrows(() => new URL(`${origin}/docs/errors#route_not_found`));
  }
  t.is(baseUrlOf({ publicBaseUrl: null, host: '0.0.0.0', port: 8080 }, { protocol: 'http', host: '' }), 'http://127.0.0.1:8080');
  t.is(baseUrlOf({ publicBaseUrl: null, host: '::1', port: 8080 }, { protocol: 'http', host: '' }), 'http://[::1]:8080');
  t.is(ownOrigin(listening, { protocol: 'http', host: 'localhost:3000' }), 'http://localhost:3000');
  t.is(ownOrigin(listening, { protocol: 'http', host: 'a"b' }), null, 'a Host header that is no host: no origin is ours (the dashboard refuses changes)');
});
