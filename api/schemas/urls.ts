/**
 * The URL rules, one place for every URL a request gives (a webhook endpoint's `url`,
 * a confirm's `return_url`): what `Joi.string().webUrl()` checks (joi.ts), each
 * problem a joi error type of its own, worded by `urlErrors` for the field.
 *
 * Every URL is stored as given, so it must mean the same thing to every parser:
 * WHATWG URL would silently drop surrounding spaces and inner tabs or newlines,
 * accept `http:example.com` without the slashes, read `http:///x` as host `x` and
 * `https://:@host/` as having no user part. A URL that receives our requests (a
 * webhook endpoint, `target`) must also not point at this service's neighbours: in
 * live mode it uses https, and in either mode it names neither localhost nor an IP
 * literal that is not public, unless test mode and `allowPrivateTargets`. Names are
 * not resolved here (delivery checks the address it connects to).
 */
import { isIP } from 'node:net';

import { ApiError } from '../../common/errors.js';
import { isForbiddenAddress } from '../../common/net.js';
import { describeValue, type Raise } from './joi-errors.js';

/** Where an endpoint may point: live mode never at private addresses, test mode only when the operator allows it. */
export interface UrlRules {
  livemode: boolean;
  /** `WEBHOOK_ALLOW_PRIVATE_TARGETS`: test-mode endpoints may name loopback and private addresses. */
  allowPrivateTargets?: boolean;
}

/** What can be wrong with a URL, as joi error types. */
export type UrlProblem = 'url.spaces' | 'url.absolute' | 'url.host' | 'url.userinfo' | 'url.unparsable' | 'url.https' | 'url.localhost' | 'url.private';

/** True for `localhost`, `*.localhost` (RFC 6761), with or without the root dot. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}

/** The first problem of `url` (not empty), or null; with `target`, the rules of a URL this service sends requests to. */
export function urlProblem(url: string, target: UrlRules | null): UrlProblem | null {
  if (/[\u0000-\u0020\u007f]/.test(url)) return 'url.spaces';
  if (!/^https?:\/\//i.test(url)) return 'url.absolute';
  // As written, not as WHATWG URL mends it.
  const authority = (/^https?:\/\/([^/?#]*)/i.exec(url) as RegExpExecArray)[1] as string;
  if (authority === '') return 'url.host';
  if (authority.includes('@')) return 'url.userinfo';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'url.unparsable';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url.absolute';
  if (parsed.username !== '' || parsed.password !== '') return 'url.userinfo';
  if (target === null) return null;
  if (target.livemode && parsed.protocol !== 'https:') return 'url.https';
  if (!target.livemode && target.allowPrivateTargets) return null;
  // WHATWG URL has already normalised IPv4 literals (`http://2130706433/` is 127.0.0.1).
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (isLocalhostName(host)) return 'url.localhost';
  if (isIP(host) !== 0 && isForbiddenAddress(host)) return 'url.private';
  return null;
}

const WHY: Readonly<Record<UrlProblem | 'string.empty', (value: unknown) => string>> = {
  'string.empty': () => 'it must not be empty',
  'url.spaces': () => 'it must not contain spaces or control characters',
  'url.absolute': () => 'it must be an absolute http:// or https:// URL',
  'url.host': () => 'it must name a host',
  'url.userinfo': () => 'it must not contain a user name or password',
  'url.unparsable': (value) => `${describeValue(value)} is not a valid URL`,
  'url.https': () => 'in live mode it must use https',
  'url.localhost': () => 'it must not point at localhost',
  'url.private': () => 'it must point at a public address, not a loopback, private, link-local, multicast or reserved one',
};

/** The contract's `url_invalid` for each URL problem of the field `name`, and for a URL over `maxLength` code points. */
export function urlErrors(name: string, maxLength: number): Record<string, Raise> {
  const invalid = (param: string, why: string) => new ApiError('url_invalid', `Invalid ${name}: ${why}.`, param);
  const table: Record<string, Raise> = {
    'string.maxCodePoints': ({ param }) => invalid(param, `it must be at most ${maxLength} characters long`),
  };
  for (const [type, why] of Object.entries(WHY)) table[type] = ({ param, value }) => invalid(param, why(value));
  return table;
}
