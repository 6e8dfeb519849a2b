import test from 'ava';
import { returnUrlFor } from '../../common/return-url.js';

const intent = { id: 'pi_00Abc', clientSecret: 'pi_00Abc_secret_XyZ09' };
const added = 'payment_intent=pi_00Abc&payment_intent_client_secret=pi_00Abc_secret_XyZ09';

test('payment_intent and payment_intent_client_secret are added to the return URL’s own query, which is kept byte for byte', (t) => {
  t.is(returnUrlFor('https://shop.example/back', intent), `https://shop.example/back?${added}`);
  t.is(returnUrlFor('https://shop.example/back?order=7', intent), `https://shop.example/back?order=7&${added}`);
  t.is(returnUrlFor('https://shop.example/back?q=a%20b&x=1+2', intent), `https://shop.example/back?q=a%20b&x=1+2&${added}`);
  t.is(returnUrlFor('https://shop.example/back?', intent), `https://shop.example/back?${added}`);
  t.is(returnUrlFor('https://shop.example/back?order=7&', intent), `https://shop.example/back?order=7&${added}`);
});

test('a fragment stays at the end', (t) => {
  t.is(returnUrlFor('https://shop.example/back#top', intent), `https://shop.example/back?${added}#top`);
  t.is(returnUrlFor('https://shop.example/back?order=7#a?b', intent), `https://shop.example/back?order=7&${added}#a?b`);
});
