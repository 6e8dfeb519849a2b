import test from 'ava';

import { parseWebhookEndpointCreate } from '../../../api/schemas/webhook-endpoints.js';
import { rejects } from '../../helpers/rejects.js';

// The operator's opt-in (WEBHOOK_ALLOW_PRIVATE_TARGETS) is on: test mode may name
// local receivers, live mode never; test/common/net.test.ts and the e2e tests cover it off.
const TEST = { livemode: false, allowPrivateTargets: true };
const LIVE = { livemode: true, allowPrivateTargets: true };

test('fills in every default when only url is given', (t) => {
  t.deepEqual(parseWebhookEndpointCreate({ url: 'https://example.com/hooks' }, LIVE), {
    url: 'https://example.com/hooks',
    enabled_events: ['*'],
    description: null,
    metadata: [],
  });
});

test('keeps every given field', (t) => {
  t.deepEqual(
    parseWebhookEndpointCreate(
      {
        url: 'https://example.com/hooks',
        enabled_events: ['payment_intent.created'],
        description: 'Orders',
        metadata: { team: 'payments' },
      },
      LIVE,
    ),
    {
      url: 'https://example.com/hooks',
      enabled_events: ['payment_intent.created'],
      description: 'Orders',
      metadata: [{ k: 'team', v: 'payments' }],
    },
  );
});

test('the url is stored as given, not normalised', (t) => {
  const url = 'HTTPS://Example.COM:443/Hooks/../in?b=2&a=1#frag';
  t.is(parseWebhookEndpointCreate({ url }, LIVE).url, url);
});

// Unknown fields

test('an unknown field is parameter_unknown, reported before a missing url', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ events: ['*'] }, TEST), 'parameter_unknown', 'events');
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', secret: 'whsec_x' }, TEST), 'parameter_unknown', 'secret');
});

// url

test('url is required', (t) => {
  const error = rejects(t, () => parseWebhookEndpointCreate({}, TEST), 'parameter_missing', 'url');
  t.is(error.message, 'Missing required param: url.');
});

test('a url that is not a string is parameter_invalid_string', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ url: 5 }, TEST), 'parameter_invalid_string', 'url');
  rejects(t, () => parseWebhookEndpointCreate({ url: null }, TEST), 'parameter_invalid_string', 'url');
  rejects(t, () => parseWebhookEndpointCreate({ url: { href: 'https://example.com' } }, TEST), 'parameter_invalid_string', 'url');
});

test('a url of exactly 2048 characters is accepted, 2049 is url_invalid', (t) => {
  const base = 'https://example.com/';
  const url = base + 'a'.repeat(2048 - base.length);
  t.is(url.length, 2048);
  t.is(parseWebhookEndpointCreate({ url }, LIVE).url, url);
  rejects(t, () => parseWebhookEndpointCreate({ url: url + 'a' }, TEST), 'url_invalid', 'url');
});

test('url length is counted in code points', (t) => {
  const base = 'https://example.com/';
  const url = base + '😀'.repeat(2048 - base.length);
  t.is(parseWebhookEndpointCreate({ url }, LIVE).url, url);
  rejects(t, () => parseWebhookEndpointCreate({ url: url + '😀' }, TEST), 'url_invalid', 'url');
});

for (const [label, url] of [
  ['empty', ''],
  ['not a URL', 'not a url'],
  ['relative', '/hooks'],
  ['scheme-relative', '//example.com/hooks'],
  ['ftp', 'ftp://example.com/hooks'],
  ['javascript', 'javascript:alert(1)'],
  ['without slashes after the scheme', 'http:example.com'],
  ['with one slash after the scheme', 'https:/example.com'],
  ['with a leading space', ' https://example.com'],
  ['with a trailing newline', 'https://example.com\n'],
  ['with a space in the host', 'https://exa mple.com'],
  ['with a tab in the path', 'https://example.com/a\tb'],
  ['with an invalid port', 'https://example.com:99999/'],
  ['with a user and password', 'https://user:pw@example.com/'],
  ['with a user only', 'https://user@example.com/'],
  ['with a password only', 'https://:pw@example.com/'],
] as const) {
  test(`a url ${label} is url_invalid`, (t) => {
    rejects(t, () => parseWebhookEndpointCreate({ url }, TEST), 'url_invalid', 'url');
  });
}

test('test mode accepts http, localhost and private addresses', (t) => {
  for (const url of [
    'http://example.com/hooks',
    'http://localhost:4242/hooks',
    'http://127.0.0.1:4242/',
    'http://[::1]:4242/',
    'http://10.0.0.5/',
    'http://192.168.1.10/',
  ]) {
    t.is(parseWebhookEndpointCreate({ url }, TEST).url, url);
  }
});

test('live mode refuses http', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ url: 'http://example.com/hooks' }, LIVE), 'url_invalid', 'url');
});

test('live mode accepts https URLs of public hosts and addresses', (t) => {
  for (const url of [
    'https://example.com/hooks',
    'https://hooks.example.com:8443/in?x=1',
    'https://8.8.8.8/',
    'https://172.32.0.1/',
    'https://100.128.0.1/',
    'https://[2606:4700:4700::1111]/',
    'https://localhost.example.com/',
    'https://mylocalhost/',
  ]) {
    t.is(parseWebhookEndpointCreate({ url }, LIVE).url, url, url);
  }
});

test('live mode does not resolve names', (t) => {
  // Resolves to 127.0.0.1 in public DNS; delivery checks the address it connects to.
  t.is(parseWebhookEndpointCreate({ url: 'https://localtest.me/' }, LIVE).url, 'https://localtest.me/');
});

for (const url of [
  'https://localhost/',
  'https://LOCALHOST/',
  'https://localhost./',
  'https://api.localhost/',
  'https://127.0.0.1/',
  'https://127.255.255.254/',
  'https://2130706433/',
  'https://0x7f.1/',
  'https://127.1/',
  'https://0.0.0.0/',
  'https://0/',
  'https://10.1.2.3/',
  'https://172.16.0.1/',
  'https://172.31.255.255/',
  'https://192.168.1.1/',
  'https://100.64.0.1/',
  'https://100.127.255.255/',
  'https://169.254.169.254/latest/meta-data/',
  'https://224.0.0.1/',
  'https://239.255.255.250/',
  'https://[::1]/',
  'https://[0:0:0:0:0:0:0:1]/',
  'https://[::]/',
  'https://[fc00::1]/',
  'https://[fd12:3456::1]/',
  'https://[fe80::1]/',
  'https://[ff02::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://[::ffff:7f00:1]/',
  'https://[::ffff:10.0.0.1]/',
  'https://[::ffff:169.254.169.254]/',
]) {
  test(`live mode refuses ${url}`, (t) => {
    rejects(t, () => parseWebhookEndpointCreate({ url }, LIVE), 'url_invalid', 'url');
  });
}

// enabled_events

test('enabled_events accepts the catalog types and "*"', (t) => {
  const parse = (enabled_events: unknown) => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events }, LIVE);
  t.deepEqual(parse(['payment_intent.created']).enabled_events, ['payment_intent.created']);
  t.deepEqual(parse(['*']).enabled_events, ['*']);
  t.deepEqual(parse(['*', 'payment_intent.created']).enabled_events, ['*', 'payment_intent.created']);
});

for (const events of ['*', null, { '*': true }, 1]) {
  test(`enabled_events ${JSON.stringify(events)} is parameter_invalid`, (t) => {
    rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: events }, TEST), 'parameter_invalid', 'enabled_events');
  });
}

test('an empty enabled_events is parameter_invalid_empty', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: [] }, TEST), 'parameter_invalid_empty', 'enabled_events');
});

test('a non-string event type is parameter_invalid_string on its index', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: ['*', 1] }, TEST), 'parameter_invalid_string', 'enabled_events[1]');
});

test('an unknown event type is event_type_invalid on its index', (t) => {
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: ['payment_intent.paid'] }, TEST), 'event_type_invalid', 'enabled_events[0]');
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: ['*', 'payment_intent.*'] }, TEST), 'event_type_invalid', 'enabled_events[1]');
  rejects(t, () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: [''] }, TEST), 'event_type_invalid', 'enabled_events[0]');
});

test('a repeated event type is parameter_invalid on its second occurrence', (t) => {
  rejects(
    t,
    () => parseWebhookEndpointCreate({ url: 'https://example.com', enabled_events: ['payment_intent.created', '*', 'payment_intent.created'] }, TEST),
    'parameter_invalid',
    'enabled_events[2]',
  );
});

// description and metadata

test('description and metadata follow the payment intent rules', (t) => {
  const url = 'https://example.com';
  t.is(parseWebhookEndpointCreate({ url, description: 'a'.repeat(1000) }, LIVE).description, 'a'.repeat(1000));
  rejects(t, () => parseWebhookEndpointCreate({ url, description: 'a'.repeat(1001) }, TEST), 'parameter_invalid_string', 'description');
  rejects(t, () => parseWebhookEndpointCreate({ url, description: 'a\u0000' }, TEST), 'parameter_invalid_string', 'description');
  rejects(t, () => parseWebhookEndpointCreate({ url, metadata: ['x'] }, TEST), 'metadata_invalid', 'metadata');
  rejects(t, () => parseWebhookEndpointCreate({ url, metadata: { k: 1 } }, TEST), 'metadata_invalid', 'metadata[k]');
});

test('fields are checked in order: url, enabled_events, description, metadata', (t) => {
  const body: Record<string, unknown> = { metadata: null, description: 1, enabled_events: [], url: 'ftp://x' };
  rejects(t, () => parseWebhookEndpointCreate(body, TEST), 'url_invalid', 'url');
  body.url = 'https://example.com';
  rejects(t, () => parseWebhookEndpointCreate(body, TEST), 'parameter_invalid_empty', 'enabled_events');
  body.enabled_events = ['*'];
  rejects(t, () => parseWebhookEndpointCreate(body, TEST), 'parameter_invalid_string', 'description');
  body.description = null;
  rejects(t, () => parseWebhookEndpointCreate(body, TEST), 'metadata_invalid', 'metadata');
});
