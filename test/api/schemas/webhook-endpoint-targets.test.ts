// Where a webhook endpoint may point, at creation: the address guard applies in
// both modes unless the operator opts test mode out (WEBHOOK_ALLOW_PRIVATE_TARGETS).

import test from 'ava';
import { parseWebhookEndpointCreate } from '../../../api/schemas/webhook-endpoints.js';
import { ApiError } from '../../../common/errors.js';

const LOCAL_URLS = [
  'http://127.0.0.1:4242/',
  'http://localhost:4242/',
  'http://[::1]:4242/',
  'http://[::ffff:127.0.0.1]:4242/',
  'http://[::127.0.0.1]:4242/',
  'http://[64:ff9b::7f00:1]:4242/',
  'http://[64:ff9b:1::7f00:1]:4242/',
  'http://[2002:7f00:1::]:4242/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.5/',
  'http://198.18.0.1/',
  'http://192.0.0.8/',
];

function refused(url: string, rules: { livemode: boolean; allowPrivateTargets?: boolean }): boolean {
  try {
    parseWebhookEndpointCreate({ url }, rules);
    return false;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'url_invalid' && err.param === 'url') return true;
    throw err;
  }
}

test('test mode refuses loopback, private and metadata addresses in every notation by default', (t) => {
  for (const url of LOCAL_URLS) {
    t.true(refused(url, { livemode: false }), url);
    t.true(refused(url, { livemode: false, allowPrivateTargets: false }), url);
  }
});

test('test mode accepts them when the operator allows private targets', (t) => {
  for (const url of LOCAL_URLS) t.false(refused(url, { livemode: false, allowPrivateTargets: true }), url);
});

test('live mode refuses them whatever the operator allows', (t) => {
  for (const url of LOCAL_URLS.map((u) => u.replace('http:', 'https:'))) {
    t.true(refused(url, { livemode: true, allowPrivateTargets: true }), url);
    t.true(refused(url, { livemode: true }), url);
  }
});

test('public hosts and names are accepted in both modes, whatever the setting', (t) => {
  for (const rules of [{ livemode: false }, { livemode: false, allowPrivateTargets: true }]) {
    t.false(refused('http://example.com/hooks', rules));
    t.false(refused('http://8.8.8.8/', rules));
  }
  t.false(refused('https://[2606:4700:4700::1111]/', { livemode: true }));
});
