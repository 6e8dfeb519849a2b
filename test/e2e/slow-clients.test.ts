/**
 * Slow clients cannot hold the api: the headers must arrive within
 * HTTP_HEADERS_TIMEOUT_MS, the whole request within HTTP_REQUEST_TIMEOUT_MS, and
 * connections past HTTP_MAX_CONNECTIONS are closed at once. Raw sockets only, so
 * no pooled connection of the test runner counts against the bound.
 */
import net from 'node:net';
import test from 'ava';
import { Service, until } from '../helpers/service.js';

let service: Service;

test.before(async () => {
  service = await Service.start({
    workers: 0,
    env: { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_MAX_CONNECTIONS: '3' },
  });
});

test.after.always(async () => {
  await service?.stop();
});

interface Conn {
  socket: net.Socket;
  received: () => string;
  closed: () => boolean;
}

async function connect(): Promise<Conn> {
  const socket = net.connect(service.port, '127.0.0.1');
  let text = '';
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('close', () => (isClosed = true));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed: () => isClosed };
}

const HEALTH = 'GET /healthz HTTP/1.1\r\nHost: api\r\n\r\n';

test.serial('connections past the bound are closed at once; a freed place is taken again', async (t) => {
  const held = [await connect(), await connect(), await connect()];
  const extra = await connect();
  extra.socket.write(HEALTH);
  await until('the extra connection to be closed', () => (extra.closed() ? true : undefined), 15_000);
  t.is(extra.received(), '', 'it got no answer');
  for (const conn of held) conn.socket.destroy();
  await until('a new connection to be answered', async () => {
    const conn = await connect();
    conn.socket.write(HEALTH);
    const answered = await until('an answer', () => (conn.received().includes('\r\n\r\n') || conn.closed() ? true : undefined), 5_000).catch(() => false);
    conn.socket.destroy();
    return answered && conn.received().startsWith('HTTP/1.1 200') ? true : undefined;
  }, 15_000);
  t.pass();
});

test.serial('headers that do not arrive within the headers timeout get 408 and the connection closed', async (t) => {
  const conn = await connect();
  conn.socket.write('GET /healthz HTTP/1.1\r\nHost: api\r\n'); // and never the blank line
  await until('the server to close the connection', () => (conn.closed() ? true : undefined), 15_000);
  t.regex(conn.received(), /^HTTP\/1\.1 408/);
  t.regex(conn.received(), /\r\nRequest-Id: req_\w+\r\n/, 'every answer has a Request-Id, the parser\'s too');
});

/** The one answer of a raw request the parser refuses: its status, Request-Id and envelope. */
async function refusedRaw(request: string): Promise<{ status: number; requestId: string | undefined; error: Record<string, unknown> }> {
  const conn = await connect();
  conn.socket.write(request);
  await until('the server to answer and close', () => (conn.closed() ? true : undefined), 15_000);
  const [head = '', body = ''] = conn.received().split('\r\n\r\n');
  return {
    status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]),
    requestId: /\r\nRequest-Id: (req_\w+)\r\n/.exec(head)?.[1],
    error: (JSON.parse(body) as { error: Record<string, unknown> }).error,
  };
}

test.serial('a request the HTTP parser refuses gets a 400 in the error envelope, with its Request-Id', async (t) => {
  for (const request of [
    'GET /healthz HTTP/1.1\r\nHost: api\r\nX-Bad: a\x7fb\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: api\r\nNo colon here\r\n\r\n',
    `GET /healthz HTTP/1.1\r\nHost: api\r\nX-Big: ${'b'.repeat(70 * 1024)}\r\n\r\n`,
  ]) {
    const refused = await refusedRaw(request);
    t.is(refused.status, 400);
    t.like(refused.error, { type: 'invalid_request_error', code: 'parameter_invalid', request_id: refused.requestId });
    t.regex(String(refused.error.doc_url), /^http:\/\/127\.0\.0\.1:\d+\/docs\/errors#parameter_invalid$/);
  }
});

test.serial('an Idempotency-Key far past 255 characters reaches its own check: 400 idempotency_key_invalid', async (t) => {
  const key = await service.issueKey('long-keys');
  const res = await service.request('POST', '/v1/payment_intents', { key, body: { amount: 5000 }, headers: { 'Idempotency-Key': 'k'.repeat(17_000) } });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'idempotency_key_invalid');
  t.is(res.body.error.request_id, res.headers.get('request-id'));
});

test.serial('a body that trickles in past the request timeout gets 408 and the connection closed', async (t) => {
  const conn = await connect();
  // The admin API reads the body once the token is checked.
  const headers = `Host: api\r\nAuthorization: Bearer ${service.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 100`;
  conn.socket.write(`POST /admin/v1/api_keys HTTP/1.1\r\n${headers}\r\n\r\n{"pro`);
  const drip = setInterval(() => conn.socket.write(' '), 300);
  t.teardown(() => clearInterval(drip));
  await until('the server to close the connection', () => (conn.closed() ? true : undefined), 15_000);
  clearInterval(drip);
  t.regex(conn.received(), /^HTTP\/1\.1 408/);
});

/** Idle past the headers (1 s) and request (2 s) timeouts, which must not close a kept-alive connection: the point of the test. */
const IDLE_PAST_TIMEOUTS_MS = 2500;

test.serial('an idle keep-alive connection outlives the headers timeout, and its next request is answered', async (t) => {
  const conn = await connect();
  conn.socket.write(HEALTH);
  await until('the first answer', () => (conn.received().includes('{"status":"ok"}') ? true : undefined), 5_000);
  await new Promise((resolve) => setTimeout(resolve, IDLE_PAST_TIMEOUTS_MS));
  t.false(conn.closed(), 'still open after 2.5 s idle');
  conn.socket.write(HEALTH);
  await until('the second answer', () => (conn.received().split('{"status":"ok"}').length === 3 ? true : undefined), 5_000);
  conn.socket.destroy();
  t.pass();
});
