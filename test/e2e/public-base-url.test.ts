/**
 * `doc_url` (and the error bodies workers write) use PUBLIC_BASE_URL when it is
 * set, whatever Host the client sends; without it, the Host header is reflected,
 * as the README warns.
 */
import http from 'node:http';
import test from 'ava';
import { Service } from '../helpers/service.js';

let pinned: Service;
let reflecting: Service;

test.before(async () => {
  [pinned, reflecting] = await Promise.all([
    Service.start({ workers: 1, env: { PUBLIC_BASE_URL: 'https://pay.example.com/', WEBHOOK_ENDPOINT_LIMIT: '1' } }),
    Service.start({ workers: 0 }),
  ]);
});

test.after.always(async () => {
  await Promise.all([pinned?.stop(), reflecting?.stop()]);
});

/** A request with a Host header of the client's choosing (fetch will not send one). */
function withHost(service: Service, method: string, path: string, host: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: { error: { doc_url: string; code: string } } }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: service.port, method, path, headers: { ...headers, Host: host } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('with PUBLIC_BASE_URL, doc_url ignores the Host header, in the api and in the worker', async (t) => {
  const res = await withHost(pinned, 'GET', '/v1/payment_intents', 'evil.example');
  t.is(res.status, 401);
  t.is(res.body.error.doc_url, 'https://pay.example.com/docs/errors#api_key_missing');

  const key = await pinned.issueKey('baseurl');
  const auth = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  t.is((await pinned.request('POST', '/v1/webhook_endpoints', { key, body: { url: 'https://example.com/1' } })).status, 200);
  // Written by the worker (the endpoint cap), with the base URL the api gave the job.
  const capped = await withHost(pinned, 'POST', '/v1/webhook_endpoints', 'evil.example', auth, JSON.stringify({ url: 'https://example.com/2' }));
  t.is(capped.body.error.code, 'webhook_endpoint_limit');
  t.is(capped.body.error.doc_url, 'https://pay.example.com/docs/errors#webhook_endpoint_limit');
});

test('without PUBLIC_BASE_URL the Host header is reflected', async (t) => {
  const res = await withHost(reflecting, 'GET', '/v1/payment_intents', 'evil.example');
  t.is(res.body.error.doc_url, 'http://evil.example/docs/errors#api_key_missing');
});

test('the OpenAPI document’s servers and samples carry PUBLIC_BASE_URL when set, else the origin it was asked on', async (t) => {
  const pinnedDoc = await pinned.request('GET', '/openapi.json');
  t.deepEqual(pinnedDoc.body.servers, [{ url: 'https://pay.example.com', description: 'This service' }]);
  const samples = (doc: { paths: Record<string, { post: { 'x-codeSamples': Array<{ source: string }> } }> }) =>
    doc.paths['/v1/payment_intents']!.post['x-codeSamples'].map((s) => s.source).join('\n');
  t.true(samples(pinnedDoc.body).includes('curl https://pay.example.com/v1/payment_intents'));
  t.true(samples(pinnedDoc.body).includes("{ host: 'pay.example.com', port: 443, protocol: 'https' }"));
  t.false(samples(pinnedDoc.body).includes('localhost:3000'));

  const ownDoc = await reflecting.request('GET', '/openapi.json');
  t.deepEqual(ownDoc.body.servers, [{ url: reflecting.baseUrl, description: 'This service' }]);
  t.true(samples(ownDoc.body).includes(`curl ${reflecting.baseUrl}/v1/payment_intents -u "$KEY:"`));
  t.true(samples(ownDoc.body).includes(`{ host: '127.0.0.1', port: ${reflecting.port}, protocol: 'http' }`));
  t.false(samples(ownDoc.body).includes('localhost:3000'));

  // Another origin asked on, another address; the pinned one ignores the Host header.
  const other = (await withHost(reflecting, 'GET', '/openapi.json', 'docs.example:8443')).body as unknown as typeof ownDoc.body;
  t.deepEqual(other.servers, [{ url: 'http://docs.example:8443', description: 'This service' }]);
  t.true(samples(other).includes("{ host: 'docs.example', port: 8443, protocol: 'http' }"));
  const stillPinned = (await withHost(pinned, 'GET', '/openapi.json', 'evil.example')).body as unknown as typeof ownDoc.body;
  t.deepEqual(stillPinned, pinnedDoc.body);
});
