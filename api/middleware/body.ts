import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { errors } from '../../common/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../common/json-depth.js';
import { handedOnOf, type Ctx, type State } from '../context.js';
import { looksLikeJson, parseFormBody } from '../schemas/form-body.js';
import type { BodyEncoding } from '../schemas/fields.js';

export const BODY_LIMIT = 64 * 1024;
/** The one route with larger bodies (DESIGN section 17): a batch of up to 1,000 payouts. */
export const LARGE_BODY_LIMIT = 1024 * 1024;
const LARGE_BODY_PATHS = new Set(['/v1/payout_batches']);

/** The body limit of a request path (its query string ignored). */
export function bodyLimitOf(url: string): number {
  const query = url.indexOf('?');
  return LARGE_BODY_PATHS.has(query === -1 ? url : url.slice(0, query)) ? LARGE_BODY_LIMIT : BODY_LIMIT;
}

/** The media type without parameters (`; charset=utf-8`), lowercase. */
function mediaType(contentType: string): string {
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

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
  return mediaType(contentType) === 'application/json';
}

function encodingOf(contentType: string, formAllowed: boolean): BodyEncoding | null {
  const type = mediaType(contentType);
  if (type === 'application/json') return 'json';
  if (formAllowed && type === 'application/x-www-form-urlencoded') return 'form';
  return null;
}

/**
 * JSON text in which every number written with a fraction or an exponent but whole
 * in value (`5000.0`, `5e3`) is quoted, so it reaches the field checks as written:
 * JSON.parse reads it as the integer 5000, and "floats → parameter_invalid_integer"
 * (DESIGN.md section 4) would not hold. Strings are skipped, escapes included; any
 * other text is left as it is, for JSON.parse to judge.
 */
export function quoteWholeFloats(text: string): string {
  if (!/[0-9][.eE]/.test(text)) return text;
  let out = '';
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const ch = text[i] as string;
    if (ch === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
      continue;
    }
    if (ch === '-' || (ch >= '0' && ch <= '9')) {
      const token = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400))?.[0] ?? ch;
      if (/[.eE]/.test(token) && Number.isInteger(Number(token))) {
        out += `${text.slice(from, i)}"${token}"`;
        from = i + token.length;
      }
      i += token.length;
      continue;
    }
    i++;
  }
  return out + text.slice(from);
}

function parseJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(quoteWholeFloats(text));
  } catch (err) {
    throw errors.invalidJson((err as Error).message);
  }
  if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) throw errors.invalidJson(`it nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw errors.invalidJson('the body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/** Bytes that are not UTF-8 are refused, not replaced with U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body as text, at most its path's limit in bytes of UTF-8 (`bodyLimitOf`); the errors are the contract's. */
export async function readRequestText(req: IncomingMessage): Promise<string> {
  let bytes: Buffer;
  const limit = bodyLimitOf(req.url ?? '');
  try {
    bytes = await getRawBody(req, { limit, length: req.headers['content-length'] || undefined });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type !== undefined && ABORTED.has(type)) throw new ClientAbortedError(type);
    if (type === 'entity.too.large') throw errors.bodyTooLarge(limit);
    if (type === 'encoding.unsupported' || type === 'request.size.invalid') throw errors.invalidJson('the body could not be read');
    throw err;
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    throw errors.invalidJson('the body is not valid UTF-8');
  }
}

/** The request's body as text: as the replay at the door read it (its error too), or read now. */
async function readBodyText(ctx: Ctx): Promise<string> {
  const earlier = handedOnOf(ctx.req)?.body;
  if (earlier === undefined) return readRequestText(ctx.req);
  if ('error' in earlier) throw earlier.error;
  return earlier.text;
}

/**
 * Reads the body into `ctx.state.body` and its encoding into `ctx.state.bodyEncoding`:
 * a JSON object (`application/json`) or, unless `form: false`, a form in Stripe's
 * bracket notation (`application/x-www-form-urlencoded`). An empty body is `{}`.
 * Any other declared type is refused even when the body is empty; a body without a
 * declared type too. A form body that is plainly JSON (curl's `-d '{…}'` without a
 * content type) is refused with a message that says to send `Content-Type:
 * application/json`, rather than read as one parameter named `{…}`.
 */
export function parseBody(options: { form?: boolean } = {}): Middleware<State> {
  const formAllowed = options.form ?? true;
  const accepted = formAllowed ? ['application/json', 'application/x-www-form-urlencoded'] : ['application/json'];
  return async (ctx, next) => {
    const contentType = ctx.get('Content-Type');
    const declared = contentType === '' ? null : encodingOf(contentType, formAllowed);
    if (contentType !== '' && declared === null) throw errors.contentTypeInvalid(accepted);
    const text = await readBodyText(ctx);
    ctx.state.bodyText = text;
    ctx.state.bodyEncoding = declared ?? 'json';
    // An empty body is `{}`; one of white space only is `{}` unless it claims to be
    // JSON, where it is not a JSON value.
    if (text === '' || (declared !== 'json' && text.trim() === '')) {
      ctx.state.body = {};
    } else {
      if (declared === null) throw errors.contentTypeInvalid(accepted);
      if (declared === 'form' && looksLikeJson(text)) throw errors.jsonSentAsForm();
      ctx.state.body = declared === 'form' ? parseFormBody(text) : parseJson(text);
    }
    await next();
  };
}
