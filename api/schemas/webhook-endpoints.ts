import { ApiError } from '../../common/errors.js';
import type { WebhookEndpointInput, WebhookEndpointUpdateInput } from '../../common/jobs.js';
import { toPairs } from '../../common/metadata.js';
import { ALL_EVENTS, EVENT_TYPES } from '../../common/events.js';
import { bodySchema, checkBody } from './body.js';
import type { BodyEncoding } from './fields.js';
import { describeValue, type Raise } from './joi-errors.js';
import { Joi } from './joi.js';
import { urlErrors, type UrlRules } from './urls.js';
import { description, distinctNames, distinctNamesErrors, integer } from './validate.js';

export const URL_MAX_LENGTH = 2048;

/** The URL rules of a URL this service sends requests to (urls.ts), in joi. */
const url = () => Joi.string().maxCodePoints(URL_MAX_LENGTH).webUrl('target');
const URL_ERRORS = urlErrors('url', URL_MAX_LENGTH);

const EVENT_CATALOG = [...EVENT_TYPES, ALL_EVENTS];
const enabledEvents = () => distinctNames(() => EVENT_CATALOG);
const ENABLED_EVENTS_ERRORS = distinctNamesErrors({
  noun: 'event type',
  emptyMessage: 'Invalid enabled_events: the array must name at least one event type, or "*" for all. Omit it to receive all events.',
  notInCatalog: ({ param, value }) =>
    new ApiError('event_type_invalid', `Invalid ${param}: ${describeValue(value)} is not an event type. Known types: ${EVENT_TYPES.join(', ')}, or "*" for all.`, param),
});

export const WEBHOOK_ENDPOINT_CREATE = bodySchema(
  { url: url().required(), enabled_events: enabledEvents(), description: description(), metadata: Joi.metadata() },
  { url: URL_ERRORS, enabled_events: ENABLED_EVENTS_ERRORS },
);
export const WEBHOOK_ENDPOINT_CREATE_FIELDS = WEBHOOK_ENDPOINT_CREATE.fields;

/** The create body's fields, all optional, and `disabled`. */
export const WEBHOOK_ENDPOINT_UPDATE = bodySchema(
  { url: url(), enabled_events: enabledEvents(), description: description(), metadata: Joi.metadata(), disabled: Joi.boolean() },
  { url: URL_ERRORS, enabled_events: ENABLED_EVENTS_ERRORS },
);
export const WEBHOOK_ENDPOINT_UPDATE_FIELDS = WEBHOOK_ENDPOINT_UPDATE.fields;

/**
 * Validates a create body (a parsed JSON object or form) and fills in the defaults.
 * In live mode the URL must be https. In both modes it must not name localhost or
 * an IP literal that is not public, unless test mode and `allowPrivateTargets`;
 * names are not resolved here (delivery checks the address it connects to).
 */
export function parseWebhookEndpointCreate(raw: Record<string, unknown>, ctx: UrlRules & { encoding?: BodyEncoding }): WebhookEndpointInput {
  const body = checkBody(WEBHOOK_ENDPOINT_CREATE, raw, ctx.encoding ?? 'json', urlVars(ctx));
  return {
    url: body.url as string,
    enabled_events: body.enabled_events === undefined ? [ALL_EVENTS] : [...(body.enabled_events as string[])],
    description: (body.description ?? null) as string | null,
    metadata: body.metadata === undefined ? [] : toPairs(body.metadata as Record<string, string>),
  };
}

const urlVars = (ctx: UrlRules): Record<string, unknown> => ({ livemode: ctx.livemode, allowPrivateTargets: ctx.allowPrivateTargets ?? false });

/** Only the fields given change; the rules are those of create, the live-mode URL rules included. */
export function parseWebhookEndpointUpdate(raw: Record<string, unknown>, ctx: UrlRules & { encoding?: BodyEncoding }): WebhookEndpointUpdateInput {
  const body = checkBody(WEBHOOK_ENDPOINT_UPDATE, raw, ctx.encoding ?? 'json', urlVars(ctx));
  const input: WebhookEndpointUpdateInput = {};
  if (body.url !== undefined) input.url = body.url as string;
  if (body.enabled_events !== undefined) input.enabled_events = [...(body.enabled_events as string[])];
  if (body.description !== undefined) input.description = body.description as string | null;
  if (body.metadata !== undefined) input.metadata = toPairs(body.metadata as Record<string, string>);
  if (body.disabled !== undefined) input.disabled = body.disabled as boolean;
  return input;
}

export const EXPIRE_PREVIOUS_MAX_SECONDS = 86_400;

export const WEBHOOK_ENDPOINT_ROTATE = bodySchema({ expire_previous_in: integer().min(0).max(EXPIRE_PREVIOUS_MAX_SECONDS) });
export const WEBHOOK_ENDPOINT_ROTATE_FIELDS = WEBHOOK_ENDPOINT_ROTATE.fields;

export function parseRotateSecret(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): { expire_previous_in: number } {
  const body = checkBody(WEBHOOK_ENDPOINT_ROTATE, raw, ctx.encoding ?? 'json');
  return { expire_previous_in: (body.expire_previous_in ?? EXPIRE_PREVIOUS_MAX_SECONDS) as number };
}

export const WEBHOOK_ENDPOINT_RESEND = bodySchema({ event: Joi.string().allow('').required() });
export const WEBHOOK_ENDPOINT_RESEND_FIELDS = WEBHOOK_ENDPOINT_RESEND.fields;

export function parseResend(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding }): { event: string } {
  const body = checkBody(WEBHOOK_ENDPOINT_RESEND, raw, ctx.encoding ?? 'json');
  return { event: body.event as string };
}

/** How far back `recover` reaches. */
export const RECOVER_MAX_SECONDS = 7 * 86_400;

const sinceOutOfRange: Raise = ({ param, vars }) =>
  new ApiError('parameter_out_of_range', `Invalid since: it must be a unix timestamp within the last 7 days (${String(vars.sinceMin)} to ${String(vars.now)}).`, param);

export const WEBHOOK_ENDPOINT_RECOVER = bodySchema(
  { since: integer().min(Joi.ref('$sinceMin')).max(Joi.ref('$now')).required() },
  { since: { 'number.min': sinceOutOfRange, 'number.max': sinceOutOfRange } },
);
export const WEBHOOK_ENDPOINT_RECOVER_FIELDS = WEBHOOK_ENDPOINT_RECOVER.fields;

export function parseRecover(raw: Record<string, unknown>, ctx: { encoding?: BodyEncoding; now: number }): { since: number } {
  const body = checkBody(WEBHOOK_ENDPOINT_RECOVER, raw, ctx.encoding ?? 'json', { now: ctx.now, sinceMin: ctx.now - RECOVER_MAX_SECONDS });
  return { since: body.since as number };
}

const EMPTY_BODY = bodySchema({});

export function parseEmptyBody(raw: Record<string, unknown>): Record<string, never> {
  checkBody(EMPTY_BODY, raw, 'json');
  return {};
}
