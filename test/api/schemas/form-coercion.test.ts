/**
 * A form body and a JSON body of the same values meet the same rules: the same
 * result, or the same error with the same `param`. Form strings are coerced by the
 * field's type only where unambiguous; JSON stays strict.
 */
import test, { type ExecutionContext } from 'ava';
import qs from 'qs';

import { parseFormBody } from '../../../api/schemas/form-body.js';
import { parseConfirm } from '../../../api/schemas/payment-intent-lifecycle.js';
import { parseResolveQuery } from '../../../api/schemas/operators.js';
import { parsePaymentIntentCreate } from '../../../api/schemas/payment-intents.js';
import { parseWebhookEndpointCreate } from '../../../api/schemas/webhook-endpoints.js';
import { ApiError } from '../../../common/errors.js';

const NOW = 1_700_000_000;
const ctx = { operators: ['mtn_momo', 'orange_money', 'wave', 'mpesa'], defaultCurrency: 'xof', now: NOW };

/** What Stripe's SDKs send: qs with indexed lists, brackets left readable. */
function stripeEncode(body: Record<string, unknown>): string {
  return qs.stringify(body, { arrayFormat: 'indices' }).replace(/%5B/g, '[').replace(/%5D/g, ']');
}

const asForm = (text: string) => parsePaymentIntentCreate(parseFormBody(text), { ...ctx, encoding: 'form' });
const asJson = (body: Record<string, unknown>) => parsePaymentIntentCreate(body, { ...ctx, encoding: 'json' });

function outcome(parse: () => unknown): unknown {
  try {
    return { ok: parse() };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { code: err.code, param: err.param, status: err.status };
  }
}

function refusesForm(t: ExecutionContext, text: string, code: string, param: string): void {
  t.deepEqual(outcome(() => asForm(text)), { code, param, status: 400 }, text);
}

test('an integer from plain decimal digits, and from nothing else', (t) => {
  t.is(asForm('amount=5000').amount, 5000);
  t.is(asForm(`amount=5&expires_at=${NOW + 3600}`).expires_at, NOW + 3600);
  for (const amount of ['5e3', '5000.0', 'abc', '+5000', ' 5000', '5000 ', '0x10', '1_000', '']) {
    refusesForm(t, `amount=${encodeURIComponent(amount)}`, 'parameter_invalid_integer', 'amount');
  }
  refusesForm(t, 'amount=0', 'amount_too_small', 'amount');
  refusesForm(t, 'amount=-5', 'amount_too_small', 'amount');
  refusesForm(t, 'amount=1000000000000', 'amount_too_large', 'amount');
  refusesForm(t, 'amount[0]=5', 'parameter_invalid_integer', 'amount');
});

test('JSON stays strict: a string is not an integer, nor "true" a boolean, nor "" null', (t) => {
  t.deepEqual(outcome(() => asJson({ amount: '5000' })), { code: 'parameter_invalid_integer', param: 'amount', status: 400 });
  t.deepEqual(outcome(() => asJson({ amount: 5, automatic_operator: 'true' })), { code: 'parameter_invalid_boolean', param: 'automatic_operator', status: 400 });
  t.is(asJson({ amount: 5, description: '' }).description, '');
});

test('a boolean from true or false only', (t) => {
  t.is(asForm('amount=5&automatic_operator=false').automatic_operator, false);
  t.is(asForm('amount=5&automatic_operator=true').automatic_operator, true);
  for (const value of ['yes', '1', 'TRUE', 'on']) refusesForm(t, `amount=5&automatic_operator=${value}`, 'parameter_invalid_boolean', 'automatic_operator');
});

test('the empty string is null for a nullable field, an empty list for a list', (t) => {
  const input = asForm('amount=5&description=&selected_operator=');
  t.is(input.description, null);
  t.is(input.selected_operator, null);
  t.is(input.automatic_operator, true);
  refusesForm(t, 'amount=5&allowed_operators=', 'parameter_invalid_empty', 'allowed_operators');
  t.deepEqual(asForm('amount=5&metadata=').metadata, []);
});

test('the empty string of a field null is not a value of gets the error a JSON null gets', (t) => {
  for (const field of ['currency', 'automatic_operator', 'expires_at']) {
    const json = outcome(() => asJson({ amount: 5, [field]: null })) as { status?: number };
    t.is(json.status, 400, field);
    t.deepEqual(outcome(() => asForm(`amount=5&${field}=`)), json, field);
  }
  t.deepEqual(outcome(() => asForm('amount=')), outcome(() => asJson({ amount: null })));
});

test('a full body creates the same input from either encoding', (t) => {
  const body = {
    amount: 999999999999,
    currency: 'XOF',
    description: 'order 💳 #1042',
    metadata: JSON.parse('{"order":"1042","a.b":"dot","$x":"dollar","__proto__":"proto","constructor":"c"}') as Record<string, string>,
    allowed_operators: ['wave', 'mpesa'],
    selected_operator: 'mpesa',
    automatic_operator: false,
    expires_at: NOW + 7200,
  };
  t.deepEqual(asForm(stripeEncode(body)), asJson(body));
  t.deepEqual(
    asForm('amount=5000&allowed_operators[]=wave&allowed_operators[]=mpesa'),
    asJson({ amount: 5000, allowed_operators: ['wave', 'mpesa'] }),
  );
});

const sameErrors: Array<[string, Record<string, unknown>]> = [
  ['no amount', { currency: 'usd' }],
  ['an unknown field', { amount: 5, colour: 'red' }],
  ['an unknown field named __proto__', JSON.parse('{"amount":5,"__proto__":"x"}') as Record<string, unknown>],
  ['an unknown currency', { amount: 5, currency: 'xyz' }],
  ['a description over 1000 characters', { amount: 5, description: 'x'.repeat(1001) }],
  ['51 metadata keys', { amount: 5, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }],
  ['a 41-character metadata key', { amount: 5, metadata: { ['k'.repeat(41)]: 'v' } }],
  ['a 501-character metadata value', { amount: 5, metadata: { color: 'x'.repeat(501) } }],
  ['a nested metadata value', { amount: 5, metadata: { color: { deep: 'x' } } }],
  ['a metadata list', { amount: 5, metadata: ['a'] }],
  ['an unknown operator', { amount: 5, allowed_operators: ['wave', 'paypal'] }],
  ['a repeated operator', { amount: 5, allowed_operators: ['wave', 'wave'] }],
  ['a selected operator outside the allowed ones', { amount: 5, allowed_operators: ['wave'], selected_operator: 'mpesa' }],
  ['automatic_operator with a selected operator', { amount: 5, selected_operator: 'wave', automatic_operator: true }],
  ['expires_at in 30 seconds', { amount: 5, expires_at: NOW + 30 }],
  ['expires_at in 31 days', { amount: 5, expires_at: NOW + 31 * 86_400 }],
  ['a list for a string', { amount: 5, currency: ['usd'] }],
];

for (const [what, body] of sameErrors) {
  test(`the same error and param from either encoding: ${what}`, (t) => {
    const json = outcome(() => asJson(body));
    t.truthy((json as { code?: string }).code, 'the JSON body is refused');
    t.deepEqual(outcome(() => asForm(stripeEncode(body))), json);
  });
}

test('webhook endpoints: Stripe\'s enabled_events[]=* and an empty description', (t) => {
  const form = parseFormBody('url=https%3A%2F%2Fexample.com%2Fhooks&enabled_events[]=*&description=&metadata[team]=ops');
  t.deepEqual(parseWebhookEndpointCreate(form, { livemode: false, encoding: 'form' }), {
    url: 'https://example.com/hooks',
    enabled_events: ['*'],
    description: null,
    metadata: [{ k: 'team', v: 'ops' }],
  });
  const missing = outcome(() => parseWebhookEndpointCreate(parseFormBody('enabled_events[]=*'), { livemode: false, encoding: 'form' }));
  t.deepEqual(missing, { code: 'parameter_missing', param: 'url', status: 400 });
});

test("a phone number's bare + in a form (read as a space) is taken as +, as %2B is; JSON is taken as it is", (t) => {
  const confirm = (text: string) => parseConfirm(parseFormBody(text), { operators: ctx.operators, now: NOW, encoding: 'form' });
  t.is(confirm('operator=mtn_momo&phone_number=+2250500000000').phone_number, '+2250500000000');
  t.is(confirm('operator=mtn_momo&phone_number=%2B2250500000000').phone_number, '+2250500000000');
  t.is(confirm('phone_number=%202250500000000').phone_number, '+2250500000000', 'a space then digits is a + lost to form encoding');
  t.is(parseResolveQuery('phone_number=+2250500000000'), '+2250500000000', 'as the resolve route takes it');
  for (const text of ['phone_number=2250500000000', 'phone_number=++2250500000000', 'phone_number=+22505', 'phone_number=%20%202250500000000']) {
    t.deepEqual(outcome(() => confirm(text)), { code: 'phone_number_invalid', param: 'phone_number', status: 400 }, text);
  }
  const json = outcome(() => parseConfirm({ phone_number: ' 2250500000000' }, { operators: ctx.operators, now: NOW, encoding: 'json' }));
  t.deepEqual(json, { code: 'phone_number_invalid', param: 'phone_number', status: 400 });
});
