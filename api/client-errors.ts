/**
 * Requests that Node's HTTP parser refuses before any route sees them (a malformed
 * request line or header, headers past `maxHeaderSize`, a client too slow): Node
 * answers those with a bare status line. These answers carry a `Request-Id`, like
 * every other (DESIGN.md section 4), and bad input the contract's error envelope.
 */
import type { Socket } from 'node:net';
import type { Config } from '../common/config.js';
import { errorBody, type ErrorCode } from '../common/errors.js';
import type { IdGenerator } from '../common/ids.js';
import type { Logger } from '../common/logger.js';
import { baseUrlOf } from './respond.js';

/** Largest request head Node parses: an `Idempotency-Key` past 255 characters reaches its own check (400 `idempotency_key_invalid`). */
export const MAX_HEADER_BYTES = 64 * 1024;

interface Refusal {
  status: number;
  reason: string;
  /** The envelope's code; none for a client too slow, which no code of the contract names. */
  code?: ErrorCode;
  message: string;
}

function refusalFor(errorCode: string | undefined): Refusal {
  switch (errorCode) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, reason: 'Request Timeout', message: 'The request did not arrive in time.' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 400, reason: 'Bad Request', code: 'parameter_invalid', message: `Invalid request: its headers are larger than ${MAX_HEADER_BYTES / 1024} KiB.` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, reason: 'Payload Too Large', code: 'body_too_large', message: 'Invalid request body: its chunk extensions are too large.' };
    default:
      return { status: 400, reason: 'Bad Request', code: 'parameter_invalid', message: 'Invalid request: it is not well-formed HTTP/1.1 (a request line or header that cannot be read).' };
  }
}

export function answerClientErrors(deps: { config: Pick<Config, 'publicBaseUrl' | 'host' | 'port'>; ids: IdGenerator; logger: Logger }) {
  return (err: Error & { code?: string }, socket: Socket & { _httpMessage?: { headersSent?: boolean } | null }): void => {
    // Nothing to say on a socket that is gone, or whose answer has begun (Node's own rule).
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = refusalFor(err.code);
    const requestId = deps.ids.next('request');
    const body = refusal.code ? errorBody({ code: refusal.code, message: refusal.message }, requestId, baseUrlOf(deps.config, { protocol: 'http', host: '' })) : '';
    const head = [
      `HTTP/1.1 ${refusal.status} ${refusal.reason}`,
      `Request-Id: ${requestId}`,
      'Connection: close',
      'X-Content-Type-Options: nosniff',
      ...(body ? ['Content-Type: application/json; charset=utf-8', 'Stripe-Should-Retry: false'] : []),
      `Content-Length: ${Buffer.byteLength(body)}`,
    ];
    deps.logger.info({ request_id: requestId, status: refusal.status, reason: err.code ?? err.message }, 'request refused by the HTTP parser');
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  };
}
