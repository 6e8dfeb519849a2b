/**
 * Form-encoded bodies in Stripe's bracket notation (`metadata[order]=1042`,
 * `allowed_operators[0]=wave`, `allowed_operators[]=wave`), parsed by qs within
 * bounds. The values stay strings: each schema coerces them by field type
 * (fields.ts), so a form body then meets the same rules as a JSON one.
 */
import qs from 'qs';
import { ApiError } from '../../common/errors.js';

/** Deepest bracket nesting: `a[b][c][d][e][f]` is 5. No field of the API needs more than 1. */
export const FORM_MAX_DEPTH = 5;
/** Most `name=value` pairs in one body (metadata alone may have 50). */
export const FORM_MAX_PARAMETERS = 1000;
/** Most items in one array, and the highest index plus one. */
export const FORM_MAX_ARRAY_ITEMS = 100;

/**
 * qs drops a `__proto__` key even into null-prototype objects. Keys are renamed to
 * this marker while qs works and back afterwards. A lone surrogate can never be in
 * a decoded key: the body is read as UTF-8 (invalid bytes become U+FFFD) and a
 * percent-encoded surrogate is not valid UTF-8, so qs leaves it encoded.
 */
const PROTO = '__proto__';
const PROTO_MARK = '\uD800';

function decoder(str: string, defaultDecoder: qs.defaultDecoder, charset: string, type: 'key' | 'value'): string {
  const decoded = defaultDecoder(str, defaultDecoder, charset) as string;
  return type === 'key' ? decoded.replaceAll(PROTO, PROTO_MARK) : decoded;
}

/** Null-prototype copies with every marked key named back; arrays stay arrays. */
function restoreKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(restoreKeys);
  if (value === null || typeof value !== 'object') return value;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [key, item] of Object.entries(value)) out[key.replaceAll(PROTO_MARK, PROTO)] = restoreKeys(item);
  return out;
}

/** The decoded names of the body's parameters, for naming the one at fault. */
function parameterNames(text: string): string[] {
  return text.split('&').map((part) => {
    const name = part.split('=', 1)[0] as string;
    try {
      return decodeURIComponent(name.replaceAll('+', ' '));
    } catch {
      return name;
    }
  });
}

const topLevelName = (name: string) => name.split('[', 1)[0] as string;

function limitError(err: RangeError, text: string): ApiError {
  if (err.message.startsWith('Parameter limit')) {
    return new ApiError('parameter_invalid', `Invalid request body: it has more than ${FORM_MAX_PARAMETERS} parameters.`);
  }
  const names = parameterNames(text);
  if (err.message.startsWith('Input depth')) {
    const deep = names.find((name) => (name.match(/\[/g)?.length ?? 0) > FORM_MAX_DEPTH);
    const param = deep === undefined ? undefined : topLevelName(deep);
    return new ApiError('parameter_invalid', `Invalid ${param ?? 'request body'}: brackets may be nested at most ${FORM_MAX_DEPTH} deep.`, param);
  }
  const counts = new Map<string, number>();
  let param: string | undefined;
  for (const name of names) {
    const top = topLevelName(name);
    const count = (counts.get(top) ?? 0) + 1;
    counts.set(top, count);
    const index = /\[(\d+)\]/.exec(name)?.[1];
    if (count > FORM_MAX_ARRAY_ITEMS || (index !== undefined && Number(index) >= FORM_MAX_ARRAY_ITEMS)) {
      param = top;
      break;
    }
  }
  return new ApiError('parameter_invalid', `Invalid ${param ?? 'request body'}: an array may have at most ${FORM_MAX_ARRAY_ITEMS} items (indexes 0 to ${FORM_MAX_ARRAY_ITEMS - 1}).`, param);
}

/**
 * A form body that is plainly JSON: an object or an array, as `curl -d '{"amount":5000}'`
 * sends it under curl's default form content type. No form of this API starts with a
 * bracket (no parameter is named `{…}`), so nothing that is meant as a form is taken
 * for JSON.
 */
export function looksLikeJson(text: string): boolean {
  const trimmed = text.trim();
  const first = trimmed[0];
  const last = trimmed[trimmed.length - 1];
  return (first === '{' && last === '}') || (first === '[' && last === ']');
}

/**
 * Parses an `application/x-www-form-urlencoded` body into an object of strings,
 * arrays and objects. Every key arrives as data (`__proto__`, `constructor`, `a.b`,
 * `$x`) in null-prototype objects; a repeated name becomes an array (which the
 * field's check then refuses, if it wants one value). Nesting, parameter count and
 * array length are bounded, each with a 400 `parameter_invalid`.
 */
export function parseFormBody(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = qs.parse(text, {
      depth: FORM_MAX_DEPTH,
      strictDepth: true,
      parameterLimit: FORM_MAX_PARAMETERS,
      arrayLimit: FORM_MAX_ARRAY_ITEMS,
      throwOnLimitExceeded: true,
      plainObjects: true,
      allowPrototypes: false,
      allowDots: false,
      decoder,
    });
  } catch (err) {
    if (err instanceof RangeError) throw limitError(err, text);
    throw err;
  }
  return restoreKeys(parsed) as Record<string, unknown>;
}
