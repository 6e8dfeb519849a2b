import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { errors } from '../../common/errors.js';
import type { State } from '../context.js';

export const BODY_LIMIT = 64 * 1024;

/**
 * The client went away before its body could be read (it gave up waiting, or its
 * connection dropped): nobody is left to answer. raw-body reports it as
 * `request.aborted`, or as `stream.not.readable` ("stream is not readable") when the
 * request was already closed when reading began. Not a fault of ours: logged at
 * info, never as an error.
 */
export class ClientAbortedError extends Error {
  constructor(reason: string) {
    super(`client aborted the request: ${reason}`);
    this.name = 'ClientAbortedError';
  }
}

const ABORTED = new Set(['request.aborted', 'stream.not.readable']);

/** `application/json`, any case, with or without parameters (`; charset=utf-8`). */
export function isJsonType(contentType: string): boolean {
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === 'application/json';
}

/**
 * Reads a JSON object body into `ctx.state.body`. An empty body is `{}`. A body
 * needs `Content-Type: application/json`, an explicitly different type is refused
 * even when the body is empty.
 */
export function parseJsonBody(): Middleware<State> {
  return async (ctx, next) => {
    const contentType = ctx.get('Content-Type');
    const declaredJson = contentType === '' ? null : isJsonType(contentType);
    if (declaredJson === false) throw errors.contentTypeInvalid();
    let text: string;
    try {
      text = await getRawBody(ctx.req, { limit: BODY_LIMIT, encoding: 'utf8', length: ctx.get('Content-Length') || undefined });
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type !== undefined && ABORTED.has(type)) throw new ClientAbortedError(type);
      if (type === 'entity.too.large') throw errors.bodyTooLarge(BODY_LIMIT);
      if (type === 'encoding.unsupported' || type === 'request.size.invalid') throw errors.invalidJson('the body could not be read');
      throw err;
    }
    if (text.trim() === '') {
      ctx.state.body = {};
    } else {
      if (declaredJson === null) throw errors.contentTypeInvalid();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        throw errors.invalidJson((err as Error).message);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw errors.invalidJson('the body must be a JSON object');
      }
      ctx.state.body = parsed as Record<string, unknown>;
    }
    await next();
  };
}
