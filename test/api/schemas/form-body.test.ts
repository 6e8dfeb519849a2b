import test, { type ExecutionContext } from 'ava';

import { FORM_MAX_ARRAY_ITEMS, FORM_MAX_DEPTH, FORM_MAX_PARAMETERS, parseFormBody } from '../../../api/schemas/form-body.js';
import { ApiError } from '../../../common/errors.js';

function refuses(t: ExecutionContext, text: string, param: string | undefined, message: RegExp): void {
  const error = t.throws<ApiError>(() => parseFormBody(text), { instanceOf: ApiError });
  t.is(error?.status, 400);
  t.is(error?.code, 'parameter_invalid');
  t.is(error?.param, param);
  t.regex(error?.message ?? '', message);
}

test('parses Stripe\'s bracket notation: maps, indexed and empty-bracket lists', (t) => {
  const body = parseFormBody('amount=5000&metadata[order]=1042&allowed_operators[0]=wave&allowed_operators[1]=mpesa&enabled_events[]=*&enabled_events[]=x');
  t.is(JSON.stringify(body), '{"amount":"5000","metadata":{"order":"1042"},"allowed_operators":["wave","mpesa"],"enabled_events":["*","x"]}');
});

test('decodes percent-encoding and plus signs; brackets may be encoded too', (t) => {
  const body = parseFormBody('description=hello+world%21+%F0%9F%92%B3&metadata%5Bk%5D=v%26w');
  t.is(body.description, 'hello world! 💳');
  t.deepEqual({ ...(body.metadata as object) }, { k: 'v&w' });
});

test('a malformed percent sequence is kept as written, not an error', (t) => {
  t.is(parseFormBody('description=%E0%A4%A').description, '%E0%A4%A');
});

test('keys that name prototype members, dots and dollars arrive as data and touch no prototype', (t) => {
  const body = parseFormBody(
    'metadata[__proto__]=a&metadata[constructor]=b&metadata[a.b]=c&metadata[$x]=d&metadata[toString]=e&metadata[hasOwnProperty]=f&metadata[x__proto__y]=g',
  );
  const metadata = body.metadata as Record<string, string>;
  t.deepEqual(Object.keys(metadata), ['__proto__', 'constructor', 'a.b', '$x', 'toString', 'hasOwnProperty', 'x__proto__y']);
  t.is(metadata.__proto__, 'a');
  t.is(metadata['constructor'] as unknown, 'b');
  t.is(Object.getPrototypeOf(metadata), null);
  t.is(({} as Record<string, unknown>).a, undefined, 'Object.prototype is untouched');
  t.is(JSON.stringify(metadata), '{"__proto__":"a","constructor":"b","a.b":"c","$x":"d","toString":"e","hasOwnProperty":"f","x__proto__y":"g"}');
});

test('a top-level __proto__ or constructor is an (unknown) field like any other, never dropped', (t) => {
  const body = parseFormBody('__proto__=1&constructor=2&amount=5');
  t.deepEqual(Object.keys(body), ['__proto__', 'constructor', 'amount']);
  t.is(Object.getPrototypeOf(body), null);
  const nested = parseFormBody('metadata[__proto__][polluted]=yes');
  t.is(JSON.stringify(nested), '{"metadata":{"__proto__":{"polluted":"yes"}}}');
  t.is(({} as Record<string, unknown>).polluted, undefined);
});

test('a repeated name becomes a list, so a second value is never silently dropped', (t) => {
  t.deepEqual(parseFormBody('amount=1&amount=2').amount, ['1', '2']);
});

test('an empty value is the empty string; a name without = too', (t) => {
  const body = parseFormBody('description=&selected_operator');
  t.is(body.description, '');
  t.is(body.selected_operator, '');
});

test(`at most ${FORM_MAX_PARAMETERS} parameters: one more is a 400`, (t) => {
  const pairs = (n: number) => Array.from({ length: n }, (_, i) => `metadata[k${i}]=v`).join('&');
  t.is(Object.keys(parseFormBody(pairs(FORM_MAX_PARAMETERS)).metadata as object).length, FORM_MAX_PARAMETERS);
  refuses(t, pairs(FORM_MAX_PARAMETERS + 1), undefined, /more than 1000 parameters/);
});

test(`brackets nest at most ${FORM_MAX_DEPTH} deep: one more is a 400 naming the field`, (t) => {
  t.truthy(parseFormBody('metadata[a][b][c][d][e]=1').metadata);
  refuses(t, 'amount=1&metadata[a][b][c][d][e][f]=1', 'metadata', /nested at most 5 deep/);
});

test(`lists hold at most ${FORM_MAX_ARRAY_ITEMS} items, by count or by index: beyond is a 400 naming the field`, (t) => {
  const items = (n: number) => Array.from({ length: n }, (_, i) => `allowed_operators[]=op${i}`).join('&');
  t.is((parseFormBody(items(FORM_MAX_ARRAY_ITEMS)).allowed_operators as string[]).length, FORM_MAX_ARRAY_ITEMS);
  refuses(t, items(FORM_MAX_ARRAY_ITEMS + 1), 'allowed_operators', /at most 100 items/);
  t.deepEqual(parseFormBody(`allowed_operators[${FORM_MAX_ARRAY_ITEMS - 1}]=wave`).allowed_operators, ['wave']);
  refuses(t, `allowed_operators[${FORM_MAX_ARRAY_ITEMS}]=wave`, 'allowed_operators', /at most 100 items/);
  const repeated = Array.from({ length: FORM_MAX_ARRAY_ITEMS + 1 }, () => 'enabled_events=*').join('&');
  refuses(t, repeated, 'enabled_events', /at most 100 items/);
});
