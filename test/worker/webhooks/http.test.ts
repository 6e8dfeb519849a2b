import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import test from 'ava';
import { isForbiddenAddress } from '../../../common/net.js';
import { postWebhook } from '../../../worker/webhooks/http.js';

interface Seen {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function serve(handler: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { seen, port, url: (path = '/', host = '127.0.0.1') => `http://${host}:${port}${path}`, close };
}

const body = Buffer.from('{"hello":"wörld"}', 'utf8');

test('sends the exact body and headers, and reports status and the first bytes of the answer', async (t) => {
  const s = await serve((_req, res) => res.writeHead(201, { 'X-Seen': 'yes' }).end('x'.repeat(5000)));
  t.teardown(s.close);
  const result = await postWebhook({ url: s.url('/hook?a=1'), headers: { 'Content-Type': 'application/json', 'webhook-id': 'evt_1' }, body, timeoutMs: 2000 });
  t.is(result.kind, 'response');
  if (result.kind !== 'response') return;
  t.is(result.status, 201);
  t.is(result.headers['x-seen'], 'yes');
  t.is(result.body.length, 1024);
  t.true(result.durationMs >= 0);
  t.deepEqual(s.seen[0]?.body, body);
  t.is(s.seen[0]?.headers['webhook-id'], 'evt_1');
  t.is(s.seen[0]?.headers['content-length'], String(body.length));
});

test('does not follow redirects', async (t) => {
  const s = await serve((req, res) => {
    if (req.url === '/moved') res.writeHead(307, { Location: '/target' }).end();
    else res.writeHead(200).end('target');
  });
  t.teardown(s.close);
  const result = await postWebhook({ url: s.url('/moved'), headers: {}, body, timeoutMs: 2000 });
  t.like(result, { kind: 'response', status: 307 });
  t.is(s.seen.length, 1);
});

test('a receiver that does not answer in time is a timeout', async (t) => {
  const s = await serve(() => undefined);
  t.teardown(s.close);
  const result = await postWebhook({ url: s.url(), headers: {}, body, timeoutMs: 300 });
  t.like(result, { kind: 'error', error: 'timeout' });
});

test('a receiver that answers but trickles its body is still an answer', async (t) => {
  const s = await serve((_req, res) => {
    res.writeHead(200);
    res.write('partial');
  });
  t.teardown(s.close);
  const result = await postWebhook({ url: s.url(), headers: {}, body, timeoutMs: 300 });
  t.like(result, { kind: 'response', status: 200 });
  if (result.kind === 'response') t.is(result.body.toString(), 'partial');
});

test('a closed port is a connection error', async (t) => {
  const s = await serve(() => undefined);
  const url = s.url();
  await s.close();
  const result = await postWebhook({ url, headers: {}, body, timeoutMs: 2000 });
  t.like(result, { kind: 'error', error: 'connection_error' });
});

test('a refused IP literal is never connected to', async (t) => {
  const s = await serve((_req, res) => res.writeHead(200).end());
  t.teardown(s.close);
  const result = await postWebhook({ url: s.url(), headers: {}, body, timeoutMs: 2000, refuseAddress: isForbiddenAddress });
  t.like(result, { kind: 'error', error: 'address_refused' });
  t.is(s.seen.length, 0);
});

test('a name that resolves to a refused address is checked at connection time and never reached', async (t) => {
  const name = hostname();
  const resolved = await lookup(name, { all: true });
  t.true(resolved.length > 0 && resolved.every((a) => isForbiddenAddress(a.address)), `${name} must resolve to a local address here`);
  const s = await serve((_req, res) => res.writeHead(200).end());
  t.teardown(s.close);
  for (const host of [name, 'localhost']) {
    const result = await postWebhook({ url: s.url('/', host), headers: {}, body, timeoutMs: 2000, refuseAddress: isForbiddenAddress });
    t.like(result, { kind: 'error', error: 'address_refused' }, host);
  }
  t.is(s.seen.length, 0);
  const allowed = await postWebhook({ url: s.url('/', 'localhost'), headers: {}, body, timeoutMs: 2000 });
  t.like(allowed, { kind: 'response', status: 200 }, 'without the check (test mode) the same name is reached');
});

test('the address actually connected to is checked too, whatever the lookup said', async (t) => {
  const s = await serve((_req, res) => res.writeHead(200).end());
  t.teardown(s.close);
  const resolved = (await lookup('localhost', { all: true })).length;
  let checks = 0;
  // Lets every resolved address through, refuses at the socket: the guard after connecting must hold on its own.
  const refuseAddress = () => ++checks > resolved;
  const result = await postWebhook({ url: s.url('/', 'localhost'), headers: {}, body, timeoutMs: 2000, refuseAddress });
  t.like(result, { kind: 'error', error: 'address_refused' });
  t.is(s.seen.length, 0);
});
