/**
 * The one translator from joi's error details to the contract's errors: shared
 * wording by joi error type, a body's own table by field, and never joi's words.
 */
import test from 'ava';

import { bodySchema, checkBody } from '../../../api/schemas/body.js';
import { formatParam, toApiError } from '../../../api/schemas/joi-errors.js';
import { Joi } from '../../../api/schemas/joi.js';
import { parseConfirm, parseUpdate } from '../../../api/schemas/payment-intent-lifecycle.js';
import { parsePaymentIntentCreate } from '../../../api/schemas/payment-intents.js';
import { parseRefundCreate } from '../../../api/schemas/refunds.js';
import { parseWebhookEndpointCreate } from '../../../api/schemas/webhook-endpoints.js';
import { urlErrors } from '../../../api/schemas/urls.js';
import { ApiError } from '../../../common/errors.js';
import { rejects } from '../../helpers/rejects.js';

test('a path becomes a param in bracket notation', (t) => {
  t.is(formatParam(['amount']), 'amount');
  t.is(formatParam(['allowed_operators', 2]), 'allowed_operators[2]');
  t.is(formatParam(['metadata', 'a.b']), 'metadata[a.b]');
});

test('a body\'s own table wins for its field; other fields get the shared wording', (t) => {
  const def = bodySchema(
    { size: Joi.number().integer().min(1), count: Joi.number().integer().min(1) },
    { size: { 'number.min': ({ param }) => new ApiError('amount_too_small', 'Too small.', param) } },
  );
  const own = rejects(t, () => checkBody(def, { size: 0 }, 'json'), 'amount_too_small', 'size');
  t.is(own.message, 'Too small.');
  const shared = rejects(t, () => checkBody(def, { count: 0 }, 'json'), 'parameter_out_of_range', 'count');
  t.is(shared.message, 'Invalid count: 0 is below the minimum of 1.');
});

test('no back door: an ApiError thrown inside a joi custom rule is not passed to the client, but is a plain Error (a 500)', (t) => {
  const def = bodySchema({
    code: Joi.string().custom(() => {
      throw new ApiError('url_invalid', 'Invalid code: no.', 'code');
    }),
  });
  const error = t.throws(() => checkBody(def, { code: 'x' }, 'json'));
  t.false(error instanceof ApiError);
  t.regex(error.message, /no contract error for joi's "any\.custom" at code/);
});

test('the URL rules are joi rules, each problem worded by the table of its field', (t) => {
  const def = bodySchema(
    { url: Joi.string().webUrl('target'), back: Joi.string().webUrl() },
    { url: urlErrors('url', 2048), back: urlErrors('return_url', 2048) },
  );
  const live = { livemode: true, allowPrivateTargets: false };
  const cases: Array<[body: Record<string, unknown>, param: string, message: string]> = [
    [{ url: 'http://example.com/x' }, 'url', 'Invalid url: in live mode it must use https.'],
    [{ url: 'https://127.0.0.1/x' }, 'url', 'Invalid url: it must point at a public address, not a loopback, private, link-local, multicast or reserved one.'],
    [{ url: 'https://a.localhost/' }, 'url', 'Invalid url: it must not point at localhost.'],
    [{ url: 'https:///x' }, 'url', 'Invalid url: it must name a host.'],
    [{ back: ' https://shop.example/' }, 'back', 'Invalid return_url: it must not contain spaces or control characters.'],
    [{ back: 'https://u:p@shop.example/' }, 'back', 'Invalid return_url: it must not contain a user name or password.'],
    [{ back: 'shop.example' }, 'back', 'Invalid return_url: it must be an absolute http:// or https:// URL.'],
  ];
  for (const [body, param, message] of cases) {
    const error = rejects(t, () => checkBody(def, body, 'json', live), 'url_invalid', param);
    t.is(error.message, message);
  }
  t.notThrows(() => checkBody(def, { url: 'https://hooks.example/x', back: 'http://127.0.0.1:8000/back' }, 'json', live), 'a return_url is not a target');
  t.notThrows(() => checkBody(def, { url: 'http://127.0.0.1/x' }, 'json', { livemode: false, allowPrivateTargets: true }));
});

test('a joi error no table words is a plain Error (a 500), never joi\'s message', (t) => {
  const error = t.throws(() => toApiError({ type: 'string.email', path: ['email'], context: { value: 'x' } }));
  t.false(error instanceof ApiError);
  t.regex(error.message, /no contract error for joi's "string\.email" at email/);
});

test('unknown fields are refused before joi looks at the known ones, whatever their order', (t) => {
  const def = bodySchema({ size: Joi.number().integer() });
  rejects(t, () => checkBody(def, { size: 'x', extra: 1 }, 'json'), 'parameter_unknown', 'extra');
});

test('no message a client sees is joi\'s wording', (t) => {
  const ops = ['mtn_momo', 'wave'];
  const now = 1_700_000_000;
  const attempts: Array<() => unknown> = [
    () => parsePaymentIntentCreate({ amount: 'x' }, { operators: ops, defaultCurrency: 'xof', now }),
    () => parsePaymentIntentCreate({ amount: 5, allowed_operators: [1] }, { operators: ops, defaultCurrency: 'xof', now }),
    () => parsePaymentIntentCreate({ amount: 5, metadata: { k: 1 } }, { operators: ops, defaultCurrency: 'xof', now }),
    () => parsePaymentIntentCreate({ amount: 5, expires_at: 1 }, { operators: ops, defaultCurrency: 'xof', now }),
    () => parseUpdate({ automatic_operator: 'yes' }, { operators: ops, now }),
    () => parseConfirm({ phone_number: '', otp: '' }, { operators: ops, now }),
    () => parseRefundCreate({ payment_intent: 'pi_x', reason: 5 }),
    () => parseWebhookEndpointCreate({ url: 5 }, { livemode: false }),
  ];
  for (const attempt of attempts) {
    const error = t.throws<ApiError>(attempt, { instanceOf: ApiError });
    t.notRegex(error!.message, /^"|is not allowed|must be of type|failed custom validation/, error!.message);
  }
});

test('a bare "+" in a form body reads as a space: a confirm takes a phone number sent so as the "+" meant, JSON does not', (t) => {
  const ctx = { operators: ['mtn_momo', 'wave'], now: 1_700_000_000 };
  t.is(parseConfirm({ phone_number: ' 2250500000000' }, { ...ctx, encoding: 'form' }).phone_number, '+2250500000000');
  t.is(parseConfirm({ phone_number: '+2250500000000' }, { ...ctx, encoding: 'form' }).phone_number, '+2250500000000', 'sent as %2B');
  rejects(t, () => parseConfirm({ phone_number: ' 2250500000000' }, ctx), 'phone_number_invalid', 'phone_number');
  rejects(t, () => parseConfirm({ phone_number: '  2250500000000' }, { ...ctx, encoding: 'form' }), 'phone_number_invalid', 'phone_number');
});
