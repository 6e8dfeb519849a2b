import { isIP } from 'node:net';

import { ApiError } from '../../common/errors.js';
import type { WebhookEndpointInput, WebhookEndpointUpdateInput } from '../../common/jobs.js';
import { isForbiddenAddress } from '../../common/net.js';
import { ALL_EVENTS, EVENT_TYPES } from '../../common/events.js';
import { typedBody, type BodyEncoding, type BodyFields } from './fields.js';
import {
  checkBoolean,
  checkInteger,
  checkString,
  codePointLength,
  describeValue,
  fieldOf,
  parseDescription,
  parseDistinctNames,
  parseMetadata,
  rejectUnknownFields,
  required,
} from './validate.js';

export const URL_MAX_LENGTH = 2048;

/** The create body's fields, in contract order (see fields.ts). */
export const WEBHOOK_ENDPOINT_CREATE_FIELDS = {
  url: { type: 'string', required: true },
  enabled_events: { type: 'string_array' },
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
} as const satisfies BodyFields;

const FIELDS = Object.keys(WEBHOOK_ENDPOINT_CREATE_FIELDS);

function urlInvalid(why: string): ApiError {
  return new ApiError('url_invalid', `Invalid url: ${why}.`, 'url');
}

/** True for `localhost`, `*.localhost` (RFC 6761), with or without the root dot. */
function isLocalhostName(hostname: string): boolean {
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Where an endpoint may point: live mode never at private addresses, test mode only when the operator allows it. */
export interface UrlRules {
  livemode: boolean;
  /** `WEBHOOK_ALLOW_PRIVATE_TARGETS`: test-mode endpoints may name loopback and private addresses. */
  allowPrivateTargets?: boolean;
}

export function parseUrl(value: unknown, { livemode, allowPrivateTargets = false }: UrlRules): string {
  const url = checkString(required(value, 'url'), 'url');
  if (url === '') throw urlInvalid('it must not be empty');
  if (codePointLength(url) > URL_MAX_LENGTH) throw urlInvalid(`it must be at most ${URL_MAX_LENGTH} characters long`);
  // The URL is stored as given, so it must mean the same thing to every parser:
  // WHATWG URL would silently drop surrounding spaces and inner tabs or newlines,
  // and accept `http:example.com` without the slashes.
  if (/[\u0000-\u0020\u007f]/.test(url)) throw urlInvalid('it must not contain spaces or control characters');
  if (!/^https?:\/\//i.test(url)) throw urlInvalid('it must be an absolute http:// or https:// URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw urlInvalid(`${describeValue(url)} is not a valid URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw urlInvalid('it must be an absolute http:// or https:// URL');
  }
  if (parsed.username !== '' || parsed.password !== '') throw urlInvalid('it must not contain a user name or password');
  if (livemode && parsed.protocol !== 'https:') throw urlInvalid('in live mode it must use https');
  if (!livemode && allowPrivateTargets) return url;
  // WHATWG URL has already normalised IPv4 literals (`http://2130706433/` is 127.0.0.1).
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (isLocalhostName(host)) throw urlInvalid('it must not point at localhost');
  if (isIP(host) !== 0 && isForbiddenAddress(host)) {
    throw urlInvalid('it must point at a public address, not a loopback, private, link-local, multicast or reserved one');
  }
  return url;
}

export function parseEnabledEvents(value: unknown): string[] {
  return parseDistinctNames(value, 'enabled_events', {
    catalog: EVENT_TYPES,
    extra: [ALL_EVENTS],
    fallback: [ALL_EVENTS],
    noun: 'event type',
    emptyMessage: 'Invalid enabled_events: the array must name at least one event type, or "*" for all. Omit it to receive all events.',
    notInCatalog: (param, item) =>
      new ApiError(
        'event_type_invalid',
        `Invalid ${param}: ${describeValue(item)} is not an event type. Known types: ${EVENT_TYPES.join(', ')}, or "*" for all.`,
        param,
      ),
  });
}

/**
 * Validates a create body (a parsed JSON object or form) and fills in the defaults.
 * In live mode the URL must be https. In both modes it must not name localhost or
 * an IP literal that is not public, unless test mode and `allowPrivateTargets`;
 * names are not resolved here (delivery checks the address it connects to).
 */
export function parseWebhookEndpointCreate(
  raw: Record<string, unknown>,
  ctx: UrlRules & { encoding?: BodyEncoding },
): WebhookEndpointInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', WEBHOOK_ENDPOINT_CREATE_FIELDS);
  rejectUnknownFields(body, FIELDS);
  const url = parseUrl(fieldOf(body, 'url'), ctx);
  const enabledEvents = parseEnabledEvents(fieldOf(body, 'enabled_events'));
  const description = parseDescription(fieldOf(body, 'description'));
  const metadata = parseMetadata(fieldOf(body, 'metadata'));
  return { url, enabled_events: enabledEvents, description, metadata };
}

/** The update body's fields: those of create, all optional, and `disabled`. */
export const WEBHOOK_ENDPOINT_UPDATE_FIELDS = {
  url: { type: 'string' },
  enabled_events: { type: 'string_array' },
  description: { type: 'string', nullable: true },
  metadata: { type: 'metadata' },
  disabled: { type: 'boolean' },
} as const satisfies BodyFields;

/** Only the fields given change; the rules are those of create, the live-mode URL rules included. */
export function parseWebhookEndpointUpdate(raw: Record<string, unknown>, ctx: UrlRules & { encoding?: BodyEncoding }): WebhookEndpointUpdateInput {
  const body = typedBody(raw, ctx.encoding ?? 'json', WEBHOOK_ENDPOINT_UPDATE_FIELDS);
  rejectUnknownFields(body, Object.keys(WEBHOOK_ENDPOINT_UPDATE_FIELDS));
  const input: WebhookEndpointUpdateInput = {};
  const url = fieldOf(body, 'url');
  if (url !== undefined) input.url = parseUrl(url, ctx);
  const events = fieldOf(body, 'enabled_events');
  if (events !== undefined) input.enabled_events = parseEnabledEvents(events);
  const description = fieldOf(body, 'description');
  if (description !== undefined) input.description = parseDescription(description);
  const metadata = fieldOf(body, 'metadata');
  if (metadata !== undefined) input.metadata = parseMetadata(metadata);
  const disabled = fieldOf(body, 'disabled');
  if (disabled !== undefined) input.disabled = checkBoolean(disabled, 'disabled');
  return input;
}

export const EXPIRE_PREVIOUS_MAX_SECONDS = 86_400;

export const WEBHOOK_ENDPOINT_ROTATE_FIELDS = {
  expire_previous_in: { type: 'integer' },
} as const satisfies BodyFields;

export function parseRotateSecret(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): { expire_previous_in: number } {
  const body = typedBody(raw, ctx.encoding ?? 'json', WEBHOOK_ENDPOINT_ROTATE_FIELDS);
  rejectUnknownFields(body, Object.keys(WEBHOOK_ENDPOINT_ROTATE_FIELDS));
  const value = fieldOf(body, 'expire_previous_in');
  if (value === undefined) return { expire_previous_in: EXPIRE_PREVIOUS_MAX_SECONDS };
  return { expire_previous_in: checkInteger(value, 'expire_previous_in', { min: 0, max: EXPIRE_PREVIOUS_MAX_SECONDS }) };
}

export const WEBHOOK_ENDPOINT_RESEND_FIELDS = {
  event: { type: 'string', required: true },
} as const satisfies BodyFields;

export function parseResend(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): { event: string } {
  const body = typedBody(raw, ctx.encoding ?? 'json', WEBHOOK_ENDPOINT_RESEND_FIELDS);
  rejectUnknownFields(body, Object.keys(WEBHOOK_ENDPOINT_RESEND_FIELDS));
  return { event: checkString(required(fieldOf(body, 'event'), 'event'), 'event') };
}

/** How far back `recover` reaches. */
export const RECOVER_MAX_SECONDS = 7 * 86_400;

export const WEBHOOK_ENDPOINT_RECOVER_FIELDS = {
  since: { type: 'integer', required: true },
} as const satisfies BodyFields;

export function parseRecover(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding; now: number }): { since: number } {
  const body = typedBody(raw, ctx.encoding ?? 'json', WEBHOOK_ENDPOINT_RECOVER_FIELDS);
  rejectUnknownFields(body, Object.keys(WEBHOOK_ENDPOINT_RECOVER_FIELDS));
  const min = ctx.now - RECOVER_MAX_SECONDS;
  const since = checkInteger(required(fieldOf(body, 'since'), 'since'), 'since', {
    min,
    max: ctx.now,
    outOfRange: `Invalid since: it must be a unix timestamp within the last 7 days (${min} to ${ctx.now}).`,
  });
  return { since };
}

export function parseEmptyBody(raw: Record<string, unknown>): Record<string, never> {
  rejectUnknownFields(raw, []);
  return {};
}
