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

test('an ApiError thrown inside a joi custom rule reaches the client as it is', (t) => {
  const def = bodySchema({
    code: Joi.string().custom(() => {
      throw new ApiError('url_invalid', 'Invalid code: no.', 'code');
    }),
  });
  const error = rejects(t, () => checkBody(def, { code: 'x' }, 'json'), 'url_invalid', 'code');
  t.is(error.message, 'Invalid code: no.');
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
