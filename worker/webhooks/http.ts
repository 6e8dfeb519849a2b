/**
 * The HTTP client of webhook delivery: one POST, no redirects followed, one deadline
 * for the whole exchange, only the first bytes of the response kept. When given a
 * `refuseAddress` check, it is applied to the addresses a name resolves to (inside
 * the connection's own lookup, so the checked address is the one connected to) and
 * again to the socket's remote address once connected, which covers IP-literal hosts
 * and DNS rebinding alike.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export type TransportErrorKind = 'timeout' | 'connection_error' | 'address_refused';

export type PostResult =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer; durationMs: number }
  | { kind: 'error'; error: TransportErrorKind; message: string; durationMs: number };

export interface PostOptions {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Deadline for connecting, sending and receiving the status line and headers. */
  timeoutMs: number;
  /** True for an address that must not be connected to; when absent, any address is allowed. */
  refuseAddress?: (ip: string) => boolean;
  /** How many bytes of the response body to keep (and read). Default 1024. */
  responseBodyLimit?: number;
}

const ADDRESS_REFUSED = 'ERR_WEBHOOK_ADDRESS_REFUSED';

function addressRefused(address: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`refused to connect to forbidden address ${address}`);
  err.code = ADDRESS_REFUSED;
  return err;
}

/** A `lookup` for the connection that fails when any resolved address is refused. */
function guardedLookup(refuse: (ip: string) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const forbidden = addresses.find((a) => refuse(a.address));
      if (forbidden || addresses.length === 0) {
        return callback(addressRefused(forbidden?.address ?? hostname), '', 0);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      return callback(null, first.address, first.family);
    });
  };
}

/** Sends one POST and reports what happened; never throws. */
export async function postWebhook(options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const limit = options.responseBodyLimit ?? 1024;
  const elapsed = () => Math.round(performance.now() - started);
  const failure = (error: TransportErrorKind, message: string): PostResult => ({ kind: 'error', error, message, durationMs: elapsed() });

  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    return failure('connection_error', 'invalid url');
  }
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const refuse = options.refuseAddress;
  // An IP literal is connected to without a lookup: check it here.
  if (refuse && isIP(hostname) !== 0 && refuse(hostname)) return failure('address_refused', `forbidden address ${hostname}`);
  const transport = url.protocol === 'https:' ? https : http;

  return new Promise((resolve) => {
    let settled = false;
    let responded = false;
    let partial: { status: number; headers: IncomingHttpHeaders; chunks: Buffer[]; size: number } | null = null;
    const settle = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
      req.destroy();
    };
    const settleResponse = () => {
      if (!partial) return;
      const body = Buffer.concat(partial.chunks).subarray(0, limit);
      settle({ kind: 'response', status: partial.status, headers: partial.headers, body, durationMs: elapsed() });
    };

    const req = transport.request({
      protocol: url.protocol,
      hostname,
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: { ...options.headers, 'Content-Length': String(options.body.length) },
      agent: false,
      ...(refuse ? { lookup: guardedLookup(refuse) } : {}),
    });
    const timer = setTimeout(() => {
      // Once the status is in, the receiver has answered: a slow body does not undo that.
      if (responded) settleResponse();
      else settle(failure('timeout', `no response within ${options.timeoutMs} ms`));
    }, options.timeoutMs);

    if (refuse) {
      req.on('socket', (socket: Socket) => {
        // Prepended, so it runs before the request's pending bytes are flushed on connect.
        socket.prependOnceListener('connect', () => {
          const remote = socket.remoteAddress;
          if (remote === undefined || refuse(remote)) req.destroy(addressRefused(remote ?? 'unknown'));
        });
      });
    }
    req.on('response', (res) => {
      responded = true;
      const current = { status: res.statusCode ?? 0, headers: res.headers, chunks: [] as Buffer[], size: 0 };
      partial = current;
      res.on('data', (chunk: Buffer) => {
        if (current.size < limit) current.chunks.push(chunk);
        current.size += chunk.length;
        if (current.size >= limit) settleResponse();
      });
      res.on('end', settleResponse);
      res.on('error', settleResponse);
      res.on('close', settleResponse);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (responded) return settleResponse();
      if (err.code === ADDRESS_REFUSED) return settle(failure('address_refused', err.message));
      settle(failure('connection_error', err.code ?? err.message));
    });
    req.end(options.body);
  });
}
